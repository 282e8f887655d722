"""Error bodies as real OpenAI-compatible servers send them, for the fakes in :mod:`tests.llm.fake_openai`.

Written from the servers' documented behaviour and the bodies quoted in issue 24 (llama-cpp-python
0.3.x's OpenAI server, a LiteLLM 1.x proxy in front of it, OpenAI itself):

- llama-cpp-python validates ``response_format`` with pydantic inside the route, so an unsupported
  ``json_schema`` type surfaces as HTTP 500 carrying pydantic's ``literal_error`` text; its error
  handler turns "Requested tokens (N) exceed context window of M" into OpenAI's 400
  ``context_length_exceeded`` message, while a prompt that overruns the KV cache inside numpy
  surfaces as 500 ``could not broadcast input array ...``; every 500 body has type
  ``internal_server_error``;
- LiteLLM wraps an upstream 500 as ``litellm.InternalServerError: ...`` (status 500) and answers an
  unknown model, a key it cannot check without a database, and a context overrun with 400, ``code``
  the status as a string; an upstream error's message ends in "LiteLLM: model group 'M' failed with
  the error above. No fallback was attempted." These bodies are the ones a real LiteLLM 1.108.7 proxy
  sent in front of this fake llama.cpp (``tests/llm/test_litellm_proxy.py``, figures in
  docs/howto/servers.md); it also retried each upstream 500 twice itself (3 upstream requests);
- OpenAI's own 500 names a request id that differs on every attempt (so identical repeats mean a
  deterministic fault, not a busy server).
"""

from __future__ import annotations

from typing import Any

LLAMACPP_SCHEMA_500 = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  "
    "Input should be 'text' or 'json_object' "
    "[type=literal_error, input_value='json_schema', input_type=str]\n    For further information visit https://errors.pydantic.dev/2.9/v/literal_error"
)
LLAMACPP_CONTEXT_400 = (
    "This model's maximum context length is 256 tokens. However, "
    "you requested 612 tokens (356 in the messages, 256 in the "
    "completion). Please reduce the length of the messages or completion."
)
LLAMACPP_BROADCAST_500 = "could not broadcast input array from shape (302,) into shape (256,)"
LITELLM_UNKNOWN_MODEL = (
    "/chat/completions: Invalid model name passed in model=%s. Call `/v1/models` to view available models for your key."
)
LITELLM_NO_DB = "No connected db."
LITELLM_CONTEXT = (
    "litellm.ContextWindowExceededError: litellm.BadRequestError: "
    "ContextWindowExceededError: OpenAIException - This model's "
    "maximum context length is 256 tokens. However, you requested 612 "
    "tokens. Please reduce the length of the messages or completion."
)


#: what a real LiteLLM 1.108.7 proxy (a master key, no database) answered, HTTP 500 with type
#: ``internal_server_error`` and code "500", when the upstream it forwards to refused connections (measured
#: here: ``litellm --config`` with ``api_base: http://127.0.0.1:<a closed port>/v1``; it retried twice itself)
LITELLM_BACKEND_DOWN = "litellm.InternalServerError: InternalServerError: OpenAIException - Connection error."


