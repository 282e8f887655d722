"""The server-error classifier on documented bodies, and what a broken set-up costs against fakes
of llama-cpp-python's server, a LiteLLM proxy in front of it, and OpenAI (tests.llm.server_bodies)."""

from __future__ import annotations

import asyncio

import pytest

from negvocab import build_gpt_vocabulary
from negvocab.core.errors import ResourceError
from negvocab.llm.client import SETUP_BUDGET, LLMClient
from negvocab.llm.server_errors import FORMAT, PERMANENT, TEMPORARY, UNKNOWN, classify
from tests.llm import server_bodies as sb
from tests.llm.conftest import DUMMY_KEY, FAST


def _msg(pair):
    return pair[1]["error"]["message"]


@pytest.mark.parametrize(
    "status, body, code, kind, cause",
    [
        (500, _msg(sb.llamacpp_error(500, sb.LLAMACPP_SCHEMA_500)), None, FORMAT, "format"),  # llama.cpp: 500, not 400
        (
            500,
            _msg(sb.litellm_wraps(*sb.llamacpp_error(500, sb.LLAMACPP_SCHEMA_500))),
            "500",
            FORMAT,
            "format",
        ),  # LiteLLM passes it on
        (400, "response_format type 'json_schema' is not supported by this server", None, FORMAT, "format"),
        (500, _msg(sb.llamacpp_error(500, sb.LLAMACPP_BROADCAST_500)), None, PERMANENT, "context"),
        (400, _msg(sb.llamacpp_error(400, sb.LLAMACPP_CONTEXT_400)), "context_length_exceeded", PERMANENT, "context"),
        (400, _msg(sb.litellm_error(400, sb.LITELLM_CONTEXT)), "400", PERMANENT, "context"),
        (400, _msg(sb.litellm_error(400, sb.LITELLM_UNKNOWN_MODEL % "gpt-9")), "400", PERMANENT, "model"),
        (400, _msg(sb.litellm_error(400, sb.LITELLM_NO_DB)), "400", PERMANENT, "auth"),
        (401, "Incorrect API key provided: sk-***1234.", "invalid_api_key", PERMANENT, "auth"),
        (
            404,
            "The model `gpt-9` does not exist or you do not have access to it.",
            "model_not_found",
            PERMANENT,
            "model",
        ),
        (404, "Not Found", None, PERMANENT, "endpoint"),
        (429, "You exceeded your current quota, please check your plan.", "insufficient_quota", PERMANENT, "quota"),
        (429, "Rate limit reached for gpt-4o-mini", "rate_limit_exceeded", TEMPORARY, "rate_limit"),
        (500, _msg(sb.openai_500("req_1")), None, TEMPORARY, "server"),
        (503, "Service Unavailable", None, TEMPORARY, "server"),
        (400, "Invalid value for 'temperature'", None, PERMANENT, "rejected"),
        (302, "", None, UNKNOWN, "unknown"),
        # issue 34: the retried conflict and timeout statuses, and a payment refusal
        (408, "Request Timeout", None, TEMPORARY, "server"),
        (409, "There was a conflict with the current state of the request; please retry.", None, TEMPORARY, "server"),
        (402, "You exceeded your current quota, please check your plan and billing details.", None, PERMANENT, "quota"),
        (402, "Payment Required", None, PERMANENT, "rejected"),
    ],
)
def test_documented_bodies_are_classified(status, body, code, kind, cause):
    verdict = classify(status, body, code)
    assert (verdict.kind, verdict.cause) == (kind, cause)


#: kept back until the classifier was done: bodies quoted in the servers' own issue trackers
HELD_OUT = [
    # llama.cpp's llama-server before structured output (ggml-org/llama.cpp#9522): a 500 naming response_format
    (500, 'response_format type must be one of "text" or "json_object", but got: json_schema', "500", FORMAT, "format"),
    # LiteLLM's proxy on an unknown model (BerriAI/litellm#3142), the code an int there
    (400, "400: {'error': 'Invalid model name passed in model=Lite-GPT-12'}", "400", PERMANENT, "model"),
    # LiteLLM without a model (BerriAI/litellm#8886)
    (
        400,
        "litellm.BadRequestError: You passed in model=None. There is no 'model_name' with this string ",
        "400",
        PERMANENT,
        "model",
    ),
    # LiteLLM passing on a provider's refusal of the model (BerriAI/litellm#37761)
    (
        400,
        "litellm.BadRequestError: PerplexityException - Invalid model "
        "'perplexity/sonar'. Permitted models can be found in the "
        "documentation at https://docs.perplexity.ai/docs/getting-started/models.. Received Model Group=pplx-sonar",
        "400",
        PERMANENT,
        "model",
    ),
]


