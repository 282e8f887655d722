"""What an HTTP error from an LLM server means, and the one-line diagnosis of each kind.

Real servers answer the same trouble with different statuses: llama-cpp-python's OpenAI server
refuses a ``json_schema`` response format with HTTP 500 (a pydantic ``literal_error`` naming
``response_format``), and a LiteLLM proxy passes it on as ``500 litellm.InternalServerError``;
LiteLLM answers an unknown model (``Invalid model name passed in model=...``) and a key it cannot
check (``No connected db.``) with 400; a context too small comes as 400 (``maximum context length
is 256 tokens``) or, from llama.cpp, as 500 (``could not broadcast input array``). Upstream
llama.cpp's ``llama-server`` answers ``500 Context size has been exceeded.`` to every request in
flight when its slots, which share one context, together run out of it (so concurrency alone can cause
it), and ``400 Failed to initialize samplers: ...`` when it cannot build the grammar of a response
format; a LiteLLM proxy whose backend cannot be reached answers 500 ``litellm.APIConnectionError``. So
the status alone says little: :func:`classify` reads the status and the body together and names one of

- :data:`TEMPORARY`: retry with backoff (429 without a quota problem, 408/409, 5xx); causes
  ``rate_limit`` and ``context_full`` (an overload: fewer requests at once), ``backend`` (a proxy up,
  its backend not), ``server``; identical generic 500s are not by themselves a deterministic fault;
- :data:`FORMAT`: the server does not take the response format asked for (a 400/422, or a 500
  whose body names ``response_format``): move down one format;
- :data:`PERMANENT`: stop at once (bad key, unknown model, context too small, quota, a wrong
  endpoint, another request the server rejects); :func:`diagnosis` says which, in the server's
  words, and the fix;
- :data:`UNKNOWN`: a status no OpenAI-compatible server uses for an error (1xx/3xx, 2xx with an error).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FORMAT", "PERMANENT", "REPEATABLE", "TEMPORARY", "UNKNOWN", "Verdict", "classify", "connection_trouble",
    "context_note", "diagnosis", "names_format", "overload_words",
    "server_words", "temporary_words",
]  # fmt: skip

TEMPORARY, FORMAT, PERMANENT, UNKNOWN = "temporary", "format", "permanent", "unknown"

_NAMES_FORMAT = re.compile(
    r"response.?format|json.?schema|json.?object|structured.?output|guided.?(?:json|decoding)|grammar"
    r"|initiali[sz]e samplers",  # llama-server: 400 "Failed to initialize samplers: failed to parse grammar"
    re.I,
)
#: llama-server's answer to every request in flight when its slots together run out of their shared context
_CONTEXT_FULL = re.compile(r"context size has been exceeded", re.I)
#: a proxy (LiteLLM) that is up while the backend it forwards to cannot be reached
_BACKEND = re.compile(
    r"APIConnectionError|Connection error|cannot connect to host|connection refused|all connection attempts failed",
    re.I,
)
_CONTEXT = re.compile(
    r"context.?length|context.?window|context_length_exceeded|exceeds? "
    r"(?:the )?(?:model'?s? )?(?:maximum )?context|n_ctx"
    r"|too many tokens|prompt is too long|could not broadcast input array|requested tokens \(\d+\) exceed"
    r"|exceeds the available context size|exceed_context_size_error",
    re.I,
)
_QUOTA = re.compile(
    r"insufficient_quota|exceeded your current quota|\bquota\b|budget "
    r"has been exceeded|budget exceeded|billing|credit balance",
    re.I,
)
_MODEL = re.compile(
    r"invalid model(?: name)?\b|there is no 'model_name'|you passed in model=none|model.?not.?found|unknown "
    r"model|no such model|model \S{0,80} (?:does not exist|not found|is not available|is not supported)"
    r"|the model .{0,80} does not exist|model .{0,80} not (?:found|loaded|served)|no deployments? available for",
    re.I,
)
_AUTH = re.compile(
    r"no connected db|api.?key|authenticat|unauthori[sz]ed|invalid.?(?:token|key|credentials)|incorrect .{0,20}key"
    r"|permission denied|virtual key|bearer",
    re.I,
)
#: statuses whose identical repeats are still worth retrying (a gateway or a rate limit says the same each time)
REPEATABLE = frozenset({408, 429, 502, 503, 504})


@dataclass(frozen=True)
class Verdict:
    """The kind of an error (:data:`TEMPORARY`, :data:`FORMAT`, :data:`PERMANENT`, :data:`UNKNOWN`) and its cause
    (``rate_limit``, ``context_full``, ``backend``, ``server``, ``format``, ``auth``, ``model``, ``context``,
    ``quota``, ``endpoint``, ``rejected``, ``unknown``)."""

    kind: str
    cause: str


def context_note(overflows: int) -> str:
    """What to add to a stopped run's line when llama-server's context (shared by its slots) overflowed."""
    if not overflows:
        return ""
    return (
        f"; the server's context is full ({overflows} overflows): start it with a larger context (llama-server: "
        "-c) or fewer slots sharing it (--parallel), lower -j, or ask fewer names a request (-n)"
    )


def names_format(body: str) -> bool:
    """Whether an error body names the response format (``response_format``, JSON schema, grammar...)."""
    return bool(_NAMES_FORMAT.search(body or ""))


def classify(status: int | None, body: str, code: str | None = None) -> Verdict:
    """The :class:`Verdict` of an HTTP error with ``status``, its body text and its ``code`` field."""
    body = body or ""
    words = f"{code or ''} {body}"
    if status is None or status < 400:
        return Verdict(UNKNOWN, "unknown")
    if status >= 500 and _CONTEXT_FULL.search(body):
        return Verdict(TEMPORARY, "context_full")
    if status in (400, 422, 500) and names_format(body) and not _CONTEXT.search(words):
        return Verdict(FORMAT, "format")
    if _CONTEXT.search(words):
        return Verdict(PERMANENT, "context")
    if status == 429:
        return (
            Verdict(PERMANENT, "quota")
            if code == "insufficient_quota" or _QUOTA.search(words)
            else Verdict(TEMPORARY, "rate_limit")
        )
    if status >= 500 and _BACKEND.search(body):
        return Verdict(TEMPORARY, "backend")
    if status >= 500 or status in (408, 409):
        return Verdict(TEMPORARY, "server")
    if _QUOTA.search(words) and status in (400, 402, 403):
        return Verdict(PERMANENT, "quota")
    if status in (401, 403):
        return Verdict(PERMANENT, "auth")
    if _MODEL.search(words) or (status == 404 and re.search(r"\bmodel\b", body, re.I)):
        return Verdict(PERMANENT, "model")
    if status == 404:
        return Verdict(PERMANENT, "endpoint")
    if _AUTH.search(words):
        return Verdict(PERMANENT, "auth")
    return Verdict(PERMANENT, "rejected")


def diagnosis(
    verdict: Verdict,
    status: int,
    detail: str,
    *,
    base_url: str,
    model: str,
    key_name: str,
    mode: str,
    code: str | None = None,
    query_names: list[str] | None = None,
) -> str:
    """The one-line message of a permanent (or format) error: what happened, the server's words, the fix;
    with ``query_names`` (the base URL's query, sent with every request) an authentication error or a 404
    names the query too, as a gateway may take the key there."""
    line = _diagnosis(verdict, status, detail, base_url=base_url, model=model, key_name=key_name, mode=mode, code=code)
    names = ", ".join(query_names or [])
    if names and verdict.cause == "auth":
        line += f"; the base URL's query ({names}) went with every request: check a key given there too"
    if names and status == 404:  # not the model's fault until the query is ruled out
        line += (
            f"; the base URL's query ({names}) goes with every request "
            "as query parameters: check that the server takes it "
            "there (a key usually goes in OPENAI_API_KEY)"
        )
    return line


def _diagnosis(
    verdict: Verdict, status: int, detail: str, *, base_url: str, model: str, key_name: str, mode: str, code: str | None
) -> str:
    said = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    cause = verdict.cause
    if cause == "auth":
        extra = (
            "; a LiteLLM proxy without a database checks no virtual keys: use its master key (LITELLM_MASTER_KEY)"
            if "no connected db" in detail.lower()
            else ""
        )
        words = f" (the server said: {detail})" if detail else ""
        return f"{base_url}: authentication failed (HTTP {status}); check the API key in {key_name}{extra}{words}"
    if cause == "model":
        return (
            f"{base_url}: the server does not serve model {model!r} ({said}); "
            f"use a model it lists at {base_url.rstrip('/')}/models (-m)"
        )
    if cause == "context_full":
        return (
            f"{base_url}: the server's context is full even with one request in flight ({said}); start it with "
            "a larger context (llama-server: -c) or fewer slots sharing it (--parallel), or ask fewer names a "
            "request (-n)"
        )
    if cause == "context":
        return (
            f"{base_url}: the request does not fit the model's context "
            f"({said}); ask fewer names a request (-n) or a shorter "
            "--prompt, or start the server with a larger context (llama.cpp: --n_ctx)"
        )
    if cause == "quota":
        tag = f" {code}" if code and code != "None" else ""
        return (
            f"{base_url}: out of quota (HTTP {status}{tag}): {detail}; check the account's billing or the key's budget"
        )
    if cause == "endpoint":
        hint = "" if base_url.rstrip("/").endswith("/v1") else "; OpenAI-compatible base URLs usually end in /v1"
        return f"{base_url}: model {model!r} or endpoint not found ({said}){hint}"
    if cause == "format":
        others = " or ".join(m for m in ("json_object", "text") if m != mode) or "auto"
        return f"{base_url}: the server does not take response format {mode} ({said}); try --response-format {others}"
    return f"{base_url}: request rejected ({said})"


#: what to do about each kind of temporary trouble, said while it is retried and when it stops the run
_TEMPORARY_FIX = {
    "backend": "the proxy answers but cannot reach the backend it forwards to: check that backend (the proxy's "
    "api_base for this model) and the proxy's log",
    "server": "see the server's log",
}


def temporary_words(verdict: Verdict, said: str) -> str:
    """A temporary error in one line: the server's words (``said``) and what to check."""
    fix = _TEMPORARY_FIX.get(verdict.cause)
    return f"{said} ({fix})" if fix else said


def overload_words(verdict: Verdict, base_url: str, said: str) -> str:
    """The line said when an overload (a rate limit, a full context) steps the run's concurrency down."""
    if verdict.cause == "context_full":
        return (
            f"{base_url}: the server's context is full ({said}): its slots share one context, so concurrency alone "
            "overflows it (llama-server: a larger -c, fewer --parallel slots; here: a lower -j or fewer names a "
            "request, -n)"
        )
    return f"rate limited by {base_url} ({said})"


def server_words(message: str) -> str:
    """An error's message as one short line: whitespace folded, the SDK's ``Error code: 400 - `` prefix
    (put where the body had no message field) dropped, as the diagnosis names the status already."""
    return re.sub(r"^Error code: \d+ - ", "", " ".join(message.split()))[:300]


def connection_trouble(cause: str, timed_out: bool) -> tuple[str, bool, str]:
    """What a failed HTTP exchange was, from the name of the transport's exception (``cause``): its words,
    whether no answer came on the connection (refused, unknown host, a connect that timed out, or a
    connection closed unanswered: worth a waiting line while retried), and the fix."""
    if cause in ("RemoteProtocolError", "ReadError"):  # connected, then closed without an answer
        return (
            "the server closed the connection without an answer",
            True,
            ("check that the server is up and the base URL (and its log: a crash, or a proxy whose upstream is down)"),
        )
    connect = not timed_out or cause == "ConnectTimeout"
    return ("cannot connect" if connect else "timed out"), connect, "check that the server is up and the base URL"
