"""Tables as in the paper: any rows x columns of the tidy results rows, in Markdown, LaTeX or CSV.

:func:`build_table` takes tidy rows (a grid's :meth:`~negvocab.grid.tables.GridResult.table`, the
rows of ``score`` and ``sweep`` folders: :func:`negvocab.grid.tables.load_rows`) and lays one or
more metrics out as ``rows`` x ``cols``, each an axis out of (model, vocabulary, method, ood_set,
convention) or several joined; every other axis is fixed by ``where`` (or has one value). Methods
without a vocabulary (MCM, GL-MCM) sit beside the vocabularies as rows "mcm (no vocabulary)".
A mean row (``mean_rows``: the paper's mean over VLMs) and mean or group-mean columns
(``mean_cols``, ``col_groups``: near/far-OOD) are plain means of the cells, with no interval; the
``mean`` OOD set of a grid or score folder is the bootstrap mean with its interval. The best entry
per column is bold only when every other entry lies beyond its interval (``bold="interval"``);
ties: none bold (``ties="none"``) or all (``ties="all"``); the caption says which. Numbers in %.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.errors import InputError
from negvocab.evaluation.compare import (
    METRIC_NAMES,
    bootstrap_draws,
    comparison_sentence,
    metric_label,
    paired_bootstrap,
    paired_from_draws,
)
from negvocab.evaluation.row import interval
from negvocab.evaluation.rows import MEAN, RANDOM_WEIGHTS_WARNING, THRESHOLD_RULES
from negvocab.evaluation.stored import StoredScores, read_results_json, read_scores_npz, read_sweep_json
from negvocab.report.results import flat_row
from negvocab.textfiles import csv_text

__all__ = [
    "AXES", "BOLD_RULES", "ScoreGetter", "Table", "build_table", "comparisons", "folder_rows", "latex_escape",
    "row_label", "select_rows",
]  # fmt: skip

#: (model, vocabulary, method) -> (ID scores, OOD scores by set), or None where they are not stored
ScoreGetter = Callable[[str, str, str], "tuple[np.ndarray, dict[str, np.ndarray]] | None"]

AXES = ("model", "vocabulary", "method", "ood_set", "convention")
BOLD_RULES = ("interval", "point", "none")
_NO_VOCAB = " (no vocabulary)"


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return re.sub(r"([&%$#_{}])", r"\\\1", str(text)).replace("~", "\\textasciitilde{}").replace("^", "\\^{}")


def _axes(value: str | Sequence[str], what: str) -> tuple[str, ...]:
    axes = (value,) if isinstance(value, str) else tuple(value)
    for a in axes:
        if a not in AXES:
            raise InputError(f"{what}: unknown axis {a!r}; choose from {', '.join(AXES)}")
    if not axes:
        raise InputError(f"{what}: name at least one axis ({', '.join(AXES)})")
    return axes


def _is_baseline(r: Mapping[str, Any]) -> bool:
    return not r.get("vocabulary")


def row_label(r: Mapping[str, Any], axis: str) -> str:
    if axis == "vocabulary" and _is_baseline(r):
        return f"{r['method']}{_NO_VOCAB}"
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
        if dim == "vocabulary" and want == "":  # the methods without a vocabulary alone
            sel = [r for r in sel if _is_baseline(r)]
            continue
        if want is None:
            if len(values) > 1:
                raise InputError(
                    f"the rows have several {dim} values ({_shown(values)}); make {dim} an axis or fix one ({dim}=...)"
                )
            continue
        if str(want) not in map(str, values):
            raise InputError(f"no {dim} {want!r} in the rows; they have {_shown(values)}")
        sel = [r for r in sel if loose(r) or str(r.get(dim, "")) == str(want)]
    if not sel:
        raise InputError("no rows to tabulate")
    return sel


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

    @property
    def metric_names(self) -> list[str]:
        return [metric_label(m, self.tpr) for m in self.metrics]

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
                    cells.append(f"{v} {ci}".strip())
            lines.append("| " + " | ".join([name, *cells]) + " |")
        return "\n".join(lines + ["", self.full_caption()]) + "\n"

    def full_caption(self) -> str:
        """The caption: the user's text, then what the numbers are (notes)."""
        return " ".join(x for x in [self.caption.strip(), *self.notes] if x)

    def to_latex(self, *, siunitx: bool = False) -> str:
        """A booktabs table with caption and ``\\label``; ``siunitx``: ``S`` columns (plain numbers,
        ``\\bfseries`` for bold: needs ``\\sisetup{detect-weight=true}``; intervals in a column of their own)."""
        esc = latex_escape
        nm, width = len(self.metrics), 2 if (siunitx and self.intervals) else 1
        col = ("S[table-format=3.2]" + (" l" if width == 2 else "")) if siunitx else "r"
        spec = "l" + (" " + col) * (len(self.columns) * nm) if siunitx else "l" + col * (len(self.columns) * nm)
        lines = [
            *(["% needs \\usepackage{booktabs,siunitx} and \\sisetup{detect-weight=true}"] if siunitx
              else ["% needs \\usepackage{booktabs}"]),
            "\\begin{table}[t]", "\\centering", f"\\caption{{{esc(self.full_caption())}}}",
            f"\\label{{{self.label or 'tab:results'}}}",
            f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
        ]  # fmt: skip
        head = (lambda s: f"{{{esc(s)}}}") if siunitx else esc
        title = esc(" / ".join(self.row_axes))
        if nm > 1:
            span = nm * width
            lines.append(
                " & ".join([title, *(f"\\multicolumn{{{span}}}{{c}}{{{esc(c)}}}" for c in self.columns)]) + " \\\\"
            )
            lines.append(
                " ".join(f"\\cmidrule(lr){{{2 + j * span}-{1 + (j + 1) * span}}}" for j in range(len(self.columns)))
            )
            subs = [
                h for _ in self.columns for n in self.metric_names for h in ([head(n)] + ([""] if width == 2 else []))
            ]
            lines.append(" & ".join(["", *subs]) + " \\\\")
        else:
            lines.append(
                " & ".join([title, *(h for c in self.columns for h in [head(c)] + ([""] if width == 2 else []))])
                + " \\\\"
            )
        lines.append("\\midrule")
        for i, name in enumerate(self.index):
            if self.summary_rows[i] and (i == 0 or not self.summary_rows[i - 1]):
                lines.append("\\midrule")
            cells = []
            for j in range(len(self.columns)):
                for k in range(nm):
                    v, ci = self._num(i, j, k)
                    bold = bool(v) and bool(self.bold[i, j, k])
                    if siunitx:
                        cells.append(("\\bfseries " + v if bold else v) if v else "{--}")
                        if width == 2:
                            cells.append(f"{{\\scriptsize {ci}}}" if ci else "")
                    else:
                        text = (f"\\textbf{{{v}}}" if bold else v) if v else "--"
                        cells.append(text + (f" {{\\scriptsize {ci}}}" if ci else ""))
            lines.append(" & ".join([esc(name), *cells]) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """One line per table row: the row's axis values, then per column and metric the value, its
        interval and whether it is bold (percent); the caption is not part of the CSV."""
        keys = ["row"]
        for c in self.columns:
            for m in self.metrics:
                keys += [f"{c}:{m}", f"{c}:{m}:ci_low", f"{c}:{m}:ci_high", f"{c}:{m}:bold"]
        out = []
        for i, name in enumerate(self.index):
            row: dict[str, Any] = {"row": name}
            for j, c in enumerate(self.columns):
                for k, m in enumerate(self.metrics):
                    for key, arr in (("", self.values), (":ci_low", self.low), (":ci_high", self.high)):
                        x = arr[i, j, k]
                        row[f"{c}:{m}{key}"] = "" if math.isnan(x) else repr(round(100 * float(x), 10))
                    row[f"{c}:{m}:bold"] = bool(self.bold[i, j, k])
            out.append(row)
        return csv_text(out, keys)

    def render(self, fmt: str, *, siunitx: bool = False) -> str:
        """``fmt``: ``md``, ``tex`` or ``csv``."""
        if fmt == "md":
            return self.to_markdown()
        if fmt == "tex":
            return self.to_latex(siunitx=siunitx)
        if fmt == "csv":
            return self.to_csv()
        raise InputError(f"unknown table format {fmt!r}; choose md, tex or csv")


def _bold(values: np.ndarray, low: np.ndarray, high: np.ndarray, higher: bool, rule: str, ties: str) -> np.ndarray:
    """Bold marks of one column (entries that compete): the best, if the rule allows."""
    out = np.zeros(values.shape, dtype=bool)
    ok = ~np.isnan(values)
    if rule == "none" or ok.sum() < 2:
        return out
    best = np.nanmax(values) if higher else np.nanmin(values)
    top = ok & np.isclose(values, best, rtol=0, atol=1e-12)
    if top.sum() > 1 and ties == "none":
        return out
    if rule == "point":
        return top
    others = ok & ~top
    if np.isnan(low[top]).any() or np.isnan(high[top]).any():
        return out  # no interval: nothing can be said beyond it
    beyond = all(
        (values[j] < low[t]) if higher else (values[j] > high[t])
        for t in np.flatnonzero(top)
        for j in np.flatnonzero(others)
    )
    return top if beyond else out


def _caption_notes(
    sel: Sequence[Mapping[str, Any]],
    t: Table,
    axes: tuple[str, ...],
    rule: str,
    ties: str,
    failed: Mapping[str, str],
    means: list[str],
) -> list[str]:
    # long: one sentence per fact a reader of the table needs
    first = sel[0]
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
            notes.append(f"{name}: {vals[0] if vals[0] != MEAN else 'mean over the OOD sets'}.")
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
    if rule == "interval":
        notes.append(
            "Bold: the best entry of a column only where every other entry lies beyond its interval; "
            f"ties: {'none bold' if ties == 'none' else 'all bold'}; no bold where an interval is missing."
        )
    elif rule == "point":
        notes.append(
            f"Bold: best point estimate per column (not tested; ties: {'none bold' if ties == 'none' else 'all bold'})."
        )
    if any("aupr" in m for m in t.metrics):
        notes.append(f"AUPR as {str(first.get('aupr_method', 'average_precision')).replace('_', ' ')}.")
    bad = sorted({str(r["vocabulary"]) for r in sel if r.get("deployable") is False and r.get("vocabulary")})
    if bad:
        notes.append(f"NOT deployable (oracle/transductive, a bound, not a result): {', '.join(bad)}.")
    for model, why in failed.items():
        notes.append(f"{model}: cells failed ({why}); not in the table, nor in its means.")
    if any(r.get("random_weights") for r in sel):
        notes.append(RANDOM_WEIGHTS_WARNING + ".")
    return notes


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
    bold: str = "interval",
    ties: str = "none",
    baselines: bool = True,
    caption: str = "",
    label: str = "",
    failed: Mapping[str, str] | None = None,
) -> Table:
    # long: the table's layout, summaries and marks in one reading order
    """The table of ``metric`` (one name or several, side by side) with ``rows_by`` x ``cols_by``.

    ``where`` fixes the other axes (``{"ood_set": "mean", "convention": "paper"}``). ``mean_rows``
    adds the mean over the row entries (the paper's mean over VLMs), ``mean_cols`` the mean over the
    column entries; ``row_groups``/``col_groups`` add one mean per named group of entries (near/far
    OOD). ``failed``: model -> reason, noted in the caption.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    for m in metrics:
        metric_label(m)
    if bold not in BOLD_RULES:
        raise InputError(f"unknown bold rule {bold!r}; choose {', '.join(BOLD_RULES)}")
    if ties not in ("none", "all"):
        raise InputError(f"ties must be none or all, got {ties!r}")
    ra, ca = _axes(rows_by, "rows"), _axes(cols_by, "cols")
    if set(ra) & set(ca):
        raise InputError(f"an axis cannot be both rows and columns: {', '.join(sorted(set(ra) & set(ca)))}")
    sel = select_rows(rows, ra + ca, dict(where or {}), baselines)
    index = list(dict.fromkeys(_key(r, ra) for r in sel))
    columns = list(dict.fromkeys(_key(r, ca) for r in sel if not (ca == ("ood_set",) and r["ood_set"] == MEAN)))
    if ca == ("ood_set",) and any(r["ood_set"] == MEAN for r in sel):
        columns.append(MEAN)  # the bootstrap mean over the OOD sets: last, with its interval
    nm = len(metrics)
    shape = (len(index), len(columns), nm)
    values, low, high = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    seen: set[tuple[int, int]] = set()
    for r in sel:
        i, j = index.index(_key(r, ra)), columns.index(_key(r, ca))
        if (i, j) in seen:
            raise InputError(
                f"two rows for {index[i]} x {columns[j]}: fix another axis (where=...) or add it to rows/cols"
            )
        seen.add((i, j))
        for k, m in enumerate(metrics):
            values[i, j, k] = float(r.get(m, math.nan))
            low[i, j, k], high[i, j, k] = interval(r, m) or (math.nan, math.nan)
    summary_cols = [c == MEAN and ca == ("ood_set",) for c in columns]
    means: list[str] = []
    col_sets = {
        **{name: list(v) for name, v in (col_groups or {}).items()},
        **({"mean": [c for c, s in zip(columns, summary_cols, strict=True) if not s]} if mean_cols else {}),
    }
    for name, members in col_sets.items():
        values, low, high = _summary(values, low, high, columns, summary_cols, name, members, axis=1)
        means.append(
            f"{name} (column): plain mean over {', '.join(members)}; no interval; '-' where a member is missing."
        )
    summary_rows = [False] * len(index)
    row_sets = {
        **{name: list(v) for name, v in (row_groups or {}).items()},
        **({"mean": list(index)} if mean_rows else {}),
    }
    for name, members in row_sets.items():
        values, low, high = _summary(values, low, high, index, summary_rows, name, members, axis=0)
        what = "the " + " / ".join(ra) + " entries" if name == "mean" and mean_rows else ", ".join(members)
        means.append(f"{name} (row): plain mean over {what}; no interval; '-' where a member is missing.")
    marks = np.zeros(values.shape, dtype=bool)
    compete = np.array([not s for s in summary_rows])
    for j in range(len(columns)):
        for k, m in enumerate(metrics):
            col = np.where(compete, values[:, j, k], np.nan)
            marks[:, j, k] = _bold(col, low[:, j, k], high[:, j, k], METRIC_NAMES[m][1], bold, ties)
    bad = {str(r["vocabulary"]) for r in sel if r.get("deployable") is False and r.get("vocabulary")}
    if ra == ("vocabulary",):  # the entry itself says so: bold may fall on an oracle
        index = [f"{i} (NOT deployable)" if i in bad else i for i in index]
    if ca == ("vocabulary",):
        columns = [f"{c} (NOT deployable)" if c in bad else c for c in columns]
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
    )
    t.notes = _caption_notes(sel, t, ra + ca, bold, ties, dict(failed or {}), means)
    t.caption = _dedupe_caption(caption, t.metric_names)
    return t


def _dedupe_caption(caption: str, names: Sequence[str]) -> str:
    """A caption that only names the metric says nothing the notes do not ("AUROC AUROC (%)")."""
    return (
        ""
        if caption.strip().rstrip(".").lower() in {n.lower() for n in names} | {f"{n.lower()} (%)" for n in names}
        else caption
    )


def _summary(
    values: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    labels: list[str],
    summary: list[bool],
    name: str,
    members: Sequence[str],
    *,
    axis: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``values`` with one more row (``axis=0``) or column (1): the plain mean of ``members`` (NaN
    where one is missing), no interval; ``labels`` and ``summary`` get the new entry."""
    what = "row" if axis == 0 else "column"
    if name in labels:
        raise InputError(f"{what} group {name!r} has the name of a {what}; choose another")
    missing = [m for m in members if m not in labels]
    if missing:
        raise InputError(f"group member {missing[0]!r} is no {what} of the table; it has {', '.join(labels)}")
    idx = [labels.index(m) for m in members]
    labels.append(name)
    summary.append(True)
    extra = np.expand_dims(np.take(values, idx, axis=axis).mean(axis=axis), axis)
    nan = np.full(extra.shape, np.nan)
    return (
        np.concatenate([values, extra], axis=axis),
        np.concatenate([low, nan], axis=axis),
        np.concatenate([high, nan], axis=axis),
    )


