"""Tables as in the paper: any rows x columns of the tidy results rows, in Markdown, LaTeX or CSV.

:func:`build_table` takes tidy rows (a grid's :meth:`~negvocab.grid.tidy.GridResult.table`, the
rows of ``score`` and ``sweep`` folders: :func:`negvocab.grid.tidy.load_rows`) and lays one or
more metrics out as ``rows`` x ``cols``, each an axis out of (model, vocabulary, method, ood_set,
convention) or several joined; every other axis is fixed by ``where`` (or has one value). Methods
without a vocabulary (MCM, GL-MCM) sit beside the vocabularies as rows "mcm (no vocabulary)".
A mean row (``mean_rows``: the paper's mean over VLMs) and mean or group-mean columns
(``mean_cols``, ``col_groups``: near/far-OOD) are plain means of the cells, with no interval, taken
within one kind of entry (:func:`negvocab.evaluation.kinds.result_kind`: deployable, no vocabulary,
oracle, ...; one mean per kind where the cells mix kinds, unless ``mix_kinds``), and a mean over
models shows the models' standard deviation beside it; the ``mean`` OOD set of a grid or score folder
is the bootstrap mean with its interval. Bold (``bold="paired"``) follows one rule,
:mod:`negvocab.report.significance`: the best entry of a column (``bold_by="cols"``) or of a row
(``"rows"``) where a paired bootstrap over the same images finds it better than every other
entry there at ``level``; ties: none bold (``ties="none"``) or the best and every entry not
distinguishable from it (``"all"``); the caption says which. Numbers in %.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.evaluation.compare import metric_label
from negvocab.evaluation.kinds import KIND_LABELS, RESULT_KINDS, kind_marks, result_kind, stream_words
from negvocab.evaluation.records import MEAN, seed_sd
from negvocab.evaluation.row import interval
from negvocab.report.comparisons import comparisons
from negvocab.report.latex import latex_escape, latex_float
from negvocab.report.result_folders import folder_rows
from negvocab.report.results import TEST_TIME_MARK
from negvocab.report.significance import BOLD_AXES, PairedMarks, ScoreGetter, bold_note
from negvocab.report.table_format import Table
from negvocab.report.table_notes import caption_notes, dedupe_caption, mean_note, test_time_notes
from negvocab.report.table_rows import AXES, check_axes, default_rows, entry_key, row_label, select_rows

__all__ = [
    "AXES", "BOLD_AXES", "BOLD_RULES", "ScoreGetter", "Table", "build_table", "comparisons", "folder_rows",
    "default_rows", "latex_escape", "latex_float", "row_label", "select_rows", "test_time_notes",
]  # fmt: skip

BOLD_RULES = ("paired", "none")
#: the bold rules of earlier releases: both now mean the paired test (DeprecationWarning)
_OLD_BOLD_RULES = ("interval", "point")


def build_table(
    rows: Sequence[Mapping[str, Any]],
    *,
    metric: str | Sequence[str] = "fpr",
    rows_by: str | Sequence[str] = "model",
    cols_by: str | Sequence[str] = "ood_set",
    where: Mapping[str, str] | None = None,
    mean_rows: bool = False,
    mean_cols: bool = False,
    row_groups: Mapping[str, Sequence[str]] | None = None,
    col_groups: Mapping[str, Sequence[str]] | None = None,
    intervals: bool = False,
    bold: str = "paired",
    bold_by: str = "cols",
    ties: str = "none",
    scores: ScoreGetter | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    mix_kinds: bool = False,
    baselines: bool = True,
    caption: str = "",
    label: str = "",
    failed: Mapping[str, str] | None = None,
) -> Table:
    # long: the Parameters section of its 22 options is most of it (the code is some 60 lines)
    """The table of ``metric`` (one name or several, side by side) with ``rows_by`` x ``cols_by``.

    Parameters
    ----------
    rows : sequence of mapping
        Tidy result rows (:meth:`negvocab.grid.tidy.GridResult.table`, ``negvocab.grid.tidy.load_rows``):
        one per model, vocabulary, method, OOD set and convention, with the metrics and their intervals.
    metric : str or sequence of str, default "fpr"
        The metric(s) shown (``fpr``, ``auroc``, ``aupr_in``, ``aupr_out``, ...); several sit side by side
        in each column.
    rows_by, cols_by : str or sequence of str, default "model" and "ood_set"
        The axes of the rows and the columns, each one of ``AXES`` (model, vocabulary, method, ood_set,
        convention) or several joined; an axis cannot be both.
    where : mapping of str to str, optional
        Fixes the other axes (``{"ood_set": "mean", "convention": "paper"}``); an axis that is neither a
        row, a column nor fixed must have one value in ``rows``. ``{"vocabulary": ""}``: the methods
        without a vocabulary alone.
    mean_rows, mean_cols : bool, default False
        Add the plain mean over the row entries (the paper's mean over VLMs) or over the column entries.
    row_groups, col_groups : mapping of str to sequence of str, optional
        One more row or column per named group of entries, their plain mean (near/far OOD).
    intervals : bool, default False
        Show each value's interval.
    bold : {"paired", "none"}, default "paired"
        ``"paired"``: the winner of each column or row by a paired bootstrap over the per-image ``scores``
        (nothing is bold without ``scores``); ``"interval"`` and ``"point"`` are old names of it (warn).
    bold_by : {"cols", "rows"}, default "cols"
        Whether the entries of a column compete (the best row per column) or those of a row.
    ties : {"none", "all"}, default "none"
        Where no entry beats every other: none bold, or the best and every entry not distinguishable from it.
    scores : callable, optional
        ``(model, vocabulary, method) -> (ID scores, {OOD set: scores})`` or None where not stored
        (``negvocab.report.significance.ScoreGetter``), for the paired test.
    level : float, default 0.95
        The level of the paired test's interval.
    n_boot : int, default 1000
        Bootstrap draws of the paired test.
    seed : int, default 0
        The bootstrap seed of the paired test.
    mix_kinds : bool, default False
        Average entries of different kinds (deployable, no vocabulary, oracle, test-time ...) together;
        by default each mean is taken within one kind (one mean per kind where the cells mix kinds).
    baselines : bool, default True
        Keep the methods without a vocabulary (MCM, GL-MCM) beside the vocabularies.
    caption : str, default ""
        The caption's own text; the notes follow it (a caption that only names the metric is dropped).
    label : str, default ""
        The LaTeX label.
    failed : mapping of str to str, optional
        Model -> why its cells failed, said in the caption.

    Returns
    -------
    Table
        The values, intervals, bold marks, caption and notes; :meth:`Table.render` prints it.

    Raises
    ------
    InputError
        An unknown axis, metric or rule, an axis both fixed and shown, an axis left with several values,
        two rows for one cell, or a group naming an entry the table lacks.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    bold = _check_rules(metrics, bold, bold_by, ties)
    ra, ca = check_axes(rows_by, "rows"), check_axes(cols_by, "cols")
    if set(ra) & set(ca):
        raise InputError(f"an axis cannot be both rows and columns: {', '.join(sorted(set(ra) & set(ca)))}")
    sel = select_rows(rows, ra + ca, dict(where or {}), baselines)
    index, columns, cells, arrays = _cells(sel, ra, ca, metrics)
    summary_cols = [c == MEAN and ca == ("ood_set",) for c in columns]
    summary_rows = [False] * len(index)
    col_sets = {
        **{name: list(v) for name, v in (col_groups or {}).items()},
        **({"mean": [c for c, s in zip(columns, summary_cols, strict=True) if not s]} if mean_cols else {}),
    }
    row_sets = {
        **{name: list(v) for name, v in (row_groups or {}).items()},
        **({"mean": list(index)} if mean_rows else {}),
    }
    means: list[str] = []
    for name, members in col_sets.items():
        made = _summary(arrays, columns, summary_cols, name, members, axis=1, mix=mix_kinds, sd="model" in ca)
        means.append(mean_note(made, "column", ", ".join(members), "model" in ca))
    for name, members in row_sets.items():
        made = _summary(arrays, index, summary_rows, name, members, axis=0, mix=mix_kinds, sd="model" in ra)
        what = "the " + " / ".join(ra) + " entries" if name == "mean" and mean_rows else ", ".join(members)
        means.append(mean_note(made, "row", what, "model" in ra))
    values, low, high, spread, _ = arrays
    marker = PairedMarks(scores, level=level, n_boot=n_boot, seed=seed) if bold == "paired" else None
    marks = _bold_marks(marker, metrics, values, cells, summary_rows, summary_cols, bold_by, ties)
    index, columns = _entry_labels(sel, cells, ra, ca, index, columns)
    t = Table(
        metrics,
        ra,
        ca,
        index,
        columns,
        values,
        low,
        high,
        marks,
        float(sel[0].get("tpr", 0.95)),
        summary_rows,
        summary_cols,
        intervals,
        caption,
        label,
        spread=spread if np.any(~np.isnan(spread)) else None,
        streams=_streams(cells, values.shape[:2]),
    )
    entry = " / ".join(ra if bold_by == "cols" else ca)
    t.notes = caption_notes(sel, t, ra + ca, bold_note(marker, bold_by, ties, entry), dict(failed or {}), means)
    t.caption = dedupe_caption(caption, t.metric_names)
    return t


def _check_rules(metrics: Sequence[str], bold: str, bold_by: str, ties: str) -> str:
    """The bold rule (an older name of it warns), once the metrics, ``bold_by`` and ``ties`` are known ones."""
    for m in metrics:
        metric_label(m)
    if bold in _OLD_BOLD_RULES:
        warnings.warn(
            f"bold={bold!r} is deprecated: bold is the paired test (bold='paired'), or 'none'",
            DeprecationWarning,
            stacklevel=3,
        )
        bold = "paired"
    if bold not in BOLD_RULES:
        raise InputError(f"unknown bold rule {bold!r}; choose {', '.join(BOLD_RULES)}")
    if bold_by not in BOLD_AXES:
        raise InputError(f"bold_by must be {' or '.join(BOLD_AXES)}, got {bold_by!r}")
    if ties not in ("none", "all"):
        raise InputError(f"ties must be none or all, got {ties!r}")
    return bold


def _cells(
    sel: Sequence[Mapping[str, Any]], ra: tuple[str, ...], ca: tuple[str, ...], metrics: Sequence[str]
) -> tuple[list[str], list[str], dict[tuple[int, int], Mapping[str, Any]], list[np.ndarray]]:
    """The row and column entries, each cell's row, and the arrays (values, low, high, spread: entries
    x entries x metrics; kinds: entries x entries) of the selected rows."""
    index = list(dict.fromkeys(entry_key(r, ra) for r in sel))
    columns = list(dict.fromkeys(entry_key(r, ca) for r in sel if not (ca == ("ood_set",) and r["ood_set"] == MEAN)))
    if ca == ("ood_set",) and any(r["ood_set"] == MEAN for r in sel):
        columns.append(MEAN)  # the bootstrap mean over the OOD sets: last, with its interval
    shape = (len(index), len(columns), len(metrics))
    values, low, high, spread = (np.full(shape, np.nan) for _ in range(4))
    kinds = np.full(shape[:2], "", dtype=object)
    cells: dict[tuple[int, int], Mapping[str, Any]] = {}
    for r in sel:
        i, j = index.index(entry_key(r, ra)), columns.index(entry_key(r, ca))
        if (i, j) in cells:
            raise InputError(
                f"two rows for {index[i]} x {columns[j]}: fix another axis (where=...) or add it to rows/cols"
            )
        cells[(i, j)] = r
        kinds[i, j] = result_kind(r)
        for k, m in enumerate(metrics):
            values[i, j, k] = float(r.get(m, math.nan))
            low[i, j, k], high[i, j, k] = interval(r, m) or (math.nan, math.nan)
            spread[i, j, k] = (seed_sd(r, m) or (math.nan,))[0]  # a test-time entry's sd over its stream seeds
    return index, columns, cells, [values, low, high, spread, kinds]


def _bold_marks(
    marker: PairedMarks | None,
    metrics: Sequence[str],
    values: np.ndarray,
    cells: Mapping[tuple[int, int], Mapping[str, Any]],
    summary_rows: Sequence[bool],
    summary_cols: Sequence[bool],
    bold_by: str,
    ties: str,
) -> np.ndarray:
    """Which values are bold: the paired test's winner of each column (``bold_by="cols"``) or row; summaries never."""
    marks = np.zeros(values.shape, dtype=bool)
    if marker is None:
        return marks
    n_rows, n_cols = values.shape[:2]
    for k, m in enumerate(metrics):
        if bold_by == "cols":
            for j in range(n_cols):
                group = [None if summary_rows[i] else cells.get((i, j)) for i in range(n_rows)]
                marks[:, j, k] = marker.marks(group, values[:, j, k], m, ties=ties)
        else:
            for i in range(n_rows):
                group = [None if summary_cols[j] else cells.get((i, j)) for j in range(n_cols)]
                marks[i, :, k] = marker.marks(group, values[i, :, k], m, ties=ties)
    return marks


def _entry_labels(
    sel: Sequence[Mapping[str, Any]],
    cells: Mapping[tuple[int, int], Mapping[str, Any]],
    ra: tuple[str, ...],
    ca: tuple[str, ...],
    index: list[str],
    columns: list[str],
) -> tuple[list[str], list[str]]:
    """The row and column entries as shown: a vocabulary that is not deployable says so, and so does a
    test-time method (in every format; the caption notes why)."""
    bad = {str(r["vocabulary"]) for r in sel if r.get("deployable") is False and r.get("vocabulary")}
    if ra == ("vocabulary",):  # the entry itself says so
        index = [f"{i} (NOT deployable)" if i in bad else i for i in index]
    if ca == ("vocabulary",):
        columns = [f"{c} (NOT deployable)" if c in bad else c for c in columns]
    tt_i, tt_j = ({ij[a]: kind_marks(r, TEST_TIME_MARK) for ij, r in cells.items()} for a in (0, 1))
    mark = lambda x, m: x if not m or x.endswith(m) else f"{x}{m}"  # noqa: E731
    if "method" in ra:
        index = [mark(x, tt_i.get(i, "")) for i, x in enumerate(index)]
    elif "method" in ca:
        columns = [mark(x, tt_j.get(j, "")) for j, x in enumerate(columns)]
    return index, columns


def _streams(cells: Mapping[tuple[int, int], Mapping[str, Any]], shape: tuple[int, ...]) -> np.ndarray | None:
    """Each test-time cell's stream in words ("" elsewhere, summaries too); None without a test-time cell."""
    out = np.full(shape, "", dtype=object)
    for (i, j), r in cells.items():
        out[i, j] = stream_words(r)
    return out if any(out.flat) else None


def _summary(
    arrays: list[np.ndarray],
    labels: list[str],
    summary: list[bool],
    name: str,
    members: Sequence[str],
    *,
    axis: int,
    mix: bool,
    sd: bool,
) -> list[tuple[str, str]]:
    """``arrays`` (values, low, high, spread, kinds; replaced in place) with one more row (``axis=0``)
    or column (1) per kind among the members' cells: the plain mean of the members of that kind (NaN
    where one is missing), no interval, the members' standard deviation where ``sd``; one entry
    ``name`` where the cells are of one kind (or ``mix``), else ``name (kind)`` each. ``labels`` and
    ``summary`` get the new entries; returns (entry, kind) of each."""
    what = "row" if axis == 0 else "column"
    if name in labels:
        raise InputError(f"{what} group {name!r} has the name of a {what}; choose another")
    missing = [m for m in members if m not in labels]
    if missing:
        raise InputError(f"group member {missing[0]!r} is no {what} of the table; it has {', '.join(labels)}")
    idx = [labels.index(m) for m in members]
    vals = np.take(arrays[0], idx, axis=axis)  # the members along `axis`: entries x slices (x metrics)
    kin = np.take(arrays[4], idx, axis=axis)
    per_slice = [{str(k) for k in np.take(kin, [s], axis=1 - axis).flat} - {""} for s in range(kin.shape[1 - axis])]
    order = [*RESULT_KINDS, *sorted(set().union(*per_slice) - set(RESULT_KINDS))]
    present = [k for k in order if any(k in ks for ks in per_slice)]
    split = not mix and any(len(ks) > 1 for ks in per_slice)
    made = []
    for want in present if split else [None]:
        keep2 = np.ones(kin.shape, dtype=bool) if want is None else (kin == want) | (kin == "")
        keep = np.broadcast_to(np.expand_dims(keep2, -1), vals.shape)
        n = keep.sum(axis=axis, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(keep, vals, 0.0).sum(axis=axis, keepdims=True) / n
            mean = np.where(keep.any(axis=axis, keepdims=True), mean, np.nan)
            var = np.where(keep, (vals - mean) ** 2, 0.0).sum(axis=axis, keepdims=True) / (n - 1)
        dev = np.where((n > 1) & sd & ~np.isnan(mean), np.sqrt(var), np.nan)
        label = name if want is None else f"{name} ({KIND_LABELS.get(want, want)})"
        if label in labels:
            raise InputError(f"{what} group {label!r} has the name of a {what}; choose another")
        labels.append(label)
        summary.append(True)
        nan = np.full(mean.shape, np.nan)
        kind_of = [want or (min(ks) if len(ks) == 1 else ("mixed" if ks else "")) for ks in per_slice]
        new_kinds = np.expand_dims(np.array(kind_of, dtype=object), axis)
        for pos, extra in enumerate((mean, nan, nan, dev, new_kinds)):
            arrays[pos] = np.concatenate([arrays[pos], extra], axis=axis)
        made.append((label, want or (present[0] if len(present) == 1 else "mixed")))
    return made
