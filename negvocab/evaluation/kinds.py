"""Result kinds: what sort of entry a results row is, so that means and bold never mix sorts.

A table averages or ranks entries only within one kind (docs/howto/tables.md): deployable
vocabularies, baselines without a vocabulary (MCM), oracle vocabularies (a bound, not a result),
transductive vocabularies (built from the evaluated images), test-time (stream) results, and results whose
parameters were tuned on the test sets themselves (asked for by name; flattered, never bold).
:func:`result_kind` is the one place that decides; a new kind is one more branch and one more
entry in :data:`KIND_LABELS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "COMPETING_KINDS", "KIND_LABELS", "KIND_SPELLINGS", "RESULT_KINDS", "TEST_TUNED_MARK", "caveat_kinds",
    "caveat_notes", "is_test_time", "is_test_tuned", "kind_marks", "read_kind", "result_kind", "stream_words",
]  # fmt: skip

#: every kind, in the order tables show their means
RESULT_KINDS: tuple[str, ...] = ("deployable", "baseline", "test_time", "test_tuned", "transductive", "oracle")
#: how a table's summary names each kind ("mean (no vocabulary)")
KIND_LABELS: dict[str, str] = {
    "deployable": "deployable",
    "baseline": "no vocabulary",
    "test_time": "test-time",
    "test_tuned": "tuned on the test sets",
    "transductive": "transductive",
    "oracle": "oracle",
}
#: a kind as an older release spelled it (``ResultRow.result_kind`` said ``test-time``), read as this one's
KIND_SPELLINGS: dict[str, str] = {"test-time": "test_time"}
#: the kinds a winner may come from: bold never lands on an oracle or a transductive vocabulary
COMPETING_KINDS: frozenset[str] = frozenset({"deployable", "baseline", "test_time"})


def caveat_kinds(caveats: object) -> list[str]:
    """The caveat kinds of a row: a mapping's keys, or a file's ``"kind: text; kind: text"`` or
    ``"kind;kind"`` string."""
    if isinstance(caveats, Mapping):
        return [str(k) for k in caveats]
    if isinstance(caveats, (list, tuple)):
        return [str(k) for k in caveats]
    text = str(caveats or "")
    if ":" in text:  # "kind: text; kind: text" (a grid row): the words before a colon at the start or after "; "
        return re.findall(r"(?:^|;\s*)([A-Za-z_][\w-]*):", text)
    return [p.strip() for p in text.split(";") if p.strip()]


def caveat_notes(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per vocabulary whose rows carry a caveat a table must state besides "not deployable"
    (ID class names inside it, ...): ``"handpicked: 2 of 24 labels are ID class names ..."``."""
    out: dict[str, str] = {}
    for r in rows:
        caveats, vocab = r.get("caveats"), str(r.get("vocabulary") or "")
        if not vocab or not caveats or set(caveat_kinds(caveats)) <= {"oracle", "transductive"}:
            continue
        text = "; ".join(f"{k}: {v}" for k, v in caveats.items()) if isinstance(caveats, Mapping) else str(caveats)
        out.setdefault(f"{vocab}: {text}", "")
    return list(out)


def read_kind(value: object) -> str | None:
    """A result kind as a file or caller spells it, in this version's spelling (:data:`KIND_SPELLINGS`:
    ``test-time`` reads as ``test_time``); None where ``value`` is no kind."""
    text = KIND_SPELLINGS.get(str(value), str(value)) if value else ""
    return text if text in RESULT_KINDS else None


def is_test_time(row: Mapping[str, Any]) -> bool:
    """Whether a results row is a test-time method's (its ``test_time`` field, a file's text too, or the
    ``result_kind`` it holds), whatever its vocabulary's caveats."""
    return row.get("test_time") in (True, 1, "True", "true", "1") or read_kind(row.get("result_kind")) == "test_time"


def is_test_tuned(row: Mapping[str, Any]) -> bool:
    """Whether a results row's parameters were tuned on its own test sets (its ``tuned_on_test`` field, a
    file's text too, or the ``result_kind`` it holds); a row of an older release, without it, is not."""
    flag = row.get("tuned_on_test") in (True, 1, "True", "true", "1")
    return flag or read_kind(row.get("result_kind")) == "test_tuned"


#: the mark of a row tuned on its own test sets, wherever a table shows its method (beside ``[tt]``)
TEST_TUNED_MARK = " [tuned on test]"


def kind_marks(row: Mapping[str, Any], test_time: str) -> str:
    """The marks after a row's method in a table: ``test_time`` (the tables' ``[tt]``) for a test-time
    method, then :data:`TEST_TUNED_MARK` for parameters tuned on the test sets."""
    return (test_time if is_test_time(row) else "") + (TEST_TUNED_MARK if is_test_tuned(row) else "")


def result_kind(row: Mapping[str, Any]) -> str:
    """The kind of one results row dict of any file (one of :data:`RESULT_KINDS`), the strongest first: an
    ``oracle`` or ``transductive`` vocabulary (its caveats: never deployable, never bold, whatever the
    method); then a test-time method's rows, ``test_time`` with or without a vocabulary (its ``test_time``
    field, or a ``result_kind`` the row holds, in either spelling: :func:`read_kind`), before which comes
    ``test_tuned``, a row whose parameters were tuned on its test sets (:func:`is_test_tuned`); ``baseline`` is a
    batch method without one (MCM); else ``deployable``. The one rule of every table, bold and
    :attr:`negvocab.evaluation.row.ResultRow.result_kind`.

    Parameters
    ----------
    row : mapping
        One results row, as a dict.
    """
    kinds = caveat_kinds(row.get("caveats"))
    if "oracle" in kinds or row.get("oracle") is True or read_kind(row.get("result_kind")) == "oracle":
        return "oracle"
    if "transductive" in kinds or row.get("deployable") is False:
        return "transductive"
    if is_test_tuned(row):
        return "test_tuned"
    if is_test_time(row):
        return "test_time"
    if not row.get("vocabulary"):
        return "baseline"
    return "deployable"


def stream_words(row: Mapping[str, Any]) -> str:
    """A test-time row's stream in words ("shuffled, batch 256, seeds 0, 1, 2"); "" for another kind."""
    if not is_test_time(row):
        return ""
    seeds = row.get("stream_seeds") or ([] if row.get("stream_seed") is None else [row["stream_seed"]])
    parts = [str(row.get("stream_order") or "order ?"), f"batch {row.get('stream_batch_size', '?')}"]
    parts += [("seeds " if len(seeds) > 1 else "seed ") + ", ".join(map(str, seeds))] if seeds else []
    ratio = row.get("id_ood_ratio")
    parts += [f"ID:OOD {ratio:g}"] if isinstance(ratio, (int, float)) and ratio == ratio else []  # NaN: none
    phases = row.get("stream_phases")
    parts += [f"phases {phases} (state carried over)"] if isinstance(phases, str) and phases else []
    return ", ".join(parts)
