"""Every figure, ready for a paper: the vocabulary-size sweep, the OOD-subsampling SD, the score
distributions with the ROC curves; one way to save them (:func:`save_figure`).

:func:`sweep_figure` draws the rows of one or more sweeps (:func:`negvocab.sweep_vocabulary`; rows of
several sweeps, e.g. of two methods, vocabularies or models, can be concatenated): each distinct
(model, method, vocabulary, templates, convention, OOD set) is a series with its bootstrap CI band in
both panels; what all series share goes in the title, what differs in the legend. Reference
vocabularies are horizontal lines; a non-deployable one (oracle, transductive) says so in the legend.
:func:`plot_sweep` writes the figure in the format its path's suffix names (PNG at 300 dpi, PDF, SVG).

:func:`save_figure` is the one writer: the suffix names the format, the title goes into the file's
metadata too, every text artist is checked to lie inside the figure (a line too wide is wrapped,
then the fonts shrink), and matplotlib's warnings are kept from the user (they name its source
files). Degenerate inputs (n = N, all values equal, an empty pool) draw a readable figure with a
note instead of an empty or 1e-14-wide axis.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import ArrayLike
from negvocab.evaluation.row import interval
from negvocab.report.figure_files import (
    COLUMN_IN,
    PAGE_IN,
    PLOT_FORMATS,
    check_plot_formats,
    figure_format,
    figure_png,
    outside_texts,
    print_problems,
    save_figure,
)
from negvocab.report.style import LINE_STYLES, MARKERS, PALETTE, print_style
from negvocab.scoring import metrics as M

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "COLUMN_IN", "PAGE_IN", "PLOT_FORMATS", "check_plot_formats", "figure_png", "outside_texts", "overlay_figure",
    "plot_overlay", "print_problems", "repair_figure", "plot_repair", "plot_scores", "plot_subsample", "plot_sweep",
    "save_figure", "scores_figure", "subsample_figure", "sweep_figure",
]  # fmt: skip

#: the fields that tell series apart, with how each is shown
_SERIES_FIELDS = (
    ("model", "{}"),
    ("pretrained", "{}"),
    ("method", "{}"),
    ("vocabulary", "{}"),
    ("templates", "templates {}"),
    ("convention", "{} convention"),
    ("ood_set", "OOD {}"),
)


def _pick_ood(rows: Sequence[Mapping[str, Any]], ood_set: str | None) -> list[Mapping[str, Any]]:
    """Rows of one OOD set if ``ood_set`` names one, else (None or ``"all"``) every set and their
    mean, each a labelled line."""
    names = {r.get("ood_set") for r in rows}
    if ood_set in (None, "all"):
        return list(rows)
    want = ood_set
    if want not in names:
        raise InputError(
            f"no sweep rows for OOD set {want!r}; the rows have {', '.join(sorted(str(n) for n in names))}"
        )
    return [r for r in rows if r.get("ood_set") == want]


def _varying(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [f for f, _ in _SERIES_FIELDS if len({str(r.get(f)) for r in rows}) > 1]


def _describe(row: Mapping[str, Any], fields: Sequence[str]) -> str:
    shown = [fmt.format(row.get(f)) for f, fmt in _SERIES_FIELDS if f in fields and row.get(f) not in (None, "")]
    return ", ".join(shown)


def _not_deployable(row: Mapping[str, Any]) -> bool:
    return row.get("deployable") is False or bool(row.get("oracle"))


def _title(rows: Sequence[Mapping[str, Any]], varying: Sequence[str], random_weights: bool) -> str:
    first = rows[0]
    parts = []
    if "model" not in varying:
        weights = "RANDOM WEIGHTS" if first.get("random_weights") else first.get("pretrained") or "?"
        parts.append(
            f"{first.get('model', '?')} ({weights})" if "pretrained" not in varying else str(first.get("model", "?"))
        )
    for field, fmt in _SERIES_FIELDS[2:]:
        if field not in varying and first.get(field) not in (None, ""):
            parts.append(("vocabulary {}" if field == "vocabulary" else fmt).format(first[field]))
    heading = "Vocabulary size M: " + ", ".join(parts)
    if random_weights:
        heading += "\n[RANDOM WEIGHTS: meaningless]"
    return heading


def _line_with_band(
    ax: Any,
    part: Sequence[Mapping[str, Any]],
    key: str,
    color: str,
    label: str | None,
    *,
    band_label: str | None = None,
    width: float = 1.5,
    marker: str = "o",
    style: str = "-",
) -> list[float]:
    """One series against M (sorted), with its bootstrap band where every point has an interval
    (``<key>_ci``); returns the plotted values (points and band edges) for the y range."""
    part = sorted(part, key=lambda r: r["M"])
    x = [r["M"] for r in part]
    y = [100 * r[key] for r in part]
    ax.plot(x, y, marker=marker, linestyle=style, markersize=3 + width, linewidth=width, color=color, label=label)
    cis = [interval(r, key) for r in part]  # either shape of any results file
    if not all(cis):
        return y
    lo = [max(0.0, 100 * ci[0]) for ci in cis]  # type: ignore[index]
    hi = [min(100.0, 100 * ci[1]) for ci in cis]  # type: ignore[index]
    ax.fill_between(x, lo, hi, color=color, alpha=0.18, linewidth=0, label=band_label)
    return y + lo + hi


def _m_axes(ax: Any, ms: Sequence[int], values: Sequence[float], ylabel: str | None) -> None:
    """A log M axis ticked at the swept sizes, and a y range (percent) that keeps lines at 0 or 100
    inside the frame."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_xticks(ms, [f"{m:,}" for m in ms])  # the swept sizes, not powers of ten
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("vocabulary size M")
    if ylabel:
        ax.set_ylabel(ylabel)
    finite = [v for v in values if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 100.0)
    pad = max(2.0, 0.08 * (hi - lo))
    ax.set_ylim(max(-2.0, lo - pad), min(102.0, hi + pad))  # a line at 0 or 100 stays inside the frame
    ax.grid(True, alpha=0.3)


