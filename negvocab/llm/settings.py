"""How an LLM vocabulary build talks to the server and runs its requests: :class:`LLMSettings`.

One frozen object shared by :func:`negvocab.build_gpt_vocabulary`, :func:`negvocab.build_eoe_vocabulary`
and :class:`negvocab.builders.llm.LLMRun`. It holds what may change between two sessions of the same
run folder without changing what a journaled answer means: the endpoint and key, concurrency, the
Batch API, the response format, timeouts, prices, progress. What is asked (model, classes, rounds,
labels per request, prompt, temperature, ``min_labels``) is the run's question: it makes the run's
identity and is given to the builder itself.

Every value is checked once, when the object is made (:meth:`LLMSettings.__post_init__`); a bad one
is a one-line :class:`~negvocab.core.errors.InputError` naming the field, the value and what is allowed.
The builders also take each field as a keyword (``base_url=...``); :func:`resolve_settings` puts
those over ``settings=``, so a keyword wins over the same field of a settings object.
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from negvocab.core.errors import InputError
from negvocab.llm.client import DEFAULT_REQUEST_TIMEOUT_S, LLMClient
from negvocab.llm.endpoint import check_base_url
from negvocab.llm.formats import check_mode

__all__ = ["LLMSettings", "resolve_settings"]

# client options that a settings field or the run's question owns: where to give them instead
_OWNED_OPTIONS = {
    "base_url": "LLMSettings.base_url",
    "api_key": "LLMSettings.api_key",
    "concurrency": "LLMSettings.concurrency",
    "response_format": "LLMSettings.response_format",
    "request_timeout": "LLMSettings.request_timeout",
    "temperature": "the builder's temperature (part of the run's identity)",
}


@dataclass(frozen=True)
class LLMSettings:
    """How to reach the server and run the requests of an LLM vocabulary build (defaults as the builders').

    Example: ``build_gpt_vocabulary("gpt-4o-mini",
    settings=LLMSettings(base_url="http://localhost:8000/v1", concurrency=64))``.
    ``api_key`` is left out of the repr and never logged or written; of ``base_url`` only the public
    form (no user info, no query string) reaches the run folder's manifest and the vocabulary.

    Parameters
    ----------
    base_url : str, optional
        OpenAI-compatible endpoint (default: ``$OPENAI_BASE_URL``, else OpenAI).
    api_key : str, optional
        The API key (default: ``$OPENAI_API_KEY``).
    concurrency : int, default 16
        Requests in flight at most (synchronous API).
    batch : bool, default False
        Send through the Batch API instead of the synchronous API.
    response_format : str, default "auto"
        ``auto``, ``json_schema``, ``json_object`` or ``text``.
    request_timeout : float, optional
        Total seconds one request may take, retries included.
    retry_failed : bool, default False
        Also ask again the requests recorded as short (synchronous API only).
    poll_interval : float, default 30.0
        Seconds between Batch API status checks.
    max_submissions : int, default 3
        Batches a request may be submitted in before an unusable answer is journaled as a failure.
    prices : mapping, optional
        Model name -> (USD per 1M prompt tokens, USD per 1M completion tokens).
    client_options : mapping, optional
        More keywords of :class:`~negvocab.llm.client.LLMClient`.
    on_progress : callable, optional
        Called with (requests done, requests in all) as answers come in.
    """

    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1`` (default: ``$OPENAI_BASE_URL``, else OpenAI)."""
    api_key: str | None = field(default=None, repr=False)
    """The API key (default: ``$OPENAI_API_KEY``); never printed, logged or written."""
    concurrency: int = 16
    """Requests in flight at most (synchronous API)."""
    batch: bool = False
    """Send through the Batch API (24 h window, half price) instead of the synchronous API."""
    response_format: str = "auto"
    """``auto`` (structured output where the server honours it, else JSON mode, else free text, settled once
    per run and recorded in the manifest), ``json_schema``, ``json_object`` or ``text``; see
    :mod:`negvocab.llm.formats`."""
    request_timeout: float | None = None
    """Total seconds one request may take, retries included (``None``:
    :data:`~negvocab.llm.client.DEFAULT_REQUEST_TIMEOUT_S`)."""
    retry_failed: bool = False
    """Also ask again the requests recorded as short (refused and invalid ones are asked again by every
    synchronous run); works with the synchronous API only."""
    poll_interval: float = 30.0
    """Seconds between Batch API status checks."""
    max_submissions: int = 3
    """Batches a request may be submitted in before an unusable answer is journaled as a failure."""
    prices: Mapping[str, tuple[float, float]] | None = None
    """Model name -> (USD per 1M prompt tokens, USD per 1M completion tokens), for models not in the price table."""
    client_options: Mapping[str, Any] | None = None
    """More keywords of :class:`~negvocab.llm.client.LLMClient` (``wait_base``, ``transport_attempts``,
    ``key_name``, ...)."""
    on_progress: Callable[[int, int], None] | None = None
    """Called with (requests done, requests in all) as answers come in."""

    def __post_init__(self) -> None:
        if self.base_url is not None and not isinstance(self.base_url, str):
            raise InputError(f"base_url must be an http(s) URL or None, got {self.base_url!r}")
        if self.base_url:
            check_base_url(self.base_url)  # the environment's OPENAI_BASE_URL is checked when the run starts
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise InputError(
                f"api_key must be a string or None, got a value of type {type(self.api_key).__name__}"
            )  # never the value
        _whole("concurrency", self.concurrency, 1)
        _flag("batch", self.batch)
        check_mode(self.response_format)
        if self.request_timeout is not None:
            _number(
                "request_timeout",
                self.request_timeout,
                f"> 0 seconds (or None for the default {DEFAULT_REQUEST_TIMEOUT_S:g})",
                lambda x: x > 0,
            )
        _flag("retry_failed", self.retry_failed)
        _number(
            "poll_interval",
            self.poll_interval,
            "a finite number of seconds >= 0",
            lambda x: math.isfinite(x) and x >= 0,
        )
        _whole("max_submissions", self.max_submissions, 1)
        _check_prices(self.prices)
        _check_client_options(self.client_options)
        if self.on_progress is not None and not callable(self.on_progress):
            raise InputError(f"on_progress must be a function of (done, total) or None, got {self.on_progress!r}")


#: the field names, in order (the keywords the builders accept besides their own)
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(LLMSettings))


