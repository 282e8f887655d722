"""Secrets are masked where they can leak (URLs, exception text), by structure; short "keys" that are
no secret (``OPENAI_API_KEY=x`` for a local server) never garble model output, labels or messages."""

from __future__ import annotations

import json

import pytest

from negvocab import build_gpt_vocabulary
from negvocab.core.errors import ResourceError
from negvocab.core.redact import MIN_SECRET_LENGTH, mask_secrets, mask_url_path, redact_urls, url_secrets
from negvocab.llm.client import LLMClient
from negvocab.llm.endpoint import public_url
from tests.llm.conftest import *  # noqa: F403  (the fake server and the synonym filter)
from tests.llm.conftest import FAST

REAL_KEY = "sk-proj-7fQ2xR9tLm4WzA1bC8dE3gH6"  # the shape of an OpenAI project key
#: labels a model may answer that hold the short "keys" as substrings
WORDS = ["Hot Box", "Wet Box", "Tax Form", "Ask Tray", "Theater Seat", "Sky Lantern", "Axe Head"]


@pytest.mark.parametrize("key", ["x", "a", "sk", "the", REAL_KEY])
def test_a_key_never_rewrites_labels_and_short_ones_mask_nothing(server, tmp_path, synonym_filter, key):
    server.state.extra_labels = WORDS
    vocab = build_gpt_vocabulary(
        "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, base_url=server.url,
        api_key=key, concurrency=2, per_class=6, rounds=1, classes=2,
    )  # fmt: skip
    for word in WORDS:
        assert word.lower() in vocab.labels  # "hot box", never "hot bo***"
    journal = (tmp_path / "run" / "journal.jsonl").read_text()
    raws = [x for line in journal.splitlines() for x in json.loads(line).get("raw_labels") or []]
    assert set(WORDS) <= set(raws) and "***" not in journal
    client = LLMClient("m", base_url=server.url, api_key=key)
    text = f"test expected; the server echoed {key}"
    if len(key) >= MIN_SECRET_LENGTH:
        assert client.scrub(text) == "test expected; the server echoed ***"
    else:
        assert client.scrub(text) == text  # "te***t", "e***pected" no more


def test_a_key_in_the_path_stays_out_of_the_manifest_and_the_error_line(server, tmp_path, synonym_filter):
    base = server.url.replace("/v1", f"/gw/key/{REAL_KEY}/v1")
    assert public_url(base).endswith("/gw/key/***/v1")
    vocab = build_gpt_vocabulary(
        "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, base_url=base,
        api_key="x", concurrency=2, per_class=6, rounds=1, classes=2,
    )  # fmt: skip
    assert server.state.paths[0] == f"/gw/key/{REAL_KEY}/v1/chat/completions"  # it was sent where the gateway wants it
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert REAL_KEY not in manifest and "/gw/key/***/v1" in manifest
    assert REAL_KEY not in json.dumps(vocab.settings)
    server.state.api_key = "the-right-one"  # now a 401, whose line names the endpoint
    with pytest.raises(ResourceError) as err:
        build_gpt_vocabulary(
            "gpt-test", run_dir=tmp_path / "run2", synonym_filter=synonym_filter, client_options=FAST, base_url=base,
            api_key="x", concurrency=2, per_class=6, rounds=1, classes=2,
        )  # fmt: skip
    assert "authentication failed (HTTP 401)" in str(err.value) and REAL_KEY not in str(err.value)


def test_masking_by_structure():
    assert (
        redact_urls("GET http://u:p@h:1/gw/api-key/abc/v1/chat?key=k failed")
        == "GET http://***@h:1/gw/api-key/***/v1/chat?*** failed"
    )
    assert mask_url_path("/v1/keyboards/x") == "/v1/keyboards/x"  # a segment that only starts like "key"
    assert url_secrets(f"http://h/key/{REAL_KEY}/v1") == [REAL_KEY]
    assert url_secrets("http://h/key/short/v1") == []  # too short to mask in free text; masked in URLs
    assert mask_secrets(f"boxes, {REAL_KEY}!", ["x", REAL_KEY]) == "boxes, ***!"


def test_a_server_s_echo_of_the_basic_credentials_is_masked():
    """Issue 34: with user:pass@ in the base URL, a 401 that echoed the base64 user:pass was shown as is."""
    import base64

    client = LLMClient("m", base_url="http://user:pass@127.0.0.1:9/v1", api_key="x")
    b64 = base64.b64encode(b"user:pass").decode()
    for echo in (
        f"401 Unauthorized: bad credentials {b64}",
        f"401: Authorization: Basic {b64}",
        f"401: got {base64.b64encode(b'user:pass').decode().rstrip('=')} for realm api",
    ):
        line = client.scrub(echo)
        assert b64.rstrip("=") not in line and "***" in line, line
    assert client.scrub("a box of 12 basic labels") == "a box of 12 basic labels"  # free text untouched
