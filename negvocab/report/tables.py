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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.textfiles import csv_text
from negvocab.data.published import published_notes
from negvocab.evaluation.compare import metric_label
from negvocab.evaluation.kinds import (
    KIND_LABELS,
    RESULT_KINDS,
    caveat_notes,
    is_test_time,
    is_test_tuned,
    kind_marks,
    result_kind,
    stream_words,
)
from negvocab.evaluation.records import MEAN, RANDOM_WEIGHTS_WARNING, THRESHOLD_RULES, seed_sd
from negvocab.evaluation.row import interval
from negvocab.report.comparisons import comparisons
from negvocab.report.latex import latex_escape, latex_float, stacked_head
from negvocab.report.result_folders import folder_rows
from negvocab.report.results import TEST_TIME_MARK, TEST_TUNED_NOTE, authors_notes
from negvocab.report.significance import BOLD_AXES, PairedMarks, ScoreGetter, bold_note

__all__ = [
    "AXES", "BOLD_AXES", "BOLD_RULES", "ScoreGetter", "Table", "build_table", "comparisons", "folder_rows",
    "default_rows", "latex_escape", "latex_float", "row_label", "select_rows", "test_time_notes",
]  # fmt: skip

AXES = ("model", "vocabulary", "method", "ood_set", "convention")
BOLD_RULES = ("paired", "none")
#: the bold rules of earlier releases: both now mean the paired test (DeprecationWarning)
_OLD_BOLD_RULES = ("interval", "point")
_NO_VOCAB = " (no vocabulary)"