def llamacpp_error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    """A llama-cpp-python error: ``internal_server_error`` for 500, ``invalid_request_error`` for 400."""
    if status == 500:
        return 500, {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}
    return status, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def litellm_error(status: int, message: str, kind: str | None = None) -> tuple[int, dict[str, Any]]:
    """A LiteLLM proxy error: the message, ``type``, ``param`` null and ``code`` the status as a string."""
    kind = kind or ("internal_server_error" if status >= 500 else "invalid_request_error")
    return status, {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


def _group_failed(model: str) -> str:
    return f"\n\nLiteLLM: model group '{model}' failed with the error above. No fallback was attempted."


def litellm_wraps(status: int, body: dict[str, Any], model: str = "gpt-test") -> tuple[int, dict[str, Any]]:
    """What a LiteLLM proxy answers when its upstream (llama.cpp) answered ``status`` with ``body``."""
    message = body["error"]["message"]
    if status >= 500:
        return litellm_error(
            500, f"litellm.InternalServerError: InternalServerError: OpenAIException - {message}{_group_failed(model)}"
        )
    return litellm_error(status, f"litellm.BadRequestError: OpenAIException - {message}{_group_failed(model)}")


def openai_500(request_id: str) -> tuple[int, dict[str, Any]]:
    """OpenAI's transient 500: its text names a request id that differs on every attempt."""
    message = (
        "The server had an error while processing your request. "
        "Sorry about that! You can retry your request, or contact us "
        "through our help center at help.openai.com if the error persists. "
        f"(Please include the request ID {request_id} in your message.)"
    )
    return 500, {"error": {"message": message, "type": "server_error", "param": None, "code": None}}


def server_error(kind: str, fmt: str | None, model: str, prompt_chars: int) -> tuple[int, dict[str, Any]] | None:
    """The error a server of ``kind`` answers to a chat request (``None``: it answers normally).

    Kinds: ``llamacpp`` (500 on ``json_schema``), ``llamacpp_small_ctx`` (a 256-token context: 400
    for a long prompt), ``llamacpp_broadcast`` (500 ``could not broadcast`` on every request), and the
    same behind LiteLLM (``litellm``, ``litellm_small_ctx``, ``litellm_broadcast``), plus
    ``litellm_unknown_model`` and ``litellm_no_db``.
    """
    base = kind.removeprefix("litellm_") if kind.startswith("litellm") else kind.removeprefix("llamacpp_")
    upstream: tuple[int, dict[str, Any]] | None = None
    if kind == "litellm_unknown_model":
        status, body = litellm_error(400, LITELLM_UNKNOWN_MODEL % model)
        body["error"]["provider_specific_fields"] = {"error": body["error"]["message"]}
        return status, body
    if kind == "litellm_no_db":
        return litellm_error(400, LITELLM_NO_DB, "no_db_connection")
    if fmt == "json_schema" and kind in ("llamacpp", "litellm"):
        upstream = llamacpp_error(500, LLAMACPP_SCHEMA_500)
    elif base == "small_ctx" and prompt_chars > 200:
        if kind.startswith("litellm"):
            return litellm_error(
                400,
                f"{LITELLM_CONTEXT}\nmodel={model}. context_window_fallbacks=None. "
                f"fallbacks=None.{_group_failed(model)}",
            )
        upstream = llamacpp_error(400, LLAMACPP_CONTEXT_400)
    elif base == "broadcast":
        upstream = llamacpp_error(500, LLAMACPP_BROADCAST_500)
    if upstream is None:
        return None
    return litellm_wraps(*upstream, model) if kind.startswith("litellm") else upstream


# -- upstream llama.cpp ``llama-server`` (ggml-org/llama.cpp) ------------------------------------------------------
# tools/server/server-context.cpp (commit 001d906a6d86e2490e394361e7cc6f478b100088), decode(): when llama_process
# fails with n_batch == 1 and ret == 1, ``err = "Context size has been exceeded.";`` is sent with
# ``send_error(slot, err)`` (type ERROR_TYPE_SERVER) to EVERY slot processing, so all requests in flight fail
# together; the HTTP answer is ``status = json_value(error_data, "code", 500)`` with body ``{"error": error_data}``
# (server_res_generator::error). The samplers' failure is wrapped there as ``"Failed to initialize samplers: " +
# e.what()`` (common/sampling.cpp throws "failed to parse grammar"); the issue measured it as HTTP 400 on build
# 11434. A request too long for a slot is the typed 400 ``exceed_context_size_error``; a wrong key is 401
# ``Invalid API Key`` (type ``authentication_error``).
LLAMA_SERVER_CONTEXT_FULL = "Context size has been exceeded."
LLAMA_SERVER_SAMPLERS = "Failed to initialize samplers: failed to parse grammar"
LLAMA_SERVER_TOO_LONG = "request (612 tokens) exceeds the available context size (256 tokens), try increasing it"
LLAMA_SERVER_BAD_KEY = "Invalid API Key"


def llama_server_error(status: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    """An upstream llama-server error: ``{"error": {"code", "message", "type"}}`` with the status as its code."""
    body: dict[str, Any] = {"code": status, "message": message, "type": kind}
    if kind == "exceed_context_size_error":
        body.update(n_prompt_tokens=612, n_ctx=256)
    return status, {"error": body}


# -- Ollama's OpenAI-compatible endpoint (ollama/ollama, commit fb30760996871fa9460115c753afd2c60d4ab0f7) ----------
# openai/openai.go NewError: {"error": {"message", "type", "param": null, "code": null}}, type
# "invalid_request_error" for 400, "not_found_error" for 404, "api_error" otherwise; middleware/openai.go
# writeError passes the status on. server/routes.go ChatHandler: 404 ``model '%s' not found``; server/sched.go
# ErrMaxQueue (503): ``server busy, please try again.  maximum pending requests exceeded``. openai.go maps
# response_format json_object to format "json" and json_schema to its schema (both honoured).
OLLAMA_UNKNOWN_MODEL = "model '%s' not found"
OLLAMA_BUSY = "server busy, please try again.  maximum pending requests exceeded"


def ollama_error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    """An Ollama ``/v1`` error as openai.NewError writes it."""
    kind = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}


def upstream_error(kind: str, fmt: str | None, model: str, in_flight: int, slots: int) -> tuple[int, Any] | None:
    """The error an upstream llama-server or an Ollama of ``kind`` answers (``None``: it answers normally).

    ``llama_server`` fails every request with the full context when more than ``slots`` are in flight;
    ``llama_server_samplers`` refuses any grammar (``json_schema``, ``json_object``); ``llama_server_tiny_ctx``
    overflows even alone; ``llama_server_too_long`` is a prompt longer than a slot; ``llama_server_key`` a wrong
    key; ``ollama_unknown_model``; ``litellm_backend_down`` (see :data:`LITELLM_BACKEND_DOWN`).
    """
    if kind == "llama_server" and in_flight > slots or kind == "llama_server_tiny_ctx":
        return llama_server_error(500, LLAMA_SERVER_CONTEXT_FULL, "server_error")
    if kind == "llama_server_samplers" and fmt in ("json_schema", "json_object"):
        return llama_server_error(400, LLAMA_SERVER_SAMPLERS, "invalid_request_error")
    if kind == "llama_server_too_long":
        return llama_server_error(400, LLAMA_SERVER_TOO_LONG, "exceed_context_size_error")
    if kind == "llama_server_key":
        return llama_server_error(401, LLAMA_SERVER_BAD_KEY, "authentication_error")
    if kind == "ollama_unknown_model":
        return ollama_error(404, OLLAMA_UNKNOWN_MODEL % model)
    if kind == "litellm_backend_down":
        return litellm_error(500, LITELLM_BACKEND_DOWN + _group_failed(model))
    return None
