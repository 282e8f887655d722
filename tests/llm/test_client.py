"""LLMClient against the local fake server: structured output, every failure kind, the key."""

from __future__ import annotations

import asyncio
import logging

import pytest

from negvocab.core.errors import InputError, ResourceError
from negvocab.llm.client import RESPONSE_FORMAT, LabelList, LLMClient, ServerGaveUp, retry_after_seconds
from tests.llm.conftest import DUMMY_KEY, FAST
from tests.llm.fake_openai import labels_for

MESSAGES = [{"role": "user", "content": "Return exactly 6 distinct names."}]


def ask(server, cid="k1/r0", n=6, **options):
    async def go():
        async with LLMClient("gpt-test", base_url=server.url, api_key=DUMMY_KEY, **{**FAST, **options}) as client:
            return await client.ask(MESSAGES, n, trace_id=f"run:{cid}")

    return asyncio.run(go())


def expected(cid="k1/r0", n=6):
    key, r = cid.rsplit("/r", 1)
    return [s.lower() for s in labels_for(key, int(r), n)]


def test_structured_answer_matches_server(server):
    answer = ask(server)
    assert answer.status == "ok"
    assert answer.labels == expected()
    assert answer.usage == {"prompt_tokens": 56, "completion_tokens": 36, "total_tokens": 92}
    assert answer.request_id.startswith("req_")
    assert answer.model == "gpt-test-fake"
    assert answer.attempts == 1
    assert server.state.chat_counts["k1/r0"] == 1


def test_response_format_is_the_sdks_for_labellist():
    from openai.lib._parsing._completions import type_to_response_format_param

    assert type_to_response_format_param(LabelList) == RESPONSE_FORMAT


@pytest.mark.parametrize("fault", ["500", "malformed", "schema", "length"])
def test_retried_then_ok(server, fault):
    server.state.add_faults("k1/r0", fault, fault)
    answer = ask(server, response_format="json_schema")  # auto would read a non-schema answer as text
    assert answer.status == "ok" and answer.labels == expected()
    assert answer.attempts == 3
    assert server.state.chat_counts["k1/r0"] == 3


def test_429_retry_after_is_honoured(server):
    server.state.retry_after = "1"
    server.state.add_faults("k1/r0", "429")
    answer = ask(server)
    assert answer.status == "ok"
    (c1, t1, s1), (c2, t2, s2) = server.state.chat_log
    assert (s1, s2) == (429, 200)
    assert t2 - t1 >= 0.95  # waited the server's Retry-After, not the 1 ms backoff


def test_retry_after_headers():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 0 <= retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) <= 0
    assert retry_after_seconds({}) is None


def test_refusal_is_recorded_not_retried(server):
    server.state.add_faults("k1/r0", "refusal")
    answer = ask(server)
    assert answer.status == "refused" and answer.labels == []
    assert "can't help" in answer.error
    assert server.state.chat_counts["k1/r0"] == 1


def test_short_retried_then_recorded_with_its_labels(server):
    server.state.add_faults("k1/r0", "short", "short", "short")
    answer = ask(server, content_attempts=3)
    assert answer.status == "short"
    assert answer.labels == expected()[:3]
    assert "3 distinct labels, asked for 6" in answer.error
    assert server.state.chat_counts["k1/r0"] == 3
    assert answer.usage["completion_tokens"] == 3 * 18  # usage of every attempt counted


@pytest.mark.parametrize("then", [["malformed", "malformed"], ["500"] * 3, ["refusal"], ["quota"]])
def test_a_short_answer_is_kept_when_later_attempts_fail(server, then):
    # the short list was paid for: malformed answers or a server that then gives up must not lose it
    server.state.add_faults("k1/r0", "short", *then)
    answer = ask(server, content_attempts=3, transport_attempts=3)
    assert answer.status == "short" and answer.labels == expected()[:3]


def test_malformed_every_time_is_recorded_invalid(server):
    server.state.add_faults("k1/r0", *["malformed"] * 5)
    answer = ask(server, content_attempts=2, response_format="json_schema")
    assert answer.status == "invalid" and answer.labels == []
    assert server.state.chat_counts["k1/r0"] == 2