@print_style
def sweep_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    references: Sequence[Mapping[str, Any]] = (),
    title: str | None = None,
    random_weights: bool | None = None,
    ood_set: str | None = None,
    figure: Figure | None = None,
) -> Figure:
    """The figure :func:`plot_sweep` saves (a matplotlib ``Figure``, for a notebook to show).

    ``rows``: sweep rows (``M``, ``fpr``, ``auroc``, optional ``fpr_ci``/``auroc_ci``, and the fields
    naming the series); ``references``: rows with ``vocabulary`` and ``M`` drawn as horizontal lines;
    ``ood_set``: which OOD set to draw when the rows hold several (default their mean; ``"all"``
    overlays each); ``random_weights``: mark the figure (default: any row says so); ``figure``: an
    empty figure to draw into (e.g. ``plt.figure()`` in a notebook), else a new one without pyplot.

    Parameters
    ----------
    rows : sequence of mappings
        Sweep rows (``M``, ``fpr``, ``auroc``, optional ``fpr_ci``/``auroc_ci``, and the fields naming
        the series).
    references : sequence of mappings, default ()
        Rows with ``vocabulary`` and ``M``, drawn as horizontal lines.
    title : str, optional
        The figure's title (default: what all series share).
    random_weights : bool, optional
        Mark the figure as made with random weights (default: any row says so).
    ood_set : str, optional
        Which OOD set to draw when the rows hold several (default their mean; ``"all"`` overlays each).
    figure : Figure, optional
        An empty figure to draw into, else a new one without pyplot.
    """
    from matplotlib.figure import Figure  # no pyplot: no backend is chosen or changed

    if not rows:
        raise InputError("nothing to plot: no sweep rows")
    rows = _pick_ood(rows, ood_set)
    refs = _pick_ood(references, ood_set) if references else []
    if random_weights is None:
        random_weights = any(r.get("random_weights") for r in (*rows, *refs))
    varying = _varying(rows)
    series: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        series.setdefault(tuple(str(r.get(f)) for f, _ in _SERIES_FIELDS), []).append(r)
    conv = rows[0].get("convention", "paper")
    tpr = int(round(100 * rows[0].get("tpr", 0.95)))
    ms = sorted({r["M"] for r in rows})
    fig = figure if figure is not None else Figure(figsize=(PAGE_IN, 3.4))  # printed at this size
    fig.set_layout_engine("constrained")
    axes = fig.subplots(1, 2)
    metrics = (
        ("fpr", f"FPR@{tpr} (%)" + ("" if "convention" in varying else f", {conv} convention")),
        ("auroc", "AUROC (%)"),
    )
    for ax, (key, ylabel) in zip(axes, metrics, strict=True):
        values: list[float] = []
        for i, part in enumerate(series.values()):
            label = _describe(part[0], varying) or str(part[0].get("vocabulary") or "first M of the ranking")
            if _not_deployable(part[0]):
                label += " (not deployable)"
            values += _line_with_band(
                ax,
                part,
                key,
                PALETTE[i % len(PALETTE)],
                textwrap.fill(label, 60),
                band_label="95% CI (OOD bootstrap)" if i == 0 else None,
                marker=MARKERS[i % len(MARKERS)],
                style=LINE_STYLES[i % len(LINE_STYLES)],
            )
        ref_varying = _varying(refs) if refs else []
        for j, ref in enumerate(refs):
            name = str(ref.get("name") or ref.get("vocabulary") or "reference")  # "name": an older sweep.json
            extra = _describe(ref, [f for f in ref_varying if f != "vocabulary"])
            label = f"{name}{' (not deployable)' if _not_deployable(ref) else ''}, M={ref['M']:,}" + (
                f" [{extra}]" if extra else ""
            )
            k = len(series) + j
            ax.axhline(100 * ref[key], linestyle=LINE_STYLES[1 + k % 3], color=PALETTE[k % len(PALETTE)], label=label)
            values.append(100 * ref[key])
        _m_axes(ax, ms, values, ylabel)
    handles, labels = axes[0].get_legend_handles_labels()  # both panels hold the same series
    ncols = 2 if len(labels) > 3 else 1
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, frameon=False)
    if figure is None:  # room for the legend's lines below the panels
        lines = sum(lab.count("\n") + 1 for lab in labels[::ncols])
        fig.set_size_inches(PAGE_IN, 2.9 + 0.16 * lines)
    fig.suptitle(
        title + ("\n[RANDOM WEIGHTS: meaningless]" if random_weights else "")
        if title
        else _title(rows, varying, random_weights)
    )
    return fig


