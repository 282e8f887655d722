"""An OpenAI-compatible chat client that asks for a list of labels and retries what can be retried.

It talks to OpenAI or any OpenAI-compatible server through the official ``openai`` SDK; the answer
is asked for in a response format (:mod:`negvocab.llm.formats`; ``auto`` settles once per run) and
validated here, so that every answer's token usage is counted. Until the first usable answer at most
:data:`PROBE_CONCURRENCY` requests are in flight, and :data:`FAIL_FAST_AFTER` unusable answers
before any usable one stop the run with a one-line diagnosis (:class:`FailFast`). Each request has
a total deadline (``request_timeout``). Two kinds of trouble are retried with tenacity:

- transport: 429 (the ``Retry-After`` / ``retry-after-ms`` wait is honoured, and all requests of
  the client pause for it), 5xx, 408/409, timeouts and dropped connections, with exponential
  backoff; when the attempts run out the request is given up for now (:class:`ServerGaveUp`):
  :func:`negvocab.llm.run.run_sync` defers it and asks it again later in the run (:meth:`LLMClient.deferral_wait`);
- content: malformed JSON, a schema mismatch, a truncated answer or fewer distinct labels than
  asked; when the attempts run out the request is recorded as a failure (``invalid`` or ``short``,
  the short list kept), never dropped. A refusal is recorded at once (``refused``).

Other API errors (bad key, unknown model, bad request) stop the run with a one-line error. The key
never appears in a log line, an error message or a file.

How many requests are in flight adapts (:class:`~negvocab.llm.throttle.Throttle`): halved on a rate
limit (429) or a full context (llama-server's ``Context size has been exceeded.``), grown again on
success. The run stops early only when the server as a whole looks broken: no answer among the last
:data:`HEALTH_WINDOW` attempts across requests (after a first usable answer; before it, the set-up
budget), or a permanent error. Those guards are :class:`~negvocab.llm.guards.RunGuards`, the client's base.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, cast

from negvocab.core.errors import InputError, ResourceError
from negvocab.core.extras import require
from negvocab.core.redact import basic_auth_forms, url_secrets
from negvocab.llm.answers import (
    STATUSES,
    Answer,
    FailFast,
    NotSent,
    ServerGaveUp,
    Transient,
    Tries,
    add_usage,
    request_id_of,
    retry_after_seconds,
)
from negvocab.llm.endpoint import check_base_url, is_official, public_url, resolve_endpoint, split_query  # noqa: F401 (public here too)
from negvocab.llm.formats import (  # noqa: F401 (RESPONSE_FORMAT, LabelList, labels_from_message: public here too)
    NEXT,
    RESPONSE_FORMAT,
    VERBATIM,
    BadAnswer,
    LabelList,
    broken_json,
    check_mode,
    default_max_tokens,
    labels_from_message,
    messages_for,
    not_language,
    raw_answer,
    read_answer,
    rejects_format,
    request_format,
    snippet,
)
from negvocab.llm.guards import FAIL_FAST_AFTER, HEALTH_WINDOW, SETUP_BUDGET, RunGuards, names_a_list
from negvocab.llm.throttle import Throttle

__all__ = [
    "Answer",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "DEFERRALS",
    "HEALTH_WINDOW",
    "FAIL_FAST_AFTER",
    "FailFast",
    "LLMClient",
    "NOT_OPENAI",
    "NotSent",
    "PROBE_CONCURRENCY",
    "SETUP_BUDGET",
    "TRANSPORT_ATTEMPTS",
    "STATUSES",
    "ServerGaveUp",
    "add_usage",
    "default_max_tokens",
    "retry_after_seconds",
]

log = logging.getLogger(__name__)


CONNECT_TIMEOUT_S = 10.0
DEFAULT_REQUEST_TIMEOUT_S = 300.0
#: requests in flight at most until the run's first usable answer
PROBE_CONCURRENCY = 2
NOT_OPENAI = "; is the base URL an OpenAI-compatible endpoint (ending in /v1)?"
#: attempts per request for a transport error (the openai SDK's own default, 1 + max_retries=2): a
#: server that went away mid-run costs 3 tries a request, not 8 with minutes of backoff each
TRANSPORT_ATTEMPTS = 3
#: times a request whose attempts ran out is deferred and asked again later in the run (with backoff)
DEFERRALS = 5


class LLMClient(RunGuards):
    """Asks an OpenAI-compatible chat endpoint for label lists, with retries and a concurrency limit.

    Parameters
    ----------
    model : str
        Model name as the server knows it.
    base_url, api_key : str, optional
        Endpoint and key; default ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``. A query string in the
        base URL (``?api-version=...``, ``?key=...``) is sent with every request.
    concurrency : int
        Requests in flight at most (a :class:`~negvocab.llm.throttle.Throttle`: halved on overload, grown
        on success); until the first usable answer at most :data:`PROBE_CONCURRENCY`.
    transport_attempts, content_attempts : int
        Attempts per request for transport errors (default :data:`TRANSPORT_ATTEMPTS`, as the openai
        SDK) and for unusable answers; until the first usable answer all requests together send at
        most :data:`SETUP_BUDGET`.
    content_retry_budget : int, optional
        Retries of unusable answers in the whole run (default: unbounded); once spent, an
        unusable answer is recorded as failed at once.
    response_format : str
        ``auto`` (default), ``json_schema``, ``json_object`` or ``text`` (:mod:`negvocab.llm.formats`).
    start_mode : str, optional
        With ``auto``: the mode to start in (the one an earlier session of the run settled on).
    wait_base, wait_max : float
        Exponential backoff: ``wait_base * 2**k`` seconds (with jitter), at most ``wait_max``;
        a server's ``Retry-After`` is honoured up to ``retry_after_max``. A deferred request waits
        ``wait_base * 2**(transport_attempts + d)`` (at most ``wait_max``) before its d-th deferral.
    deferrals, health_window : int
        Times a request whose attempts ran out is deferred (:data:`DEFERRALS`; then it is left for the
        next run); attempts in a row across requests without an answer that stop the run (:data:`HEALTH_WINDOW`).
    temperature : float, optional
        Sampling temperature sent with each request (``None``: the server's default).
    request_timeout : float
        Total seconds one request may take, all its attempts and backoff waits included (a rate
        limit's pause is not counted): a server that hangs or drips bytes is given up on.
    timeout : float
        Seconds per HTTP attempt at most (within ``request_timeout``).
    key_name : str
        Where the key came from (an environment variable), for error messages.
    max_tokens : int, "auto" or None
        The ``max_tokens`` of each request: ``auto`` (default) :func:`default_max_tokens` of the labels
        asked, except at OpenAI's own endpoint (its reasoning models bill hidden tokens within that
        limit and refuse the field); a number; ``None`` sends none.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 16,
        transport_attempts: int = TRANSPORT_ATTEMPTS,
        content_attempts: int = 3,
        content_retry_budget: int | None = None,
        response_format: str = "auto",
        start_mode: str | None = None,
        wait_base: float = 1.0,
        wait_max: float = 60.0,
        deferrals: int = DEFERRALS,
        health_window: int = HEALTH_WINDOW,
        retry_after_max: float = 600.0,
        temperature: float | None = 1.0,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT_S,
        timeout: float = 120.0,
        key_name: str = "OPENAI_API_KEY",
        max_tokens: int | str | None = "auto",
    ) -> None:
        if concurrency < 1:
            raise InputError(f"concurrency must be >= 1, got {concurrency}")
        if transport_attempts < 1 or content_attempts < 1 or health_window < 1:
            raise InputError("transport_attempts, content_attempts and health_window must be >= 1")
        if deferrals < 0:
            raise InputError(f"deferrals must be >= 0, got {deferrals}")
        if not request_timeout > 0:
            raise InputError(f"request timeout must be > 0 seconds, got {request_timeout}")
        openai = require("openai")  # the [llm] extra: a missing one is MissingExtraError, one line
        if (
            max_tokens is not None
            and max_tokens != "auto"
            and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1)
        ):
            raise InputError(f"max_tokens must be a whole number >= 1, 'auto' or None, got {max_tokens!r}")
        self.model = model
        self.requested = check_mode(response_format)
        self.mode = (
            (check_mode(start_mode) if start_mode and start_mode != "auto" else "json_schema")
            if self.requested == "auto"
            else self.requested
        )
        self.switches: list[dict[str, str]] = []
        base_url, key = resolve_endpoint(base_url, api_key, key_name)
        self.base_url = public_url(base_url)
        self.max_tokens = (None if is_official(self.base_url) else "auto") if max_tokens == "auto" else max_tokens
        self.http_requests = 0  # HTTP requests sent, retries and format switches included
        self.setup_sent = 0  # of them, those sent before the first usable answer (at most SETUP_BUDGET)
        self._last_problem: str | None = None  # what went wrong last, for the diagnosis of a broken set-up
        self.key_name = key_name
        self._secrets = [key, *url_secrets(base_url)]
        self._encoded = basic_auth_forms(base_url)  # the base64 user:password a server may echo
        self.sdk = openai  # the SDK module (exception classes)
        # a short connect timeout: a host that drops connections must not cost `timeout` per try
        self.request_timeout = request_timeout
        timeout = min(timeout, request_timeout)
        limits = openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))
        sdk_url, query = split_query(base_url)
        self._query_names = sorted(query)  # the base URL's query parameters (names only), for a 404's diagnosis
        self.client = openai.AsyncOpenAI(
            api_key=key, base_url=sdk_url, max_retries=0, timeout=limits, default_query=query or None
        )
        self.concurrency = concurrency
        self.throttle = Throttle(concurrency)  # in flight at most: halved on overload, grown on success
        self.deferrals = deferrals
        self.health_window = health_window
        self.failing = 0  # attempts in a row, across requests, without an answer (see HEALTH_WINDOW)
        self.overloads: dict[str, int] = {}  # overload answers by cause (rate_limit, context_full)
        self.transport_attempts = transport_attempts
        self.content_attempts = content_attempts
        self.content_retry_budget = content_retry_budget
        self.content_retries = 0
        self.wait_base = wait_base
        self.wait_max = wait_max
        self.retry_after_max = retry_after_max
        self.temperature = temperature
        self._paused_until = 0.0
        self.reached = False  # whether the server has answered anything (an error status counts)
        self.proven = False  # whether an answer was usable (ok): until then few requests go out at once
        self.format_seen = False  # whether an answer came in the current mode's format
        self.unusable = 0  # unusable answers (attempts) before the first usable one
        self._last_bad: BadAnswer | None = None
        self._failed: FailFast | None = None
        self._fatal: ResourceError | None = None  # a permanent error (key, model, context, quota): nothing more is sent
        self._probing = 0
        self._probe_changed = asyncio.Event()
        self.in_flight = 0  # requests sent and not yet answered
        self.last_answer = time.monotonic()  # when the server last answered (for a heartbeat)
        self._draining = False

    def __repr__(self) -> str:  # never shows the key
        url, model = self.base_url, self.model
        return f"LLMClient(model={model!r}, base_url={url!r}, concurrency={self.concurrency}, mode={self.mode!r})"

    def drain(self) -> None:
        """Send nothing new: requests not yet sent raise :class:`NotSent`, those in flight finish
        without further retries (an interrupted run keeps the answers it has paid for)."""
        self._draining = True
        self._probe_changed.set()

    async def aclose(self) -> None:
        await self.client.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- one request ------------------------------------------------------------------------
    async def ask(
        self, messages: list[dict[str, str]], n: int, *, min_labels: int | None = None, trace_id: str | None = None
    ) -> Answer:
        """Ask for ``n`` labels; retries, then returns an :class:`Answer` (or raises :class:`ServerGaveUp`,
        or :class:`FailFast` when the run's first answers are all unusable).

        ``trace_id`` goes out in the ``X-Client-Request-Id`` header (``negvocab:<trace_id>:<try>``),
        which OpenAI and many proxies log, so a request can be traced on the server side.
        """
        tenacity = require("tenacity")

        tries = Tries(need=n if min_labels is None else min_labels)
        async with self.throttle:
            if self._draining:
                raise NotSent("the run was interrupted before this request was sent")
            if self._failed is not None:
                raise self._failed
            tries.deadline = time.monotonic() + self.request_timeout
            try:
                async for try_ in tenacity.AsyncRetrying(
                    retry=tenacity.retry_if_exception_type((Transient, BadAnswer)),
                    stop=lambda state: self._should_stop(tries, state.outcome.exception() if state.outcome else None),
                    wait=lambda state: self._backoff(tries, state.outcome.exception() if state.outcome else None),
                    reraise=True,
                ):
                    with try_:
                        answer = await self._probed(messages, n, tries, trace_id)
            except Transient as e:
                if tries.best:  # a short answer came before the server gave up: keep what was paid for
                    return self._failed_answer("short", tries, f"then {e}")
                raise ServerGaveUp(
                    f"{self.base_url}: {e} after {tries.transport} attempts", dict(tries.usage)
                ) from None
            except BadAnswer as e:
                if len(tries.best) > len(e.labels):  # an earlier attempt gave more (a short list)
                    return self._failed_answer("short", tries, str(e), e)
                return self._failed_answer(e.status, tries, str(e), e, e.labels)
            except FailFast:
                raise
            except (ResourceError, NotSent) as e:  # fatal (quota, key) or interrupted: keep a paid short list
                if tries.best:
                    return self._failed_answer("short", tries, f"then {e}")
                raise
        answer.attempts = tries.total + 1
        return answer

    def _failed_answer(
        self, status: str, tries: Tries, error: str, bad: BadAnswer | None = None, labels: list[str] | None = None
    ) -> Answer:
        text = snippet(self.scrub(bad.text)) if bad is not None and bad.text else None
        raw = tries.best_raw if labels is None or labels is tries.best else bad.raw if bad is not None else None
        kept = self.without_secrets(list(tries.best if labels is None else labels))
        usage, raw_items = dict(tries.usage), self.scrub_items(raw)
        return Answer(status, kept, usage, None, tries.model, tries.total, error, self.mode, text, raw_items)

    def _should_stop(self, tries: Tries, exc: BaseException | None) -> bool:
        if self._draining or self._failed is not None:
            return True
        if isinstance(exc, Transient):
            if exc.deadline or exc.final or time.monotonic() >= tries.deadline:
                return True
            # a server never reached is most likely down or misnamed: one retry, not the full backoff
            limit = self.transport_attempts if self.reached or not exc.connect else min(2, self.transport_attempts)
            return tries.transport >= limit
        if tries.content >= self.content_attempts or time.monotonic() >= tries.deadline:
            return True
        if self.content_retry_budget is not None and self.content_retries >= self.content_retry_budget:
            if self.content_retries == self.content_retry_budget:
                log.warning(
                    "%s: %d unusable answers were asked again in this run, the most it retries; further unusable "
                    "answers are recorded as failed at once (the next run asks them again)",
                    self.base_url,
                    self.content_retries,
                )
                self.content_retries += 1  # said once
            return True
        self.content_retries += 1
        return False

    def may_retry_content(self) -> bool:
        """Whether the run's budget of retries of unusable answers allows one more (then it is spent)."""
        ok = self.content_retry_budget is None or self.content_retries < self.content_retry_budget
        self.content_retries += ok
        return ok

    def deferral_wait(self, deferral: int) -> float:
        """Seconds a request whose attempts ran out waits before it is asked again for the ``deferral``-th time
        (0-based): the backoff after its last attempt, doubled each time, at most ``wait_max``, with jitter."""
        return min(self.wait_max, self.wait_base * 2 ** (self.transport_attempts + deferral)) * random.uniform(0.5, 1)

    def _backoff(self, tries: Tries, exc: BaseException | None) -> float:
        if not isinstance(exc, Transient):
            return 0.0
        left = max(0.0, tries.deadline - time.monotonic())
        if exc.retry_after is not None:
            wait = min(exc.retry_after, self.retry_after_max)
            tries.deadline += wait  # the server asked for the wait: not counted against the deadline
            return wait
        wait = min(left, min(self.wait_max, self.wait_base * 2 ** (tries.transport - 1)) * random.uniform(0.5, 1.0))
        if exc.connect and wait >= 0.5:  # nothing else is printed while a refused connection is retried
            log.warning("%s: %s; trying again in %.1f s", self.base_url, exc, wait)
        return wait

    async def _probed(self, messages: list[dict[str, str]], n: int, tries: Tries, trace_id: str | None) -> Answer:
        """:meth:`_attempt`, at most :data:`PROBE_CONCURRENCY` at once until an answer is usable."""
        while not self.proven and self._probing >= PROBE_CONCURRENCY and not self._draining and self._failed is None:
            self._probe_changed.clear()
            await self._probe_changed.wait()
        probing = not self.proven
        self._probing += probing
        try:
            return await self._attempt(messages, n, tries, trace_id)
        finally:
            self._probing -= probing
            self._probe_changed.set()

    async def _attempt(self, messages: list[dict[str, str]], n: int, tries: Tries, trace_id: str | None) -> Answer:
        """One request: an :class:`Answer`, or :class:`Transient` / :class:`BadAnswer` to retry."""
        tries.deadline += await self._gate()  # a rate limit's pause does not count against the deadline
        if self._draining:  # interrupted while this request waited (a pause or a retry's backoff)
            raise NotSent("the run was interrupted before this attempt was sent")
        if self._failed is not None:
            raise self._failed
        if self._fatal is not None:  # the same answer awaits every request: stop at once
            raise self._fatal
        headers = {"X-Client-Request-Id": f"negvocab:{trace_id}:{tries.total}"} if trace_id else None
        while True:
            mode = self.mode
            self._spend_setup_budget()
            try:
                completion = await self._create(messages, mode, headers, tries, n)
                break
            except FailFast:
                raise
            except Exception as e:
                if self._switch_on_rejection(e, mode):
                    continue  # asked again at once in the next mode: not an attempt
                err = self._classify(e, tries)
                if err is e:
                    raise
                if isinstance(err, ResourceError) and self._fatal is None:
                    self._fatal = err
                raise err from e
        self.reached = True
        self.last_answer = time.monotonic()
        if not hasattr(completion, "choices") or not isinstance(completion.choices, list):
            # an HTTP 200 that is no chat completion: an HTML page, plain text, a proxy's error body
            tries.transport += 1
            sig = (200, type(completion).__name__, str(completion)[:300])
            repeated, tries.last_error = sig == tries.last_error, sig
            self._last_problem = (
                f"the server answered HTTP 200 with no chat completion ({type(completion).__name__}){NOT_OPENAI}"
            )
            self._failed_attempt(self._last_problem)
            raise Transient(self._last_problem, final=repeated)
        self.failing = 0  # an answer came: the server works (usable or not is the model's business)
        self.throttle.succeeded()
        add_usage(tries.usage, completion.usage)  # every answer is billed, usable or not
        tries.model = completion.model or tries.model
        try:
            labels, raw, mode = self._read(completion, n, tries, mode)
        except BadAnswer as e:
            if names_a_list(e):  # a list of names, shorter than asked: the set-up works (kept, maybe asked again)
                self._proven()
            self._unusable(e, tries)
            if e.status == "refused":
                status, labels = ("short", tries.best) if tries.best else ("refused", [])  # keep a paid short list
                ans = self._failed_answer(status, tries, str(e), e, labels)
                ans.request_id = request_id_of(completion)
                return ans
            tries.content += 1
            if len(e.labels) > len(tries.best):
                tries.best, tries.best_raw = list(e.labels), e.raw
            raise
        self._proven()
        labels = self.without_secrets(labels)
        return Answer(
            "ok",
            labels,
            dict(tries.usage),
            request_id_of(completion),
            completion.model,
            mode=mode,
            raw_labels=self.scrub_items(raw),
        )

    async def _create(
        self, messages: list[dict[str, str]], mode: str, headers: dict[str, str] | None, tries: Tries, n: int = 0
    ) -> Any:
        """The SDK call in ``mode``, within what is left of the request's deadline."""
        fmt = request_format(mode)
        limit = default_max_tokens(n) if self.max_tokens == "auto" else self.max_tokens
        call = self.client.chat.completions.create(
            model=self.model,
            messages=cast(Any, messages_for(mode, messages)),  # the SDK's message types, by version
            extra_headers=headers,
            **({"response_format": fmt} if fmt is not None else {}),
            **({"temperature": self.temperature} if self.temperature is not None else {}),
            **({"max_tokens": limit} if limit is not None else {}),
        )
        left = tries.deadline - time.monotonic()
        tries.epoch, tries.alone = self.throttle.epoch, not self.in_flight  # an overload halves once per round
        self.in_flight += 1
        self.http_requests += 1
        try:
            async with asyncio.timeout(max(0.01, left)):  # no extra task per request, unlike wait_for
                return await call
        except TimeoutError:
            tries.transport += 1
            raise Transient(
                f"no complete answer within the {self.request_timeout:g} s request deadline (--request-timeout)",
                deadline=True,
            ) from None
        finally:
            self.in_flight -= 1

    def _read(self, completion: Any, n: int, tries: Tries, mode: str) -> tuple[list[str], list[str], str]:
        """The labels of an answer asked in ``mode``, its raw items, and the mode it was read in: in ``auto`` mode,
        a first answer that is not the schema's JSON moves the run to ``json_object`` (the server
        ignores the format) and is read so."""
        if not completion.choices:
            raise BadAnswer("answer has no choices", "invalid", kind="no_choices", text=raw_answer(completion))
        choice = completion.choices[0]
        message = choice.message
        content = getattr(message, "content", None)
        if choice.finish_reason == "length" and mode != VERBATIM:  # a verbatim answer is read as far as it went
            if not_language(content):  # a model that rambled to its limit: the fix is not fewer names
                raise BadAnswer(
                    "answer cut off at the token limit, and it is not language",
                    "invalid",
                    kind="not_language",
                    text=content,
                )
            raise BadAnswer("answer cut off at the token limit", "invalid", kind="cut_off", text=content)
        if choice.finish_reason == "content_filter":
            raise BadAnswer("answer withheld by the content filter", "refused", kind="refused", text=content)
        refusal = getattr(message, "refusal", None)
        try:
            labels, raw = read_answer(content, refusal, None, n, tries.need, mode)
        except BadAnswer as e:
            if e.kind == "short":
                self.format_seen = True
            moved = self.mode != mode  # asked before the run moved on: read as the run reads now
            if (
                e.kind != "not_schema"
                or self.requested != "auto"
                or broken_json(content)
                or (self.format_seen and not moved)
            ):
                raise  # broken JSON is an attempt at the schema cut short, not a server ignoring it
            read_as = self.mode if moved else NEXT[mode]
            try:
                labels, raw = read_answer(content, refusal, None, n, tries.need, read_as)
            except BadAnswer as again:
                if again.kind == "not_language":
                    raise  # nonsense in any format: say so, not that it is no JSON
                if again.kind != "short" and not moved:
                    raise e from None  # no list in any form: an unusable answer, not a format to leave
                if not moved:
                    self._switch(read_as, "its answers are not the JSON schema's (the server ignores response_format)")
                raise
            if not moved:
                self._switch(read_as, "its answers are not the JSON schema's (the server ignores response_format)")
            return labels, raw, read_as
        return labels, raw, mode

    def _switch_on_rejection(self, e: Exception, mode: str) -> bool:
        """In ``auto`` mode, whether ``e`` is the server refusing ``mode`` (then the run moves on)."""
        if self.requested != "auto" or not isinstance(e, self.sdk.APIStatusError) or mode not in NEXT:
            return False
        if not rejects_format(e.status_code, self._detail(e)):
            return False
        if self.mode == mode:
            self._switch(
                NEXT[mode], f"it rejects response_format {mode} (HTTP {e.status_code}: {self._detail(e)[:120]})"
            )
        return True

    def _switch(self, to: str, why: str) -> None:
        line = "%s: %s; this run now asks in response format %s, not %s (--response-format %s starts there)"
        log.warning(line, self.base_url, why, to, self.mode, to)
        self.switches.append({"from": self.mode, "to": to, "why": why[:200]})
        self.mode = to
        self.format_seen = False
