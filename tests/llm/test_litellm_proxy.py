"""negvocab against a real LiteLLM proxy in front of the fake llama.cpp server (tests.llm.fake_openai).

Runs only where ``NEGVOCAB_LITELLM`` names a ``litellm`` executable (``pip install 'litellm[proxy]'``
into a virtual environment of its own); skipped otherwise. The proxy starts once for the module
(about a minute on a busy 2-core machine) with a master key and no database, one model group per
fake upstream: ``llamacpp`` (500 on ``json_schema``), ``small`` (a 256-token context), ``broadcast``
(llama.cpp's 500 ``could not broadcast``) and ``plain``. Each test counts the requests the upstream
received: LiteLLM retries an upstream 500 twice itself, so its upstream sees up to 3 a request."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from negvocab import build_gpt_vocabulary
from negvocab.core.errors import ResourceError
from negvocab.llm.client import SETUP_BUDGET
from tests.llm.conftest import FAST
from tests.llm.fake_openai import FakeOpenAI

LITELLM = os.environ.get("NEGVOCAB_LITELLM", "")
pytestmark = pytest.mark.skipif(
    not (LITELLM and Path(LITELLM).is_file() and os.access(LITELLM, os.X_OK)),
    reason=(
        "NEGVOCAB_LITELLM does not name a litellm executable "
        "(python3 -m venv V && V/bin/pip install 'litellm[proxy]'; "
        "NEGVOCAB_LITELLM=V/bin/litellm)"
    ),
)
MASTER = "sk-master-0123456789abcdef"
KINDS = {
    "llamacpp": "llamacpp",
    "small": "llamacpp_small_ctx",
    "broadcast": "llamacpp_broadcast",
    "plain": "structured",
}
#: LiteLLM's own attempts at an upstream 500 (its openai client's default: 1 + 2 retries)
PROXY_ATTEMPTS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """(the proxy's /v1 URL, {model group: its fake upstream}); the proxy's log in the tmp dir."""
    tmp = tmp_path_factory.mktemp("litellm")
    fakes = {name: FakeOpenAI().__enter__() for name in KINDS}
    for name, fake in fakes.items():
        fake.state.kind = KINDS[name]
    bases = {**{n: f.url for n, f in fakes.items()}, "down": f"http://127.0.0.1:{_free_port()}/v1"}  # nobody there
    config = "model_list:\n" + "".join(
        f"  - model_name: {n}\n    litellm_params:\n      model: openai/{n}\n"
        f"      api_base: {base}\n      api_key: x\n" for n, base in bases.items()
    ) + f"general_settings:\n  master_key: {MASTER}\n"  # fmt: skip
    (tmp / "config.yaml").write_text(config)
    port = _free_port()
    log = (tmp / "proxy.log").open("w")
    proc = subprocess.Popen(
        [LITELLM, "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1", "--port", str(port)], stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "LITELLM_TELEMETRY": "False"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveliness", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the LiteLLM proxy did not start; see {tmp / 'proxy.log'}")
                time.sleep(1)
        yield f"http://127.0.0.1:{port}/v1", fakes
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        for fake in fakes.values():
            fake.__exit__(None, None, None)


def _build(proxy_url, tmp_path, synonym_filter, model, key=MASTER, classes=8):
    return build_gpt_vocabulary(
        model, run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, base_url=proxy_url,
        api_key=key,
        concurrency=8, per_class=6, rounds=1, classes=classes,
    )  # fmt: skip


def _upstream(fake) -> int:
    return sum(fake.state.chat_counts.values())


def test_auto_settles_on_json_object_behind_litellm(proxy, tmp_path, synonym_filter):
    url, fakes = proxy
    before, schema_before = _upstream(fakes["llamacpp"]), fakes["llamacpp"].state.formats.count("json_schema")
    vocab = _build(url, tmp_path, synonym_filter, "llamacpp")
    assert vocab.settings["response_formats"] == {"json_object": 8}
    assert len(vocab.views) == 8 and all(vocab.views.values())
    schema_asks = fakes["llamacpp"].state.formats.count("json_schema") - schema_before
    assert 1 <= schema_asks <= 2 * PROXY_ATTEMPTS  # the probes in flight, each retried by the proxy; none by negvocab
    assert _upstream(fakes["llamacpp"]) - before == 8 + schema_asks


@pytest.mark.parametrize(
    "model, key, said",
    [
        ("gpt-9", MASTER, "does not serve model 'gpt-9'"),
        ("plain", "sk-not-the-master-key-0123", "authentication failed (HTTP 400)"),
        ("small", MASTER, "does not fit the model's context"),
        ("broadcast", MASTER, "does not fit the model's context"),
        ("down", MASTER, "the proxy answers but cannot reach the backend it forwards to"),  # its backend is down
    ],
)
def test_a_broken_setup_behind_litellm_stops_with_its_own_line(proxy, tmp_path, synonym_filter, model, key, said):
    url, fakes = proxy
    before = {n: _upstream(f) for n, f in fakes.items()}
    with pytest.raises(ResourceError) as err:
        _build(url, tmp_path, synonym_filter, model, key=key, classes=20)
    line = str(err.value)
    assert (
        said in line
        and "\n" not in line
        and "Error code:" not in line
        and "--response-format" not in line
        and "check that the server is up" not in line
    )
    assert key not in line
    if model == "plain":
        assert "LITELLM_MASTER_KEY" in line  # "No connected db.": only the master key works there
    upstream = sum(_upstream(f) - before[n] for n, f in fakes.items())
    assert upstream <= SETUP_BUDGET * PROXY_ATTEMPTS