def plot_sweep(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    references: Sequence[Mapping[str, Any]] = (),
    title: str | None = None,
    random_weights: bool | None = None,
    ood_set: str | None = None,
) -> Path:
    """Write :func:`sweep_figure` to ``path`` (atomically) in the format of its suffix: ``.png``
    (300 dpi), ``.pdf`` or ``.svg``; any other suffix is refused before anything is drawn.

    Parameters
    ----------
    rows : sequence of mappings
        Sweep rows, as :func:`sweep_figure` takes them.
    path : str or PathLike
        The file written; its suffix picks the format.
    references, title, random_weights, ood_set
        As :func:`sweep_figure` takes them.
    """
    path = Path(path)
    figure_format(path)
    fig = sweep_figure(rows, references=references, title=title, random_weights=random_weights, ood_set=ood_set)
    return save_figure(fig, path)


@print_style
def overlay_figure(
    rows: Sequence[Mapping[str, Any]],
    *,
    baselines: Sequence[Mapping[str, Any]] = (),
    metric: str = "fpr",
    title: str | None = None,
    random_weights: bool | None = None,
) -> Figure:
    """A grid's vocabulary-size sweep: ``metric`` (``fpr`` or ``auroc``) against M, one panel per (model,
    method, convention) of ``rows`` (sweep rows: ``M``, the metric, optional ``<metric>_ci``), a line
    per OOD set and a thicker black one for their mean (``ood_set = "mean"``), each with its
    bootstrap band where the rows carry intervals; ``baselines`` (rows without a vocabulary, e.g.
    MCM) are dashed lines in the colour of their set, in the panels of their model and convention.
    One legend below the panels names the sets and the baselines."""
    from matplotlib.figure import Figure

    if metric not in ("fpr", "auroc"):
        raise InputError(f"unknown sweep metric {metric!r}; choose fpr or auroc")
    if not rows:
        raise InputError("nothing to plot: no sweep rows")
    if random_weights is None:
        random_weights = any(r.get("random_weights") for r in (*rows, *baselines))
    panels = list(dict.fromkeys((str(r["model"]), str(r["method"]), str(r["convention"])) for r in rows))
    models = list(dict.fromkeys(p[0] for p in panels))
    combos = list(dict.fromkeys(p[1:] for p in panels))
    sets = [s for s in dict.fromkeys(str(r["ood_set"]) for r in rows) if s != "mean"]
    sets += ["mean"] if any(r["ood_set"] == "mean" for r in rows) else []
    colour = {s: "k" if s == "mean" else PALETTE[i % (len(PALETTE) - 1)] for i, s in enumerate(sets)}
    mark = {s: "o" if s == "mean" else MARKERS[1 + i % (len(MARKERS) - 1)] for i, s in enumerate(sets)}
    line = {s: "-" if s == "mean" else LINE_STYLES[1 + i % (len(LINE_STYLES) - 1)] for i, s in enumerate(sets)}
    dashes = ("--", ":", "-.", (0, (5, 1, 1, 1)))  # reused in turn: a grid may have more baselines than styles
    styles = {m: dashes[i % len(dashes)] for i, m in enumerate(dict.fromkeys(str(b["method"]) for b in baselines))}
    tpr = int(round(100 * float(rows[0].get("tpr", 0.95))))
    ms = sorted({int(r["M"]) for r in rows})
    fig = Figure(figsize=(_print_width(len(models)), 2.3 * len(combos) + 1.3), layout="constrained")
    axes = fig.subplots(len(combos), len(models), squeeze=False, sharex=True, sharey=True)  # panels compare
    banded = False
    for (meth, conv), row_axes in zip(combos, axes, strict=True):
        for model, ax in zip(models, row_axes, strict=True):
            mine = [r for r in rows if (str(r["model"]), str(r["method"]), str(r["convention"])) == (model, meth, conv)]
            ax.set_title(f"{model}\n{meth}, {conv} convention", fontsize=8)
            mine_baselines = [
                b
                for b in baselines
                if str(b.get("model")) == model and str(b.get("convention")) == conv and str(b.get("ood_set")) in colour
            ]
            values, got_band = _overlay_lines(ax, mine, mine_baselines, sets, metric, colour, mark, line, styles)
            banded |= got_band
            if not mine:
                _note(ax, f"no sized entries for {model}, {meth}, {conv}")
            _m_axes(
                ax, ms, values, (f"FPR@{tpr} (%)" if metric == "fpr" else "AUROC (%)") if ax is row_axes[0] else None
            )
    handles = _overlay_handles(sets, colour, mark, line, styles, banded)
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4), fontsize=8, frameon=False)
    vocab = str(rows[0].get("vocabulary", "")).rsplit("@", 1)[0]
    heading = title or f"Vocabulary size M: {vocab}, the first M labels of its ranking"
    fig.suptitle(heading + ("\n[RANDOM WEIGHTS: meaningless]" if random_weights else ""), fontsize=10)
    return fig


