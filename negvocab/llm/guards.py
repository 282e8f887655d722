"""What stops or slows an LLM run: the set-up budget, fail-fast on unusable answers, the health window,
a server's error classified (transient or fatal, an overload stepping the concurrency down) and a rate
limit's pause (:class:`RunGuards`, a base of :class:`~negvocab.llm.client.LLMClient`).

Until the first usable answer all requests together send at most :data:`SETUP_BUDGET`, and
:data:`FAIL_FAST_AFTER` unusable answers before any usable one stop the run with a one-line diagnosis
(:class:`~negvocab.llm.answers.FailFast`). After it, the run stops only when the server as a whole looks
broken: no answer among the last :data:`HEALTH_WINDOW` attempts across requests, or a permanent error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from negvocab.core.errors import ResourceError
from negvocab.llm.answers import FailFast, Transient, Tries, error_code, retry_after_seconds
from negvocab.llm.formats import BadAnswer, likely_fix, snippet
from negvocab.llm.secrets import SecretKeeper
from negvocab.llm.server_errors import (
    FORMAT,
    PERMANENT,
    Verdict,
    classify,
    connection_trouble,
    context_note,
    diagnosis,
    overload_words,
    server_words,
    temporary_words,
)
from negvocab.llm.throttle import Throttle

__all__ = ["FAIL_FAST_AFTER", "HEALTH_WINDOW", "SETUP_BUDGET", "RunGuards", "names_a_list"]

log = logging.getLogger(__name__)

#: unusable answers before any usable one after which a run stops (a broken setup costs little)
FAIL_FAST_AFTER = 5
#: HTTP requests (retries included) a run sends at most before its first usable answer: a broken
#: set-up (a wrong URL, a server answering HTML or 500, a format it cannot serve) costs no more
SETUP_BUDGET = 10
#: the run stops when no answer came among this many attempts in a row, across requests (the server looks broken;
#: at least as many as are in flight at once)
HEALTH_WINDOW = 10


class RunGuards(SecretKeeper):
    """The run's guards over the state a client keeps (set by :class:`~negvocab.llm.client.LLMClient`)."""

    base_url: str
    model: str
    key_name: str
    mode: str
    requested: str
    sdk: Any  # the openai SDK module (its exception classes)
    throttle: Throttle
    health_window: int
    retry_after_max: float
    reached: bool
    proven: bool
    format_seen: bool
    unusable: int
    failing: int
    setup_sent: int
    in_flight: int
    overloads: dict[str, int]
    _last_problem: str | None
    _last_bad: BadAnswer | None
    _failed: FailFast | None
    _fatal: ResourceError | None
    _probe_changed: asyncio.Event
    _paused_until: float
    _query_names: list[str]

    def _proven(self) -> None:
        """A list of names came back: the set-up works (more requests may go out at once)."""
        self.proven = self.format_seen = True
        self._probe_changed.set()

    def _failed_attempt(self, why: str) -> None:
        """Count an attempt without an answer; :data:`HEALTH_WINDOW` in a row across requests (after the set-up
        worked) stop the run: the server as a whole looks broken, not one request unlucky."""
        self.failing += 1  # a window at least as wide as the requests in flight: one stalled round is no verdict
        if self.proven and self.failing >= max(self.health_window, self.throttle.allowed) and self._fatal is None:
            self._fatal = ResourceError(
                f"{self.base_url}: no answer among the last {self.failing} attempts across requests, so the run "
                f"stopped (the last: {why}); everything answered is journaled: check the server (is it up? what "
                "does its log say?), then re-run the same command to resume",
                param="base_url",
            )

    def _spend_setup_budget(self) -> None:
        """Count a request sent before the first usable answer; past :data:`SETUP_BUDGET` the run stops."""
        if self.proven:
            return
        if self.setup_sent >= SETUP_BUDGET and self._failed is None:
            last = f"; the last: {self._last_problem}" if self._last_problem else ""
            last += context_note(self.overloads.get("context_full", 0))  # llama-server's context overflowed
            self._failed = FailFast(
                f"{self.base_url}: {self.setup_sent} requests sent and "
                "no usable answer, so the run stopped (a set-up that "
                f"does not work costs at most {SETUP_BUDGET}){last}"
            )
            self._probe_changed.set()
        if self._failed is not None:
            raise self._failed
        self.setup_sent += 1

    def _unusable(self, e: BadAnswer, tries: Tries) -> None:
        """Count an unusable answer; the :data:`FAIL_FAST_AFTER`-th before any usable one stops the run."""
        if self.proven or names_a_list(e):  # a short list is an answer: the early guard judges language and shape
            return
        self.unusable += 1
        self._last_bad = e
        if self.unusable >= FAIL_FAST_AFTER and self._failed is None:
            fix = likely_fix(e.kind, self.mode, self.requested, self.model, len(e.labels))
            said = f"; the server returned: {snippet(self.scrub(e.text))!r}" if e.text else ""
            self._failed = FailFast(
                f"{self.base_url}: the first {self.unusable} answers of this run were unusable ({e}; response format "
                f"{self.mode}), so the run stopped{said}; likely fix: {fix}",
                dict(tries.usage),
            )
            self._probe_changed.set()
            raise self._failed

    def _classify(self, e: Exception, tries: Tries) -> Exception:
        """What an exception of the SDK call means (:func:`negvocab.llm.server_errors.classify`): a transient
        error (an overload also steps the concurrency down), or a fatal one."""
        sdk = self.sdk
        if isinstance(e, sdk.APIStatusError):
            self.reached = True
            code = e.status_code
            detail = self._detail(e)
            verdict = classify(code, detail, error_code(e))
            if verdict.cause == "context_full" and tries.alone and not self.in_flight:
                verdict = Verdict(PERMANENT, "context_full")  # alone on the server and still no room: it never fits
            if verdict.kind in (PERMANENT, FORMAT):
                return self.fatal_error(e, verdict)
            tries.transport += 1
            after = retry_after_seconds(e.response.headers)
            why = f"HTTP {code}: {detail}"
            if verdict.cause in (
                "rate_limit",
                "context_full",
            ):  # the server is up and busy: fewer at once, no harm done
                self.overloads[verdict.cause] = self.overloads.get(verdict.cause, 0) + 1
                self.throttle.overloaded(tries.epoch, overload_words(verdict, self.base_url, why))
                self.setup_sent -= verdict.cause == "rate_limit" and not self.proven  # says nothing about the set-up
                if after is not None:
                    self._pause(after)
            else:
                self._last_problem = temporary_words(verdict, why)
                self._failed_attempt(self._last_problem)
            return Transient(why, after)
        if isinstance(e, (sdk.APIConnectionError, sdk.APITimeoutError)):
            tries.transport += 1
            what, connect, hint = connection_trouble(type(e.__cause__).__name__, isinstance(e, sdk.APITimeoutError))
            self._last_problem = f"{what} ({type(e).__name__}): {hint}"
            if isinstance(e, sdk.APITimeoutError):  # a server too busy to accept or answer in time: fewer at once
                self.throttle.overloaded(tries.epoch, f"{self.base_url}: {what}")
            self._failed_attempt(self._last_problem)
            return Transient(f"{what} ({type(e).__name__})", connect=connect)
        return e

    async def _gate(self) -> float:
        """Wait out a rate limit's pause; the seconds waited."""
        delay = self._paused_until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
            return delay
        return 0.0

    def _pause(self, seconds: float) -> None:
        seconds = min(seconds, self.retry_after_max)
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)
        log.info("rate limited by %s: pausing requests for %.1f s (Retry-After)", self.base_url, seconds)

    def _detail(self, e: Any) -> str:
        """The server's error message, secrets masked, cut to one short line."""
        return server_words(self.scrub(str(getattr(e, "message", "") or e)))

    def fatal_error(self, e: Any, verdict: Verdict | None = None) -> Exception:
        """The one-line :class:`ResourceError` of a permanent error (:func:`negvocab.llm.server_errors.diagnosis`)."""
        detail = self._detail(e)
        code = e.status_code
        verdict = verdict or classify(code, detail, error_code(e))
        causes = ("auth", "model", "context", "context_full", "quota", "endpoint", "rejected")
        if verdict.kind != FORMAT and verdict.cause not in causes:
            verdict = Verdict(PERMANENT, "rejected")
        line = diagnosis(
            verdict, code, detail, base_url=self.base_url, model=self.model, key_name=self.key_name, mode=self.mode,
            code=error_code(e),
            query_names=self._query_names,
        )  # fmt: skip
        return ResourceError(line)


def names_a_list(e: BadAnswer) -> bool:
    """Whether an answer with fewer names than asked is still a list of names (two or more, in language)."""
    return e.kind == "short" and len(e.labels) >= 2
