"""A key in the base URL (a query parameter, as Google's gateways take it, or a ``/key/<KEY>/v1`` path
segment) reaches the server where it wants it and nothing that negvocab writes or logs.

The fake gateway requires ``?key=K`` on every chat request and answers a missing or wrong key as
Google's APIs do (403 ``PERMISSION_DENIED``, 400 ``API key not valid``)."""

from __future__ import annotations

import os
import subprocess
import sys

import openai
import pytest

from negvocab import build_gpt_vocabulary
from negvocab.core.errors import ResourceError
from tests.llm.conftest import FAST
from tests.llm.fake_openai import FakeOpenAI

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]
#: shaped like a Google API key (39 characters, "AIza" then base64url)
QKEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
PKEY = "gw-5f0c9d2b7e3a41c8a6d1e9b2f4c7a0d3"


def _cli(args, url, key="x", **env):
    env = {**os.environ, "OPENAI_API_KEY": key, "OPENAI_BASE_URL": url, **env}
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def _everything(tmp_path, *texts) -> str:
    """All that a run wrote (run dir, output, log file) and printed, as one string."""
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    return "\n".join([*(p.read_text(errors="replace") for p in files), *texts])


def test_the_openai_sdk_mangles_a_base_url_with_a_query():
    """What negvocab works around: the SDK appends the path to the base URL as a string, after its query,
    so the request goes to ``/v1/?key=K`` + ``chat/completions`` and the gateway answers 404."""
    with FakeOpenAI() as srv:
        srv.state.query_key = QKEY
        sdk = openai.OpenAI(api_key="x", base_url=f"{srv.url}?key={QKEY}", max_retries=0)
        with pytest.raises(openai.NotFoundError, match=r"no route POST /v1/\?key=\S+chat/completions"):
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert srv.state.queries == []  # never reached the chat route
        sdk.close()


def test_keys_in_the_query_and_the_path_reach_the_gateway_and_nothing_written_or_logged(tmp_path):
    """One CLI run (a CLI start costs seconds) with both: ``.../gw/key/<PKEY>/v1?key=<QKEY>``, at ``-vv``
    with a log file, so the SDK's and httpx's request lines are logged too."""
    out, log = tmp_path / "gpt.json", tmp_path / "build.log"
    args = ["build", "gpt", "-m", "gpt-test", "-n", "6", "--rounds", "1", "--classes", "4",
            "--run-dir", str(tmp_path / "run"),
            "-o", str(out), "-vv", "--log-file", str(log)]  # fmt: skip
    with FakeOpenAI() as srv:
        srv.state.query_key = QKEY
        res = _cli(args, srv.url.replace("/v1", f"/gw/key/{PKEY}/v1") + f"?key={QKEY}")
        assert res.returncode == 0, res.stderr
        assert srv.state.queries and set(srv.state.queries) == {f"key={QKEY}"}
        assert set(srv.state.paths) == {f"/gw/key/{PKEY}/v1/chat/completions"}
    logged = log.read_text()
    assert "HTTP Request: POST" in logged and "/gw/key/***/v1" in logged  # request URLs are logged at -vv: masked there
    seen = _everything(tmp_path, res.stdout, res.stderr)
    for key in (QKEY, PKEY):
        assert key not in seen and key[8:24] not in seen
    assert "gpt-test" in out.read_text()


@pytest.mark.parametrize(
    "given, status, said",
    [(None, 403, "unregistered callers"), ("AIzaSyWRONG-0123456789abcdefghijklmno", 400, "API key not valid")],
)
def test_a_missing_or_wrong_key_in_the_query_is_an_authentication_error_naming_the_query(
    tmp_path, synonym_filter, given, status, said
):
    with FakeOpenAI() as srv:
        srv.state.query_key = QKEY
        with pytest.raises(ResourceError) as err:
            build_gpt_vocabulary(
                "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, api_key="x",
                base_url=srv.url if given is None else f"{srv.url}?key={given}", concurrency=8, per_class=6, rounds=1,
                classes=20,
            )  # fmt: skip
        sent = len(srv.state.queries)
    line = str(err.value)
    assert f"authentication failed (HTTP {status})" in line and said in line and "\n" not in line
    assert "not found" not in line  # the old misdiagnosis
    if given is not None:
        assert "the base URL's query (key) went with every request" in line
        assert given not in _everything(tmp_path, line)
    assert 1 <= sent <= 2  # a permanent error: no retries, nothing sent after it but the probe already in flight


def test_a_short_key_in_the_query_never_rewrites_labels(tmp_path, synonym_filter):
    """A gateway key "bo" is no secret worth garbling text for: "hot box" and "bonobo" stay as they are
    (the URL in files still drops the query)."""
    with FakeOpenAI() as srv:
        srv.state.query_key = "bo"
        srv.state.extra_labels = ["Hot Box", "Bonobo"]
        vocab = build_gpt_vocabulary(
            "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, api_key="x",
            base_url=f"{srv.url}?key=bo", concurrency=2, per_class=6, rounds=1, classes=2,
        )  # fmt: skip
    assert {"hot box", "bonobo"} <= set(vocab.labels)
    journal = (tmp_path / "run" / "journal.jsonl").read_text()
    assert "Hot Box" in journal and "***" not in journal
    assert vocab.settings["endpoints"] == [srv.url]
