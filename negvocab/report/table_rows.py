"""The rows and axes of a paper table: the axes a table may have, which tidy rows it holds (``where``
fixes axes; methods without a vocabulary sit beside the vocabularies), and each row's label on an axis."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from negvocab.core.errors import InputError
from negvocab.evaluation.kinds import kind_marks, result_kind
from negvocab.report.results import TEST_TIME_MARK

__all__ = ["AXES", "check_axes", "default_rows", "entry_key", "is_baseline", "row_label", "select_rows"]

AXES = ("model", "vocabulary", "method", "ood_set", "convention")
_NO_VOCAB = " (no vocabulary)"


def check_axes(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    axes = (value,) if isinstance(value, str) else tuple(value)
    for a in axes:
        if a not in AXES:
            raise InputError(f"{what}: unknown axis {a!r}; choose from {', '.join(AXES)}")
    if not axes:
        raise InputError(f"{what}: name at least one axis ({', '.join(AXES)})")
    return axes


def is_baseline(r: Mapping[str, Any]) -> bool:
    """A batch method without a vocabulary (MCM): by its kind, so a test-time method without one is none."""
    return result_kind(r) == "baseline"


def row_label(r: Mapping[str, Any], axis: str) -> str:
    """Row ``r``'s label on ``axis``; a method without a vocabulary is "METHOD (no vocabulary)" there."""
    if axis == "vocabulary" and not r.get("vocabulary"):  # a test-time one is marked: it is no baseline
        return f"{r['method']}{_NO_VOCAB}{kind_marks(r, TEST_TIME_MARK)}"
    return str(r.get(axis, ""))


def _shown(values: Sequence[Any]) -> str:
    return ", ".join('"" (none: a method without vocabulary)' if v == "" else str(v) for v in values)


def select_rows(
    rows: Sequence[Mapping[str, Any]], axes: tuple[str, ...], where: Mapping[str, str], baselines: bool
) -> list[Mapping[str, Any]]:
    """The rows of the table: ``where`` fixes axes; methods without a vocabulary stay beside the
    vocabularies; an axis not named must have one value."""
    for k in where:
        if k not in AXES:
            raise InputError(f"where: unknown axis {k!r}; choose from {', '.join(AXES)}")
        if k in axes:
            raise InputError(f"where: {k} is an axis of the table; it cannot also be fixed")
    sel = list(rows)
    if not baselines:
        sel = [r for r in sel if not is_baseline(r)]
    for dim in AXES:
        if dim in axes:
            continue
        # a baseline has no vocabulary: it fits any fixed vocabulary, and any fixed method when vocabularies are an axis
        loose = (
            (lambda r: is_baseline(r))
            if dim == "vocabulary"
            else (lambda r: is_baseline(r) and "vocabulary" in axes)
            if dim == "method"
            else (lambda r: False)
        )
        values = list(dict.fromkeys(r.get(dim, "") for r in sel if not loose(r)))
        want = where.get(dim)
        if dim == "vocabulary" and want == "":  # the methods without a vocabulary alone (test-time ones too)
            sel = [r for r in sel if not r.get("vocabulary")]
            continue
        if want is None:
            if len(values) > 1:
                raise InputError(
                    f"the rows have several {dim} values ({_shown(values)}); make {dim} an axis "
                    f"(rows_by={dim}) or fix one (where={dim}=VALUE)",
                    param=("rows_by", "where"),
                )
            continue
        if str(want) not in map(str, values):
            raise InputError(f"no {dim} {want!r} in the rows; they have {_shown(values)}")
        sel = [r for r in sel if loose(r) or str(r.get(dim, "")) == str(want)]
    if not sel:
        raise InputError("no rows to tabulate")
    return sel


def default_rows(rows: Sequence[Mapping[str, Any]], cols: Sequence[str], where: Mapping[str, str]) -> tuple[str, ...]:
    """The row axes that show every row: each axis, not a column and not fixed, on which the rows differ
    (a method without a vocabulary counts for no vocabulary); ``("model",)`` where none does."""
    vary = []
    for dim in AXES:
        values = {str(r.get(dim, "")) for r in rows if not (dim == "vocabulary" and is_baseline(r))}
        if dim not in cols and dim not in where and len(values) > 1:
            vary.append(dim)
    return tuple(vary) or ("model",)


def entry_key(r: Mapping[str, Any], axes: tuple[str, ...]) -> str:
    """A row's entry along ``axes``: its labels joined by " / "."""
    return " / ".join(row_label(r, a) for a in axes)