def _axes(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    axes = (value,) if isinstance(value, str) else tuple(value)
    for a in axes:
        if a not in AXES:
            raise InputError(f"{what}: unknown axis {a!r}; choose from {', '.join(AXES)}")
    if not axes:
        raise InputError(f"{what}: name at least one axis ({', '.join(AXES)})")
    return axes


def _is_baseline(r: Mapping[str, Any]) -> bool:
    """A batch method without a vocabulary (MCM): by its kind, so a test-time method without one is none."""
    return result_kind(r) == "baseline"


def row_label(r: Mapping[str, Any], axis: str) -> str:
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
        sel = [r for r in sel if not _is_baseline(r)]
    for dim in AXES:
        if dim in axes:
            continue
        # a baseline has no vocabulary: it fits any fixed vocabulary, and any fixed method when vocabularies are an axis
        loose = (
            (lambda r: _is_baseline(r))
            if dim == "vocabulary"
            else (lambda r: _is_baseline(r) and "vocabulary" in axes)
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
        values = {str(r.get(dim, "")) for r in rows if not (dim == "vocabulary" and _is_baseline(r))}
        if dim not in cols and dim not in where and len(values) > 1:
            vary.append(dim)
    return tuple(vary) or ("model",)


@dataclass
class Table:
    """Values ``[row, column, metric]`` in [0, 1] with intervals and bold marks; see the module docstring."""

    metrics: list[str]
    row_axes: tuple[str, ...]
    col_axes: tuple[str, ...]
    index: list[str]
    columns: list[str]
    values: np.ndarray
    low: np.ndarray
    high: np.ndarray
    bold: np.ndarray
    tpr: float
    summary_rows: list[bool]
    summary_cols: list[bool]
    intervals: bool = False
    caption: str = ""
    label: str = ""
    notes: list[str] = field(default_factory=list)
    #: the standard deviation beside a mean over models, or beside a test-time entry over several stream
    #: seeds (their sample sd; NaN elsewhere), shown as ``± sd``; None: no spread anywhere
    spread: np.ndarray | None = None
    #: a test-time cell's stream in words (``[row, column]``; "" elsewhere); None: no test-time cell
    streams: np.ndarray | None = None

    @property
    def metric_names(self) -> list[str]:
        return [metric_label(m, self.tpr) for m in self.metrics]

    def _sd(self, i: int, j: int, k: int) -> float:
        return math.nan if self.spread is None else float(self.spread[i, j, k])

    def _num(self, i: int, j: int, k: int) -> tuple[str, str]:
        x, lo, hi = self.values[i, j, k], self.low[i, j, k], self.high[i, j, k]
        if math.isnan(x):
            return "", ""
        ci = f"[{100 * lo:.2f}, {100 * hi:.2f}]" if self.intervals and not (math.isnan(lo) or math.isnan(hi)) else ""
        return f"{100 * x:.2f}", ci

    def _heads(self) -> list[str]:
        multi = len(self.metrics) > 1
        return [f"{c} {n}" if multi else c for c in self.columns for n in (self.metric_names if multi else [""])]

    def to_markdown(self) -> str:
        """A Markdown table (percent; bold as the caption says) with the caption and notes below."""
        title = " / ".join(self.row_axes)
        lines = [
            "| " + " | ".join([title, *(h.strip() for h in self._heads())]) + " |",
            "|" + "---|" * (1 + len(self.columns) * len(self.metrics)),
        ]
        for i, name in enumerate(self.index):
            cells = []
            for j in range(len(self.columns)):
                for k in range(len(self.metrics)):
                    v, ci = self._num(i, j, k)
                    v = f"**{v}**" if v and self.bold[i, j, k] else (v or "-")
                    sd = self._sd(i, j, k)
                    cells.append(f"{v} {ci}".strip() + ("" if math.isnan(sd) else f" ± {100 * sd:.2f}"))
            lines.append("| " + " | ".join([name, *cells]) + " |")
        return "\n".join(lines + ["", self.full_caption()]) + "\n"

    def full_caption(self) -> str:
        """The caption: the user's text, then what the numbers are (notes)."""
        return " ".join(x for x in [self.caption.strip(), *self.notes] if x)

    def to_latex(self, *, siunitx: bool = False, wide: bool = False) -> str:
        # long: the header rows, the value rows and the interval rows of one tabular
        """A booktabs table for a two-column paper: a short caption, the details as table notes below,
        each interval (or spread) in small type under its value, shrunk to the column where it is
        wider (``wide``: ``table*`` across both columns); ASCII only. ``siunitx``: ``S`` columns
        (``\\bfseries`` for bold: needs ``\\sisetup{detect-weight=true}``)."""
        esc = latex_escape
        nm = len(self.metrics)
        spec = "l" + ("S[table-format=3.2]" if siunitx else "r") * (len(self.columns) * nm)
        head = (lambda s: f"{{{stacked_head(s)}}}") if siunitx else stacked_head
        title = esc(" / ".join(self.row_axes))
        lines = [f"\\begin{{tabular}}{{@{{}}{spec}@{{}}}}", "\\toprule"]
        if nm > 1:
            lines.append(
                " & ".join([title, *(f"\\multicolumn{{{nm}}}{{c}}{{{stacked_head(c)}}}" for c in self.columns)])
                + " \\\\"
            )
            lines.append(
                " ".join(f"\\cmidrule(lr){{{2 + j * nm}-{1 + (j + 1) * nm}}}" for j in range(len(self.columns)))
            )
            lines.append(" & ".join(["", *(head(n) for _ in self.columns for n in self.metric_names)]) + " \\\\")
        else:
            lines.append(" & ".join([title, *(head(c) for c in self.columns)]) + " \\\\")
        lines.append("\\midrule")
        for i, name in enumerate(self.index):
            if self.summary_rows[i] and (i == 0 or not self.summary_rows[i - 1]):
                lines.append("\\midrule")
            cells, under = [], []
            for j in range(len(self.columns)):
                for k in range(nm):
                    v, _ = self._num(i, j, k)
                    ci = self._narrow_interval(i, j, k)
                    bold = bool(v) and bool(self.bold[i, j, k])
                    if siunitx:
                        cells.append(("\\bfseries " + v if bold else v) if v else "{--}")
                    else:
                        cells.append((f"\\textbf{{{v}}}" if bold else v) if v else "--")
                    under.append(f"{{\\scriptsize {ci}}}" if ci else "")
            lines.append(" & ".join([esc(name), *cells]) + " \\\\")
            if any(under):
                lines.append(" & ".join(["", *under]) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        needs = "\\usepackage{booktabs,siunitx} and \\sisetup{detect-weight=true}" if siunitx else ""
        notes = [n.replace("Brackets: ", "In small type under a value (low--high): ") for n in self.table_notes()]
        return latex_float(lines, self.short_caption(), self.label or "tab:results", notes, wide=wide, needs=needs)

    def _narrow_interval(self, i: int, j: int, k: int) -> str:
        """The interval (or the spread) under a LaTeX cell, to one decimal: a column's width."""
        lo, hi, sd = self.low[i, j, k], self.high[i, j, k], self._sd(i, j, k)
        if self.intervals and not (math.isnan(lo) or math.isnan(hi) or math.isnan(self.values[i, j, k])):
            return f"{100 * lo:.1f}--{100 * hi:.1f}"
        return "" if math.isnan(sd) else f"$\\pm${100 * sd:.1f}"

    def short_caption(self) -> str:
        """The caption a paper prints: the user's text, the metric, what is fixed; the rest are notes."""
        return " ".join(x for x in [self.caption.strip(), *(n for n in self.notes if _in_caption(n))] if x)

    def table_notes(self) -> list[str]:
        """The notes printed under the table (everything :meth:`short_caption` leaves out)."""
        return [n for n in self.notes if not _in_caption(n)]

    def to_csv(self) -> str:
        """One line per table row: the row's axis values, then per column and metric the value, its
        interval, whether it is bold (percent), the sd where any; a test-time cell's stream in the
        column's ``:stream``; the caption is not part of the CSV."""
        keys = ["row"]
        sd = self.spread is not None and bool(np.any(~np.isnan(self.spread)))
        for c in self.columns:
            for m in self.metrics:
                keys += [f"{c}:{m}", f"{c}:{m}:ci_low", f"{c}:{m}:ci_high", f"{c}:{m}:bold"]
                keys += [f"{c}:{m}:sd"] if sd else []
            keys += [f"{c}:stream"] if self.streams is not None else []
        out = []
        for i, name in enumerate(self.index):
            row: dict[str, Any] = {"row": name}
            for j, c in enumerate(self.columns):
                if self.streams is not None:
                    row[f"{c}:stream"] = self.streams[i, j]
                for k, m in enumerate(self.metrics):
                    for key, arr in (("", self.values), (":ci_low", self.low), (":ci_high", self.high)):
                        x = arr[i, j, k]
                        row[f"{c}:{m}{key}"] = "" if math.isnan(x) else repr(round(100 * float(x), 10))
                    row[f"{c}:{m}:bold"] = bool(self.bold[i, j, k])
                    if sd:
                        x = self._sd(i, j, k)
                        row[f"{c}:{m}:sd"] = "" if math.isnan(x) else repr(round(100 * x, 10))
            out.append(row)
        return csv_text(out, keys)

    def render(self, fmt: str, *, siunitx: bool = False, wide: bool = False) -> str:
        """``fmt``: ``md``, ``tex`` (``wide``: ``table*``) or ``csv``."""
        if fmt == "md":
            return self.to_markdown()
        if fmt == "tex":
            return self.to_latex(siunitx=siunitx, wide=wide)
        if fmt == "csv":
            return self.to_csv()
        raise InputError(f"unknown table format {fmt!r}; choose md, tex or csv")


def _caption_notes(
    sel: Sequence[Mapping[str, Any]],
    t: Table,
    axes: tuple[str, ...],
    bold_text: str,
    failed: Mapping[str, str],
    means: list[str],
) -> list[str]:
    # long: one sentence per fact a reader of the table needs
    first = sel[0]
    marks = {str(r["method"]): kind_marks(r, TEST_TIME_MARK) for r in sel if kind_marks(r, TEST_TIME_MARK)}
    tt_notes = test_time_notes(sel, t.metrics)
    notes = [", ".join(t.metric_names) + " in %."]
    convs = list(dict.fromkeys(str(r.get("convention", "paper")) for r in sel))
    for c in convs:
        notes.append(f"{c} convention; threshold: {THRESHOLD_RULES.get(c, c)}; TPR {first.get('tpr', 0.95):g}.")
    n_id = sorted({int(r["n_id"]) for r in sel if r.get("n_id") is not None})
    n_ood = {str(r["ood_set"]): str(r["n_ood"]) for r in sel if r.get("ood_set") != MEAN and r.get("n_ood") is not None}
    in_all = sorted({int(r["n_ood"]) for r in sel if r.get("ood_set") == MEAN and r.get("n_ood") is not None})
    if in_all:  # the mean over the sets: its images are all the sets' together
        n_ood["in all the sets of the mean"] = ", ".join(map(str, in_all))
    notes.append(f"n ID {', '.join(map(str, n_id))}; n OOD " + ", ".join(f"{k} {v}" for k, v in n_ood.items()) + ".")
    tpl = list(dict.fromkeys(str(r.get("templates", "?")) for r in sel))
    notes.append(f"Templates: {', '.join(tpl)}.")
    weights = dict.fromkeys(
        f"{r['model']} ({'RANDOM weights' if r.get('random_weights') else r.get('pretrained') or '?'})" for r in sel
    )
    notes.append(f"Weights: {', '.join(weights)}.")
    for d in ("model", "vocabulary", "method", "ood_set"):
        vals = list(
            dict.fromkeys(str(r.get(d, "")) for r in sel if not (d in ("vocabulary", "method") and _is_baseline(r)))
        )
        if d not in axes and len(vals) == 1 and vals[0]:
            name = {"ood_set": "OOD set"}.get(d, d.capitalize())
            mark = marks.get(vals[0], "") if d == "method" else ""
            notes.append(f"{name}: {vals[0] if vals[0] != MEAN else 'mean over the OOD sets'}{mark}.")
    base = sorted({str(r["method"]) for r in sel if _is_baseline(r)})
    if base:
        notes.append(f"Without a vocabulary (baseline): {', '.join(base)}.")
    if any(str(r.get("ood_set")) == MEAN for r in sel):
        notes.append(
            "mean (OOD set): mean over the OOD sets; its interval resamples each set's OOD images within the set."
        )
    notes += means
    if t.intervals:
        notes.append("Brackets: 95% bootstrap intervals over the OOD images.")
    notes += tt_notes[1:] + [f"{n[:1].upper()}{n[1:]}." for n in authors_notes(sel)]  # and authors' settings
    notes.append(bold_text)
    if any("aupr" in m for m in t.metrics):
        notes.append(f"AUPR as {str(first.get('aupr_method', 'average_precision')).replace('_', ' ')}.")
    bad = sorted({str(r["vocabulary"]) for r in sel if r.get("deployable") is False and r.get("vocabulary")})
    if bad:
        notes.append(f"NOT deployable (oracle/transductive, a bound, not a result): {', '.join(bad)}.")
    notes += [f"Caveat: {c}." for c in caveat_notes(sel)]
    notes += published_notes(sel)  # each published figure's kind, source, benchmark and ID split
    notes += tt_notes[:1]
    for model, why in failed.items():
        notes.append(f"{model}: cells failed ({why}); not in the table, nor in its means.")
    if any(r.get("random_weights") for r in sel):
        notes.append(RANDOM_WEIGHTS_WARNING + ".")
    return notes


def test_time_notes(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[str]:
    """A caption's sentences on the test-time entries of ``rows`` (none without one): what ``[tt]`` means,
    each method's stream(s) and whether the table mixes kinds; then, where an entry is a spread over
    stream seeds, what its ``±`` is; where an entry was tuned on the test sets, what its mark means. Tables
    and grid pivots say it alike."""
    streams: dict[str, dict[str, None]] = {}  # a test-time method -> its streams in words
    for r in rows:
        if is_test_time(r):
            streams.setdefault(str(r["method"]), {})[stream_words(r)] = None
    tuned = TEST_TUNED_NOTE if any(is_test_tuned(r) for r in rows) else ""
    if not streams:
        return [tuned] if tuned else []
    said = "; ".join(f"{m} (stream {' | '.join(w)})" for m, w in sorted(streams.items()))
    mixed = len(streams) < len({str(r["method"]) for r in rows})
    out = [
        f"[tt] test-time (scores depend on the test stream seen): {said}"
        + ("; the table mixes them with other kinds." if mixed else ".")
    ]
    out += [tuned] if tuned else []
    if any(seed_sd(r, m) for r in rows for m in metrics):
        out.append("± after a [tt] value: the sample sd over its stream seeds (the value: their mean), no interval.")
    return out


def _key(r: Mapping[str, Any], axes: tuple[str, ...]) -> str:
    return " / ".join(row_label(r, a) for a in axes)


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
    """The table of ``metric`` (one name or several, side by side) with ``rows_by`` x ``cols_by``.

    ``where`` fixes the other axes (``{"ood_set": "mean", "convention": "paper"}``). ``mean_rows``
    adds the mean over the row entries (the paper's mean over VLMs), ``mean_cols`` the mean over the
    column entries; ``row_groups``/``col_groups`` add one mean per named group of entries (near/far
    OOD); each mean within one kind of entry unless ``mix_kinds``. ``bold="paired"`` marks the
    winner of each column (``bold_by="cols"``) or row (``"rows"``) by a paired bootstrap over the
    per-image ``scores`` (``n_boot`` draws from ``seed``, interval at ``level``); without ``scores``
    nothing is bold. ``failed``: model -> reason, noted in the caption.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    bold = _check_rules(metrics, bold, bold_by, ties)
    ra, ca = _axes(rows_by, "rows"), _axes(cols_by, "cols")
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
        means.append(_mean_note(made, "column", ", ".join(members), "model" in ca))
    for name, members in row_sets.items():
        made = _summary(arrays, index, summary_rows, name, members, axis=0, mix=mix_kinds, sd="model" in ra)
        what = "the " + " / ".join(ra) + " entries" if name == "mean" and mean_rows else ", ".join(members)
        means.append(_mean_note(made, "row", what, "model" in ra))
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
    t.notes = _caption_notes(sel, t, ra + ca, bold_note(marker, bold_by, ties, entry), dict(failed or {}), means)
    t.caption = _dedupe_caption(caption, t.metric_names)
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
    index = list(dict.fromkeys(_key(r, ra) for r in sel))
    columns = list(dict.fromkeys(_key(r, ca) for r in sel if not (ca == ("ood_set",) and r["ood_set"] == MEAN)))
    if ca == ("ood_set",) and any(r["ood_set"] == MEAN for r in sel):
        columns.append(MEAN)  # the bootstrap mean over the OOD sets: last, with its interval
    shape = (len(index), len(columns), len(metrics))
    values, low, high, spread = (np.full(shape, np.nan) for _ in range(4))
    kinds = np.full(shape[:2], "", dtype=object)
    cells: dict[tuple[int, int], Mapping[str, Any]] = {}
    for r in sel:
        i, j = index.index(_key(r, ra)), columns.index(_key(r, ca))
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


def _mean_note(made: Sequence[tuple[str, str]], what: str, over: str, sd: bool) -> str:
    """The caption's sentence on one summary: plain mean, within which kind, with the spread."""
    split = len(made) > 1
    names = "; ".join(f"{n}" + (f" over the {KIND_LABELS.get(k, k)} entries only" if split else "") for n, k in made)
    return (
        f"{names} ({what}): plain mean over {over}"
        + ("; kinds are never averaged together" if split else "")
        + ("; ± the standard deviation over the models" if sd else "")
        + "; no interval; '-' where a member is missing."
    )


def _in_caption(note: str) -> bool:
    """Whether a note belongs in a short caption: the metric, and what the table fixes."""
    return note.endswith(" in %.") or note.startswith(
        ("Model: ", "Vocabulary: ", "Method: ", "OOD set: ", "Published figures", "[published: ")
    )


def _dedupe_caption(caption: str, names: Sequence[str]) -> str:
    """A caption that only names the metric says nothing the notes do not ("AUROC AUROC (%)")."""
    return (
        ""
        if caption.strip().rstrip(".").lower() in {n.lower() for n in names} | {f"{n.lower()} (%)" for n in names}
        else caption
    )


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
