"""A paper table once built: values ``[row, column, metric]`` with intervals, bold marks, a caption and
notes, in Markdown, LaTeX (a booktabs float) or CSV. :func:`negvocab.report.tables.build_table` makes one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.textfiles import csv_text
from negvocab.evaluation.compare import metric_label
from negvocab.report.latex import latex_escape, latex_float, stacked_head

__all__ = ["Table"]


@dataclass
class Table:
    """Values ``[row, column, metric]`` in [0, 1] with intervals and bold marks.

    Made by :func:`negvocab.report.tables.build_table` (whose module docstring says how the means and
    bold marks are decided); shown by :meth:`render` as Markdown, LaTeX or CSV, in percent.

    Parameters
    ----------
    metrics : list of str
        The metric of each slice along the last axis (``fpr``, ``auroc``, ``aupr_in``, ...).
    row_axes, col_axes : tuple of str
        The axes the rows and the columns stand for (``("model",)``, ``("ood_set",)``, ...).
    index, columns : list of str
        The row and column entries as shown, summaries (means, group means) included.
    values : ndarray, float [rows, columns, metrics]
        The values in [0, 1]; NaN where a cell has none.
    low, high : ndarray, float [rows, columns, metrics]
        Each value's interval (NaN where none: a mean of cells has none).
    bold : ndarray, bool [rows, columns, metrics]
        Which values are bold (the paired test's winners; summaries never).
    tpr : float
        The TPR of the FPR metric (0.95: FPR@95), named in the metric heads.
    summary_rows, summary_cols : list of bool
        Which rows and columns are summaries (a rule is drawn above the first summary row in LaTeX).
    intervals : bool, default False
        Whether the intervals are shown (in brackets; in small type under the value in LaTeX).
    caption : str, default ""
        The user's caption, printed before the notes.
    label : str, default ""
        The LaTeX label (``tab:results`` where empty).
    notes : list of str, default []
        What the numbers are, one sentence each (``negvocab.report.table_notes.caption_notes``); the
        short caption takes the metric and what is fixed, the rest are printed under the table.
    spread : ndarray, float [rows, columns, metrics], optional
        The standard deviation shown as ``± sd`` beside a mean over models, or beside a test-time entry
        over several stream seeds (NaN elsewhere); None where no cell has one.
    streams : ndarray, object [rows, columns], optional
        A test-time cell's stream in words ("" elsewhere), written to the CSV; None without a test-time cell.
    """

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
    spread: np.ndarray | None = None
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


def _in_caption(note: str) -> bool:
    """Whether a note belongs in a short caption: the metric, and what the table fixes."""
    return note.endswith(" in %.") or note.startswith(
        ("Model: ", "Vocabulary: ", "Method: ", "OOD set: ", "Published figures", "[published: ")
    )