def test_slow_answer_times_out_and_is_retried(server):
    server.state.slow_delay = 1.5
    server.state.add_faults("k1/r0", "slow")
    answer = ask(server, timeout=0.5)
    assert answer.status == "ok"
    assert server.state.chat_counts["k1/r0"] == 2


def test_a_host_that_drops_connections_gives_up_after_one_retry():
    """A listener whose backlog is full never accepts: the connect times out, which counts as a
    server never reached (2 attempts), not as a slow answer (all 8)."""
    import socket
    import time

    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(0)
        port = srv.getsockname()[1]
        fillers = []
        for _ in range(4):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(s)
        time.sleep(0.2)

        async def go():
            async with LLMClient(
                "m", base_url=f"http://127.0.0.1:{port}/v1", api_key=DUMMY_KEY, timeout=0.5, wait_base=0.01
            ) as c:
                with pytest.raises(ServerGaveUp, match=r"cannot connect \(APITimeoutError\) after 2 attempts"):
                    await c.ask([{"role": "user", "content": "x"}], 3)
                assert c.reached is False

        try:
            asyncio.run(go())
        finally:
            for s in fillers:
                s.close()


def test_server_errors_outlasting_retries_leave_the_request_undone(server):
    server.state.add_faults("k1/r0", *["500"] * 4)
    with pytest.raises(ServerGaveUp, match="HTTP 500: .*request ID req_.* after 3 attempts"):
        ask(server, transport_attempts=3)


@pytest.mark.parametrize("fault", ["html", "error200"])
def test_a_200_that_is_no_completion_is_retried_then_left_undone(server, fault):
    # a proxy's HTML page or an error body with status 200: never a traceback, never a recorded answer
    server.state.add_faults("k1/r0", fault)
    answer = ask(server)
    assert answer.status == "ok" and answer.labels == expected() and server.state.chat_counts["k1/r0"] == 2
    server.state.add_faults("k2/r0", *[fault] * 3)
    # the same page twice in a row is no busy server: the request stops there
    with pytest.raises(
        ServerGaveUp, match=r"no chat completion .*OpenAI-compatible endpoint \(ending in /v1\)\? after 2 attempts"
    ):
        ask(server, cid="k2/r0", transport_attempts=3)
    assert server.state.chat_counts["k2/r0"] == 2


def test_out_of_quota_stops_at_once_with_the_servers_words(server):
    server.state.add_faults("k1/r0", "quota")
    with pytest.raises(
        ResourceError, match=r"out of quota \(HTTP 429 insufficient_quota\): .*exceeded your current quota"
    ):
        ask(server)
    assert server.state.chat_counts["k1/r0"] == 1  # not retried: waiting does not bring credit back


@pytest.mark.parametrize("spoilt", [DUMMY_KEY + "\r", DUMMY_KEY + "\n", " " + DUMMY_KEY + " "])
def test_whitespace_around_the_key_is_dropped(server, spoilt):
    async def go():
        async with LLMClient("gpt-test", base_url=server.url, api_key=spoilt, **FAST) as c:
            return await c.ask(MESSAGES, 6)

    assert asyncio.run(go()).status == "ok"
    for bad in ("sk-a\x00b", "\u201csk-ab\u201d"):  # a control character; smart quotes pasted with the key
        with pytest.raises(InputError, match="the API key in MY_KEY contains spaces, control or non-ASCII characters"):
            LLMClient("gpt-test", base_url=server.url, api_key=bad, key_name="MY_KEY")


