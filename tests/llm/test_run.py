"""A run that outlasts a flaky server: deferral with backoff, an adaptive concurrency, a stop only when the
server as a whole looks broken; every answer journaled once, and a resumed run equal to a clean one."""

from __future__ import annotations

import json
import logging

import pytest

from negvocab import build_eoe_vocabulary, build_gpt_vocabulary, imagenet1k
from negvocab.core.errors import ResourceError
from negvocab.llm.client import HEALTH_WINDOW
from negvocab.llm.journal import JOURNAL
from tests.llm.conftest import DUMMY_KEY
from tests.llm.fake_openai import FakeOpenAI, expected_merge

#: no backoff to speak of: the tests wait milliseconds, the defaults (1 s, 60 s) are for real servers
QUICK = {"wait_base": 0.001, "wait_max": 0.005}


def _gpt(url, run_dir, synonym_filter, classes, rounds=1, concurrency=16, **kw):
    return build_gpt_vocabulary(
        "gpt-test", per_class=6, rounds=rounds, classes=classes, run_dir=run_dir, base_url=url, api_key=DUMMY_KEY,
        synonym_filter=synonym_filter, concurrency=concurrency, client_options={**QUICK, **kw.pop("client", {})},
        **kw,
    )  # fmt: skip


def _results(run_dir) -> list[dict]:
    lines = [json.loads(x) for x in (run_dir / JOURNAL).read_text().splitlines()]
    return [r for r in lines if r.get("kind") == "result"]


def test_a_15_percent_flaky_server_completes_in_one_run_with_every_answer_used_once(tmp_path, synonym_filter):
    with FakeOpenAI() as srv:
        srv.state.flaky, srv.state.retry_after = 0.15, "0"  # 429 with Retry-After, 500, malformed JSON at random
        vocab = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=100, rounds=3)
        counts = dict(srv.state.chat_counts)
        failed = sum(1 for _, _, status in srv.state.chat_log if status != 200)
    wnids = list(imagenet1k().wnids[:100])
    assert vocab.views == expected_merge(wnids, 3, 6)  # independent recomputation of the merged answers
    results = _results(tmp_path / "run")
    assert len(results) == 300 and len({r["custom_id"] for r in results}) == 300  # each answer journaled once
    assert all(r["status"] == "ok" for r in results) and vocab.settings["failures"] == {}
    assert failed >= 20 and sum(counts.values()) >= 300 + failed  # the faults happened, and were retried
    assert vocab.settings["names"] == {"asked": 300 * 6, "got": 300 * 6}


def test_a_request_out_of_attempts_is_deferred_while_the_others_go_on(tmp_path, synonym_filter, caplog):
    wnids = imagenet1k().wnids
    with FakeOpenAI() as srv:
        srv.state.add_faults(f"{wnids[0]}/r0", *["500"] * 7)  # 3 attempts, deferred, 3 more, deferred, then ok
        with caplog.at_level(logging.INFO):
            vocab = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=10, concurrency=1)
        order = [cid for cid, _, status in srv.state.chat_log if status == 200]
    assert srv.state.chat_counts[f"{wnids[0]}/r0"] == 8 and vocab.settings["failures"] == {}
    assert order.index(f"{wnids[0]}/r0") > 0  # the others were answered while it waited
    assert sum("deferred, asked again" in r.getMessage() for r in caplog.records) == 2


def test_a_server_that_dies_mid_run_stops_after_the_health_window_and_resumes_to_the_clean_run(
    tmp_path, synonym_filter
):
    with FakeOpenAI() as srv:
        clean = _gpt(srv.url, tmp_path / "clean", synonym_filter, classes=30, rounds=2)
    with FakeOpenAI() as srv:
        for w in imagenet1k().wnids[:30]:
            srv.state.always_fault = None
            srv.state.add_faults(f"{w}/r1", *["500"] * 50)  # round 1 of every class: the server is down
        with pytest.raises(ResourceError, match=f"no answer among the last {HEALTH_WINDOW} attempts across requests"):
            _gpt(srv.url, tmp_path / "run", synonym_filter, classes=30, rounds=2, concurrency=1)
        asked_r1 = sum(n for cid, n in srv.state.chat_counts.items() if cid.endswith("/r1"))
        assert asked_r1 == HEALTH_WINDOW  # K attempts across requests, not 3 x 6 for each of the 30
        assert len(_results(tmp_path / "run")) == 30  # round 0 is journaled
        srv.state.faults.clear()
        resumed = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=30, rounds=2)
    assert resumed.labels == clean.labels and resumed.views == clean.views  # a resumed run equals a clean run
    assert resumed.settings["session"]["sent"] == 30


def test_a_full_context_steps_concurrency_down_and_the_run_completes(tmp_path, synonym_filter, caplog):
    """llama-server's slots share one context: more than ``slots`` at once overflows it (500 for every request
    in flight). The run halves its concurrency and completes, and says what to change."""
    with FakeOpenAI(latency=0.02) as srv:
        srv.state.kind, srv.state.slots = "llama_server", 4
        with caplog.at_level(logging.WARNING):
            vocab = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=60, concurrency=16)
        overflows = sum(1 for _, _, status in srv.state.chat_log if status == 500)
    assert vocab.settings["failures"] == {} and len(vocab.views) == 60
    assert vocab.settings["response_formats"] == {"json_schema": 60}  # upstream llama-server honours json_schema
    assert overflows >= 1
    text = caplog.text
    assert "the server's context is full" in text and "-c" in text and "--parallel" in text and "lower -j" in text
    assert "at most" in text and "at the lowest" in text


@pytest.mark.parametrize("mode", ["far"])
def test_eoe_against_llama_server_at_the_default_concurrency_completes(tmp_path, synonym_filter, mode):
    with FakeOpenAI(latency=0.02) as srv:
        srv.state.kind = "llama_server"
        vocab = build_eoe_vocabulary(
            "gpt-test", mode=mode, size=100, chunk_size=5, classes=100, run_dir=tmp_path / "run", base_url=srv.url,
            api_key=DUMMY_KEY, synonym_filter=synonym_filter, client_options=QUICK,
        )  # fmt: skip
    assert vocab.settings["failures"] == {} and len(vocab.settings["chunks"]) == 20


def test_a_tokens_per_minute_limit_converges_instead_of_hammering(tmp_path, synonym_filter):
    with FakeOpenAI() as srv:
        srv.state.tpm, srv.state.tpm_window = 8 * 86, 0.2  # about 8 answers per 0.2 s window
        vocab = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=60, concurrency=16)
        limited = sum(1 for _, _, status in srv.state.chat_log if status == 429)
    assert vocab.settings["failures"] == {} and len(vocab.views) == 60
    assert limited < 60  # Retry-After honoured and concurrency halved: not a 429 for every answer


def test_an_answer_with_no_list_in_any_attempt_is_asked_again_later_in_the_run(tmp_path, synonym_filter):
    wnids = imagenet1k().wnids
    with FakeOpenAI() as srv:
        srv.state.add_faults(f"{wnids[2]}/r0", *["malformed"] * 3)  # a flaky server's bad JSON three times running
        vocab = _gpt(srv.url, tmp_path / "run", synonym_filter, classes=5, response_format="json_schema")
        asked = srv.state.chat_counts[f"{wnids[2]}/r0"]
    assert vocab.settings["failures"] == {} and asked == 4  # 3 attempts, deferred, then answered
    results = _results(tmp_path / "run")
    assert len(results) == 5 and all(r["status"] == "ok" for r in results)
