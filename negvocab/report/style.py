"""The print style of every figure: a colour-blind-safe palette, TrueType fonts, readable sizes.

:data:`PALETTE` is Okabe and Ito's (2008) colour-blind-safe palette (black moved last), checked
under a deuteranopia simulation in the tests; every line also gets a marker or a line style, so
that colour is never the only cue. :data:`PRINT_RC` embeds fonts as TrueType (Type 42) in PDF and
PostScript, which venues accept where they reject Type 3, sets the legend and tick labels to at
least 8 pt, and keeps tick labels plain (no offset, no "x10^n"). :func:`print_style` applies it
while a figure is built (colours are fixed when an artist is made) and :func:`saving` while it is
written (the font type is read when a file is written).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["LINE_STYLES", "MARKERS", "PALETTE", "PRINT_RC", "print_rc", "print_style", "saving"]

#: Okabe & Ito (2008), "Color Universal Design": blue, orange, bluish green, vermillion, reddish
#: purple, sky blue, yellow, black
PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
#: the second cue beside colour, in the palette's order
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
LINE_STYLES: tuple[str, ...] = ("-", "--", "-.", ":")
#: the smallest text in a figure, in points (at the figure's own size)
MIN_FONT_PT = 8


def print_rc() -> dict[str, Any]:
    """The rcParams of :data:`PRINT_RC` (built on first use: cycler comes with matplotlib)."""
    from cycler import cycler

    return {
        "axes.prop_cycle": cycler(color=list(PALETTE)),
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "legend.fontsize": MIN_FONT_PT,
        "xtick.labelsize": MIN_FONT_PT,
        "ytick.labelsize": MIN_FONT_PT,
        "axes.labelsize": 9,
        "axes.formatter.useoffset": False,
        "axes.formatter.use_mathtext": False,
    }


#: rcParams keys :func:`print_rc` sets (documentation; the values are built on first use)
PRINT_RC: tuple[str, ...] = (
    "axes.prop_cycle", "pdf.fonttype", "ps.fonttype", "legend.fontsize", "xtick.labelsize", "ytick.labelsize",
    "axes.labelsize", "axes.formatter.useoffset", "axes.formatter.use_mathtext",
)  # fmt: skip

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def saving() -> Iterator[None]:
    """The print style while a figure is written (TrueType fonts in a PDF)."""
    import matplotlib

    with matplotlib.rc_context(cast(Any, print_rc())):  # Any: the stubs want literal rcParams keys
        yield


def print_style(build: Callable[P, R]) -> Callable[P, R]:
    """``build`` (a function that makes a figure) run under the print style."""

    @functools.wraps(build)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with saving():
            return build(*args, **kwargs)

    return run