# ----------------------------------------------------------------------------------------------
# honest comparisons
# ----------------------------------------------------------------------------------------------
def comparisons(
    rows: Sequence[Mapping[str, Any]],
    scores: ScoreGetter | None,
    *,
    metric: str = "fpr",
    ood_set: str = MEAN,
    n_boot: int = 1000,
    seed: int = 0,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> list[str]:
    # long: the pairs, the per-model tests and the untested fallback in one place
    """Sentences comparing each pair of vocabularies (per method and convention; ``pairs`` names
    the pairs instead) across models, each model by a paired bootstrap on its per-image scores
    (:func:`negvocab.evaluation.compare.paired_bootstrap`); without stored scores the sentence says
    the difference was not tested and names no winner."""
    label = metric_label(metric, float(rows[0].get("tpr", 0.95)) if rows else 0.95)
    sets = list(dict.fromkeys(str(r.get("ood_set")) for r in rows))
    if ood_set == MEAN and MEAN not in sets and len(sets) == 1:
        ood_set = sets[0]  # one OOD set: its mean is itself
    sel = [r for r in rows if str(r.get("ood_set")) == ood_set and r.get("vocabulary")]
    bad = {r["vocabulary"] for r in sel if r.get("deployable") is False}
    shown = lambda v: f"{v} (NOT deployable)" if v in bad else v  # noqa: E731
    out: list[str] = []
    memo: dict[tuple[str, ...], Any] = {}

    def draws(model: str, vocabulary: str, method: str, conv: str, tpr: float) -> Any:
        """(point, draws, sizes, scores) of one entry; the first call for a (model, method,
        convention) computes every vocabulary of it in one pass over shared resamples."""
        if (model, vocabulary, method, conv) not in memo:
            found = {}
            for v in dict.fromkeys(
                r["vocabulary"] for r in sel if (r["model"], r["method"], r["convention"]) == (model, method, conv)
            ):
                got = scores(model, v, method) if scores else None
                memo[(model, v, method, conv)] = None
                if got is not None:
                    found[v] = (got[0], got[1] if ood_set == MEAN else {ood_set: got[1][ood_set]})
            values = (
                bootstrap_draws(found, metric=metric, tpr=tpr, convention=conv, n_boot=n_boot, seed=seed)
                if found
                else {}
            )
            for v, (point, d) in values.items():
                ids, sets = found[v]
                sizes = (int(np.asarray(ids).size), tuple((k, int(np.asarray(x).size)) for k, x in sets.items()))
                memo[(model, v, method, conv)] = (point, d, sizes, found[v])
        return memo[(model, vocabulary, method, conv)]

    for meth, conv in dict.fromkeys((r["method"], r["convention"]) for r in sel):
        mine = [r for r in sel if r["method"] == meth and r["convention"] == conv]
        vocabs = list(dict.fromkeys(r["vocabulary"] for r in mine))
        value = {(r["model"], r["vocabulary"]): r for r in mine}
        tpr = float(mine[0].get("tpr", 0.95))
        for a, b in pairs if pairs is not None else combinations(vocabs, 2):
            models = [m for m in dict.fromkeys(r["model"] for r in mine) if (m, a) in value and (m, b) in value]
            if not models:
                continue
            ctx = f"{label} on {ood_set}, {meth}, {conv}"
            results, untested = [], []
            for m in models:
                da, db = (draws(m, v, meth, conv, tpr) for v in (a, b))
                if da is None or db is None:
                    untested.append((m, value[(m, a)][metric] - value[(m, b)][metric]))
                    continue
                if da[2] != db[2]:  # not the same images: the paired test says so in one line
                    paired_bootstrap(*da[3], *db[3], metric=metric, tpr=tpr, convention=conv, n_boot=n_boot, seed=seed)
                results.append(
                    (m, paired_from_draws(da[:2], db[:2], metric=metric, n_id=da[2][0], n_ood=dict(da[2][1])))
                )
            if results:
                out.append(comparison_sentence(shown(a), shown(b), results, context=ctx))
            if untested:
                diffs = "; ".join(f"{m} {100 * d:+.2f}" for m, d in untested)
                out.append(
                    f"{shown(a)} vs {shown(b)} ({ctx}): NOT tested (no per-image scores) for "
                    f"{len(untested)} of {len(models)} models; {a} - {b} in points: {diffs}"
                )
    if out and any(r.get("random_weights") for r in sel):
        out.append(RANDOM_WEIGHTS_WARNING)
    return out


# ----------------------------------------------------------------------------------------------
# results folders of score and sweep
# ----------------------------------------------------------------------------------------------
def folder_rows(folder: Path) -> tuple[list[dict[str, Any]], ScoreGetter | None]:
    """Tidy rows of a ``score`` folder (``results.json``; per-image scores from ``scores.npz``) or
    a ``sweep`` folder (``sweep.json``: each size as ``vocabulary@M``, references by name), read
    through the validators of :mod:`negvocab.evaluation.stored` (as ``report`` and ``subsample``)."""
    if (folder / "results.json").is_file():
        doc = read_results_json(folder / "results.json")
        rows = [
            {"model": doc.get("model", ""), "templates": doc.get("templates", ""), **flat_row(r)} for r in doc["rows"]
        ]
        return rows, _score_file_getter(folder / "scores.npz", rows)
    if (folder / "sweep.json").is_file():
        doc = read_sweep_json(folder / "sweep.json")
        rows = [{**flat_row(r), "vocabulary": f"{r.get('vocabulary', '')}@{r['M']}"} for r in doc["rows"]]
        rows += [flat_row(r) for r in doc.get("references") or []]
        return [{"model": doc.get("model", ""), "templates": doc.get("templates", ""), **r} for r in rows], None
    raise InputError(
        f"{folder}: no results.json, sweep.json or grid cells/; give a folder of negvocab score, sweep or grid run"
    )


def _score_file_getter(path: Path, rows: Sequence[Mapping[str, Any]]) -> ScoreGetter | None:
    """Per-image scores of a score folder for the comparisons, read (and validated) on first use:
    a file that cannot be read, or whose image counts disagree with the rows, is refused."""
    if not path.is_file():
        return None
    model = str(rows[0].get("model", "")) if rows else ""
    loaded: list[tuple[StoredScores, np.ndarray]] = []

    def stored() -> tuple[StoredScores, np.ndarray]:
        if not loaded:
            data = read_scores_npz(path)
            n_ood = len(next(iter(data.ood.values())))
            sets = data.images.get("ood_sets", np.array(["ood"] * n_ood))
            _check_counts(path, data, sets, rows)
            loaded.append((data, sets))
        return loaded[0]

    def get(m: str, vocabulary: str, method: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        key = f"{method}@{vocabulary}" if vocabulary else method
        if m != model:
            return None
        data, sets = stored()
        if key not in data.id:
            return None
        ood = data.ood[key]
        return data.id[key], {n: ood[sets == n] for n in dict.fromkeys(sets.tolist())}

    return get


def _check_counts(path: Path, data: StoredScores, sets: np.ndarray, rows: Sequence[Mapping[str, Any]]) -> None:
    """The image counts the rows state (``n_id``; ``n_ood`` of each set) are those of the scores file."""
    n_id = len(next(iter(data.id.values())))
    counts = {str(n): int(np.sum(sets == n)) for n in dict.fromkeys(sets.tolist())}
    hint = "give the scores.npz written with this results.json (re-run `negvocab score` into a new folder)"
    for r in rows:
        said_id, said_ood, name = r.get("n_id"), r.get("n_ood"), str(r.get("ood_set", ""))
        if isinstance(said_id, (int, float)) and int(said_id) != n_id:
            raise InputError(f"{path}: holds {n_id} ID images; results.json says {int(said_id)}; {hint}")
        if name in counts and isinstance(said_ood, (int, float)) and int(said_ood) != counts[name]:
            raise InputError(
                f"{path}: holds {counts[name]} OOD images of {name!r}; results.json says {int(said_ood)}; {hint}"
            )
