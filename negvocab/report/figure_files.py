"""Figures to files: one writer (:func:`save_figure`), the texts checked to lie inside the figure
(:func:`outside_texts`) and to be readable in print (:func:`print_problems`).

Every figure is drawn at the size it is printed: :data:`COLUMN_IN` wide (one column of a two-column
paper, ``\\includegraphics[width=\\columnwidth]``) or :data:`PAGE_IN` wide (the text width, a
``figure*``), with no text under :data:`~negvocab.report.style.MIN_FONT_PT` points, so the sizes a
reader sees are the sizes set here. A figure scaled down from a wider canvas would shrink its
legend from 8 pt to 2-3 pt.
"""

from __future__ import annotations

import os
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.atomic import atomic_path
from negvocab.core.errors import InputError
from negvocab.report.style import MIN_FONT_PT, saving

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "COLUMN_IN",
    "PAGE_IN",
    "PLOT_FORMATS",
    "check_plot_formats",
    "figure_format",
    "figure_png",
    "outside_texts",
    "print_problems",
    "save_figure",
]

#: one column of a two-column paper (CVPR, ICCV, NeurIPS' two-column styles, IEEE): 3.3 in
COLUMN_IN = 3.3
#: the text width of a two-column paper (a ``figure*``): 6.9 in
PAGE_IN = 6.9

#: file suffix -> (matplotlib format, dpi)
PLOT_FORMATS: dict[str, tuple[str, int | None]] = {".png": ("png", 300), ".pdf": ("pdf", None), ".svg": ("svg", None)}


def check_plot_formats(formats: Sequence[str], option: str = "plot format") -> list[str]:
    """``formats`` (``png``, ``pdf``, ``svg``; a leading dot and case ignored), or one line naming the bad one."""
    names = [str(f).strip().lower().lstrip(".") for f in formats]
    bad = [f for f, n in zip(formats, names, strict=True) if f".{n}" not in PLOT_FORMATS]
    choose = "png, pdf or svg"
    if bad:
        raise InputError(f"unknown {option} {bad[0]!r}; choose {choose}")
    if not names:
        raise InputError(f"{option}: give {choose}, comma-separated")
    return names


def figure_format(path: Path) -> tuple[str, int | None]:
    """The (format, dpi) a figure at ``path`` is written in, from its suffix; one line for another suffix."""
    fmt = PLOT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            f"{path}: a figure is written as {', '.join(PLOT_FORMATS)}; give the file one of these suffixes"
        )
    return fmt


def _drawable(fig: Figure) -> Any:
    """A renderer for ``fig`` after a draw (a pyplot-free Figure is given an Agg canvas first)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)  # a pyplot-free Figure: give it a canvas that can lay it out
    fig.canvas.draw()
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def _undrawn_tick_labels(fig: Figure) -> set[int]:
    """ids of the tick labels a draw leaves out (their ticks lie outside the view)."""
    every, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                every |= {id(tick.label1), id(tick.label2)}
            for tick in axis._update_ticks():  # type: ignore[union-attr]  # private: the ticks a draw shows
                drawn |= {id(tick.label1), id(tick.label2)}
    return every - drawn


def outside_texts(fig: Figure, *, draw: bool = True) -> list[str]:
    """The drawn, non-empty text artists of ``fig`` whose box leaves the figure: [] when nothing
    is clipped (the check :func:`save_figure` makes before writing)."""
    from matplotlib.text import Text

    renderer = _drawable(fig) if draw else fig.canvas.get_renderer()  # type: ignore[attr-defined]
    skip = _undrawn_tick_labels(fig)
    box = fig.bbox
    bad = []
    for t in fig.findobj(Text):
        if id(t) in skip or not t.get_visible() or not t.get_text().strip() or t.get_figure() is None:
            continue
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
            bad.append(t.get_text())
    return bad


def _fit_texts(fig: Figure) -> None:
    """Wrap (then shrink) text that would leave the figure, until every box lies inside it."""
    from matplotlib.text import Text

    for attempt in range(6):
        bad = set(outside_texts(fig))
        if not bad:
            return
        for t in fig.findobj(Text):
            if t.get_text() in bad:
                lines = t.get_text().split("\n")
                chars = max(16, int(0.7 * max(len(x) for x in lines)))
                t.set_text("\n".join(textwrap.fill(line, chars) for line in lines))
                if attempt >= 2:  # never below the print minimum: a figure's texts stay readable in print
                    t.set_fontsize(max(MIN_FONT_PT, float(t.get_fontsize()) * 0.85))


def save_figure(fig: Figure, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write ``fig`` atomically in the format of ``path``'s suffix (.png at 300 dpi, .pdf, .svg),
    with ``title`` (default: the figure's) in the file's metadata and every text inside the figure.
    Matplotlib's warnings are not shown: a warning is the figure's business, not the user's."""
    path = Path(path)
    fmt, dpi = figure_format(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        caption = title or (fig._suptitle.get_text() if fig._suptitle is not None else "")  # type: ignore[attr-defined]
        meta = {"Title": " ".join(caption.split())} if caption else {}
        for _ in range(3):  # a draw may move a legend ("best"): fit, save, and check the drawn result
            _fit_texts(fig)
            with atomic_path(path, suffix=path.suffix) as tmp, saving():  # TrueType fonts in a PDF
                fig.savefig(tmp, format=fmt, dpi=dpi or "figure", metadata=meta)
            if not outside_texts(fig):
                break
    return path


def figure_png(fig: Figure, dpi: int = 160) -> bytes:
    """``fig`` as PNG bytes (for a page that embeds it), its texts fitted as :func:`save_figure` does."""
    import io

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit_texts(fig)
        fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def print_problems(fig: Figure) -> list[str]:
    """What keeps ``fig`` from print as it is: wider than :data:`PAGE_IN`, or a drawn text smaller
    than :data:`~negvocab.report.style.MIN_FONT_PT` points; [] when it prints at its own size."""
    from matplotlib.text import Text

    _drawable(fig)
    problems = []
    width = fig.get_figwidth()
    if width > PAGE_IN + 1e-6:
        problems.append(f"{width:.2f} in wide, more than a page's {PAGE_IN} in")
    skip = _undrawn_tick_labels(fig)
    for t in fig.findobj(Text):
        if id(t) in skip or not t.get_visible() or not t.get_text().strip() or t.get_figure() is None:
            continue
        if float(t.get_fontsize()) < MIN_FONT_PT - 1e-6:
            problems.append(f"{t.get_text()[:40]!r} at {t.get_fontsize():.1f} pt, under {MIN_FONT_PT} pt")
    return problems
