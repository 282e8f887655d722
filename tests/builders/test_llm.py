"""GPT-sibling and EOE vocabularies end to end against the fake server (synchronous API)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import pytest

import negvocab
from negvocab import LLMSettings, Vocabulary, build_eoe_vocabulary, build_gpt_vocabulary, imagenet1k
from negvocab.builders import llm as builders_llm
from negvocab.builders.llm import gpt_run, select_classes, vocabulary_from_journal
from negvocab.core.errors import InputError, ResourceError
from negvocab.llm.journal import JOURNAL
from negvocab.llm.settings import FIELDS, resolve_settings
from tests.llm.conftest import *  # noqa: F403  (the fixtures of tests/llm/, where this file began)
from tests.llm.conftest import DUMMY_KEY, FAST, assert_no_key
from tests.llm.fake_openai import expected_merge, labels_for

# ImageNet-1k names / synonyms the server slips into every answer: the filter must remove them
ID_LABELS = ["Goldfish", "great white sharks", "Carassius auratus"]


def build(run_dir, synonym_filter, **kw):
    kw.setdefault("per_class", 6)
    kw.setdefault("rounds", 3)
    kw.setdefault("classes", 50)
    options = {**FAST, **kw.pop("client", {})}
    return build_gpt_vocabulary(
        "gpt-test", run_dir=run_dir, synonym_filter=synonym_filter, client_options=options, concurrency=8, **kw
    )


def test_full_small_run_merges_and_filters(endpoint, tmp_path, synonym_filter):
    endpoint.state.extra_labels = ID_LABELS
    vocab = build(tmp_path / "run", synonym_filter)
    wnids = list(imagenet1k().wnids[:50])
    # independent recomputation from the server's deterministic answers
    per_class = expected_merge(wnids, 3, 6, ID_LABELS)
    id_lower = {s.lower() for s in ID_LABELS}
    union = list(dict.fromkeys(lab for w in wnids for lab in per_class[w] if lab not in id_lower))
    assert vocab.labels == union
    assert vocab.source == "gpt"
    for w in wnids:
        assert vocab.views[w] == [lab for lab in per_class[w] if lab not in id_lower]
    assert set(vocab.settings["synonym_filter"]["removed"]) == id_lower
    assert vocab.settings["model"] == "gpt-test" and vocab.settings["served_models"] == ["gpt-test-fake"]
    assert vocab.settings["synonym_filter"]["removed_count"] == 3
    assert vocab.settings["unique_per_key"][wnids[0]] == len(per_class[wnids[0]]) == 15
    assert vocab.settings["kept_per_key_stats"] == {"min": 12, "mean": 12.0, "max": 12}
    # provenance: the classes and rounds that proposed each label
    w0 = wnids[0]
    assert vocab.meta[f"{w0} sibling 4"]["proposed_by"] == {w0: [0, 1]}
    assert vocab.meta[f"{w0} sibling 8"]["proposed_by"] == {w0: [1, 2]}
    common = vocab.meta["common thing 1"]["proposed_by"]
    assert list(common) == wnids and all(r == [0] for r in common.values())
    assert vocab.meta["common thing 1"]["prompt_sha256"] == vocab.settings["prompt_sha256"]
    assert vocab.meta["common thing 1"]["prompt_file"] == "prompts/gpt_siblings.txt"
    # one request per (class, round), no more
    assert len(endpoint.state.chat_counts) == 150 and set(endpoint.state.chat_counts.values()) == {1}
    assert vocab.settings["usage"]["prompt_tokens"] == 150 * 56
    assert vocab.settings["cost_usd"] is None  # no price for "gpt-test"
    # the saved file round-trips, and holds no key
    out = vocab.save(tmp_path / "gpt.json")
    assert Vocabulary.load(out) == vocab
    assert_no_key(tmp_path)


def test_synonym_filter_true_and_false_as_documented(endpoint, tmp_path, synonym_filter):
    """``synonym_filter=False`` keeps the ID names the server slips in (no filter, no filter record);
    ``True`` is the default filter: the same vocabulary as a SynonymFilter of ImageNet-1k."""
    endpoint.state.extra_labels = ID_LABELS
    filtered = build(tmp_path / "run", synonym_filter, classes=5, rounds=1)
    unfiltered = vocabulary_from_journal(tmp_path / "run", synonym_filter=False)
    default = vocabulary_from_journal(tmp_path / "run", synonym_filter=True)
    ids = {s.lower() for s in ID_LABELS}
    assert ids <= set(unfiltered.labels) and not ids & set(filtered.labels)
    assert [x for x in unfiltered.labels if x not in ids] == filtered.labels
    assert "synonym_filter" not in unfiltered.settings and unfiltered.settings["kept_per_key"] == {
        w: n for w, n in unfiltered.settings["unique_per_key"].items()
    }
    assert default.labels == filtered.labels and default.settings["synonym_filter"]["removed_count"] == 3


def test_rerun_sends_nothing_and_gives_the_same_vocabulary(endpoint, tmp_path, synonym_filter):
    first = build(tmp_path / "run", synonym_filter, classes=10)
    sent = sum(endpoint.state.chat_counts.values())
    again = build(tmp_path / "run", synonym_filter, classes=10)
    assert sum(endpoint.state.chat_counts.values()) == sent == 30
    assert again.labels == first.labels and again.views == first.views
    assert again.settings["session"]["sent"] == 0


def test_first_r_rounds_from_the_journal_without_new_requests(endpoint, tmp_path, synonym_filter):
    full = build(tmp_path / "run", synonym_filter, classes=8)
    sent = sum(endpoint.state.chat_counts.values())
    two = build(tmp_path / "run", synonym_filter, classes=8, rounds_used=2)
    assert sum(endpoint.state.chat_counts.values()) == sent
    wnids = list(imagenet1k().wnids[:8])
    per_class = expected_merge(wnids, 2, 6)
    assert two.labels == list(dict.fromkeys(lab for w in wnids for lab in per_class[w]))
    assert two.settings["rounds_used"] == 2 and len(two) < len(full)
    # the same from the run folder alone
    assert vocabulary_from_journal(tmp_path / "run", rounds_used=2, synonym_filter=synonym_filter).labels == two.labels
    with pytest.raises(InputError, match="between 1 and the run's 3 rounds"):
        vocabulary_from_journal(tmp_path / "run", rounds_used=4, synonym_filter=synonym_filter)


def test_fewer_rounds_first_sends_only_those(endpoint, tmp_path, synonym_filter):
    build(tmp_path / "run", synonym_filter, classes=4, rounds_used=1)
    assert {cid.split("/")[1] for cid in endpoint.state.chat_counts} == {"r0"}
    build(tmp_path / "run", synonym_filter, classes=4)
    assert len(endpoint.state.chat_counts) == 12 and set(endpoint.state.chat_counts.values()) == {1}


@pytest.mark.parametrize("change", [{"model": "gpt-other"}, {"per_class": 7}, {"temperature": 0.0}])
def test_changed_run_is_refused_in_the_same_folder(endpoint, tmp_path, synonym_filter, change):
    build(tmp_path / "run", synonym_filter, classes=2)
    kw = {"classes": 2, **change}
    model = kw.pop("model", "gpt-test")
    with pytest.raises(InputError, match="holds another run"):
        build_gpt_vocabulary(
            model,
            run_dir=tmp_path / "run",
            synonym_filter=synonym_filter,
            client_options=FAST,
            **{"per_class": 6, "rounds": 3, **kw},
        )


def test_more_rounds_and_classes_grow_the_run_asking_nothing_twice(endpoint, tmp_path, synonym_filter):
    build(tmp_path / "run", synonym_filter, classes=3, rounds=2)
    assert len(endpoint.state.chat_counts) == 6
    grown = build(tmp_path / "run", synonym_filter, classes=5, rounds=3)
    assert len(endpoint.state.chat_counts) == 15 and set(endpoint.state.chat_counts.values()) == {1}
    assert grown.settings["session"]["sent"] == 9
    with_fresh = build(tmp_path / "fresh", synonym_filter, classes=5, rounds=3)
    assert grown.labels == with_fresh.labels and grown.views == with_fresh.views
    # the journal remembers the latest settings: rebuilt without sending, as grown
    assert vocabulary_from_journal(tmp_path / "run", synonym_filter=synonym_filter).labels == grown.labels
    smaller = build(tmp_path / "run", synonym_filter, classes=2, rounds=1)  # a subset: all answered
    assert smaller.settings["session"]["sent"] == 0 and len(smaller.views) == 2


def test_an_answer_counts_only_for_the_question_asked(endpoint, tmp_path, synonym_filter):
    # EOE far asks per chunk of classes: another class list changes what chunk000 asks, so it is asked again
    kw = {
        "mode": "far",
        "classes_per_request": 2,
        "run_dir": tmp_path / "run",
        "synonym_filter": synonym_filter,
        "client_options": FAST,
        "per_request": 5,
    }
    build_eoe_vocabulary("gpt-test", classes=4, **kw)
    assert dict(endpoint.state.chat_counts) == {"chunk000/r0": 1, "chunk001/r0": 1}
    build_eoe_vocabulary("gpt-test", classes=["n01491361", "n01443537", "n01440764", "n01484850"], **kw)  # the same 4
    assert sum(endpoint.state.chat_counts.values()) == 2
    build_eoe_vocabulary("gpt-test", classes=["n01440764", "n01443537", "n01484850", "n01494475"], **kw)
    assert dict(endpoint.state.chat_counts) == {"chunk000/r0": 1, "chunk001/r0": 2}  # only the changed chunk


def test_failed_answers_are_asked_again_by_every_run(endpoint, tmp_path, synonym_filter):
    wnids = imagenet1k().wnids
    endpoint.state.add_faults(f"{wnids[1]}/r0", "malformed", "malformed", "malformed")  # a glitch: recorded invalid
    first = build(tmp_path / "run", synonym_filter, classes=2, rounds=1, client={"deferrals": 0})  # not asked again now
    assert first.settings["failures"] == {"invalid": [f"{wnids[1]}/r0"]} and first.views[wnids[1]] == []
    run = gpt_run("gpt-test", per_class=6, rounds=1, classes=2, run_dir=tmp_path / "run")
    assert (
        run.estimate()
        .summary()
        .startswith("1 requests to send (1 failed before and asked again, 1 already in the journal)")
    )
    assert (
        run.estimate(batch=True)
        .summary()
        .startswith(
            "0 requests to send (2 already in the journal, 1 of them failed (a run without --batch asks them again))"
        )
    )
    again = build(tmp_path / "run", synonym_filter, classes=2, rounds=1)  # no flag needed
    assert again.settings["session"]["sent"] == 1 and again.settings["failures"] == {}
    assert again.views[wnids[1]] == [s.lower() for s in labels_for(wnids[1], 0, 6)]
    assert endpoint.state.chat_counts[f"{wnids[0]}/r0"] == 1  # the good answer was not asked again
    assert build(tmp_path / "run", synonym_filter, classes=2, rounds=1).settings["session"]["sent"] == 0
    with pytest.raises(InputError, match="synchronous API"):
        build(tmp_path / "run", synonym_filter, classes=2, rounds=1, retry_failed=True, batch=True)


def test_a_retry_never_loses_labels_already_paid_for(endpoint, tmp_path, synonym_filter):
    wnids = imagenet1k().wnids
    endpoint.state.add_faults(f"{wnids[0]}/r0", "short", "short", "short")
    first = build(tmp_path / "run", synonym_filter, classes=1, rounds=1)
    kept = first.views[wnids[0]]
    assert first.settings["failures"] == {"short": [f"{wnids[0]}/r0"]} and kept
    run = gpt_run("gpt-test", per_class=6, rounds=1, classes=1, run_dir=tmp_path / "run")
    assert run.estimate().summary().startswith("0 requests to send (1 already in the journal)")  # a short list is kept
    assert (
        run.estimate(retry_failed=True)
        .summary()
        .startswith("1 requests to send (1 failed before and asked again, 0 already")
    )
    endpoint.state.add_faults(f"{wnids[0]}/r0", "refusal")  # the retry is refused: the short answer stays
    again = build(tmp_path / "run", synonym_filter, classes=1, rounds=1, retry_failed=True)
    assert again.settings["session"]["sent"] == 1 and again.views[wnids[0]] == kept
    assert vocabulary_from_journal(tmp_path / "run", synonym_filter=synonym_filter).views[wnids[0]] == kept


def test_a_folder_of_an_older_negvocab_is_refused_not_mixed(endpoint, tmp_path, synonym_filter):
    # older folders held rounds and classes in their identity and results without request hashes:
    # their answers cannot be matched to questions, so they are neither reused nor mixed in
    from negvocab.llm.journal import JOURNAL, MANIFEST, identity_hash

    build(tmp_path / "run", synonym_filter, classes=2, rounds=2)
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    manifest["identity"].update(rounds=2, keys=2, keys_sha256="0" * 64)
    manifest["identity_sha256"] = identity_hash(manifest["identity"])
    (tmp_path / "run" / MANIFEST).write_text(json.dumps(manifest))
    lines = [json.loads(x) for x in (tmp_path / "run" / JOURNAL).read_text().splitlines()]
    (tmp_path / "run" / JOURNAL).write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "request_sha256"}) + "\n" for r in lines)
    )
    with pytest.raises(InputError, match="written by an older negvocab whose runs could not grow; use a new run_dir"):
        build(tmp_path / "run", synonym_filter, classes=2, rounds=2)
    with pytest.raises(InputError, match="cannot rebuild the run \\(it was written by an older negvocab\\)"):
        vocabulary_from_journal(tmp_path / "run", synonym_filter=synonym_filter)


def test_going_back_to_an_earlier_question_finds_its_answer(endpoint, tmp_path, synonym_filter):
    kw = {
        "mode": "far",
        "classes_per_request": 2,
        "run_dir": tmp_path / "run",
        "synonym_filter": synonym_filter,
        "client_options": FAST,
        "per_request": 5,
    }
    a = build_eoe_vocabulary("gpt-test", classes=4, **kw)
    build_eoe_vocabulary("gpt-test", classes=["n01440764", "n01443537", "n01484850", "n01494475"], **kw)
    again = build_eoe_vocabulary("gpt-test", classes=4, **kw)  # chunk001 as first asked: answered
    assert dict(endpoint.state.chat_counts) == {"chunk000/r0": 1, "chunk001/r0": 2}
    assert again.labels == a.labels and again.settings["session"]["sent"] == 0


def test_tokens_of_unusable_answers_count_even_when_the_server_then_gives_up(endpoint, tmp_path, synonym_filter):
    # a malformed answer (billed) then 500s until the transport retries run out (and no deferral): the request
    # is left undone, but the tokens of the billed answer stay in the run's usage and cost
    wnid = imagenet1k().wnids[0]
    endpoint.state.add_faults(f"{wnid}/r0", "malformed", *["500"] * 8)
    kw = {"per_class": 6, "rounds": 1, "classes": 1, "run_dir": tmp_path / "run", "synonym_filter": synonym_filter}
    with pytest.raises(ResourceError):
        build_gpt_vocabulary("gpt-test", client_options={**FAST, "transport_attempts": 2, "deferrals": 0}, **kw)
    from negvocab.llm.journal import Journal

    journal = Journal.open_existing(tmp_path / "run")
    assert not journal.results and journal.usage("sync") == {
        "prompt_tokens": 56,
        "completion_tokens": 36,
        "total_tokens": 92,
    }
    endpoint.state.faults.clear()
    vocab = build_gpt_vocabulary("gpt-test", client_options=FAST, **kw)
    assert vocab.settings["usage"]["prompt_tokens"] == 2 * 56  # the billed attempt and the answer


def test_changed_prompt_is_a_new_run(endpoint, tmp_path, cache_dir, synonym_filter):
    a = gpt_run("gpt-test", per_class=6, rounds=3, classes=2)
    p = tmp_path / "prompt.txt"
    p.write_text("[user]\nName exactly {n} look-alikes of {class_name}.\n")
    b = gpt_run("gpt-test", per_class=6, rounds=3, classes=2, prompt_path=p)
    c = gpt_run("gpt-test", per_class=6, rounds=4, classes=5)
    assert len({a.run_dir, b.run_dir}) == 2 and c.run_dir == a.run_dir  # more rounds or classes: the same run grows
    assert a.run_dir.parent == cache_dir / "llm-runs"
    vocab = build_gpt_vocabulary(
        "gpt-test", per_class=6, rounds=3, classes=2, prompt_path=p, synonym_filter=synonym_filter, client_options=FAST
    )
    assert vocab.settings["prompt_sha256"] == b.template.sha256
    assert {m["prompt_file"] for m in vocab.meta.values()} == {str(p)}  # each label names the file that produced it
    assert {m["prompt_sha256"] for m in vocab.meta.values()} == {hashlib.sha256(p.read_bytes()).hexdigest()}
    assert (
        vocabulary_from_journal(b.run_dir, synonym_filter=synonym_filter).labels == vocab.labels
    )  # rebuilt with its prompt
    assert_no_key(cache_dir)
    with pytest.raises(InputError, match="prompt_sha256"):
        build(b.run_dir, synonym_filter, classes=2)


def test_failures_are_recorded_never_dropped(endpoint, tmp_path, synonym_filter):
    wnids = imagenet1k().wnids
    endpoint.state.add_faults(f"{wnids[0]}/r1", "refusal")
    endpoint.state.add_faults(f"{wnids[1]}/r0", "short", "short", "short")
    endpoint.state.add_faults(f"{wnids[2]}/r2", "malformed", "malformed", "malformed")
    endpoint.state.add_faults(f"{wnids[3]}/r0", "429", "500")
    endpoint.state.retry_after = "0"
    vocab = build(tmp_path / "run", synonym_filter, classes=4, client={"deferrals": 0})  # recorded, for the next run
    fails = vocab.settings["failures"]
    assert fails == {"refused": [f"{wnids[0]}/r1"], "short": [f"{wnids[1]}/r0"], "invalid": [f"{wnids[2]}/r2"]}
    # the short answer's labels are kept; the refused and invalid rounds add nothing
    assert f"{wnids[1]} sibling 2" in vocab.views[wnids[1]]
    journal = [json.loads(s) for s in (tmp_path / "run" / JOURNAL).read_text().splitlines()]
    by_id = {r["custom_id"]: r for r in journal if r["kind"] == "result"}
    assert by_id[f"{wnids[0]}/r1"]["status"] == "refused" and by_id[f"{wnids[0]}/r1"]["labels"] == []
    assert by_id[f"{wnids[3]}/r0"]["status"] == "ok" and by_id[f"{wnids[3]}/r0"]["attempts"] == 3
    assert all(r["prompt"] == "gpt_siblings" and r["request_id"] for r in journal if r.get("status") == "ok")


def test_dry_run_sends_nothing(endpoint, tmp_path):
    run = gpt_run("gpt-4o-mini", per_class=20, rounds=10, classes=5, run_dir=tmp_path / "run")
    local = run.estimate()  # OPENAI_BASE_URL is the fake: a local server gets no OpenAI price for the name
    assert local.usd is None and "not OpenAI's own endpoint" in local.summary()
    est = run.estimate(base_url="https://api.openai.com/v1")
    assert est.requests == 50 and est.already_done == 0
    assert est.usd == pytest.approx(
        (est.prompt_tokens * 0.15 + est.completion_tokens * 0.60) / 1e6
    )  # gpt-4o-mini's price
    assert run.estimate(batch=True, base_url="https://api.openai.com/v1").usd == pytest.approx(est.usd / 2)
    assert run.estimate(prices={"gpt-4o-mini": (1.0, 1.0)}).usd == pytest.approx(
        (est.prompt_tokens + est.completion_tokens) / 1e6
    )
    assert "50 requests to send" in est.summary()
    assert not (tmp_path / "run").exists()
    assert sum(endpoint.state.chat_counts.values()) == 0


def test_dry_run_counts_journaled_work(endpoint, tmp_path, synonym_filter):
    build(tmp_path / "run", synonym_filter, classes=3, rounds_used=2)
    est = gpt_run("gpt-test", per_class=6, rounds=3, classes=3, run_dir=tmp_path / "run").estimate()
    assert (est.requests, est.already_done) == (3, 6)


def test_select_classes(tmp_path):
    ic = imagenet1k()
    assert select_classes(3).wnids == ic.wnids[:3]
    assert select_classes("2").wnids == ic.wnids[:2]
    f = tmp_path / "classes.txt"
    f.write_text(f"# mine\n{ic.wnids[5]}\ngoldfish\nmissile\n")
    chosen = select_classes(f)
    assert chosen.wnids[:2] == (ic.wnids[1], ic.wnids[5])
    assert len(chosen) == 4  # "missile" names two classes
    f.write_text("not a class\n")
    with pytest.raises(InputError, match="neither wnids nor class names"):
        select_classes(f)
    with pytest.raises(InputError, match="between 1 and 1000"):
        select_classes(0)


def test_eoe_near(endpoint, tmp_path, synonym_filter):
    vocab = build_eoe_vocabulary(
        "gpt-test",
        mode="near",
        per_request=4,
        classes=5,
        run_dir=tmp_path / "near",
        synonym_filter=synonym_filter,
        client_options=FAST,
    )
    wnids = list(imagenet1k().wnids[:5])
    per = expected_merge(wnids, 1, 4)
    assert vocab.source == "eoe" and vocab.labels == list(dict.fromkeys(lab for w in wnids for lab in per[w]))
    assert all(lab == lab.lower() for lab in vocab.labels)
    assert set(vocab.views) == set(wnids)
    assert vocab.settings["task"] == "eoe_near"


@pytest.mark.parametrize("mode", ["far", "fine"])
def test_eoe_far_and_fine_ask_in_chunks(endpoint, tmp_path, synonym_filter, mode):
    endpoint.state.extra_labels = ["Tench"]
    vocab = build_eoe_vocabulary(
        "gpt-test",
        mode=mode,
        size=30,
        classes_per_request=4,
        classes=10,
        rounds=2,
        run_dir=tmp_path / mode,
        synonym_filter=synonym_filter,
        client_options=FAST,
    )
    chunks = ["chunk000", "chunk001", "chunk002"]
    assert sorted(endpoint.state.chat_counts) == sorted(f"{c}/r{r}" for c in chunks for r in range(2))
    assert vocab.settings["labels_per_request"] == 10  # ceil(30 / 3 chunks)
    wnids = list(imagenet1k().wnids[:10])
    assert vocab.settings["chunks"] == {"chunk000": wnids[:4], "chunk001": wnids[4:8], "chunk002": wnids[8:]}
    expected = [lab for c in chunks for lab in expected_merge([c], 2, 10)[c]]
    assert vocab.labels == list(dict.fromkeys(expected))
    assert "tench" not in vocab and vocab.settings["synonym_filter"]["removed_count"] == 1
    assert vocab.views == {}


def test_eoe_prompt_lists_the_chunk(endpoint, tmp_path):
    from negvocab.builders.llm import eoe_run

    run = eoe_run("gpt-test", mode="far", per_request=7, classes_per_request=3, classes=3, run_dir=tmp_path)
    (req,) = run.requests
    user = req.chat()[-1]["content"]
    assert "- tench\n- goldfish\n- great white shark" in user and "exactly 7" in user
    with pytest.raises(InputError, match="choose one of"):
        eoe_run("gpt-test", mode="middle")


def test_server_labels_helper_is_deterministic():
    assert labels_for("k", 1, 6) == labels_for("k", 1, 6)
    assert len(set(labels_for("k", 0, 20))) == 20
    assert DUMMY_KEY.startswith("sk-")


def test_a_full_disk_under_the_journal_is_one_line_and_stops_asking(endpoint, tmp_path, synonym_filter, monkeypatch):
    import errno
    import os

    from negvocab.llm.journal import Journal

    real = Journal.append
    writes = []

    def fills_up(self, records):
        records = list(records)
        if any(r.get("kind") == "result" for r in records):
            writes.append(len(records))
            if len(writes) > 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, records)

    monkeypatch.setattr(Journal, "append", fills_up)
    with pytest.raises(
        ResourceError, match=r"^cannot write the run journal .*journal\.jsonl: No space left on device; free space"
    ):
        build(tmp_path / "run", synonym_filter)
    monkeypatch.setattr(Journal, "append", real)
    asked = sum(endpoint.state.chat_counts.values())
    kept = len(Journal.open_existing(tmp_path / "run").results)
    assert kept >= 3 and asked - kept <= 8 + 8  # at most what was in flight (concurrency 8) when it failed, twice
    assert asked < 150  # it stopped asking instead of running through every request
    vocab = build(tmp_path / "run", synonym_filter)  # resumes with space again
    assert sum(endpoint.state.chat_counts.values()) == asked + (150 - kept)
    assert len(vocab.labels) > 0


def test_ctrl_c_in_a_notebook_drains_as_on_the_command_line(endpoint, tmp_path, synonym_filter):
    # in Jupyter the run's loop lives in a helper thread and the interrupt lands in the main thread
    # (it used to wait there until every request had been sent); now it drains and stops the run
    import asyncio
    import os
    import signal
    import threading
    import time

    from negvocab.llm.journal import Journal

    endpoint.state.latency = 0.2

    def interrupt_soon():
        while sum(endpoint.state.chat_counts.values()) < 10:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    async def notebook_cell():  # a cell runs inside the kernel's event loop
        return build(tmp_path / "run", synonym_filter)

    threading.Thread(target=interrupt_soon, daemon=True).start()
    loop = asyncio.new_event_loop()  # no asyncio.run: a kernel raises KeyboardInterrupt, not a cancel
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(notebook_cell())
    finally:
        loop.close()
    asked = set(endpoint.state.chat_counts)
    assert 10 <= len(asked) < 150
    assert set(Journal.open_existing(tmp_path / "run").results) == asked  # every answer under way was kept


# -- LLMSettings: how to reach the server and run the requests, shared by both builders ----------
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", 0, "concurrency must be a whole number >= 1, got 0"),
        ("concurrency", 2.5, "concurrency must be a whole number >= 1, got 2.5"),
        ("batch", "yes", "batch must be True or False, got 'yes'"),
        ("retry_failed", 1, "retry_failed must be True or False, got 1"),
        ("response_format", "xml", "unknown response format 'xml'; choose one of auto, json_schema, json_object, text"),
        ("request_timeout", 0, "request_timeout must be > 0 seconds (or None for the default 300), got 0"),
        ("poll_interval", -1.0, "poll_interval must be a finite number of seconds >= 0, got -1.0"),
        ("max_submissions", 0, "max_submissions must be a whole number >= 1, got 0"),
        (
            "prices",
            {"m": (0.15,)},
            "prices['m'] must be (USD per 1M prompt tokens, USD per "
            "1M completion tokens), two numbers >= 0, got (0.15,)",
        ),
        ("client_options", {"wait_bas": 0.1}, "client_options has an unknown key 'wait_bas'; allowed: "),
        ("client_options", {"temperature": 0.0}, "client_options['temperature']: give it as the builder's temperature"),
        ("client_options", {"concurrency": 2}, "client_options['concurrency']: give it as LLMSettings.concurrency"),
        ("base_url", "localhost:8000/v1", "base URL 'localhost:8000/v1' is not an http(s) URL"),
        ("on_progress", 3, "on_progress must be a function of (done, total) or None, got 3"),
    ],
)
def test_settings_refuse_a_bad_value_in_one_line_naming_the_field(field, value, message):
    with pytest.raises(InputError) as err:
        LLMSettings(**{field: value})
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text
    assert field in text or field.replace("_", " ") in text.lower()
    with pytest.raises(InputError, match="^" + re.escape(message)):  # the same check when given as a keyword
        build_gpt_vocabulary("gpt-test", classes=1, **{field: value})


def test_settings_defaults_are_the_builders_and_the_key_stays_out_of_the_repr():
    s = LLMSettings(api_key=DUMMY_KEY, base_url="http://127.0.0.1:9/v1")
    assert DUMMY_KEY not in repr(s) and DUMMY_KEY[8:20] not in repr(s) and DUMMY_KEY not in str(s)
    assert "base_url='http://127.0.0.1:9/v1'" in repr(s) and "api_key" not in repr(s)
    d = LLMSettings()
    assert (d.concurrency, d.batch, d.response_format, d.request_timeout, d.poll_interval, d.max_submissions) == (
        16,
        False,
        "auto",
        None,
        30.0,
        3,
    )
    assert (d.base_url, d.api_key, d.prices, d.client_options, d.on_progress, d.retry_failed) == (
        None,
        None,
        None,
        None,
        None,
        False,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.concurrency = 4  # type: ignore[misc]
    assert (
        negvocab.LLMSettings is builders_llm.LLMSettings
        and "LLMSettings" in negvocab.__all__
        and "LLMSettings" in builders_llm.__all__
    )
    assert all(getattr(builders_llm, name) is not None for name in builders_llm.__all__)


def test_an_override_wins_and_an_unknown_keyword_is_refused_naming_it(tmp_path):
    base = LLMSettings(concurrency=4, batch=True, response_format="text")
    s = resolve_settings(base, {"batch": False, "concurrency": 2}, build_gpt_vocabulary)
    assert (s.concurrency, s.batch, s.response_format) == (2, False, "text") and base.batch is True
    assert (
        resolve_settings(None, {}, build_gpt_vocabulary) == LLMSettings()
        and resolve_settings(base, {}, build_gpt_vocabulary) is base
    )
    with pytest.raises(InputError) as err:
        build_gpt_vocabulary("gpt-test", classes=1, concurency=4)
    text = str(err.value)
    assert text.startswith(
        "build_gpt_vocabulary() got an unknown keyword 'concurency' (did "
        "you mean 'concurrency'?); it accepts model, per_class, rounds,"
    )
    assert "\n" not in text and all(name in text for name in (*FIELDS, "synonym_filter", "settings"))
    with pytest.raises(
        InputError,
        match=(
            "^build_eoe_vocabulary\\(\\) got an unknown keyword "
            "'chunk'.*it accepts model, mode, per_request, size, classes_per_request"
        ),
    ):
        build_eoe_vocabulary("gpt-test", mode="far", chunk=3)
    run = gpt_run("gpt-test", per_class=6, rounds=1, classes=1, run_dir=tmp_path / "run")
    for method in (run.build, run.execute, run.estimate):
        with pytest.raises(
            InputError,
            match=f"^LLMRun.{method.__name__}\\(\\) got an unknown keyword 'batches' \\(did you mean 'batch'\\?\\)",
        ):
            method(batches=True)
    with pytest.raises(InputError, match="settings must be an LLMSettings or None, got a value of type dict") as err:
        build_gpt_vocabulary("gpt-test", classes=1, settings={"api_key": DUMMY_KEY})  # type: ignore[arg-type]
    assert_no_key(texts=[str(err.value)])
    assert not (tmp_path / "run").exists()


def _comparable(vocab):
    """What a build produced, less where it was written."""
    return vocab.labels, vocab.views, vocab.meta, {k: v for k, v in vocab.settings.items() if k != "run_dir"}


def test_old_keywords_and_an_equal_settings_object_give_the_same_vocabulary(
    server, tmp_path, synonym_filter, monkeypatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.state.api_key = DUMMY_KEY  # a wrong or missing key would get a 401
    seen = []
    how = {"base_url": server.url, "api_key": DUMMY_KEY, "concurrency": 3, "client_options": FAST,
           "response_format": "json_object",
           "request_timeout": 30.0, "prices": {"gpt-test": (1.0, 2.0)},
           "on_progress": lambda done, total: seen.append((done, total))}  # fmt: skip
    question = {"per_class": 6, "rounds": 2, "classes": 3, "synonym_filter": synonym_filter}
    old = build_gpt_vocabulary("gpt-test", run_dir=tmp_path / "old", **question, **how)
    new = build_gpt_vocabulary("gpt-test", run_dir=tmp_path / "new", **question, settings=LLMSettings(**how))
    assert _comparable(old) == _comparable(new) and len(old) > 0
    assert old.settings["response_formats"] == {"json_object": 6} and old.settings["cost_usd"] > 0
    assert set(server.state.formats) == {"json_object"} and set(server.state.chat_counts.values()) == {
        2
    }  # each question once per build
    assert seen[-1] == (6, 6)
    # the override wins over the same field of settings
    wins = build_gpt_vocabulary(
        "gpt-test",
        run_dir=tmp_path / "wins",
        **question,
        settings=LLMSettings(**{**how, "response_format": "text"}),
        response_format="json_object",
    )
    assert _comparable(wins) == _comparable(old) and set(server.state.formats) == {"json_object"}
    eoe = {"mode": "far", "per_request": 5, "classes_per_request": 2, "classes": 4, "synonym_filter": synonym_filter}
    a = build_eoe_vocabulary("gpt-test", run_dir=tmp_path / "eoe-old", **eoe, **how)
    b = build_eoe_vocabulary("gpt-test", run_dir=tmp_path / "eoe-new", **eoe, settings=LLMSettings(**how))
    assert _comparable(a) == _comparable(b) and a.settings["chunks"]
    assert_no_key(tmp_path)