def resolve_settings(
    settings: LLMSettings | None, overrides: Mapping[str, Any], caller: Callable[..., Any]
) -> LLMSettings:
    """``settings`` (default ``LLMSettings()``) with the fields named in ``overrides`` replaced: an
    override wins over the same field of ``settings``. A keyword that is no field is refused in one
    line that names it and lists what ``caller`` accepts."""
    if settings is None:
        settings = LLMSettings()
    elif not isinstance(settings, LLMSettings):
        raise InputError(
            f"settings must be an LLMSettings or None, got a value of type {type(settings).__name__}"
        )  # it may hold a key
    unknown = [k for k in overrides if k not in FIELDS]
    if unknown:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        own = [p.name for p in inspect.signature(caller).parameters.values() if p.kind in kinds and p.name != "self"]
        close = difflib.get_close_matches(unknown[0], [*own, *FIELDS], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(
            f"{caller.__qualname__}() got an unknown keyword {unknown[0]!r}{hint}; "
            f"it accepts {', '.join(own)} and the LLMSettings fields {', '.join(FIELDS)}"
        )
    return replace(settings, **overrides) if overrides else settings


def _whole(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"{name} must be a whole number >= {low}, got {value!r}")


def _flag(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise InputError(f"{name} must be True or False, got {value!r}")


def _number(name: str, value: Any, allowed: str, ok: Callable[[float], bool]) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not ok(value):
        raise InputError(f"{name} must be {allowed}, got {value!r}")


def _mapping(name: str, value: Any, what: str) -> Mapping[Any, Any]:
    if value is not None and not isinstance(value, Mapping):
        raise InputError(f"{name} must be {what} or None, got {value!r}")
    return value or {}


def _check_prices(prices: Any) -> None:
    pair_of = "(USD per 1M prompt tokens, USD per 1M completion tokens)"
    for model, pair in _mapping("prices", prices, f"a mapping of model name to {pair_of}").items():
        ok = isinstance(pair, tuple | list) and len(pair) == 2
        if not (
            ok
            and all(
                not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) and x >= 0 for x in pair
            )
        ):
            raise InputError(f"prices[{model!r}] must be {pair_of}, two numbers >= 0, got {pair!r}")


def _check_client_options(options: Any) -> None:
    allowed = [p for p in inspect.signature(LLMClient).parameters if p != "model" and p not in _OWNED_OPTIONS]
    for key in _mapping("client_options", options, "a mapping of LLMClient keywords"):
        if key in _OWNED_OPTIONS:
            raise InputError(f"client_options[{key!r}]: give it as {_OWNED_OPTIONS[key]}, not as a client option")
        if key not in allowed:
            raise InputError(f"client_options has an unknown key {key!r}; allowed: {', '.join(allowed)}")
