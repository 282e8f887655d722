"""Send the requests of a run that the journal does not hold yet, synchronously (async, concurrent).

A :class:`Request` is one (class or chunk, round) question. :func:`pending` picks those without a
journaled result; :func:`run_sync` sends them through an :class:`~negvocab.llm.client.LLMClient`
and journals each answer as it arrives (a writer thread groups lines that finish together into one
fsynced write, so the event loop never waits for the disk).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from negvocab.core.errors import ResourceError
from negvocab.labels.lexicon import english_words
from negvocab.llm.client import Answer, FailFast, LLMClient, NotSent, ServerGaveUp
from negvocab.llm.journal import Journal, custom_id, identity_hash
from negvocab.llm.prompts import PromptTemplate

__all__ = [
    "FAILED",
    "HEARTBEAT_S",
    "INTERRUPT_QUIET_S",
    "Progress",
    "RETRYABLE",
    "Request",
    "answered",
    "failed_before",
    "make_request",
    "pending",
    "result_record",
    "run_sync",
]

log = logging.getLogger(__name__)

#: progress callback: (finished so far, total to do)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Request:
    """One question: ``n`` labels for class/chunk ``key`` in ``round``, as chat ``messages``; ``images``:
    data URLs sent before the last message's text (OpenAI's ``image_url`` content parts, which
    llama.cpp's server, vLLM and Ollama take too)."""

    key: str
    round: int
    messages: tuple[tuple[str, str], ...]
    n: int
    min_labels: int
    images: tuple[str, ...] = ()

    @property
    def custom_id(self) -> str:
        return custom_id(self.key, self.round)

    def chat(self) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = [{"role": role, "content": content} for role, content in self.messages]
        if self.images and msgs:
            parts = [{"type": "image_url", "image_url": {"url": url}} for url in self.images]
            msgs[-1]["content"] = [*parts, {"type": "text", "text": msgs[-1]["content"]}]
        return msgs

    @property
    def sha256(self) -> str:
        """Hash of what is asked (messages, images, n, min_labels): a journaled answer counts only for it."""
        asked: dict[str, Any] = {
            "messages": [list(m) for m in self.messages],
            "n": self.n,
            "min_labels": self.min_labels,
        }
        if self.images:  # a question without images keeps the hash it always had
            asked["images"] = list(self.images)
        return identity_hash(asked)


def make_request(
    template: PromptTemplate,
    key: str,
    round_: int,
    n: int,
    values: dict[str, Any],
    min_labels: int | None = None,
    images: tuple[str, ...] = (),
) -> Request:
    """The request for (``key``, ``round_``) with the template filled from ``values`` and ``n``, the
    ``images`` (data URLs) sent with its last message."""
    msgs = template.render(n=n, **values)
    return Request(
        key, round_, tuple((m["role"], m["content"]) for m in msgs), n, n if min_labels is None else min_labels, images
    )


def answered(req: Request, journal: Journal) -> bool:
    """Whether ``journal`` holds an answer to ``req`` as it is asked now (same messages and n)."""
    return journal.answer(req.custom_id, req.sha256) is not None


#: the recorded failures that every run asks again: no usable list came back (never final)
FAILED = ("refused", "invalid")
#: the recorded failures that ``retry_failed`` asks again too (a short list is kept meanwhile)
RETRYABLE = ("refused", "invalid", "short")


def pending(
    requests: Iterable[Request], journal: Journal, *, retry_failed: bool = False, failed: bool = True
) -> list[Request]:
    """The requests without an answer in ``journal`` (in the given order), and those whose recorded
    answer is a failure with no labels (refused, invalid; not with ``failed=False``); with
    ``retry_failed`` also the short ones."""
    again = RETRYABLE if retry_failed else FAILED if failed else ()
    return [r for r in requests if (rec := journal.answer(r.custom_id, r.sha256)) is None or rec.get("status") in again]


def failed_before(requests: Iterable[Request], journal: Journal, statuses: tuple[str, ...] = FAILED) -> int:
    """How many of ``requests`` have a recorded answer with one of ``statuses`` (default: the
    failures every synchronous run asks again; ``RETRYABLE`` for all that can be asked again)."""
    return sum(
        1
        for r in requests
        if (rec := journal.answer(r.custom_id, r.sha256)) is not None and rec.get("status") in statuses
    )