def _overlay_lines(
    ax: Any,
    rows: Sequence[Mapping[str, Any]],
    baselines: Sequence[Mapping[str, Any]],
    sets: Sequence[str],
    metric: str,
    colour: Mapping[str, Any],
    mark: Mapping[str, str],
    line: Mapping[str, Any],
    styles: Mapping[str, Any],
) -> tuple[list[float], bool]:
    """One panel of :func:`overlay_figure`: a line per OOD set (with its band) and a dashed one per
    baseline; returns the values drawn (in %) and whether a band was."""
    values: list[float] = []
    banded = False
    for s in sets:
        part = [r for r in rows if str(r["ood_set"]) == s]
        if part:
            got = _line_with_band(
                ax, part, metric, colour[s], None, width=2.4 if s == "mean" else 1.3, marker=mark[s], style=line[s]
            )
            banded |= len(got) > len(part)
            values += got
    for b in baselines:
        ax.axhline(100 * b[metric], linestyle=styles[str(b["method"])], linewidth=1.1, color=colour[str(b["ood_set"])])
        values.append(100 * b[metric])
    return values, banded


def _overlay_handles(
    sets: Sequence[str],
    colour: Mapping[str, Any],
    mark: Mapping[str, str],
    line: Mapping[str, Any],
    styles: Mapping[str, Any],
    banded: bool,
) -> list[Any]:
    """The legend of :func:`overlay_figure`: the OOD sets, the baselines and the band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [
        Line2D(
            [],
            [],
            color=colour[s],
            marker=mark[s],
            linestyle=line[s],
            linewidth=2.4 if s == "mean" else 1.3,
            label="mean over OOD sets" if s == "mean" else f"OOD {s}",
        )
        for s in sets
    ]
    handles += [
        Line2D([], [], color="0.3", linestyle=st, label=f"{m} (no vocabulary; baseline, per set)")
        for m, st in styles.items()
    ]
    if banded:
        handles.append(Patch(color="0.5", alpha=0.3, label="95% bootstrap interval"))
    return handles


def plot_overlay(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], **kw: Any) -> Path:
    """Write :func:`overlay_figure` to ``path`` (format by suffix: .pdf, .svg, .png; another suffix
    is refused before anything is drawn)."""
    figure_format(Path(path))
    return save_figure(overlay_figure(rows, **kw), path)


def _print_width(panels_across: int) -> float:
    """The printed width of a figure with ``panels_across`` panels side by side: a column for one, a page for more."""
    return COLUMN_IN if panels_across <= 1 else PAGE_IN


def _fill(fig: Figure, text: str, pt: float, share: float = 1.0) -> str:
    """``text`` wrapped to ``share`` of ``fig``'s width at ``pt`` points (a character is ~0.55 em)."""
    chars = max(16, int(share * fig.get_figwidth() * 72 / (0.55 * pt)))
    return "\n".join(textwrap.fill(line, chars) for line in text.split("\n"))


