"""How many requests a run keeps in flight: at most ``concurrency``, halved on overload, grown on success (AIMD).

A rate-limited account (429 storms) or a server whose slots share one context (llama-server's ``Context size
has been exceeded.``) answers too many requests at once with errors; sending the same number again only
hammers it. :class:`Throttle` is TCP's answer: the limit is halved when the server says it is overloaded, and
grows by one after as many successes as the limit (about one more request per round), never above the
``concurrency`` asked for. It is halved at most once per round of requests in flight (one burst of 429s halves
it once), and only when overloads are a real share of the last round's answers (a quarter or more): a server
that fails a few requests at random is no rate limit. Its history (``lowest``, ``decreases``) goes into the
run's summary.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

__all__ = ["Throttle"]

log = logging.getLogger(__name__)


class Throttle:
    """An adaptive concurrency limit: ``async with throttle:`` holds one of ``limit`` slots.

    ``ceiling`` is the most in flight (the ``concurrency`` asked for); the limit starts there.
    """

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.in_use = 0
        self.lowest = ceiling
        self.decreases = 0
        self._epoch = 0  # bumped at each decrease: an overload seen by a request sent before it is not counted again
        self._cond: asyncio.Condition | None = None
        self.last_decrease = 0.0
        self._recent: deque[bool] = deque(maxlen=max(8, ceiling))  # the last answers: True for an overload

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:  # made in the running loop (a client may be built outside one)
            self._cond = asyncio.Condition()
        return self._cond

    @property
    def allowed(self) -> int:
        """Requests allowed in flight now (at least 1)."""
        return max(1, int(self.limit))

    @property
    def epoch(self) -> int:
        """A token a request takes when it is sent, for :meth:`overloaded`."""
        return self._epoch

    async def __aenter__(self) -> Throttle:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.in_use < self.allowed)
            self.in_use += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        cond = self._condition()
        async with cond:
            self.in_use -= 1
            cond.notify_all()

    def succeeded(self) -> None:
        """One answer came back: the limit grows by ``1/limit`` (one more slot per round), up to the ceiling."""
        self._recent.append(False)
        if self.limit < self.ceiling:  # waiters are woken when this request's slot is released
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)

    def overloaded(self, epoch: int, why: str) -> bool:
        """The server said it is overloaded (``why``) to a request sent at ``epoch``: halve the limit, once per
        round (answers to requests sent before the last decrease do not halve it again). Whether it was halved."""
        self._recent.append(True)
        last_round = list(self._recent)[-self.allowed :]
        if epoch != self._epoch or self.limit <= 1 or 4 * sum(last_round) < len(last_round):
            return False
        self.limit = max(1.0, self.limit / 2)
        self._epoch += 1
        self.decreases += 1
        self.lowest = min(self.lowest, self.allowed)
        self.last_decrease = time.monotonic()
        log.warning("%s: at most %d requests in flight now (of %d); more again as answers come", why, self.allowed,
                    self.ceiling)  # fmt: skip
        return True
