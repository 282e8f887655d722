"""Batch API mode against the fake server: partial failures, resubmission, resume, no double spend."""

from __future__ import annotations

import json

import pytest

from negvocab import build_gpt_vocabulary, imagenet1k
from negvocab.builders.llm import gpt_run
from negvocab.llm.journal import JOURNAL, Journal
from tests.llm.conftest import FAST, assert_no_key
from tests.llm.fake_openai import expected_merge


def build(run_dir, synonym_filter, classes=6, **kw):
    return build_gpt_vocabulary(
        "gpt-test",
        per_class=6,
        rounds=2,
        classes=classes,
        run_dir=run_dir,
        batch=True,
        poll_interval=0.01,
        synonym_filter=synonym_filter,
        client_options=FAST,
        **kw,
    )


def journal_lines(run_dir):
    return [json.loads(s) for s in (run_dir / JOURNAL).read_text().splitlines()]


def submit_then_crash(run, requests):
    """Upload and create a batch for ``requests``, then stop, as a process killed while polling."""
    import asyncio

    from negvocab.llm.batch import _submit
    from negvocab.llm.client import LLMClient

    async def go():
        async with LLMClient("gpt-test", **FAST) as client:
            with Journal(run.run_dir, run.identity) as j:
                await _submit(client, j, requests, 1)

    asyncio.run(go())


def test_batch_partial_failures_resubmit_only_failed_lines(endpoint, tmp_path, synonym_filter):
    w = imagenet1k().wnids
    failed = {f"{w[0]}/r0": "error", f"{w[1]}/r1": "500", f"{w[2]}/r0": "malformed", f"{w[3]}/r1": "short"}
    for cid, kind in failed.items():
        endpoint.state.add_faults(cid, kind)
    vocab = build(tmp_path / "run", synonym_filter)
    inputs = endpoint.state.batch_inputs
    assert len(inputs) == 2 and len(inputs[0]) == 12
    assert sorted(inputs[1]) == sorted(failed)  # only the failed lines went again
    assert endpoint.state.batch_counts == {cid: 2 if cid in failed else 1 for cid in inputs[0]}
    assert sum(endpoint.state.chat_counts.values()) == 0  # nothing through the synchronous API
    # same vocabulary as the independent merge of the server's answers
    wnids = list(w[:6])
    per = expected_merge(wnids, 2, 6)
    assert vocab.labels == list(dict.fromkeys(lab for x in wnids for lab in per[x]))
    assert vocab.settings["failures"] == {}
    lines = journal_lines(tmp_path / "run")
    kinds = [r["kind"] for r in lines]
    assert kinds.count("batch") == 2 and kinds.count("batch_done") == 2 and kinds.count("attempt_failed") == 4
    assert all(r["mode"] == "batch" and r["batch_id"].startswith("batch_") for r in lines if r["kind"] == "result")
    assert vocab.settings["session"]["batch"] is True
    assert_no_key(tmp_path)


def test_batch_failures_after_max_submissions_are_recorded(endpoint, tmp_path, synonym_filter):
    w = imagenet1k().wnids
    endpoint.state.add_faults(f"{w[0]}/r0", "malformed", "malformed")
    endpoint.state.add_faults(f"{w[1]}/r0", "refusal")
    vocab = build(tmp_path / "run", synonym_filter, classes=2, max_submissions=2)
    assert vocab.settings["failures"] == {"invalid": [f"{w[0]}/r0"], "refused": [f"{w[1]}/r0"]}
    assert endpoint.state.batch_counts[f"{w[0]}/r0"] == 2 and endpoint.state.batch_counts[f"{w[1]}/r0"] == 1


def test_batch_line_failing_every_time_is_left_for_a_rerun(endpoint, tmp_path, synonym_filter):
    from negvocab.core.errors import ResourceError

    w = imagenet1k().wnids
    endpoint.state.add_faults(f"{w[0]}/r1", "error", "error")
    with pytest.raises(ResourceError, match="1 of 4 requests could not be completed"):
        build(tmp_path / "run", synonym_filter, classes=2, max_submissions=2)
    vocab = build(tmp_path / "run", synonym_filter, classes=2, max_submissions=3)  # a rerun, one more try
    assert endpoint.state.batch_inputs[-1] == [f"{w[0]}/r1"]
    assert f"{w[0]} sibling 5" in vocab


