"""Resident memory of this process (Linux /proc), and its peak over a block, for the benchmarks."""

from __future__ import annotations

import resource
import threading
import time


def rss_gib(anonymous: bool = False) -> float:
    """Resident set size in GiB; ``anonymous`` leaves out file-backed pages (a memory-mapped
    file's pages are page cache the kernel can write back and drop, not the process's own)."""
    with open("/proc/self/statm") as fh:
        _, resident, shared = (int(x) for x in fh.read().split()[:3])
    return (resident - shared if anonymous else resident) * resource.getpagesize() / 2**30


class PeakRSS:
    """``with PeakRSS() as p: ...`` samples :func:`rss_gib` every 5 ms; ``p.peak`` is the highest
    (the process's own high-water mark would include import-time transients)."""

    def __init__(self, anonymous: bool = False) -> None:
        self.anonymous = anonymous
        self.start = self.peak = rss_gib(anonymous)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_gib(self.anonymous))
            time.sleep(0.005)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, rss_gib(self.anonymous))
