"""What a vocabulary's numbers cannot be trusted for: its caveats (``settings["caveats"]``, kind -> note),
read from any file (older flags and a union's parts included) and carried into every derived vocabulary.

``"oracle"``: built from the benchmark's own OOD labels; ``"transductive"``: mined from images overlapping
the evaluated OOD set. A vocabulary with a caveat is not deployable, and a number scored with it is
marked wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CAVEAT_LINE", "ORACLE_CAVEAT", "caveats_of", "random_weights_of", "with_caveats"]

CAVEAT_LINE = "# not deployable: "  # how a .txt vocabulary file keeps its caveats
ORACLE_CAVEAT = (
    "built from the evaluated OOD benchmark's own labels: a lower bound on FPR@95, not a deployable detector"
)


def with_caveats(settings: Mapping[str, Any], caveats: Mapping[str, str]) -> dict[str, Any]:
    """``settings`` with ``caveats`` added to its ``caveats`` (and ``deployable: False`` when any)."""
    out = dict(settings)
    earlier = out.get("caveats")
    merged = {**caveats, **(earlier if isinstance(earlier, dict) else {})}
    if merged:
        out["caveats"] = merged
        out["deployable"] = False
    return out


def caveats_of(settings: Any, source: Any = None) -> dict[str, str]:
    """Caveats recorded in ``settings`` (recursively in a union's parts), older flags included."""
    found: dict[str, str] = {}
    if source == "oracle":
        found["oracle"] = ORACLE_CAVEAT
    if not isinstance(settings, dict):
        return found
    given = settings.get("caveats")
    if isinstance(given, dict):
        found.update({str(k): str(v) for k, v in given.items()})
    if settings.get("oracle") is True:  # files written before caveats existed
        found.setdefault("oracle", str(settings.get("note") or ORACLE_CAVEAT).removeprefix("oracle: "))
    if settings.get("deployable") is False and not found:
        found["not deployable"] = str(settings.get("note") or "marked deployable: false")
    for part in settings.get("parts", []):
        if isinstance(part, dict):
            for kind, note in caveats_of(part.get("settings"), part.get("source")).items():
                found.setdefault(kind, note)
    return found


def random_weights_of(settings: Any) -> bool:
    """Whether ``settings`` (or a union's parts) record a model with random weights."""
    if not isinstance(settings, dict):
        return False
    return settings.get("random_weights") is True or any(
        random_weights_of(p.get("settings")) for p in settings.get("parts", []) if isinstance(p, dict)
    )