@pytest.mark.parametrize("status, body, code, kind, cause", HELD_OUT)
def test_held_out_bodies_from_the_servers_trackers_are_classified(status, body, code, kind, cause):
    verdict = classify(status, body, code)
    assert (verdict.kind, verdict.cause) == (kind, cause)


QUESTIONS = 20


def _run(server, tmp_path, synonym_filter, **kw):
    """20 questions at -j 8, as the issue's runs; every exception is returned, not raised."""
    try:
        return build_gpt_vocabulary(
            "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST,
            base_url=server.url,
            api_key=DUMMY_KEY, concurrency=8, per_class=6, rounds=1, classes=QUESTIONS, **kw,
        )  # fmt: skip
    except ResourceError as e:
        return e


def _requests(server) -> int:
    return sum(server.state.chat_counts.values())


BABBLE = ["ség familiacolor bother involving", "%> чтоs register", "ölç gridTerm >>", "{{ trans sitting of", "zxq vvb"]


@pytest.mark.parametrize(
    "kind, fault, said",
    [
        ("structured", "html", "no chat completion"),
        ("structured", "error200", "no chat completion"),
        ("structured", "500", "HTTP 500"),
        ("structured", "500same", "HTTP 500: internal error"),  # the same generic 500 each time: no cause named
        ("structured", "garbage", "unusable"),
        ("no_choices", None, "empty choices"),
        ("babble", None, "not language"),
        ("babble", "length", "not language"),  # a small model rambling to its limit: not "ask fewer names"
        ("llamacpp_broadcast", None, "does not fit the model's context"),
        ("litellm_broadcast", None, "does not fit the model's context"),
        ("llamacpp_small_ctx", None, "does not fit the model's context"),
        ("litellm_small_ctx", None, "does not fit the model's context"),
        ("litellm_unknown_model", None, "does not serve model 'gpt-test'"),
        ("litellm_no_db", None, "LITELLM_MASTER_KEY"),
    ],
)
def test_a_broken_setup_costs_at_most_ten_requests(server, tmp_path, synonym_filter, kind, fault, said):
    server.state.kind, server.state.always_fault = kind, fault
    server.state.babble_lines = BABBLE
    out = _run(server, tmp_path, synonym_filter)
    assert isinstance(out, ResourceError), out
    assert (
        said in str(out) and "\n" not in str(out) and "Error code:" not in str(out)
    )  # the SDK's prefix: the line says the status
    assert "check that the server is up" not in str(out)  # it is up: the advice must be about what it said
    if said == "not language":
        assert "fewer names" not in str(out) and "(-n)" not in str(out)
    if kind.startswith(("litellm", "llamacpp")):  # no "try --response-format text" for a model, key or context problem
        assert "--response-format" not in str(out)
    assert 1 <= _requests(server) <= SETUP_BUDGET, (_requests(server), str(out))


@pytest.mark.parametrize("kind", ["llamacpp", "litellm"])
def test_auto_settles_on_json_object_where_json_schema_gets_a_500(server, tmp_path, synonym_filter, kind):
    server.state.kind = kind
    vocab = _run(server, tmp_path, synonym_filter)
    assert not isinstance(vocab, Exception), vocab
    assert vocab.settings["response_formats"] == {"json_object": QUESTIONS}
    schema_asks = server.state.formats.count("json_schema")
    assert 1 <= schema_asks <= 2  # the probes in flight; no retries of the 500
    assert _requests(server) == QUESTIONS + schema_asks