def test_resume_polls_the_journaled_batch_instead_of_creating_one(endpoint, tmp_path, synonym_filter):
    run = gpt_run("gpt-test", per_class=6, rounds=2, classes=3, run_dir=tmp_path / "run")

    submit_then_crash(run, run.requests)  # the process "dies" after the batch id is journaled
    assert len(endpoint.state.batch_inputs) == 1
    vocab = build(tmp_path / "run", synonym_filter, classes=3)
    assert len(endpoint.state.batch_inputs) == 1  # polled, not created again
    assert len(vocab.views) == 3 and set(endpoint.state.batch_counts.values()) == {1}


def test_a_sync_rerun_does_not_pay_again_for_an_uncollected_batch(endpoint, tmp_path, synonym_filter):
    from negvocab.core.errors import ResourceError

    run = gpt_run("gpt-test", per_class=6, rounds=2, classes=3, run_dir=tmp_path / "run")

    submit_then_crash(run, run.requests)
    assert "6 of them are in an uncollected batch: re-run with --batch" in run.estimate().summary()
    kw = {
        "per_class": 6,
        "rounds": 2,
        "classes": 3,
        "run_dir": tmp_path / "run",
        "synonym_filter": synonym_filter,
        "client_options": FAST,
    }
    with pytest.raises(
        ResourceError, match=r"batch \S+ holds 6 of the requests and was never collected; re-run with batch=True"
    ):
        build_gpt_vocabulary("gpt-test", **kw)
    assert sum(endpoint.state.chat_counts.values()) == 0  # nothing sent synchronously
    vocab = build(tmp_path / "run", synonym_filter, classes=3)  # --batch collects it
    assert len(vocab.views) == 3 and set(endpoint.state.batch_counts.values()) == {1}
    assert run.estimate().held_by_batch == 0


def test_crash_between_upload_and_batch_id_finds_the_batch(endpoint, tmp_path, synonym_filter):
    run = gpt_run("gpt-test", per_class=6, rounds=2, classes=3, run_dir=tmp_path / "run")
    build(tmp_path / "run", synonym_filter, classes=3)
    # forget the batch line (a crash right after batches.create) and every result
    lines = journal_lines(tmp_path / "run")
    keep = [r for r in lines if r["kind"] == "batch_input"]
    (tmp_path / "run" / JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in keep))
    vocab = build(tmp_path / "run", synonym_filter, classes=3)
    assert len(endpoint.state.batch_inputs) == 1  # found by its input file, not paid for twice
    assert len(vocab.views) == 3
    assert any(r["kind"] == "batch" for r in journal_lines(run.run_dir))


def test_orphan_lookup_follows_the_batch_list_pages(endpoint, tmp_path, synonym_filter):
    import asyncio

    from negvocab.llm.batch import _find_batch_for_file
    from negvocab.llm.client import LLMClient

    build(tmp_path / "a", synonym_filter, classes=1)  # the oldest batch, from another run
    build(tmp_path / "b", synonym_filter, classes=2)
    build(tmp_path / "c", synonym_filter, classes=3)
    first = journal_lines(tmp_path / "a")
    file_id = next(r["input_file_id"] for r in first if r["kind"] == "batch")
    batch_id = next(r["batch_id"] for r in first if r["kind"] == "batch")
    endpoint.state.list_page_cap = 1  # one batch per page: the oldest is on the third page

    async def find(fid):
        async with LLMClient("gpt-test", **FAST) as client:
            return await _find_batch_for_file(client, fid)

    assert asyncio.run(find(file_id)) == batch_id
    assert asyncio.run(find("file-unknown")) is None