def _note(ax: Any, text: str) -> None:
    """A note inside the axes, for what the data alone would not say (a degenerate case)."""
    ax.text(
        0.5,
        0.5,
        textwrap.fill(text, 48),
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=8,
        bbox={"boxstyle": "round", "facecolor": "lightyellow", "edgecolor": "0.6"},
    )


@print_style
def subsample_figure(rows: Sequence[Mapping[str, Any]], *, title: str | None = None) -> Figure:
    """SD of FPR against n, one panel per OOD set, per detector: the draws (points), the analytical
    FPC SD (dashed) and ``sqrt(p (1 - p) / n)`` (dotted, the 1/sqrt(n) law without the correction).
    Log-log axes; when an SD is 0 (n = N, or every FPR 0 or 100%) the y axis is linear from 0 and a
    note says why."""
    # long: one panel per set, three series per detector and the degenerate-case notes
    from matplotlib.figure import Figure

    if not rows:
        raise InputError("nothing to plot: no subsample rows")
    sets = list(dict.fromkeys(str(r.get("ood_set", "ood")) for r in rows))
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig = Figure(figsize=(_print_width(len(sets)), 3.3), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(sets), squeeze=False, sharey=True)[0])  # one SD scale for every set
    log_y = all(_clean(100 * r["sd"]) > 0 for r in rows)  # one y scale for every panel: log only where all can be
    first = rows[0]
    tpr = int(round(100 * first.get("tpr", 0.95)))
    for ax, name in zip(axes, sets, strict=True):
        mine = [r for r in rows if str(r.get("ood_set", "ood")) == name]
        dets = list(dict.fromkeys(r["detector"] for r in mine))
        values: list[float] = []
        for i, det in enumerate(dets):
            part = sorted((r for r in mine if r["detector"] == det), key=lambda r: r["n"])
            ns = np.array([r["n"] for r in part], dtype=float)
            p = float(part[0]["full"])
            sd = [_clean(100 * r["sd"]) for r in part]
            colour, marker = PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]
            ax.plot(ns, sd, marker, color=colour, linestyle="none", label=f"{det} (draws)")
            ax.plot(
                ns,
                [_clean(100 * r["sd_analytic"]) for r in part],
                "--",
                color=colour,
                alpha=0.8,
                label=f"{det} (analytic, FPC)",
            )
            grid = np.geomspace(ns.min(), ns.max(), 50) if ns.max() > ns.min() else ns
            ax.plot(
                grid, 100 * np.sqrt(p * (1 - p) / grid), ":", color=colour, alpha=0.6, label=f"{det}: sqrt(p(1-p)/n)"
            )
            values += [v for v in sd if math.isfinite(v)]
        big_n = mine[0]["N"]
        notes = []
        if any(r["n"] == big_n for r in mine):
            notes.append(f"at n = N = {big_n:,} every draw is the whole set: SD 0")
        if all(r["full"] in (0.0, 1.0) for r in mine):
            notes.append("every FPR is 0% or 100%: the SD is 0 at every n")
        if log_y:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(
                LogLocator(subs=(1.0, 2.0, 5.0))
            )  # 1, 2, 5 a decade: some ticks on a short range
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # plain numbers, not 2x10^1
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_ylim(
                0,
                max([_clean(100 * r["sd"]) for r in rows if math.isfinite(_clean(100 * r["sd"]))] or [0]) * 1.15 or 1.0,
            )
        ns_all = sorted({r["n"] for r in mine})
        if len(ns_all) > 1:
            ax.set_xscale("log")
            ax.set_xticks(ns_all, [f"{n:,}" for n in ns_all])  # the drawn sizes, plain, not 2x10^0
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.set_xlim(ns_all[0] * 0.5, ns_all[0] * 1.5)
        if notes:
            _note(ax, "; ".join(notes))
        ax.set_title(f"OOD set {name} (N={big_n:,})", fontsize=9)
        ax.set_xlabel("OOD images drawn, n")
        ax.grid(True, alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()  # one legend, outside the data, below the panels
    ncols = min(len(labels), 3 if len(sets) > 1 else 1)
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize=8, frameon=False)
    axes[0].set_ylabel(_fill(fig, f"SD of FPR@{tpr} (points), {first.get('convention', 'paper')} convention", 9, 0.8))
    heading = title or f"OOD subsampling: {first['draws']:,} draws without replacement of n of N"
    fig.suptitle(_fill(fig, heading, 10), fontsize=10)
    if len(sets) == 1:  # a column: room for the legend's lines
        fig.set_size_inches(COLUMN_IN, 2.9 + 0.17 * len(labels))
    return fig


