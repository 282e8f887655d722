"""A grid's pivot: one metric as rows (models, vocabularies or methods) x OOD sets + mean, in Markdown or
LaTeX, bold where the paired test found a winner, a test-time entry's spread over its stream seeds as ±."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from negvocab.evaluation.compare import METRIC_NAMES
from negvocab.report import tables as T

__all__ = ["METRICS", "PIVOT_METRICS", "Pivot"]

METRICS = {
    "fpr": ("FPR@{tpr}", False),
    "auroc": ("AUROC", True),
    "aupr_in": ("AUPR-In", True),
    "aupr_out": ("AUPR-Out", True),
}
#: what a pivot may show besides: ID accuracy and CCR, where the cells hold them ('-' where not)
PIVOT_METRICS = {**METRICS, **{k: v for k, v in METRIC_NAMES.items() if k not in METRICS}}


@dataclass
class Pivot:
    """One metric as rows x columns (OOD sets + mean), in [0, 1]; ``best`` marks each column's best."""

    metric: str
    index: list[str]
    columns: list[str]
    values: np.ndarray
    higher_is_better: bool
    title: str = ""
    notes: list[str] = field(default_factory=list)
    #: bold marks from the paired test (:mod:`negvocab.report.significance`); None: nothing bold
    bold: np.ndarray | None = None
    #: a test-time entry's sample sd over its stream seeds (NaN elsewhere), shown as ``± sd``; None: none
    spread: np.ndarray | None = None

    @property
    def best(self) -> np.ndarray:
        """The best point estimate per column (untested: not what the tables mark bold; see ``bold``)."""
        v = np.where(np.isnan(self.values), np.inf if not self.higher_is_better else -np.inf, self.values)
        target = v.max(0) if self.higher_is_better else v.min(0)
        return np.isclose(v, target[None, :], rtol=0, atol=1e-12) & ~np.isnan(self.values)

    def _cells(self, bold: str, pm: str = "±") -> list[list[str]]:
        best = self.bold if self.bold is not None else np.zeros(self.values.shape, dtype=bool)
        sd = self.spread if self.spread is not None else np.full(self.values.shape, np.nan)
        return [
            [
                ("-" if math.isnan(x) else (bold.format(f"{100 * x:.2f}") if best[i, j] else f"{100 * x:.2f}"))
                + ("" if math.isnan(x) or math.isnan(sd[i, j]) else f" {pm} {100 * sd[i, j]:.2f}")
                for j, x in enumerate(row)
            ]
            for i, row in enumerate(self.values)
        ]

    def to_markdown(self) -> str:
        """A Markdown table (percent; bold where the paired test found a winner) with its notes below."""
        head = f"| {self.title or 'model'} | " + " | ".join(self.columns) + " |"
        lines = [head, "|" + "---|" * (len(self.columns) + 1)]
        for name, cells in zip(self.index, self._cells("**{}**"), strict=True):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines + [""] + [f"{n}" for n in self.notes]) + "\n"

    def to_latex(self, caption: str | None = None, label: str | None = None, *, wide: bool = False) -> str:
        """A LaTeX booktabs table (percent; bold as :meth:`to_markdown`; needs ``\\usepackage{booktabs}``):
        a short caption, the notes under the table (:func:`negvocab.report.tables.latex_float`)."""
        esc = T.latex_escape
        name = PIVOT_METRICS[self.metric][0].split("@")[0].lower()
        if (
            caption
            and caption.strip().rstrip(".").lower() in (name, f"{name} (%)")
            or (caption or "").lower().startswith("fpr@")
            and name == "fpr"
        ):
            caption = None  # the notes name the metric already: "AUROC AUROC (%)" said it twice
        lines = [f"\\begin{{tabular}}{{@{{}}l{'r' * len(self.columns)}@{{}}}}", "\\toprule"]
        lines.append(" & ".join([esc(self.title or "model"), *(esc(c) for c in self.columns)]) + " \\\\")
        lines.append("\\midrule")
        for name, cells in zip(self.index, self._cells("\\textbf{{{}}}", "$\\pm$"), strict=True):
            lines.append(" & ".join([esc(name), *cells]) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        tag = re.sub(r"[^A-Za-z0-9]+", "-", self.metric + "-" + self.title).strip("-")
        short = " ".join(x for x in [caption or "", self.notes[0] if self.notes else ""] if x)
        return T.latex_float(lines, short, label or f"tab:{tag}", self.notes[1:], wide=wide)