def test_a_500_naming_response_format_with_json_schema_asked_stops_with_the_format_fix(server):
    server.state.kind = "llamacpp"

    async def go():
        async with LLMClient("m", base_url=server.url, api_key=DUMMY_KEY, response_format="json_schema", **FAST) as c:
            return await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:k/r0")

    with pytest.raises(
        ResourceError,
        match=(
            r"does not take response format json_schema \(HTTP 500: "
            r".*literal_error.*\); try --response-format json_object or text"
        ),
    ):
        asyncio.run(go())
    assert _requests(server) == 1


def test_request_counts_include_retries_and_max_tokens_is_sent(server, tmp_path, synonym_filter):
    from negvocab import imagenet1k

    wnids = imagenet1k().wnids[:QUESTIONS]
    server.state.add_faults(f"{wnids[0]}/r0", "500")  # OpenAI's 500 (a new request id): retried once, then ok
    server.state.add_faults(f"{wnids[1]}/r0", "malformed")
    vocab = _run(server, tmp_path, synonym_filter)
    session = vocab.settings["session"]
    assert session["sent"] == QUESTIONS and session["http_requests"] == _requests(server) == QUESTIONS + 2
    assert set(server.state.max_tokens) == {256 + 16 * 6}
    assert vocab.settings["cost_usd"] is None  # a local server: no OpenAI price for its echo of the name
    prices = {"gpt-test": (1.0, 2.0)}
    again = _run(server, tmp_path, synonym_filter, prices=prices)  # --price-in/--price-out say so
    usage = again.settings["usage"]
    assert again.settings["cost_usd"] == pytest.approx(
        (usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0) / 1e6
    )


def test_max_tokens_can_be_set_or_left_out(server):
    async def go(**kw):
        async with LLMClient("m", base_url=server.url, api_key=DUMMY_KEY, **FAST, **kw) as c:
            return await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:k/r0")

    asyncio.run(go(max_tokens=1000))
    asyncio.run(go(max_tokens=None))
    assert server.state.max_tokens == [1000, None]
    official = LLMClient("m", base_url="https://api.openai.com/v1", api_key=DUMMY_KEY)
    assert official.max_tokens is None  # reasoning models bill hidden tokens within it


def test_a_404_with_a_query_in_the_base_url_names_the_query_not_only_the_model(server):
    async def go():
        async with LLMClient("m", base_url=server.url + "/gw?key=K-0123456789abcdef", api_key="x", **FAST) as c:
            return await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:k/r0")

    with pytest.raises(ResourceError) as err:
        asyncio.run(go())
    line = str(err.value)
    assert "(HTTP 404" in line and "the base URL's query (key) goes with every request" in line
    assert "K-0123456789abcdef" not in line and "\n" not in line


def _ask_once(server, **kw):
    async def go():
        async with LLMClient("m", base_url=server.url, api_key="x", **{**FAST, **kw}) as c:
            return await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:k/r0")

    return asyncio.run(go())


def test_a_cut_off_answer_that_is_no_language_is_not_blamed_on_the_label_count(server):
    server.state.add_faults("k/r0", "length")
    cut = _ask_once(server, content_attempts=1, response_format="json_object")
    assert cut.status == "invalid" and cut.error == "answer cut off at the token limit"
    server.state.kind, server.state.babble_lines = "babble", BABBLE * 4
    server.state.add_faults("k/r0", "length")
    babble = _ask_once(server, content_attempts=1, response_format="json_object")
    assert babble.status == "invalid" and babble.error == "answer cut off at the token limit, and it is not language"


def test_a_refused_connection_says_that_it_is_retried(caplog):
    import logging
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go():
        async with LLMClient(
            "m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x", wait_base=1.0, wait_max=1.0
        ) as c:
            return await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:k/r0")

    with caplog.at_level(logging.WARNING), pytest.raises(Exception, match="cannot connect"):
        asyncio.run(go())
    assert any("cannot connect" in r.getMessage() and "trying again in" in r.getMessage() for r in caplog.records)


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _ask_many(client, count: int = QUESTIONS) -> list:
    """``count`` questions at once, as a run at -j 8 sends them; exceptions returned, not raised."""
    messages = [{"role": "user", "content": "Return exactly 6 names."}]
    return await asyncio.gather(
        *(client.ask(messages, 6, trace_id=f"t:k{i}/r0") for i in range(count)), return_exceptions=True
    )


