"""The authors' published settings, one table: what replays CSP's, InterNeg's and NegRefine's code.

``negvocab build csp --authors`` (and ``interneg``) fills every option of :data:`AUTHORS` the command
line leaves unset; the row's ``score`` flags are the scoring side of the same setting (NegLabel's
grouping as their code draws it, their templates and reduction, a recorded stream kept in order).
docs/methods.md and docs/howto/csp_interneg.md say where each value comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AUTHORS", "AuthorsSetting", "authors_setting"]


@dataclass(frozen=True)
class AuthorsSetting:
    """One method's published setting: builder options, and the ``negvocab score`` flags that go with them."""

    build: Mapping[str, Any] = field(default_factory=dict)
    score: str = ""
    source: str = ""


AUTHORS: Mapping[str, AuthorsSetting] = {
    "csp": AuthorsSetting(
        build={"ratio": 0.15, "synonym_filter": False, "templates": "csp", "seed": 0, "quantile": 0.95},
        score="--method neglabel --grouping neglabel --groups 100 --seed 0 --templates csp",
        source="CSP's custom_config (neg_topk 0.15, pencentile 0.95, seed 0) and clip_ood.py (ngroup 100)",
    ),
    "interneg": AuthorsSetting(
        build={"synonym_filter": False, "split": "interneg", "shots": 16, "templates": "interneg"},
        score="--templates interneg",
        source="InterNeg's clip_fixed_ood_prompt.py (exact-name Deduplication only, its split) and 16-shot prototypes",
    ),
    "negrefine": AuthorsSetting(
        score="--method negrefine --grouping neglabel --groups 100 --seed 0 --templates csp",
        source="NegRefine's clip_ood.py (CSP's templates, raw means, NegLabel's grouping); its vocabulary: "
        "negvocab build csp --authors, then negvocab build negrefine",
    ),
}


def authors_setting(method: str) -> AuthorsSetting | None:
    """The published setting of ``method`` (a builder or scoring method name), or None where there is none."""
    return AUTHORS.get(method)