def test_url_credentials_are_masked_in_errors(server):
    client = LLMClient("m", base_url="http://me:PASS-1@127.0.0.1:9/v1?api-key=QS-SECRET-0123456789", api_key=DUMMY_KEY)
    text = client.scrub(
        f"POST http://me:PASS-1@127.0.0.1:9/v1?api-key=QS-SECRET-0123456789/chat failed; key {DUMMY_KEY}"
    )
    assert "PASS-1" not in text and "QS-SECRET" not in text and DUMMY_KEY not in text
    assert text == "POST http://***@127.0.0.1:9/v1?*** failed; key ***"
    short = LLMClient("m", base_url="http://u:1@127.0.0.1:9/v1", api_key=DUMMY_KEY)  # a short password
    assert short.scrub("HTTP 500 at 127.0.0.1:9 after 10 attempts") == "HTTP 500 at 127.0.0.1:9 after 10 attempts"
    # echoed outside a URL (long enough to be a secret), and a password with an @ in it
    assert client.scrub("invalid api-key=QS-SECRET-0123456789") == "invalid api-key=***"
    tokened = LLMClient(
        "m", base_url="https://TOKEN-12345-abcdefgh@127.0.0.1:9/v1?k=abc%2Bdefgh123-45678", api_key=DUMMY_KEY
    )
    assert (
        tokened.scrub("user TOKEN-12345-abcdefgh, key abc%2Bdefgh123-45678 and abc+defgh123-45678")
        == "user ***, key *** and ***"
    )
    # a short query value is masked inside URLs only: elsewhere it is no secret worth garbling text for
    shortq = LLMClient("m", base_url="http://127.0.0.1:9/v1?key=abc", api_key=DUMMY_KEY)
    assert shortq.scrub("GET http://127.0.0.1:9/v1?key=abc: a cabbage") == "GET http://127.0.0.1:9/v1?*** a cabbage"
    assert "ss@" not in client.scrub("GET http://u:p@ss@host/v1 failed") and "host/v1" in client.scrub(
        "GET http://u:p@ss@host/v1"
    )


def test_auth_error_is_one_line_without_the_key(server):
    async def go():
        async with LLMClient(
            "gpt-test", base_url=server.url.replace("/v1", "/nowhere"), api_key=DUMMY_KEY, **FAST
        ) as c:
            return await c.ask(MESSAGES, 6)

    with pytest.raises(ResourceError, match="not found") as e:
        asyncio.run(go())
    assert DUMMY_KEY not in str(e.value) and str(e.value).endswith("base URLs usually end in /v1")


def test_no_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ResourceError, match="OPENAI_API_KEY"):
        LLMClient("gpt-test", base_url="http://127.0.0.1:9/v1")


