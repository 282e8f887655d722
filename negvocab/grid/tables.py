"""The tables a paper prints from a grid: the tidy long table, pivots, comparisons, the M sweep.

:class:`GridResult` holds one row per cell (model, vocabulary, OOD set, method, convention) plus a
``mean`` row over the OOD sets per (model, vocabulary, method, convention). ``pivot`` gives models x
OOD sets (+ mean) for one metric with the best value per column marked, as Markdown or LaTeX
(booktabs); ``comparisons`` states in words how two vocabularies compare across models;
``plot_sweep`` overlays the FPR-vs-M curve of each model for a vocabulary built with several sizes.
Rows from random weights or non-deployable vocabularies are marked where shown.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import atomic_path, write_json, write_text
from negvocab.errors import InputError
from negvocab.textfiles import csv_text

if TYPE_CHECKING:
    from negvocab.grid.config import GridConfig

logger = logging.getLogger(__name__)

__all__ = ["COLUMNS", "GridResult", "Pivot", "RANDOM_NOTE"]

COLUMNS = [
    "model", "pretrained", "random_weights", "vocabulary", "vocab_source", "vocab_size", "vocab_hash",
    "deployable", "caveats", "ood_set", "method", "params", "convention", "tpr",
    "fpr", "fpr_ci_low", "fpr_ci_high", "auroc", "auroc_ci_low", "auroc_ci_high",
    "aupr_in", "aupr_in_ci_low", "aupr_in_ci_high", "aupr_out", "aupr_out_ci_low", "aupr_out_ci_high",
    "aupr_method", "n_id", "n_ood", "templates", "cell",
]  # fmt: skip
METRICS = {"fpr": ("FPR@{tpr}", False), "auroc": ("AUROC", True), "aupr_in": ("AUPR-In", True), "aupr_out": ("AUPR-Out", True)}
RANDOM_NOTE = "RANDOM WEIGHTS: these numbers are meaningless (a dry run of the pipeline, not a result)"
_GROUP = ("model", "vocabulary", "method", "convention")


def _mean_rows(rows: Sequence[Mapping[str, Any]], means: Mapping[tuple[str, ...], Mapping[str, float]] | None = None) -> list[dict[str, Any]]:
    """One ``ood_set = "mean"`` row per (model, vocabulary, method, convention) over its OOD sets;
    its intervals from ``means`` (bootstrap of the mean, see :func:`negvocab.grid.run.mean_intervals`)."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in _GROUP), []).append(r)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        row = {k: members[0].get(k) for k in COLUMNS}
        for k in ("fpr", "auroc", "aupr_in", "aupr_out"):
            row[k] = float(np.mean([m[k] for m in members]))
        ci = (means or {}).get(tuple(row[k] for k in _GROUP), {})
        for k in [c for c in COLUMNS if c.endswith(("_ci_low", "_ci_high"))]:
            row[k] = ci.get(k, math.nan)  # an interval of the mean is not the mean of intervals
        row.update(ood_set="mean", n_ood=int(sum(m["n_ood"] for m in members)), cell="")
        out.append(row)
    return out


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

    @property
    def best(self) -> np.ndarray:
        v = np.where(np.isnan(self.values), np.inf if not self.higher_is_better else -np.inf, self.values)
        target = v.max(0) if self.higher_is_better else v.min(0)
        return np.isclose(v, target[None, :], rtol=0, atol=1e-12) & ~np.isnan(self.values)

    def _cells(self, bold: str) -> list[list[str]]:
        best = self.best
        return [
            [("-" if math.isnan(x) else (bold.format(f"{100 * x:.2f}") if best[i, j] else f"{100 * x:.2f}")) for j, x in enumerate(row)]
            for i, row in enumerate(self.values)
        ]

    def to_markdown(self) -> str:
        """A Markdown table (percent; best per column in bold) with its notes below."""
        head = f"| {self.title or 'model'} | " + " | ".join(self.columns) + " |"
        lines = [head, "|" + "---|" * (len(self.columns) + 1)]
        for name, cells in zip(self.index, self._cells("**{}**"), strict=True):
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        return "\n".join(lines + [""] + [f"{n}" for n in self.notes]) + "\n"

    def to_latex(self, caption: str | None = None, label: str | None = None) -> str:
        """A LaTeX booktabs table (percent; best per column in bold; needs ``\\usepackage{booktabs}``)."""
        esc = _latex_escape
        lines = ["\\begin{table}[t]", "\\centering"]
        if caption or self.notes:
            lines.append(f"\\caption{{{esc(caption or '')}{' ' if caption else ''}{esc(' '.join(self.notes))}}}")
        if label:
            lines.append(f"\\label{{{label}}}")
        lines += [f"\\begin{{tabular}}{{l{'r' * len(self.columns)}}}", "\\toprule"]
        lines.append(" & ".join([esc(self.title or "model"), *(esc(c) for c in self.columns)]) + " \\\\")
        lines.append("\\midrule")
        for name, cells in zip(self.index, self._cells("\\textbf{{{}}}"), strict=True):
            lines.append(" & ".join([esc(name), *cells]) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(lines) + "\n"


def _latex_escape(text: str) -> str:
    return re.sub(r"([&%$#_{}])", r"\\\1", text).replace("~", "\\textasciitilde{}").replace("^", "\\^{}")


class GridResult:
    """The rows of a grid (one per cell) and what to make of them; see the module docstring."""

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        config: GridConfig | None = None,
        *,
        stats: Mapping[str, Any] | None = None,
        out_dir: Path | None = None,
        status: Mapping[str, Any] | None = None,
        means: Mapping[tuple[str, ...], Mapping[str, float]] | None = None,
    ) -> None:
        self.rows = [dict(r) for r in rows]
        self.means = dict(means or {})
        self.config = config
        self.stats = dict(stats or {})
        self.out_dir = out_dir
        self.status = dict(status or {})

    def __repr__(self) -> str:
        models = len({r["model"] for r in self.rows})
        rw = ", RANDOM weights" if self.random_weights else ""
        return f"GridResult({len(self.rows)} cells, {models} models{rw})"

    @property
    def random_weights(self) -> bool:
        return any(r.get("random_weights") for r in self.rows)

    def table(self, *, mean: bool = True) -> list[dict[str, Any]]:
        """The tidy long table: the cell rows, then the ``ood_set = "mean"`` rows (``mean=True``)."""
        return [*self.rows, *(_mean_rows(self.rows, self.means) if mean else [])]

    def _select(self, fixed: Mapping[str, Any], free: str) -> list[dict[str, Any]]:
        rows = self.table()
        for dim in ("vocabulary", "method", "convention", "model"):
            if dim == free:
                continue
            values = list(dict.fromkeys(r[dim] for r in rows))
            want = fixed.get(dim)
            if want is None:
                if len(values) > 1:
                    raise InputError(f"the grid has several {dim} values ({', '.join(map(str, values))}); pass {dim}=...")
                continue
            if want not in values:
                raise InputError(f"no {dim} {want!r} in the grid; it has {', '.join(map(str, values))}")
            rows = [r for r in rows if r[dim] == want]
        return rows

    def pivot(
        self,
        metric: str = "fpr",
        *,
        rows: str = "model",
        vocabulary: str | None = None,
        method: str | None = None,
        convention: str | None = None,
        model: str | None = None,
    ) -> Pivot:
        """``metric`` with ``rows`` (model, vocabulary or method) x OOD sets + mean; the other
        dimensions fixed by the keyword arguments (needed where the grid has several values)."""
        if metric not in METRICS:
            raise InputError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        if rows not in ("model", "vocabulary", "method"):
            raise InputError(f"rows must be model, vocabulary or method, got {rows!r}")
        sel = self._select({"vocabulary": vocabulary, "method": method, "convention": convention, "model": model}, rows)
        if not sel:
            raise InputError("no finished cells to tabulate")
        index = list(dict.fromkeys(r[rows] for r in sel))
        columns = [c for c in dict.fromkeys(r["ood_set"] for r in sel) if c != "mean"]
        columns += ["mean"] if any(r["ood_set"] == "mean" for r in sel) else []
        values = np.full((len(index), len(columns)), np.nan)
        for r in sel:
            values[index.index(r[rows]), columns.index(r["ood_set"])] = r[metric]
        name, higher = METRICS[metric]
        tpr = int(round(100 * sel[0]["tpr"]))
        notes = [f"{name.format(tpr=tpr)} (%), {sel[0]['convention']} convention; best per column in bold."]
        if metric.startswith("aupr"):
            notes.append(f"AUPR as {sel[0]['aupr_method'].replace('_', ' ')}.")
        bad = sorted({r["vocabulary"] for r in sel if not r.get("deployable", True)})
        if bad:
            notes.append(f"Not deployable (oracle/transductive): {', '.join(bad)}.")
        if any(r.get("random_weights") for r in sel):
            notes.append(RANDOM_NOTE)
        fixed = [f"{d}={sel[0][d]}" for d in ("vocabulary", "method", "model") if d != rows and len({r[d] for r in sel}) == 1]
        if fixed:
            notes.append("(" + ", ".join(fixed) + ")")
        if rows == "vocabulary":  # the row itself says so: bold may fall on an oracle row
            index = [f"{i} (NOT deployable)" if i in bad else i for i in index]
        return Pivot(metric, [str(i) for i in index], columns, values, higher, title=rows, notes=notes)

    def to_latex(self, metric: str = "fpr", caption: str | None = None, label: str | None = None, **pivot: Any) -> str:
        """:meth:`pivot` as a LaTeX booktabs table."""
        return self.pivot(metric, **pivot).to_latex(caption=caption, label=label)

    def comparisons(self, metric: str = "fpr", ood_set: str = "mean") -> list[str]:
        """Sentences comparing each pair of vocabularies across models (per method and convention),
        e.g. "gpt beats wordnet@5000 for 8 of 8 models (FPR@95 on mean, paper): mean difference
        -3.10 points (range -5.20 to -0.40)"."""
        name, higher = METRICS[metric]
        rows = [r for r in self.table() if r["ood_set"] == ood_set and r["vocabulary"]]
        bad = {r["vocabulary"] for r in rows if not r.get("deployable", True)}
        shown = lambda v: f"{v} (NOT deployable)" if v in bad else v  # noqa: E731
        out = []
        for meth, conv in dict.fromkeys((r["method"], r["convention"]) for r in rows):
            mine = [r for r in rows if r["method"] == meth and r["convention"] == conv]
            vocabs = list(dict.fromkeys(r["vocabulary"] for r in mine))
            value = {(r["model"], r["vocabulary"]): r[metric] for r in mine}
            for a, b in combinations(vocabs, 2):
                models = [m for m in dict.fromkeys(r["model"] for r in mine) if (m, a) in value and (m, b) in value]
                if not models:
                    continue
                diff = np.array([value[(m, a)] - value[(m, b)] for m in models]) * 100
                a_wins = int(np.sum(diff > 0 if higher else diff < 0))
                b_wins = int(np.sum(diff < 0 if higher else diff > 0))
                win, lose, k, d = (a, b, a_wins, diff) if a_wins >= b_wins else (b, a, b_wins, -diff)
                label = name.format(tpr=int(round(100 * mine[0]["tpr"])))
                out.append(
                    f"{shown(win)} beats {shown(lose)} for {k} of {len(models)} models ({label} on {ood_set}, {meth}, {conv}): "
                    f"mean difference {d.mean():+.2f} points (range {d.min():+.2f} to {d.max():+.2f})"
                )
        if out and self.random_weights:
            out.append(RANDOM_NOTE)
        return out

    def plot_sweep(self, path: str | os.PathLike[str], *, vocabulary: str, method: str | None = None, convention: str | None = None, ood_set: str = "mean") -> Path:
        """FPR against pool size M for ``vocabulary@M`` entries, one line per model (log x axis);
        the format follows the suffix (.pdf, .svg, .png)."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure

        rows = [r for r in self.table() if r["vocabulary"].startswith(f"{vocabulary}@") and r["ood_set"] == ood_set]
        rows = [r for r in rows if (method is None or r["method"] == method) and (convention is None or r["convention"] == convention)]
        if not rows:
            raise InputError(f"no sized entries {vocabulary}@M on {ood_set} in the grid")
        meth, conv = rows[0]["method"], rows[0]["convention"]
        rows = [r for r in rows if r["method"] == meth and r["convention"] == conv]
        fmt = Path(path).suffix.lstrip(".").lower()
        if fmt not in ("pdf", "svg", "png"):
            raise InputError(f"{path}: use .pdf, .svg or .png")
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.subplots()
        sizes_all: set[int] = set()
        for i, model in enumerate(dict.fromkeys(r["model"] for r in rows)):
            pts = sorted((int(r["vocabulary"].rsplit("@", 1)[1]), r["fpr"]) for r in rows if r["model"] == model)
            sizes_all.update(m for m, _ in pts)
            ax.plot([m for m, _ in pts], [100 * f for _, f in pts], marker="o", color=f"C{i % 10}", label=model)
        ax.set_xscale("log")
        ms = sorted(sizes_all)
        ax.set_xticks(ms, [f"{m:,}" for m in ms])
        ax.minorticks_off()
        ax.set_xlabel("pool size M")
        ax.set_ylabel(f"FPR@{int(round(100 * rows[0]['tpr']))} (%), {conv} convention, {ood_set}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        title = f"{vocabulary}: first M labels, {meth}"
        ax.set_title(title + ("  [RANDOM WEIGHTS: meaningless]" if self.random_weights else ""), fontsize=9)
        with atomic_path(path, suffix=f".{fmt}") as tmp:
            fig.savefig(tmp, format=fmt)
        return Path(path)

    def write(self, out_dir: str | os.PathLike[str] | None = None) -> Path:
        """Write ``table.csv`` (+ ``table.parquet`` with pyarrow), one pivot per (vocabulary, method,
        convention) as ``pivots.md`` / ``pivots.tex``, ``comparisons.md``, the M sweeps
        (``sweep_<vocabulary>.pdf``/``.svg``) and ``grid.json`` (last; the run's stats)."""
        out = Path(out_dir or self.out_dir or ".")
        out.mkdir(parents=True, exist_ok=True)
        table = self.table()
        write_text(out / "table.csv", csv_text(table, COLUMNS))
        self._write_parquet(out / "table.parquet", table)
        md, tex = [], []
        for vocab, meth, conv in dict.fromkeys((r["vocabulary"], r["method"], r["convention"]) for r in table):
            try:
                p = self.pivot("fpr", vocabulary=vocab, method=meth, convention=conv)
            except InputError:
                continue
            head = f"{vocab or '(no vocabulary)'} / {meth} / {conv}"
            md.append(f"### {head}\n\n{p.to_markdown()}")
            tex.append(f"% {head}\n{p.to_latex(caption=head)}")
        write_text(out / "pivots.md", "\n".join(md))
        write_text(out / "pivots.tex", "\n".join(tex))
        write_text(out / "comparisons.md", "\n".join(f"- {s}" for s in self.comparisons()) + "\n")
        swept = dict.fromkeys(r["vocabulary"].rsplit("@", 1)[0] for r in table if "@" in r["vocabulary"])
        sets = list(dict.fromkeys(r["ood_set"] for r in self.rows))
        on = sets[0] if len(sets) == 1 else "mean"  # one OOD set: no mean row, the sweep is over that set
        for vocab in swept:
            for ext in ("pdf", "svg"):
                self.plot_sweep(out / f"sweep_{vocab}.{ext}", vocabulary=vocab, ood_set=on)
        stats = {k: (v if k != "embed_calls" else {f"{m} / {s}": n for (m, s), n in v.items()}) for k, v in self.stats.items()}
        doc = {"stats": stats, "status": self.status, "random_weights": self.random_weights}
        if self.random_weights:
            doc["warning"] = RANDOM_NOTE
        write_json(out / "grid.json", json.loads(json.dumps(doc, default=str)))
        return out

    @staticmethod
    def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ModuleNotFoundError:
            logger.warning("table.parquet not written: pip install 'negvocab[grid]' (pyarrow)")
            return
        cols = {c: [r.get(c) for r in rows] for c in COLUMNS}
        with atomic_path(path, suffix=".parquet") as tmp:
            pq.write_table(pa.table(cols), tmp)
