"""The pool-size figure: FPR@TPR and AUROC against M, several series overlaid, ready for a paper.

:func:`sweep_figure` draws the rows of one or more sweeps (:func:`negvocab.sweep_vocabulary`; rows of
several sweeps, e.g. of two methods, vocabularies or models, can be concatenated): each distinct
(model, method, vocabulary, templates, convention, OOD set) is a series with its bootstrap CI band in
both panels; what all series share goes in the title, what differs in the legend. Reference
vocabularies are horizontal lines; a non-deployable one (oracle, transductive) says so in the legend.
:func:`plot_sweep` writes the figure in the format its path's suffix names (PNG at 300 dpi, PDF, SVG).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.atomic import atomic_path
from negvocab.errors import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PLOT_FORMATS", "plot_sweep", "sweep_figure"]

#: file suffix -> (matplotlib format, dpi)
PLOT_FORMATS: dict[str, tuple[str, int | None]] = {".png": ("png", 300), ".pdf": ("pdf", None), ".svg": ("svg", None)}
#: the fields that tell series apart, with how each is shown
_SERIES_FIELDS = (("model", "{}"), ("pretrained", "{}"), ("method", "{}"), ("vocabulary", "{}"), ("templates", "templates {}"), ("convention", "{} convention"), ("ood_set", "OOD {}"))


def _pick_ood(rows: Sequence[Mapping[str, Any]], ood_set: str | None) -> list[Mapping[str, Any]]:
    """Rows of one OOD set: ``ood_set`` if given (``"all"``: every set and the mean), else the mean
    when there are several sets."""
    names = {r.get("ood_set") for r in rows}
    if ood_set == "all" or len(names) < 2 and ood_set is None:
        return list(rows)
    want = ood_set if ood_set is not None else "mean"
    if want not in names:
        raise InputError(f"no sweep rows for OOD set {want!r}; the rows have {', '.join(sorted(str(n) for n in names))}")
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
        parts.append(f"{first.get('model', '?')} ({weights})" if "pretrained" not in varying else str(first.get("model", "?")))
    for field, fmt in _SERIES_FIELDS[2:]:
        if field not in varying and first.get(field) not in (None, ""):
            parts.append(("vocabulary {}" if field == "vocabulary" else fmt).format(first[field]))
    heading = "Pool size M: " + ", ".join(parts)
    if random_weights:
        heading += "\n[RANDOM WEIGHTS: meaningless]"
    return heading


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
    naming the series); ``references``: rows with ``name`` and ``M`` drawn as horizontal lines;
    ``ood_set``: which OOD set to draw when the rows hold several (default their mean; ``"all"``
    overlays each); ``random_weights``: mark the figure (default: any row says so); ``figure``: an
    empty figure to draw into (e.g. ``plt.figure()`` in a notebook), else a new one without pyplot.
    """
    from matplotlib.figure import Figure  # no pyplot: no backend is chosen or changed
    from matplotlib.ticker import NullFormatter

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
    fig = figure if figure is not None else Figure(figsize=(10, 4.2))
    fig.set_layout_engine("constrained")
    axes = fig.subplots(1, 2)
    metrics = (("fpr", f"FPR@{tpr} (%)" + ("" if "convention" in varying else f", {conv} convention")), ("auroc", "AUROC (%)"))
    for ax, (key, ylabel) in zip(axes, metrics, strict=True):
        values: list[float] = []
        for i, part in enumerate(series.values()):
            part = sorted(part, key=lambda r: r["M"])
            x = [r["M"] for r in part]
            label = _describe(part[0], varying) or str(part[0].get("vocabulary") or "first M of the ranking")
            if _not_deployable(part[0]):
                label += " (not deployable)"
            y = [100 * r[key] for r in part]
            ax.plot(x, y, marker="o", color=f"C{i}", label=label)
            values += y
            cis = [r.get(f"{key}_ci") for r in part]
            if all(ci and not any(math.isnan(c) for c in ci) for ci in cis):
                lo = [max(0.0, 100 * ci[0]) for ci in cis]  # type: ignore[index]
                hi = [min(100.0, 100 * ci[1]) for ci in cis]  # type: ignore[index]
                ax.fill_between(x, lo, hi, color=f"C{i}", alpha=0.2, linewidth=0, label="95% CI (OOD bootstrap)" if i == 0 else None)
                values += lo + hi
        ref_varying = _varying(refs) if refs else []
        for j, ref in enumerate(refs):
            name = str(ref.get("name", "reference"))
            extra = _describe(ref, [f for f in ref_varying if f != "vocabulary"])
            label = f"{name}{' (not deployable)' if _not_deployable(ref) else ''}, M={ref['M']:,}" + (f" [{extra}]" if extra else "")
            ax.axhline(100 * ref[key], linestyle="--", color=f"C{len(series) + j}", label=label)
            values.append(100 * ref[key])
        ax.set_xscale("log")
        ax.set_xticks(ms, [f"{m:,}" for m in ms])  # the swept sizes, not powers of ten
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("pool size M")
        ax.set_ylabel(ylabel)
        finite = [v for v in values if math.isfinite(v)]
        lo, hi = (min(finite), max(finite)) if finite else (0.0, 100.0)
        pad = max(2.0, 0.08 * (hi - lo))
        ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad))  # a percentage: never outside [0, 100]
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title + ("\n[RANDOM WEIGHTS: meaningless]" if random_weights else "") if title else _title(rows, varying, random_weights))
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
    (300 dpi), ``.pdf`` or ``.svg``; any other suffix is refused before anything is drawn."""
    path = Path(path)
    fmt = PLOT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"{path}: a figure is written as {', '.join(PLOT_FORMATS)}; give the file one of these suffixes")
    fig = sweep_figure(rows, references=references, title=title, random_weights=random_weights, ood_set=ood_set)
    with atomic_path(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, format=fmt[0], dpi=fmt[1] or "figure")
    return path