def _clean(v: float) -> float:
    """A float's rounding noise (1e-14) shown as the 0 it is."""
    return 0.0 if abs(v) < 1e-9 else v


def plot_subsample(
    rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *, title: str | None = None
) -> Path:
    """Write :func:`subsample_figure` to ``path`` (format by suffix: .pdf, .svg, .png)."""
    figure_format(Path(path))
    return save_figure(subsample_figure(rows, title=title), path)


def _roc(ids: np.ndarray, oods: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) at every distinct score as threshold (score >= t is called ID), from (0, 0) to (1, 1)."""
    ts = np.unique(np.concatenate([ids, oods]))[::-1]
    si, so = np.sort(ids), np.sort(oods)
    tp = (ids.size - np.searchsorted(si, ts, side="left")) / ids.size
    fp = (oods.size - np.searchsorted(so, ts, side="left")) / oods.size
    return np.concatenate([[0.0], fp]), np.concatenate([[0.0], tp])


@print_style
def scores_figure(
    s_id: ArrayLike,
    s_ood: ArrayLike,
    ood_sets: Sequence[str] | None = None,
    *,
    tpr: float = 0.95,
    convention: str = "paper",
    detector: str = "score",
    title: str | None = None,
) -> Figure:
    """Score distributions and ROC: one panel per OOD set with the ID and that set's histograms
    (densities) and the ID threshold at ``tpr`` marked, and one ROC panel with a curve per set and
    its FPR@tpr point (``convention``). ``ood_sets``: the set of every OOD score (default one set)."""
    # long: histogram panels, the ROC panel and the degenerate-case notes share the per-set arrays
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    ids = np.asarray(s_id, dtype=np.float64).ravel()
    oods = np.asarray(s_ood, dtype=np.float64).ravel()
    if ids.size == 0 or oods.size == 0:
        raise InputError("nothing to plot: no ID or no OOD scores")
    labels = np.asarray(["ood"] * oods.size if ood_sets is None else [str(s) for s in ood_sets])
    if labels.size != oods.size:
        raise InputError(f"ood_sets names {labels.size} images, there are {oods.size} OOD scores")
    names = list(dict.fromkeys(labels.tolist()))
    conv = cast("M.Convention", M.check_convention(convention))
    thr = M._paper_threshold(ids, tpr)
    pct = int(round(100 * tpr))
    ncols = min(3, len(names) + 1)  # rows of up to 3 panels: each readable at a page's width
    nrows = -(-(len(names) + 1) // ncols)
    fig = Figure(figsize=(PAGE_IN, 3.0 * nrows + 0.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for spare in axes[len(names) + 1 :]:
        spare.set_axis_off()
    axes = axes[: len(names) + 1]
    lo, hi = float(min(ids.min(), oods.min())), float(max(ids.max(), oods.max()))
    flat = hi - lo < 1e-12
    bins = np.linspace(lo - 0.5, hi + 0.5, 3) if flat else np.linspace(lo, hi, 41)
    roc = axes[-1]
    for i, (ax, name) in enumerate(zip(axes[:-1], names, strict=True)):
        o = oods[labels == name]
        fpr = M.fpr_at_tpr(ids, o, tpr, convention=conv)
        ax.hist(ids, bins=bins, density=True, alpha=0.5, color="C0", label=f"ID (n={ids.size:,})")
        ax.hist(o, bins=bins, density=True, alpha=0.5, color=f"C{i + 1}", label=f"OOD {name} (n={o.size:,})")
        ax.axvline(thr, color="k", linestyle="--", linewidth=1, label=f"threshold at TPR {pct}%: FPR {100 * fpr:.1f}%")
        if flat:
            _note(ax, f"every score is {lo:.4g}: the sets cannot be told apart")
        ax.set_title(f"{detector}: ID vs {name}", fontsize=9)
        ax.set_xlabel("score (high = ID)")
        ax.xaxis.set_major_locator(MaxNLocator(4))  # scores like 0.9978: a few ticks, never overlapping
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)  # outside the data
        fx, ty = _roc(ids, o)
        roc.plot(fx, ty, color=f"C{i + 1}", label=f"{name} (AUROC {100 * M.auroc(ids, o):.1f}%)")
        roc.plot([fpr], [float(np.mean(ids >= thr))], "o", color=f"C{i + 1}", markersize=5)
    axes[0].set_ylabel("density")
    roc.plot([0, 1], [0, 1], ":", color="0.6", linewidth=1)
    roc.axhline(tpr, color="0.5", linewidth=0.8, linestyle="--", label=f"TPR {pct}% (dot: FPR@{pct}, {convention})")
    roc.set_xlim(-0.02, 1.02)
    roc.set_ylim(-0.02, 1.02)
    roc.set_xlabel("false positive rate (OOD called ID)")
    roc.set_ylabel("true positive rate (ID kept)")
    roc.set_title("ROC", fontsize=9)
    roc.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.suptitle(title or f"Score distributions and ROC: {detector}", fontsize=10)
    return fig


def plot_scores(
    s_id: ArrayLike, s_ood: ArrayLike, path: str | os.PathLike[str], ood_sets: Sequence[str] | None = None, **kw: Any
) -> Path:
    """Write :func:`scores_figure` to ``path`` (format by suffix: .pdf, .svg, .png)."""
    figure_format(Path(path))
    return save_figure(scores_figure(s_id, s_ood, ood_sets, **kw), path)


@print_style
def repair_figure(curve: Any, *, random_weights: bool = False) -> Figure:
    """FPR@tpr after each greedy addition of a repair curve (:class:`negvocab.diagnostics.gains.RepairCurve`),
    a step plot; when the pool adds nothing (every FPR equal) the axis spans +-5 points and a note says so."""
    from matplotlib.figure import Figure

    rows = list(curve.rows)
    if not rows:
        raise InputError("nothing to plot: the repair curve has no steps")
    fig = Figure(figsize=(COLUMN_IN, 2.9), layout="constrained")
    ax = fig.subplots()
    steps = [r["step"] for r in rows]
    fprs = [100 * r["fpr"] for r in rows]
    ax.plot(steps, fprs, marker="o", drawstyle="steps-post")
    for r in rows[1:]:
        ax.annotate(
            str(r["label"])[:14],
            (r["step"], 100 * r["fpr"]),
            fontsize=8,
            rotation=30,
            xytext=(2, 4),
            textcoords="offset points",
        )
    if max(fprs) - min(fprs) < 1e-9:
        ax.set_ylim(max(-2.0, fprs[0] - 5), min(102.0, fprs[0] + 5))
        _note(
            ax,
            f"the candidates add nothing: FPR stays at {fprs[0]:.2f}% after {len(rows) - 1} label(s)"
            if len(rows) > 1
            else "no label to add: the vocabulary as given",
        )
    ax.set_xlim(-0.5, max(steps) + 0.5)
    ax.set_xlabel("labels added (greedy, best first)")
    ax.set_ylabel(f"FPR@{int(round(100 * curve.tpr))} (%), {curve.convention}")
    ax.grid(True, alpha=0.3)
    title = f"Repair curve, {curve.method}" + (
        " [ORACLE analysis: OOD labels]" if curve.oracle else " [candidate pool]"
    )
    ax.set_title(title + (" [RANDOM WEIGHTS]" if random_weights else ""), fontsize=9)
    return fig


def plot_repair(curve: Any, path: str | os.PathLike[str], *, random_weights: bool = False) -> Path:
    """Write :func:`repair_figure` to ``path`` (format by suffix: .pdf, .svg, .png)."""
    figure_format(Path(path))
    return save_figure(repair_figure(curve, random_weights=random_weights), path)
