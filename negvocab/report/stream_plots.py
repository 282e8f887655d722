"""The figure of a test-time method against its stream: FPR@95 over the ID:OOD ratio, a line per
temporal-shift phase order.

:func:`shift_figure` draws the rows of test-time runs (:func:`negvocab.evaluate_stream` with
``id_ood_ratio`` and, optionally, ``phases``): one panel per method, the ID:OOD ratio on a log axis,
FPR@95 (%) of one OOD set (default: ``mean``, the mean over the sets) on the other, one line per phase
order (``ptis``, ``spti``, ``tisp``; a run without phases, each set from a fresh state, is the line
"fresh per set"). Several stream seeds' rows are averaged per point, and the points say how many
seeds they hold. The title says the results are test-time (and marks random weights):
:func:`plot_shift` writes it through :func:`negvocab.report.figure_files.save_figure`.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.evaluation.kinds import is_test_time
from negvocab.report.figure_files import COLUMN_IN, PAGE_IN, figure_format, save_figure
from negvocab.report.style import LINE_STYLES, MARKERS, PALETTE, print_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FRESH", "plot_shift", "shift_figure"]

#: the legend's name of a run without phases (each OOD set streamed from a fresh state)
FRESH = "fresh per set"


def _points(rows: Sequence[Mapping[str, Any]], ood_set: str) -> dict[str, dict[str, dict[float, list[float]]]]:
    """method -> phase order -> ratio -> FPRs (one per row: a stream seed) of ``ood_set``'s test-time rows."""
    out: dict[str, dict[str, dict[float, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows:
        if not is_test_time(r) or str(r.get("ood_set")) != ood_set:
            continue
        ratio = r.get("id_ood_ratio")
        if not isinstance(ratio, (int, float)) or not ratio > 0:
            raise InputError(
                f"a test-time row of {r.get('method')} on {ood_set} has no id_ood_ratio: run the stream with "
                "id_ood_ratio (--id-ood-ratio) to place it on the ratio axis",
                param="id_ood_ratio",
            )
        out[str(r.get("method"))][str(r.get("stream_phases") or FRESH)][float(ratio)].append(100 * float(r["fpr"]))
    if not out:
        raise InputError(f"nothing to plot: no test-time rows of OOD set {ood_set!r}", param="ood_set")
    return out


def _ratio_label(ratio: float) -> str:
    """1:10, 1:1, 10:1, 1:2.5 ... (ID:OOD)."""
    return f"{ratio:g}:1" if ratio >= 1 else f"1:{1 / ratio:g}"


@print_style
def shift_figure(rows: Sequence[Mapping[str, Any]], *, ood_set: str = "mean", title: str | None = None) -> Figure:
    """FPR@95 (%) of ``ood_set`` against the ID:OOD ratio, one panel per method, a line per phase order
    (module docstring). ``rows``: test-time rows, each with ``id_ood_ratio``."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    points = _points(rows, ood_set)
    methods = list(points)
    fig = Figure(figsize=(COLUMN_IN if len(methods) == 1 else PAGE_IN, 3.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(methods), squeeze=False, sharey=True)[0])
    orders = list(dict.fromkeys(o for m in methods for o in points[m]))
    for ax, method in zip(axes, methods, strict=True):
        for order, by_ratio in points[method].items():
            i = orders.index(order)
            ratios = sorted(by_ratio)
            fprs = [float(np.mean(by_ratio[x])) for x in ratios]
            seeds = max(len(v) for v in by_ratio.values())
            label = order + (f" ({seeds} seeds)" if seeds > 1 else "")
            ax.plot(
                ratios,
                fprs,
                color=PALETTE[i % len(PALETTE)],
                marker=MARKERS[i % len(MARKERS)],
                linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                label=label,
            )
        ticks = sorted({x for v in points[method].values() for x in v})
        ax.set_xscale("log")
        ax.set_xticks(ticks, [_ratio_label(x) for x in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("ID:OOD images in each stream")
        ax.set_title(f"{method} [test-time]", fontsize=9)
        ax.grid(True, alpha=0.3)
    first = next(r for r in rows if is_test_time(r))
    tpr = int(round(100 * float(first.get("tpr", 0.95))))
    axes[0].set_ylabel(f"FPR@{tpr} (%), {ood_set}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4), fontsize=8, frameon=False)
    heading = title or "Test-time methods against their stream: ID:OOD ratio and phase order"
    if any(r.get("random_weights") for r in rows):
        heading += "\n[RANDOM WEIGHTS: meaningless]"
    fig.suptitle(heading, fontsize=10)
    return fig


def plot_shift(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    ood_set: str = "mean",
    title: str | None = None,
) -> Path:
    """Write :func:`shift_figure` to ``path`` (format by suffix: .pdf, .svg, .png)."""
    figure_format(Path(path))
    return save_figure(shift_figure(rows, ood_set=ood_set, title=title), path)