def test_key_from_environment_and_never_logged(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    endpoint.state.add_faults("k1/r0", "429", "500", "malformed")
    endpoint.state.retry_after = "0"

    async def go():
        client = LLMClient("gpt-test", **FAST)  # base URL and key from the environment
        async with client:
            assert DUMMY_KEY not in repr(client)
            return await client.ask(MESSAGES, 6, trace_id="r:k1/r0")

    assert asyncio.run(go()).status == "ok"
    assert endpoint.state.auth_headers == {f"Bearer {DUMMY_KEY}"}
    assert caplog.records, "expected debug logs from the SDK"
    assert DUMMY_KEY not in caplog.text


def test_concurrency_limit_is_respected(server):
    active = {"now": 0, "max": 0}
    import threading

    lock = threading.Lock()
    orig = server.state.fault

    def counting(cid):
        with lock:
            active["now"] += 1
            active["max"] = max(active["max"], active["now"])
        import time

        time.sleep(0.2)
        with lock:
            active["now"] -= 1
        return orig(cid)

    server.state.fault = counting

    async def go():
        async with LLMClient("gpt-test", base_url=server.url, api_key=DUMMY_KEY, concurrency=3, **FAST) as client:
            return await asyncio.gather(*[client.ask(MESSAGES, 6, trace_id=f"r:k{i}/r0") for i in range(12)])

    answers = asyncio.run(go())
    assert all(a.status == "ok" for a in answers)
    assert active["max"] == 3


def test_endpoint_written_to_files_has_no_credentials(server, tmp_path, synonym_filter):
    from negvocab import build_gpt_vocabulary
    from negvocab.llm.client import public_url

    assert public_url("http://me:SECRET@127.0.0.1:8000/v1?api-key=SECRET2#x") == "http://127.0.0.1:8000/v1"
    assert public_url(None) == "https://api.openai.com/v1"
    url = server.url.replace("http://", "http://me:SECRET-IN-URL@")
    vocab = build_gpt_vocabulary(
        "gpt-test", per_class=4, rounds=1, classes=2, run_dir=tmp_path / "r", base_url=url, api_key=DUMMY_KEY,
        synonym_filter=synonym_filter, client_options=FAST,
    )  # fmt: skip
    vocab.save(tmp_path / "v.json")
    import json

    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["endpoint"] == server.url
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert b"SECRET-IN-URL" not in f.read_bytes() and DUMMY_KEY.encode() not in f.read_bytes(), f


def test_an_interrupted_client_sends_no_retry(server):
    # drain() during a Retry-After pause: the waiting retry is never sent (it would be paid for
    # after the user pressed Ctrl-C); a request not yet started is not sent either
    from negvocab.llm.client import NotSent

    server.state.retry_after = "1"
    server.state.add_faults("k1/r0", "429")

    async def go():
        async with LLMClient("gpt-test", base_url=server.url, api_key=DUMMY_KEY, concurrency=1, **FAST) as client:
            first = asyncio.ensure_future(client.ask(MESSAGES, 6, trace_id="run:k1/r0"))
            second = asyncio.ensure_future(client.ask(MESSAGES, 6, trace_id="run:k2/r0"))
            while not server.state.chat_log:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # the 429 came back; the retry waits out Retry-After
            client.drain()
            return await asyncio.gather(first, second, return_exceptions=True)

    first, second = asyncio.run(go())
    assert isinstance(first, NotSent) and isinstance(second, NotSent)
    assert dict(server.state.chat_counts) == {"k1/r0": 1}


def test_retries_of_unusable_answers_are_bounded_per_run(server, caplog):
    for k in ("k2", "k3", "k4"):
        server.state.add_faults(f"{k}/r0", *["malformed"] * 3)

    async def go():
        async with LLMClient(
            "gpt-test",
            base_url=server.url,
            api_key=DUMMY_KEY,
            response_format="json_schema",
            content_retry_budget=2,
            **FAST,
        ) as c:
            first = await c.ask(MESSAGES, 6, trace_id="run:k1/r0")
            rest = [await c.ask(MESSAGES, 6, trace_id=f"run:{k}/r0") for k in ("k2", "k3", "k4")]
            return first, rest

    with caplog.at_level(logging.WARNING):
        first, rest = asyncio.run(go())
    assert first.status == "ok" and [a.status for a in rest] == ["invalid"] * 3
    assert sum(server.state.chat_counts.values()) == 1 + 3 + 2  # two retries in the run, not two per request
    assert sum("the most it retries" in r.message for r in caplog.records) == 1


def test_a_server_ignoring_an_explicit_json_schema_stops_early_naming_text_mode(server):
    from negvocab.llm.client import FailFast

    server.state.kind = "free"

    async def go():
        async with LLMClient(
            "gpt-test", base_url=server.url, api_key=DUMMY_KEY, response_format="json_schema", **FAST
        ) as c:
            await asyncio.gather(*(c.ask(MESSAGES, 6, trace_id=f"run:k{i}/r0") for i in range(30)))

    with pytest.raises(
        FailFast, match=r"first 5 answers of this run were unusable .*likely fix: --response-format text"
    ) as e:
        asyncio.run(go())
    assert sum(server.state.chat_counts.values()) <= 6 and "\n" not in str(e.value)


def test_the_fail_fast_line_masks_secrets_and_is_cut_short(server):
    from negvocab.llm.client import FailFast

    server.state.kind = "garbage"
    server.state.garbage_text = f"upstream said: key {DUMMY_KEY} is not allowed here " + "and so on " * 100

    async def go():
        async with LLMClient("gpt-test", base_url=server.url, api_key=DUMMY_KEY, **FAST) as c:
            await asyncio.gather(*(c.ask(MESSAGES, 6, trace_id=f"run:k{i}/r0") for i in range(10)))

    with pytest.raises(FailFast) as e:
        asyncio.run(go())
    msg = str(e.value)
    assert "upstream said: key *** is not allowed" in msg and DUMMY_KEY not in msg and DUMMY_KEY[8:20] not in msg
    assert len(msg) < 600 and "\n" not in msg and "..." in msg
