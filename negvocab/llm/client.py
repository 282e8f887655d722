"""An OpenAI-compatible chat client that asks for a list of labels and retries what can be retried.

It talks to OpenAI or any OpenAI-compatible server (vLLM, Ollama, llama.cpp server) through the
official ``openai`` SDK: the endpoint and key come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` or
the arguments. The answer is structured output: the strict JSON schema of :class:`LabelList`
(:data:`RESPONSE_FORMAT`, the one the SDK's ``parse`` would send), validated here as in Batch mode,
so that every answer's token usage is counted, also of an unusable one. Two kinds of trouble are retried with tenacity:

- transport: 429 (the ``Retry-After`` / ``retry-after-ms`` wait is honoured, and all requests of
  the client pause for it), 5xx, 408/409, timeouts and dropped connections, with exponential
  backoff; when the attempts run out the request is left undone (:class:`ServerGaveUp`), so a
  re-run retries it;
- content: malformed JSON, a schema mismatch, a truncated answer or fewer distinct labels than
  asked; when the attempts run out the request is recorded as a failure (``invalid`` or ``short``,
  the short list kept), never dropped. A refusal is recorded at once (``refused``).

Other API errors (bad key, unknown model, bad request) stop the run with a one-line error. The key
never appears in a log line, an error message or a file.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from negvocab.errors import InputError, ResourceError
from negvocab.llm.text import clean_labels
from negvocab.redact import redact_urls, url_secrets

log = logging.getLogger(__name__)


class LabelList(BaseModel):
    """The structured answer: a list of label strings."""

    labels: list[str]


#: the ``response_format`` the SDK derives from :class:`LabelList` (a strict JSON schema), spelled
#: out for Batch API request bodies (the tests compare it with the SDK's own)
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "LabelList",
        "strict": True,
        "schema": {**LabelList.model_json_schema(), "additionalProperties": False},
    },
}

STATUSES = ("ok", "short", "refused", "invalid")


@dataclass
class Answer:
    """The outcome of one request after retries.

    ``status`` is ``ok``, ``short`` (fewer distinct labels than asked; kept), ``refused`` or
    ``invalid`` (no usable list). ``usage`` sums the tokens of all attempts.
    """

    status: str
    labels: list[str]
    usage: dict[str, int] = field(default_factory=dict)
    request_id: str | None = None
    model: str | None = None
    attempts: int = 1
    error: str | None = None


CONNECT_TIMEOUT_S = 10.0
NOT_OPENAI = "; is the base URL an OpenAI-compatible endpoint (ending in /v1)?"


class NotSent(Exception):
    """The run was interrupted before this request went out (see :meth:`LLMClient.drain`)."""


class ServerGaveUp(Exception):
    """Transport errors outlasted the retries; the request is not finished (re-run to retry).

    ``usage`` holds the tokens its earlier, unusable answers were billed for.
    """

    def __init__(self, message: str, usage: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.usage = usage or {}


class _Transient(Exception):
    def __init__(self, message: str, retry_after: float | None = None, *, connect: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.connect = connect  # no connection was made (refused, unknown host)


class BadAnswer(Exception):
    """An answer that cannot be used as it is (``status``: invalid, short or refused)."""

    def __init__(self, message: str, status: str, labels: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.labels = labels or []


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def resolve_endpoint(base_url: str | None, api_key: str | None, key_name: str = "OPENAI_API_KEY") -> tuple[str | None, str]:
    """Base URL and key from the arguments or ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.

    Whitespace around the key (a Windows ``.env`` line end) is dropped; a key with spaces or control
    characters inside cannot go into an HTTP header and fails here, naming ``key_name``.
    """
    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip() or None
    api_key = (api_key or os.environ.get("OPENAI_API_KEY") or "").strip() or None
    if api_key and any(c.isspace() or not c.isprintable() or not c.isascii() for c in api_key):
        raise InputError(
            f"the API key in {key_name} contains spaces, control or non-ASCII characters (quotes pasted with it?); "
            "set it to the key alone"
        )
    check_base_url(base_url)
    if not api_key:
        where = f" for {base_url}" if base_url else ""
        raise ResourceError(
            f"no API key{where}: set {key_name} (any non-empty string for a local server without keys)"
        )
    return base_url, api_key


def check_base_url(base_url: str | None) -> None:
    """A one-line InputError unless ``base_url`` (or ``OPENAI_BASE_URL``) is unset or an http(s) URL."""
    from urllib.parse import urlsplit

    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").strip()
    if not base_url:
        return
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError as e:
        raise InputError(f"base URL is malformed ({e}); give e.g. http://localhost:8000/v1 (--base-url or OPENAI_BASE_URL)") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"base URL {public_url(base_url)!r} is not an http(s) URL; give e.g. http://localhost:8000/v1 "
            "(--base-url or OPENAI_BASE_URL)"
        )


def public_url(base_url: str | None) -> str:
    """The endpoint as it may be written to files: no user info, no query string."""
    if not base_url:
        return "https://api.openai.com/v1"
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def labels_from_message(content: str | None, refusal: str | None, parsed: LabelList | None, n: int, min_labels: int) -> list[str]:
    """The cleaned labels of one answer; raises :class:`BadAnswer` when it is not usable."""
    if refusal:
        raise BadAnswer(f"refused: {refusal[:200]}", "refused")
    if parsed is None:
        if not content:
            raise BadAnswer("empty answer", "invalid")
        try:
            parsed = LabelList.model_validate_json(content)
        except ValidationError as e:
            raise BadAnswer(f"answer is not a LabelList: {e.errors()[0].get('msg', 'invalid')}", "invalid") from e
    labels = clean_labels(parsed.labels)
    if len(labels) < min_labels:
        raise BadAnswer(f"{len(labels)} distinct labels, asked for {n}", "short", labels)
    return labels


def add_usage(total: dict[str, int], usage: Any) -> None:
    if usage is None:
        return
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value


class LLMClient:
    """Asks an OpenAI-compatible chat endpoint for label lists, with retries and a concurrency limit.

    Parameters
    ----------
    model : str
        Model name as the server knows it.
    base_url, api_key : str, optional
        Endpoint and key; default ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``.
    concurrency : int
        Requests in flight at most (an :class:`asyncio.Semaphore`).
    transport_attempts, content_attempts : int
        Attempts per request for transport errors and for unusable answers.
    wait_base, wait_max : float
        Exponential backoff: ``wait_base * 2**k`` seconds (with jitter), at most ``wait_max``;
        a server's ``Retry-After`` is honoured up to ``retry_after_max``.
    temperature : float, optional
        Sampling temperature sent with each request (``None``: the server's default).
    timeout : float
        Seconds per HTTP request.
    key_name : str
        Where the key came from (an environment variable), for error messages.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 16,
        transport_attempts: int = 8,
        content_attempts: int = 3,
        wait_base: float = 1.0,
        wait_max: float = 60.0,
        retry_after_max: float = 600.0,
        temperature: float | None = 1.0,
        timeout: float = 120.0,
        key_name: str = "OPENAI_API_KEY",
    ) -> None:
        if concurrency < 1:
            raise InputError(f"concurrency must be >= 1, got {concurrency}")
        if transport_attempts < 1 or content_attempts < 1:
            raise InputError("transport_attempts and content_attempts must be >= 1")
        import openai

        self.model = model
        base_url, key = resolve_endpoint(base_url, api_key, key_name)
        self.base_url = public_url(base_url)
        self.key_name = key_name
        self._secrets = [key, *url_secrets(base_url)]
        self.sdk = openai  # the SDK module (exception classes)
        # a short connect timeout: a host that drops connections must not cost `timeout` per try
        limits = openai.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))
        self.client = openai.AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=limits)
        self.concurrency = concurrency
        self._sem = asyncio.Semaphore(concurrency)
        self.transport_attempts = transport_attempts
        self.content_attempts = content_attempts
        self.wait_base = wait_base
        self.wait_max = wait_max
        self.retry_after_max = retry_after_max
        self.temperature = temperature
        self._paused_until = 0.0
        self.reached = False  # whether the server has answered anything (an error status counts)
        self.in_flight = 0  # requests sent and not yet answered
        self._draining = False

    def __repr__(self) -> str:  # never shows the key
        return f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency})"

    def scrub(self, text: str) -> str:
        """``text`` with the API key and any URL's password and query masked (error messages echo them)."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return redact_urls(text)

    def drain(self) -> None:
        """Send nothing new: requests not yet sent raise :class:`NotSent`, those in flight finish
        without further retries (an interrupted run keeps the answers it has paid for)."""
        self._draining = True

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
        """Ask for ``n`` labels; retries, then returns an :class:`Answer` (or raises :class:`ServerGaveUp`).

        ``trace_id`` goes out in the ``X-Client-Request-Id`` header (``negvocab:<trace_id>:<try>``),
        which OpenAI and many proxies log, so a request can be traced on the server side.
        """
        from tenacity import AsyncRetrying, retry_if_exception_type

        tries = _Tries(need=n if min_labels is None else min_labels)
        async with self._sem:
            if self._draining:
                raise NotSent("the run was interrupted before this request was sent")
            self.in_flight += 1
            try:
                async for try_ in AsyncRetrying(
                    retry=retry_if_exception_type((_Transient, BadAnswer)),
                    stop=lambda state: self._should_stop(tries, state.outcome.exception() if state.outcome else None),
                    wait=lambda state: self._backoff(tries, state.outcome.exception() if state.outcome else None),
                    reraise=True,
                ):
                    with try_:
                        answer = await self._attempt(messages, n, tries, trace_id)
            except _Transient as e:
                if tries.best:  # a short answer came before the server gave up: keep what was paid for
                    return Answer("short", tries.best, dict(tries.usage), None, None, tries.total, f"then {e}")
                raise ServerGaveUp(f"{self.base_url}: {e} after {tries.transport} attempts", dict(tries.usage)) from None
            except BadAnswer as e:
                if len(tries.best) > len(e.labels):  # an earlier attempt gave more (a short list)
                    return Answer("short", tries.best, dict(tries.usage), None, None, tries.total, str(e))
                return Answer(e.status, e.labels, dict(tries.usage), None, None, tries.total, str(e))
            except (ResourceError, NotSent) as e:  # fatal (quota, key) or interrupted: keep a paid short list
                if tries.best:
                    return Answer("short", tries.best, dict(tries.usage), None, None, tries.total, f"then {e}")
                raise
            finally:
                self.in_flight -= 1
        answer.attempts = tries.total + 1
        return answer

    def _should_stop(self, tries: _Tries, exc: BaseException | None) -> bool:
        if self._draining:
            return True
        if isinstance(exc, _Transient):
            # a server never reached is most likely down or misnamed: one retry, not the full backoff
            limit = self.transport_attempts if self.reached or not exc.connect else min(2, self.transport_attempts)
            return tries.transport >= limit
        self.reached = True  # an unusable answer is still an answer
        return tries.content >= self.content_attempts

    def _backoff(self, tries: _Tries, exc: BaseException | None) -> float:
        if not isinstance(exc, _Transient):
            return 0.0
        if exc.retry_after is not None:
            return min(exc.retry_after, self.retry_after_max)
        return min(self.wait_max, self.wait_base * 2 ** (tries.transport - 1)) * random.uniform(0.5, 1.0)

    async def _attempt(self, messages: list[dict[str, str]], n: int, tries: _Tries, trace_id: str | None) -> Answer:
        """One request: an :class:`Answer`, or :class:`_Transient` / :class:`BadAnswer` to retry."""
        await self._gate()
        if self._draining:  # interrupted while this request waited (a pause or a retry's backoff)
            raise NotSent("the run was interrupted before this attempt was sent")
        headers = {"X-Client-Request-Id": f"negvocab:{trace_id}:{tries.total}"} if trace_id else None
        try:
            completion = await self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                response_format=RESPONSE_FORMAT,  # type: ignore[arg-type]
                extra_headers=headers,
                **({"temperature": self.temperature} if self.temperature is not None else {}),
            )
        except Exception as e:
            err = self._classify(e, tries)
            if err is e:
                raise
            raise err from e
        self.reached = True
        if not hasattr(completion, "choices") or not isinstance(completion.choices, list):
            # an HTTP 200 that is no chat completion: an HTML page, plain text, a proxy's error body
            tries.transport += 1
            raise _Transient(f"the server answered HTTP 200 with no chat completion ({type(completion).__name__}){NOT_OPENAI}")
        add_usage(tries.usage, completion.usage)  # every answer is billed, usable or not
        if not completion.choices:
            tries.content += 1
            raise BadAnswer("answer has no choices", "invalid")
        choice = completion.choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            tries.content += 1
            if choice.finish_reason == "length":
                raise BadAnswer("answer cut off at the token limit", "invalid")
            raise BadAnswer("answer withheld by the content filter", "refused")
        message = choice.message
        try:
            labels = labels_from_message(message.content, getattr(message, "refusal", None), None, n, tries.need)
        except BadAnswer as e:
            if e.status == "refused":
                status, labels = ("short", tries.best) if tries.best else ("refused", [])  # keep a paid short list
                return Answer(status, labels, dict(tries.usage), _request_id(completion), completion.model, error=str(e))
            tries.content += 1
            if len(e.labels) > len(tries.best):
                tries.best = list(e.labels)
            raise
        return Answer("ok", labels, dict(tries.usage), _request_id(completion), completion.model)

    def _classify(self, e: Exception, tries: _Tries) -> Exception:
        """What an exception of the SDK call means: a transient error or a fatal one."""
        sdk = self.sdk
        if isinstance(e, sdk.APIStatusError):
            self.reached = True
            code = e.status_code
            if code == 429 and _error_code(e) == "insufficient_quota":
                return self.fatal_error(e)
            if code == 429 or code in (408, 409) or code >= 500:
                tries.transport += 1
                after = retry_after_seconds(e.response.headers)
                if code == 429 and after is not None:
                    self._pause(after)
                return _Transient(f"HTTP {code}: {self._detail(e)}", after)
            return self.fatal_error(e)
        if isinstance(e, (sdk.APIConnectionError, sdk.APITimeoutError)):
            tries.transport += 1
            # no connection made: refused, unknown host, or a connect that timed out
            connect = not isinstance(e, sdk.APITimeoutError) or type(e.__cause__).__name__ == "ConnectTimeout"
            what = "cannot connect" if connect else "timed out"
            return _Transient(f"{what} ({type(e).__name__})", connect=connect)
        return e

    async def _gate(self) -> None:
        delay = self._paused_until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)

    def _pause(self, seconds: float) -> None:
        seconds = min(seconds, self.retry_after_max)
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)
        log.info("rate limited by %s: pausing requests for %.1f s (Retry-After)", self.base_url, seconds)

    def _detail(self, e: Any) -> str:
        """The server's error message, secrets masked, cut to one short line."""
        text = " ".join(self.scrub(str(getattr(e, "message", "") or e)).split())
        return text[:300]

    def fatal_error(self, e: Any) -> Exception:
        detail = self._detail(e)
        code = e.status_code
        if code == 401:
            return ResourceError(f"{self.base_url}: authentication failed (HTTP 401); check the API key in {self.key_name}")
        if code == 403:
            return ResourceError(f"{self.base_url}: access denied (HTTP 403): {detail}; check the key in {self.key_name} and the model's availability")
        if code == 404:
            hint = "" if self.base_url.rstrip("/").endswith("/v1") else "; OpenAI-compatible base URLs usually end in /v1"
            return ResourceError(f"{self.base_url}: model {self.model!r} or endpoint not found (HTTP 404): {detail}{hint}")
        if code == 429:
            return ResourceError(f"{self.base_url}: out of quota (HTTP 429 insufficient_quota): {detail}")
        return ResourceError(f"{self.base_url}: request rejected (HTTP {code}): {detail}")


@dataclass
class _Tries:
    """Attempts, token usage, the label count needed and the best short answer, for one :meth:`LLMClient.ask`."""

    need: int
    transport: int = 0
    content: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    best: list[str] = field(default_factory=list)  # the longest short list answered so far

    @property
    def total(self) -> int:
        return self.transport + self.content


def _error_code(e: Any) -> str | None:
    """The ``code`` (or ``type``) of an API error body, e.g. ``insufficient_quota``."""
    code = getattr(e, "code", None)
    if code:
        return str(code)
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return inner.get("code") or inner.get("type")
    return None


def _request_id(completion: Any) -> str | None:
    rid = getattr(completion, "_request_id", None)
    return rid or getattr(completion, "id", None)