def test_sync_and_batch_results_mix_in_one_run(endpoint, tmp_path, synonym_filter):
    build_gpt_vocabulary(
        "gpt-test",
        per_class=6,
        rounds=2,
        classes=3,
        rounds_used=1,
        run_dir=tmp_path / "run",
        synonym_filter=synonym_filter,
        client_options=FAST,
    )
    vocab = build(tmp_path / "run", synonym_filter, classes=3, prices={"gpt-test": (1.0, 2.0)})
    assert len(endpoint.state.chat_counts) == 3 and len(endpoint.state.batch_inputs[0]) == 3
    assert all(cid.endswith("/r1") for cid in endpoint.state.batch_inputs[0])
    # each answer: 56 prompt + 36 completion tokens; batch tokens cost half
    per_mode = 3 * (56 * 1.0 + 36 * 2.0) / 1e6
    assert vocab.settings["cost_usd"] == pytest.approx(per_mode + per_mode / 2)
    assert vocab.settings["session"]["cost_usd"] == pytest.approx(per_mode / 2)


def test_failed_sync_attempts_do_not_count_against_batch_submissions(endpoint, tmp_path, synonym_filter):
    from negvocab.core.errors import ResourceError

    wnid = imagenet1k().wnids[0]
    endpoint.state.add_faults(f"{wnid}/r0", "malformed", *["500"] * 8)  # billed, then given up: journaled usage
    kw = {"per_class": 6, "rounds": 1, "classes": 1, "run_dir": tmp_path / "run", "synonym_filter": synonym_filter}
    with pytest.raises(ResourceError):
        build_gpt_vocabulary("gpt-test", client_options={**FAST, "transport_attempts": 2, "deferrals": 0}, **kw)
    assert [r["kind"] for r in journal_lines(tmp_path / "run")].count("attempt_failed") == 1
    endpoint.state.faults.clear()
    vocab = build_gpt_vocabulary(
        "gpt-test", batch=True, poll_interval=0.01, max_submissions=1, client_options=FAST, **kw
    )
    assert vocab.views[wnid]  # submitted once in a batch, not counted as already failed


def test_an_uncollected_batch_blocks_only_the_questions_it_holds(endpoint, tmp_path, synonym_filter):
    # EOE far chunks: another class list asks chunk001 differently; a batch holding that question
    # blocks a sync run of the same list, not a run of the first list (whose chunk001 is answered)

    from negvocab import build_eoe_vocabulary
    from negvocab.builders.llm import eoe_run
    from negvocab.core.errors import ResourceError

    first, other = 4, ["n01440764", "n01443537", "n01484850", "n01494475"]
    kw = {"mode": "far", "chunk_size": 2, "per_request": 5, "run_dir": tmp_path / "run"}
    build_eoe_vocabulary("gpt-test", classes=first, synonym_filter=synonym_filter, client_options=FAST, **kw)
    run = eoe_run("gpt-test", classes=other, **kw)

    submit_then_crash(run, [q for q in run.requests if q.custom_id == "chunk001/r0"])
    assert run.estimate().held_by_batch == 1
    with pytest.raises(ResourceError, match="holds 1 of the requests"):
        build_eoe_vocabulary("gpt-test", classes=other, synonym_filter=synonym_filter, client_options=FAST, **kw)
    # the first list with a second round: its requests are not the batch's, so they go out
    again = build_eoe_vocabulary(
        "gpt-test", classes=first, rounds=2, synonym_filter=synonym_filter, client_options=FAST, **kw
    )
    assert again.settings["session"]["sent"] == 2


def test_a_blip_of_five_failed_polls_does_not_end_a_batch_wait(endpoint, tmp_path, synonym_filter):
    """Chat requests get 3 attempts (the openai SDK's default); a batch is polled for hours, so its calls get
    at least BATCH_CALL_ATTEMPTS: five 500s in a row while polling are waited out."""
    from negvocab.llm.batch import BATCH_CALL_ATTEMPTS
    from negvocab.llm.client import TRANSPORT_ATTEMPTS

    assert BATCH_CALL_ATTEMPTS > 5 > TRANSPORT_ATTEMPTS
    endpoint.state.poll_failures = 5
    vocab = build(tmp_path / "run", synonym_filter, classes=2)
    assert endpoint.state.poll_failures == 0 and len(vocab.views) == 2