def result_record(req: Request, answer: Answer, template: PromptTemplate, *, mode: str, **extra: Any) -> dict[str, Any]:
    """The journal line for a finished request."""
    return {
        "kind": "result",
        "custom_id": req.custom_id,
        "request_sha256": req.sha256,
        "key": req.key,
        "round": req.round,
        "status": answer.status,
        "labels": answer.labels,
        "n": req.n,
        "usage": answer.usage,
        "request_id": answer.request_id,
        "model": answer.model,
        "prompt": template.name,
        "prompt_file": template.source,
        "prompt_sha256": template.sha256,
        "attempts": answer.attempts,
        "error": answer.error,
        "mode": mode,
        "response_format": answer.mode,
        **({"snippet": answer.snippet} if answer.snippet else {}),
        # the answer's items before cleaning, where cleaning changed them (read again by
        # negvocab.llm.text.reclean_results: the vocabulary's provenance lists raw -> clean and the drops)
        **({"raw_labels": answer.raw_labels} if answer.raw_labels and answer.raw_labels != answer.labels else {}),
        "time": round(time.time(), 3),
        **extra,
    }


class _Writer:
    """A thread that appends queued journal records, one fsynced write per group."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._items: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="negvocab-journal", daemon=True)
        self._thread.start()

    def put(self, record: dict[str, Any]) -> None:
        if self.error is not None:
            raise self.error
        with self._cond:
            self._items.append(record)
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                items, self._items = self._items, []
                closed = self._closed
            if items:
                try:
                    self.journal.append(items)
                except OSError as e:  # surfaced on the next put / close, in one line
                    self.error = self.journal.write_error(e)
                    return
                except BaseException as e:  # a full disk (ResourceError) among them
                    self.error = e
                    return
            if closed and not items:
                return

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        if self.error is not None:
            raise self.error


#: longest quiet spell between heartbeat lines while a run waits for its server
HEARTBEAT_S = 20.0
#: after Ctrl-C, the questions under way are given up when no answer came for this long
INTERRUPT_QUIET_S = 1.0


async def run_sync(
    requests: Sequence[Request],
    client: LLMClient,
    journal: Journal,
    template: PromptTemplate,
    *,
    on_progress: Progress | None = None,
) -> list[str]:
    """Send ``requests`` concurrently, journaling each answer; returns the custom ids left undone.

    A request whose transport attempts run out is deferred: it waits (:meth:`LLMClient.deferral_wait`,
    backing off) while the other requests proceed, then is asked again, up to ``client.deferrals`` times;
    only then is it left undone (not journaled) for a re-run. Content failures are journaled with their
    status. The run stops early only when the server as a whole looks broken (no answer among the last
    ``client.health_window`` attempts across requests: a :class:`ResourceError` from the client), on a
    permanent error, or when the server was never reached; everything answered is journaled, so the same
    call resumes. While nothing comes back, a heartbeat line says what the run waits for; Ctrl-C sends
    nothing new and waits for the questions under way only while the server keeps answering.
    """
    run = _SyncRun(client, journal, template, len(requests), on_progress)
    await asyncio.to_thread(english_words)  # the words answers are judged against, read once off the event loop
    tasks = [asyncio.ensure_future(run.one(r)) for r in requests]
    beat = asyncio.ensure_future(_heartbeat(client))
    try:
        try:
            await _wait_for(tasks, client)
        finally:
            beat.cancel()
            for t in tasks:
                t.cancel()
            await asyncio.gather(beat, *tasks, return_exceptions=True)  # every task's outcome retrieved
            _say_how_it_went(client, run.deferred)
    finally:
        await run.close()
    return run.gave_up


class _SyncRun:
    """The state of one :func:`run_sync`: its journal writer, what is done, given up and deferred."""

    def __init__(
        self, client: LLMClient, journal: Journal, template: PromptTemplate, total: int, on_progress: Progress | None
    ) -> None:
        self.client, self.template, self.total, self.on_progress = client, template, total, on_progress
        self.writer = _Writer(journal)
        self.tag = journal.identity_sha256[:8]
        self.done = 0
        self.deferred = 0
        self.gave_up: list[str] = []

    async def ask(self, req: Request) -> Answer | None:
        """The request's answer, deferred while the server gives up on it (or answers no list in any attempt,
        as a flaky server's malformed JSON); ``None`` when left undone for the next run."""
        client = self.client
        for round_ in range(client.deferrals + 1):
            last = round_ == client.deferrals
            try:
                answer = await client.ask(
                    req.chat(), req.n, min_labels=req.min_labels, trace_id=f"{self.tag}:{req.custom_id}"
                )
            except ServerGaveUp as e:
                if not client.reached:
                    raise ResourceError(
                        f"{e}; the server never answered: check that it is up and the base URL (OPENAI_BASE_URL or "
                        "base_url), then re-run the same command",
                        param="base_url",
                    ) from None
                why, usage = str(e), e.usage
            else:
                if answer.status != "invalid" or last or not client.may_retry_content():
                    return answer
                why, usage = f"no usable answer in {answer.attempts} attempts ({answer.error})", answer.usage
            if usage:  # tokens billed for unusable answers: counted in the cost
                self.writer.put(_attempt_failed(req, why, usage))
            if last:
                log.warning("%s: %s, %d times; left for the next run", req.custom_id, why, round_ + 1)
                return None
            self.deferred += 1
            wait = client.deferral_wait(round_)
            log.info("%s: %s; deferred, asked again in %.1f s while the others go on", req.custom_id, why, wait)
            await asyncio.sleep(wait)
        return None  # pragma: no cover (the loop returns)

    async def one(self, req: Request) -> None:
        """Ask ``req`` and journal its answer (or note it given up), then report progress."""
        if self.writer.error is not None:  # the journal cannot be written: ask nothing more
            raise self.writer.error
        try:
            answer = await self.ask(req)
        except NotSent:
            return
        except FailFast as e:
            if e.usage:  # the tokens of the unusable answers are counted in the cost
                self.writer.put(_attempt_failed(req, str(e)[:300], e.usage))
                e.usage = {}
            raise
        if answer is None:
            self.gave_up.append(req.custom_id)
        else:
            if answer.status != "ok":
                log.warning("%s: %s (%s)", req.custom_id, answer.status, answer.error)
            self.writer.put(result_record(req, answer, self.template, mode="sync", endpoint=self.client.base_url))
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)

    async def close(self) -> None:
        """Note the response format the run settled on (for the manifest and the next session), then
        write out the journal lines still queued."""
        client = self.client
        if client.switches:
            self.writer.put(
                {
                    "kind": "response_format",
                    "requested": client.requested,
                    "used": client.mode,
                    "switches": client.switches,
                    "time": round(time.time(), 3),
                }
            )
        await asyncio.to_thread(self.writer.close)