def test_a_refused_connection_costs_at_most_ten_attempts_for_the_whole_run():
    async def go():
        async with LLMClient(
            "m", base_url=f"http://127.0.0.1:{_free_port()}/v1", api_key="x", concurrency=8, **FAST
        ) as c:
            return await _ask_many(c), c.http_requests

    outcomes, sent = asyncio.run(go())
    assert all(isinstance(o, Exception) for o in outcomes)
    assert 1 <= sent <= SETUP_BUDGET
    assert any("cannot connect" in str(o) for o in outcomes)


@pytest.mark.parametrize(
    "kind, said", [("drop", "closed the connection without an answer"), ("silent", "request deadline")]
)
def test_a_server_that_never_answers_costs_at_most_ten_connections(kind, said):
    from tests.llm.bad_servers import DropServer, SilentServer

    async def go(url):
        async with LLMClient("m", base_url=url, api_key="x", concurrency=8, request_timeout=0.5, **FAST) as c:
            return await _ask_many(c)

    with {"drop": DropServer, "silent": SilentServer}[kind]() as srv:
        outcomes = asyncio.run(go(srv.url))
        connections = srv.connections
    assert all(isinstance(o, Exception) for o in outcomes)
    assert 1 <= connections <= SETUP_BUDGET
    assert any(said in str(o) for o in outcomes), outcomes[:3]


def test_a_server_failing_mid_run_costs_three_attempts_a_request_as_the_openai_sdk(server, caplog):
    """After a usable answer the set-up budget no longer applies: each request then tries as often as the
    openai SDK does by default (1 + max_retries=2), not 8 times with up to a minute of backoff each."""
    import logging

    from negvocab.llm.answers import ServerGaveUp
    from negvocab.llm.client import TRANSPORT_ATTEMPTS

    assert TRANSPORT_ATTEMPTS == 3

    async def go():
        async with LLMClient("m", base_url=server.url, api_key=DUMMY_KEY, wait_base=0.6, wait_max=1.0) as c:
            first = await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:a/r0")
            server.state.always_fault = "drop"  # from now on every connection closes without an answer
            before = c.http_requests
            with pytest.raises(ServerGaveUp, match="closed the connection without an answer"):
                await c.ask([{"role": "user", "content": "Return exactly 6 names."}], 6, trace_id="t:b/r0")
            return first, c.http_requests - before

    with caplog.at_level(logging.WARNING):
        first, tries = asyncio.run(go())
    assert first.status == "ok" and tries == 3
    waits = [r.getMessage() for r in caplog.records if "trying again in" in r.getMessage()]
    assert waits and all(
        "closed the connection without an answer" in w for w in waits
    )  # a line while it waits, not silence


def test_a_500_with_a_new_request_id_each_time_is_tried_three_times(server):
    server.state.add_faults(
        "k/r0", *["500"] * 5
    )  # OpenAI's 500 names a new request id each time: not the same error twice
    with pytest.raises(Exception, match="HTTP 500"):
        _ask_once(server, response_format="json_schema")
    assert server.state.chat_counts["k/r0"] == 3


def test_a_local_server_running_an_openai_model_name_gets_no_openai_price(server, tmp_path, synonym_filter):
    from negvocab.llm.cost import price_of

    assert price_of("gpt-4o-mini") is not None  # the table prices the name: only the endpoint can say no
    vocab = build_gpt_vocabulary(
        "gpt-4o-mini", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST,
        base_url=server.url,
        api_key=DUMMY_KEY, concurrency=2, per_class=6, rounds=1, classes=2,
    )  # fmt: skip
    assert vocab.settings["usage"]["prompt_tokens"] > 0 and vocab.settings["cost_usd"] is None


