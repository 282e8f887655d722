"""Progress of long runs: a bar on a terminal, lines in the log everywhere.

A bar (tqdm) is drawn only where someone watches: on a terminal, after :data:`BAR_DELAY_S` seconds,
so short runs draw nothing. In a notebook without ipywidgets the plain bar is used, never the widget
one (which would warn "IProgress not found"). Whatever the output, every :data:`LOG_EVERY_S` seconds
(``$NEGVOCAB_PROGRESS_EVERY_S`` sets another interval: a number > 0 of seconds)
a line with done/total, rate and ETA goes to the ``negvocab.core.progress`` logger, so a run redirected to
a file (nohup, SLURM) or written to ``--log-file`` shows where it is. The CLI shows those lines on
stderr when stderr is not a terminal (where the bar is not drawn).

Ctrl-C is never lost: inside :func:`interrupt_guard` a SIGINT is also recorded, and every
:meth:`Progress.update` (and :func:`check_interrupt` between phases) raises ``KeyboardInterrupt``
again if the first one was swallowed on its way up (Python drops an exception raised in a fork
hook, "Exception ignored in: <function _releaseLock>", when the signal lands while DataLoader
workers start).

What an interrupted run keeps for the next one (rows in the embedding cache, answers in an LLM
journal) is tallied with :func:`note_kept`; the CLI's Ctrl-C line says "re-run to resume" only when
:func:`kept_work` holds something, and says how much.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

LOG_EVERY_S = 30.0
#: the environment variable that sets another interval between progress lines (seconds)
EVERY_ENV = "NEGVOCAB_PROGRESS_EVERY_S"
BAR_DELAY_S = 2.0
logger = logging.getLogger("negvocab.core.progress")
T = TypeVar("T")

__all__ = [
    "EVERY_ENV",
    "LOG_EVERY_S",
    "Progress",
    "check_interrupt",
    "format_duration",
    "forget_kept",
    "interrupt_guard",
    "kept_work",
    "log_interval",
    "note_kept",
    "track",
]

_kept: dict[str, int] = {}
_kept_lock = threading.Lock()


def note_kept(what: str, n: int) -> None:
    """Record that ``n`` units of ``what`` (``"text embeddings"``) are now kept where a re-run finds
    them; ``n = 0`` records a resumable place that holds nothing yet (an LLM run journal)."""
    with _kept_lock:
        _kept[what] = _kept.get(what, 0) + int(n)


def kept_work() -> dict[str, int]:
    """What this process has kept for a re-run so far, by kind (see :func:`note_kept`)."""
    with _kept_lock:
        return dict(_kept)


def forget_kept() -> None:
    """Start a new tally (each CLI command starts with none)."""
    with _kept_lock:
        _kept.clear()


_pending_interrupt = threading.Event()
_warned: set[str] = set()  # bad $NEGVOCAB_PROGRESS_EVERY_S values already said


def check_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` if a Ctrl-C arrived inside :func:`interrupt_guard` and was
    swallowed before it ended the run."""
    if _pending_interrupt.is_set():
        _pending_interrupt.clear()
        raise KeyboardInterrupt


def _on_sigint(signum: int, frame: Any) -> None:
    _pending_interrupt.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_guard() -> Iterator[None]:
    """Record every SIGINT while the block runs (see the module docstring); the main thread only
    (elsewhere, and when a handler of the caller's own is installed, nothing changes)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    _pending_interrupt.clear()
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _pending_interrupt.clear()


def log_interval() -> float:
    """Seconds between progress lines: ``$NEGVOCAB_PROGRESS_EVERY_S`` when it is a number > 0
    (anything else is said once per process in a warning), else :data:`LOG_EVERY_S`."""
    raw = os.environ.get(EVERY_ENV, "").strip()
    if not raw:
        return LOG_EVERY_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        if raw in _warned:
            return LOG_EVERY_S
        _warned.add(raw)
        logger.warning("%s=%r: not a number of seconds > 0; a progress line every %g s", EVERY_ENV, raw, LOG_EVERY_S)
        return LOG_EVERY_S
    return value


def format_duration(seconds: float) -> str:
    """``3h05m``, ``12m04s`` or ``42s``."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def _bar_class() -> Any:
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm  # the widget bar in notebooks
    else:
        from tqdm.std import tqdm  # never the widget bar without ipywidgets ("IProgress not found")
    return tqdm


class Progress:
    """Counts work done towards ``total``; draws a bar (when ``bar``) and logs a line every
    ``log_every`` seconds. ``extra`` names a second count shown as a rate (the images of a grid's
    units: ``update(1, extra=n_images)``); :meth:`tick` logs a due line while nothing finishes.

    >>> clock = iter([0.0, 10.0, 31.0, 40.0]).__next__
    >>> with Progress(100, "encoding", "prompt", bar=False, clock=clock) as p:
    ...     p.update(10); p.update(20)
    >>> p.line(now=31.0)
    'encoding: 30/100 prompts (30.0%), 0.968 prompts/s, ETA 1m12s'
    """

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str = "item",
        *,
        bar: bool = True,
        log_every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        extra: str | None = None,
    ) -> None:
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = 0
        self.extra_unit, self.extra = extra, 0
        self.lines = 0
        self._clock, self._log_every = clock, log_interval() if log_every is None else log_every
        self._t0 = self._last = clock()
        self._bar = (
            _bar_class()(total=total, desc=desc, unit=unit, disable=None, delay=BAR_DELAY_S, leave=False)
            if bar
            else None
        )

    def update(self, n: int = 1, extra: int = 0) -> None:
        """Add ``n`` units done (and ``extra`` of the second count); log a line when ``log_every``
        seconds passed since the last."""
        check_interrupt()
        self.n += n
        self.extra += extra
        if self._bar is not None:
            if self.extra_unit:
                self._bar.set_postfix_str(self._extra_rate(self._clock()), refresh=False)
            self._bar.update(n)
        self.tick()

    def tick(self) -> None:
        """Log a line if ``log_every`` seconds passed since the last (call it while waiting)."""
        now = self._clock()
        if now - self._last >= self._log_every:
            self._last = now
            self.lines += 1
            logger.info(self.line(now))

    def line(self, now: float | None = None) -> str:
        """``desc: done/total units (pct), rate units/s, ETA``."""
        elapsed = max((self._clock() if now is None else now) - self._t0, 1e-9)
        rate = self.n / elapsed
        pct = 100.0 * self.n / self.total if self.total else 100.0
        eta = format_duration((self.total - self.n) / rate) if rate > 0 else "unknown"
        extra = f", {self._extra_rate(now)}" if self.extra_unit else ""
        return (
            f"{self.desc}: {self.n:,}/{self.total:,} {self.unit}s "
            f"({pct:.1f}%), {rate:.3g} {self.unit}s/s{extra}, ETA {eta}"
        )

    def _extra_rate(self, now: float | None) -> str:
        elapsed = max((self._clock() if now is None else now) - self._t0, 1e-9)
        return f"{self.extra / elapsed:.3g} {self.extra_unit}s/s"

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def track(items: Iterable[T], total: int, desc: str, unit: str = "item", *, bar: bool = True) -> Iterator[T]:
    """Iterate ``items`` with a :class:`Progress` (one unit per item)."""
    with Progress(total, desc, unit, bar=bar) as p:
        for item in items:
            yield item
            p.update(1)
