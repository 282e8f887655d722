"""What one request to an LLM server comes back as: the answer, the ways it can fail, retry timing.

:class:`Answer` is the outcome after retries; :class:`ServerGaveUp`, :class:`FailFast` and
:class:`NotSent` are how a request or a run ends early; :class:`Tries` counts one request's attempts.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from negvocab.core.errors import ResourceError

__all__ = [
    "STATUSES",
    "Answer",
    "FailFast",
    "NotSent",
    "ServerGaveUp",
    "Transient",
    "Tries",
    "add_usage",
    "error_code",
    "request_id_of",
    "retry_after_seconds",
]


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
    mode: str | None = None  # the response format it was asked in
    snippet: str | None = None  # the start of an unusable answer, secrets masked
    raw_labels: list[str] | None = None  # the answer's items before cleaning (journaled where they differ)


class NotSent(Exception):
    """The run was interrupted before this request went out (see :meth:`LLMClient.drain`)."""


class ServerGaveUp(Exception):
    """Transport errors outlasted the retries; the request is not finished (re-run to retry).

    ``usage`` holds the tokens its earlier, unusable answers were billed for.
    """

    def __init__(self, message: str, usage: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.usage = usage or {}


class FailFast(ResourceError):
    """The first answers of a run were all unusable: the run stops with a one-line diagnosis."""

    def __init__(self, message: str, usage: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.usage = usage or {}


class Transient(Exception):
    """A transport error worth another attempt (``final``: not on this request, the same error came twice)."""

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        *,
        connect: bool = False,
        deadline: bool = False,
        final: bool = False,
    ) -> None:
        super().__init__(message)
        self.final = final
        self.retry_after = retry_after
        self.connect = connect  # no connection was made (refused, unknown host)
        self.deadline = deadline  # the request's total deadline passed


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


def add_usage(total: dict[str, int], usage: Any) -> None:
    if usage is None:
        return
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key) if isinstance(usage, dict) else getattr(usage, key, None)
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value


@dataclass
class Tries:
    """Attempts, token usage, the label count needed and the best short answer, for one :meth:`LLMClient.ask`."""

    need: int
    transport: int = 0
    content: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    best: list[str] = field(default_factory=list)  # the longest short list answered so far
    best_raw: list[str] | None = None  # its raw items
    deadline: float = float("inf")  # time.monotonic() by which the request gives up
    model: str | None = None  # the model as the server named it
    last_error: tuple[Any, ...] | None = None  # (status, body) of the last transport error: the same twice stops
    epoch: int = 0  # the concurrency limit's epoch when the last attempt was sent (an overload halves it once)
    alone: bool = False  # whether the last attempt was the only request on the wire when sent

    @property
    def total(self) -> int:
        return self.transport + self.content


def error_code(e: Any) -> str | None:
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


def request_id_of(completion: Any) -> str | None:
    rid = getattr(completion, "_request_id", None)
    return rid or getattr(completion, "id", None)