async def _wait_for(tasks: Sequence[asyncio.Future[None]], client: LLMClient) -> None:
    """Wait for every task, raising the first error; on Ctrl-C send nothing new and wait for the
    questions already sent (they are paid for: keep their answers), then stop."""
    try:
        if tasks:  # asyncio.wait, unlike gather, leaves the tasks running when the run is interrupted
            finished, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = [e for t in finished if not t.cancelled() and (e := t.exception()) is not None]
            if failed:
                raise failed[0]
    except asyncio.CancelledError:
        client.drain()
        if client.in_flight:
            log.warning(
                "interrupted: sending nothing new; waiting for the %d questions under way to be answered "
                "and journaled (sent ones are paid for); Ctrl-C again to stop at once",
                client.in_flight,
            )
            await _finish_in_flight(tasks, client)
        raise


def _attempt_failed(req: Request, error: str, usage: dict[str, int]) -> dict[str, Any]:
    """The journal line of tokens billed for a request's unusable answers (counted in the run's cost)."""
    return {"kind": "attempt_failed", "custom_id": req.custom_id, "error": error, "usage": usage, "mode": "sync"}


def _say_how_it_went(client: LLMClient, deferred: int) -> None:
    """One line when the server pushed back during the run: deferrals, overloads, the concurrency it came to."""
    throttle = client.throttle
    if not (deferred or throttle.decreases):
        return
    causes = ", ".join(f"{n} {cause.replace('_', ' ')}" for cause, n in sorted(client.overloads.items()))
    fix = (
        "; the server's context was full: a larger -c or fewer --parallel slots on the server, or a lower -j here"
        if "context_full" in client.overloads
        else ""
    )
    log.warning(
        "%s: %d requests deferred and asked again; overloads: %s; at most %d of %d requests in flight at the lowest%s",
        client.base_url,
        deferred,
        causes or "none",
        throttle.lowest,
        throttle.ceiling,
        fix,
    )


async def _heartbeat(client: LLMClient) -> None:
    """Say what the run waits for whenever the server has not answered for a while (also without -v)."""
    every = min(HEARTBEAT_S, max(1.0, client.request_timeout / 3))
    while True:
        await asyncio.sleep(every)
        quiet = time.monotonic() - client.last_answer
        if client.in_flight and quiet >= every:
            log.warning(
                "waiting for %s: %d requests under way, no answer for "
                "%.0f s (each gives up after %g s, --request-timeout)",
                client.base_url,
                client.in_flight,
                quiet,
                client.request_timeout,
            )


async def _finish_in_flight(tasks: Sequence[asyncio.Future[None]], client: LLMClient) -> None:
    """Wait for the interrupted run's questions under way while answers keep coming; give up the
    rest once none came for :data:`INTERRUPT_QUIET_S` (a hanging server must not hold Ctrl-C)."""
    since = time.monotonic()
    left = [t for t in tasks if not t.done()]
    while left and client.in_flight:
        _, still = await asyncio.wait(left, timeout=INTERRUPT_QUIET_S / 5)
        left = list(still)
        if left and client.in_flight and time.monotonic() - max(client.last_answer, since) >= INTERRUPT_QUIET_S:
            log.warning(
                "no answer for %.1f s: giving up the %d questions under way (a re-run asks them again)",
                INTERRUPT_QUIET_S,
                client.in_flight,
            )
            return