# -- upstream llama-server, Ollama, a LiteLLM proxy whose backend is down (bodies from their source) ---------------
@pytest.mark.parametrize(
    "status, body, code, kind, cause",
    [
        (500, _msg(sb.llama_server_error(500, sb.LLAMA_SERVER_CONTEXT_FULL, "server_error")), None, TEMPORARY,
         "context_full"),
        (400, _msg(sb.llama_server_error(400, sb.LLAMA_SERVER_SAMPLERS, "invalid_request_error")), None, FORMAT,
         "format"),
        (400, "Failed to initialize samplers", None, FORMAT, "format"),  # as the issue quotes it
        (400, _msg(sb.llama_server_error(400, sb.LLAMA_SERVER_TOO_LONG, "exceed_context_size_error")), None,
         PERMANENT, "context"),
        (401, _msg(sb.llama_server_error(401, sb.LLAMA_SERVER_BAD_KEY, "authentication_error")), None, PERMANENT,
         "auth"),
        (404, _msg(sb.ollama_error(404, sb.OLLAMA_UNKNOWN_MODEL % "llama9")), None, PERMANENT, "model"),
        (503, _msg(sb.ollama_error(503, sb.OLLAMA_BUSY)), None, TEMPORARY, "server"),
        (500, _msg(sb.litellm_error(500, sb.LITELLM_BACKEND_DOWN)), "500", TEMPORARY, "backend"),
        (500, "internal error", None, TEMPORARY, "server"),  # a generic 500, however often the same
    ],
)  # fmt: skip
def test_upstream_llama_server_ollama_and_litellm_bodies_are_classified(status, body, code, kind, cause):
    verdict = classify(status, body, code)
    assert (verdict.kind, verdict.cause) == (kind, cause)


@pytest.mark.parametrize(
    "kind, said, fix",
    [
        # alone on the server within the set-up budget, or not yet when the budget ends: both name the fix
        ("llama_server_tiny_ctx", "the server's context is full", "-c"),
        ("llama_server_too_long", "does not fit the model's context", "(-n)"),
        ("llama_server_key", "authentication failed (HTTP 401)", "OPENAI_API_KEY"),
        ("ollama_unknown_model", "does not serve model 'gpt-test'", "/models"),
        ("litellm_backend_down", "the proxy answers but cannot reach the backend it forwards to", "api_base"),
    ],
)
def test_each_real_server_error_has_its_own_diagnosis_within_ten_requests(server, tmp_path, synonym_filter, kind,
                                                                          said, fix):  # fmt: skip
    server.state.kind = kind
    out = _run(server, tmp_path, synonym_filter)
    assert isinstance(out, ResourceError), out
    line = str(out)
    assert said in line and fix in line and "\n" not in line, line
    assert "--min-labels" not in line and "--response-format" not in line
    assert 1 <= _requests(server) <= SETUP_BUDGET, (_requests(server), line)


def test_samplers_that_refuse_any_grammar_move_auto_down_to_text(server, tmp_path, synonym_filter):
    server.state.kind = "llama_server_samplers"
    vocab = _run(server, tmp_path, synonym_filter)
    assert not isinstance(vocab, Exception), vocab
    assert vocab.settings["response_formats"] == {"text": QUESTIONS}
    refused = server.state.formats.count("json_schema") + server.state.formats.count("json_object")
    assert 2 <= refused <= 4 and _requests(server) == QUESTIONS + refused  # the probes in flight, nothing more


@pytest.mark.parametrize("fmt", ["json_object", "auto"])
def test_partial_answers_under_an_odd_key_are_answers_kept_and_counted(server, tmp_path, synonym_filter, fmt):
    """A model that writes one name short under a key like " yellow cloud": the run completes (the early guard
    judges language and list shape, not the count), keeps every list and says how many names it got."""
    server.state.always_fault = "odd_key"
    vocab = _run(server, tmp_path, synonym_filter, response_format=fmt)
    assert not isinstance(vocab, Exception), vocab
    assert all(len(v) == 5 for v in vocab.views.values()) and len(vocab.views) == QUESTIONS
    assert vocab.settings["names"] == {"asked": 6 * QUESTIONS, "got": 5 * QUESTIONS}
    assert vocab.settings["failures"] == {"short": sorted(vocab.settings["failures"]["short"])}
    assert len(vocab.settings["failures"]["short"]) == QUESTIONS
