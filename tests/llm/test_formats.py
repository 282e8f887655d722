"""Servers with and without structured output: --response-format, fail-fast, failed answers not final."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from negvocab import Vocabulary, build_eoe_vocabulary, build_gpt_vocabulary, imagenet1k
from negvocab.builders.llm import gpt_run
from negvocab.core.errors import InputError, ResourceError
from negvocab.llm.journal import MANIFEST, Journal
from tests.llm.conftest import DUMMY_KEY, FAST, assert_no_key
from tests.llm.fake_openai import FREE_FORMS, GARBAGE, FakeOpenAI, expected_merge, free_text, labels_for

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def gpt(run_dir, synonym_filter, classes=6, **kw):
    return build_gpt_vocabulary(
        "gpt-test",
        per_class=6,
        rounds=2,
        classes=classes,
        run_dir=run_dir,
        synonym_filter=synonym_filter,
        client_options={**FAST, **kw.pop("client", {})},
        concurrency=4,
        **kw,
    )


@pytest.mark.parametrize("form", FREE_FORMS)
def test_every_free_text_form_reads_back_as_the_labels(form):
    from negvocab.labels.clean import parse_label_list

    labels = labels_for("n01440764", 1, 6)
    assert parse_label_list(free_text(labels, form)) == [s.lower() for s in labels]


@pytest.mark.parametrize("kind", ["structured", "free", "reject_schema"])
def test_build_gpt_completes_on_every_kind_of_server(endpoint, tmp_path, synonym_filter, kind):
    endpoint.state.kind = kind
    vocab = gpt(tmp_path / "run", synonym_filter)
    wnids = list(imagenet1k().wnids[:6])
    per_class = expected_merge(wnids, 2, 6)  # independent recomputation of the merged answers
    assert vocab.views == per_class
    assert vocab.labels == list(dict.fromkeys(lab for w in wnids for lab in per_class[w]))
    assert vocab.settings["endpoints"] == [endpoint.url] and vocab.settings["served_models"] == ["gpt-test-fake"]
    used = {"structured": "json_schema", "free": "json_object", "reject_schema": "json_object"}[kind]
    assert vocab.settings["response_formats"] == {used: 12}
    counts = endpoint.state.chat_counts
    if kind == "reject_schema":  # the 400s of the probing requests, then every question once
        assert sum(counts.values()) <= 12 + 2 and endpoint.state.formats.count("json_schema") <= 2
    else:  # an answer that ignored the schema is read as it is, not asked again
        assert len(counts) == 12 and set(counts.values()) == {1}
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    if kind == "structured":
        assert "response_format" not in manifest
    else:  # the switch is in the manifest; the identity (and so resumption) is unchanged
        assert (
            manifest["response_format"]["used"] == "json_object" and manifest["response_format"]["requested"] == "auto"
        )
        assert manifest["identity_sha256"] == gpt_run("gpt-test", per_class=6, rounds=2, classes=6).identity_sha256
    # a second session of the run starts in the format the first settled on, and sends nothing new
    before = list(endpoint.state.formats)
    again = gpt(tmp_path / "run", synonym_filter, classes=7)
    assert again.views[imagenet1k().wnids[6]] == expected_merge([imagenet1k().wnids[6]], 2, 6)[imagenet1k().wnids[6]]
    assert set(endpoint.state.formats[len(before) :]) == {used}


@pytest.mark.parametrize("kind", ["structured", "free", "reject_schema"])
@pytest.mark.parametrize("mode", ["near", "far"])
def test_build_eoe_completes_on_every_kind_of_server(endpoint, tmp_path, synonym_filter, kind, mode):
    endpoint.state.kind = kind
    kw = {"per_request": 6, "classes": 4} if mode == "near" else {"per_request": 6, "classes": 4, "chunk_size": 2}
    vocab = build_eoe_vocabulary(
        "gpt-test", mode=mode, run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST, **kw
    )
    keys = list(imagenet1k().wnids[:4]) if mode == "near" else ["chunk000", "chunk001"]
    per_key = expected_merge(keys, 1, 6)
    assert vocab.labels == list(dict.fromkeys(lab for k in keys for lab in per_key[k]))


@pytest.mark.parametrize("explicit", ["json_object", "text"])
def test_an_explicit_format_is_used_from_the_first_request(endpoint, tmp_path, synonym_filter, explicit):
    endpoint.state.kind = "free"
    vocab = gpt(tmp_path / "run", synonym_filter, response_format=explicit)
    assert vocab.settings["response_formats"] == {explicit: 12}
    assert set(endpoint.state.formats) == {"json_object" if explicit == "json_object" else None}


@pytest.mark.parametrize("explicit", ["auto", "text"])
def test_the_batch_api_asks_in_the_format_given(endpoint, tmp_path, synonym_filter, explicit):
    vocab = gpt(tmp_path / "run", synonym_filter, classes=3, response_format=explicit, batch=True, poll_interval=0.01)
    wnids = list(imagenet1k().wnids[:3])
    assert vocab.views == expected_merge(wnids, 2, 6)
    used = "json_schema" if explicit == "auto" else "text"
    assert vocab.settings["response_formats"] == {used: 6} and vocab.settings["endpoints"] == [endpoint.url]


def test_json_schema_rejected_with_an_explicit_format_names_the_flag(endpoint, tmp_path, synonym_filter):
    endpoint.state.kind = "reject_schema"
    with pytest.raises(ResourceError, match=r"HTTP 400.*not supported.*try --response-format json_object or text") as e:
        gpt(tmp_path / "run", synonym_filter, response_format="json_schema")
    assert "\n" not in str(e.value)


def run_cli(args, url, **env):
    env = {**os.environ, "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": url, **env}
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def test_a_garbage_server_stops_within_10_requests_then_a_fixed_one_completes(tmp_path):
    run_dir, out = tmp_path / "run", tmp_path / "gpt.json"
    args = [
        "build",
        "gpt",
        "-m",
        "gpt-test",
        "-n",
        "6",
        "--rounds",
        "3",
        "--classes",
        "30",
        "--run-dir",
        str(run_dir),
        "-o",
        str(out),
    ]
    with FakeOpenAI() as srv:
        srv.state.kind = "garbage"
        res = run_cli(args, srv.url)
        assert res.returncode == 2, res.stderr
        assert sum(srv.state.chat_counts.values()) <= 10  # not 90 x 3
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in res.stderr
        line = errors[0]
        assert "answers of this run were unusable" in line and "likely fix:" in line
        assert GARBAGE[:60] in line and len(line) < 700  # what the server said, cut short
        assert "synonym filter" not in res.stderr
        flags = {w for w in line.split() if w.startswith("--")}
        srv.state.kind = "structured"  # the server is fixed: the same command completes, no other flag
        again = run_cli(args, srv.url)
        assert again.returncode == 0, again.stderr
        assert not {w for w in again.stderr.split() if w.startswith("--")} - flags
    vocab = Vocabulary.load(out)
    assert len(vocab.views) == 30 and all(len(v) == 12 for v in vocab.views.values())
    assert_no_key(tmp_path, texts=[res.stderr, again.stderr, again.stdout])


def test_a_server_with_no_choices_is_named_not_the_synonym_filter(endpoint, tmp_path, synonym_filter):
    endpoint.state.kind = "no_choices"
    with pytest.raises(ResourceError, match="empty choices list") as e:
        gpt(tmp_path / "run", synonym_filter, classes=20)
    assert "synonym filter" not in str(e.value) and sum(endpoint.state.chat_counts.values()) <= 10


def test_unusable_answers_are_never_final_and_keep_a_masked_snippet(endpoint, tmp_path, synonym_filter):
    wnids = imagenet1k().wnids
    endpoint.state.garbage_text = (
        f"The server hit an internal error for key {DUMMY_KEY} and there is nothing to list here, sorry about that one."
    )
    first = gpt(tmp_path / "run", synonym_filter, classes=3)  # the glitch comes after answers were usable
    assert first.settings["failures"] == {}
    endpoint.state.add_faults(f"{wnids[3]}/r0", "garbage", "garbage", "garbage")
    glitched = gpt(tmp_path / "run", synonym_filter, classes=4, client={"deferrals": 0})  # not asked again now
    assert glitched.settings["failures"] == {"invalid": [f"{wnids[3]}/r0"]}
    rec = Journal.open_existing(tmp_path / "run").results[f"{wnids[3]}/r0"]
    assert rec["status"] == "invalid" and rec["snippet"].startswith("The server hit an internal error for key ***")
    assert len(rec["snippet"]) <= 160
    assert_no_key(tmp_path)
    # the dry run counts the failed request apart; the next run asks it again without a flag
    est = gpt_run("gpt-test", per_class=6, rounds=2, classes=4, run_dir=tmp_path / "run").estimate().summary()
    assert est.startswith("1 requests to send (1 failed before and asked again, 7 already in the journal)")
    again = gpt(tmp_path / "run", synonym_filter, classes=4)
    assert again.settings["failures"] == {} and again.settings["session"]["sent"] == 1
    assert again.views[wnids[3]] == expected_merge([wnids[3]], 2, 6)[wnids[3]]
    assert endpoint.state.chat_counts[f"{wnids[0]}/r0"] == 1  # good answers are not asked again


def test_a_base_url_with_a_query_string_reaches_the_endpoint(server, tmp_path, synonym_filter, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    vocab = build_gpt_vocabulary(
        "gpt-test",
        per_class=6,
        rounds=1,
        classes=2,
        run_dir=tmp_path / "run",
        base_url=server.url + "?key=QUERY-SECRET-123",
        synonym_filter=synonym_filter,
        client_options=FAST,
    )
    assert len(vocab.views) == 2 and set(server.state.queries) == {"key=QUERY-SECRET-123"}
    assert vocab.settings["endpoints"] == [server.url]
    for f in (tmp_path / "run").iterdir():
        assert b"QUERY-SECRET-123" not in f.read_bytes()


@pytest.mark.parametrize("cmd", [["gpt"], ["eoe", "--mode", "near"]])
def test_cli_response_format_and_request_timeout(tmp_path, server, cmd):
    from typer.testing import CliRunner

    from negvocab.cli import app

    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    server.state.kind = "free"
    base = [
        "build",
        *cmd,
        "-m",
        "gpt-test",
        "-n",
        "4",
        "--rounds",
        "1",
        "--classes",
        "2",
        "--run-dir",
        str(tmp_path / "r"),
    ]
    bad = CliRunner().invoke(app, [*base, "--response-format", "xml", "-o", str(tmp_path / "o.json")], env=env)
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "unknown response format 'xml'" in bad.output, (
        bad.output
    )
    bad = CliRunner().invoke(app, [*base, "--request-timeout", "0", "-o", str(tmp_path / "o.json")], env=env)
    assert bad.exit_code == 2 and "--request-timeout" in bad.output
    assert sum(server.state.chat_counts.values()) == 0 and not (tmp_path / "r").exists()
    res = CliRunner().invoke(
        app, [*base, "--response-format", "text", "--request-timeout", "30", "-o", str(tmp_path / "o.json")], env=env
    )
    assert res.exit_code == 0, res.output
    assert set(server.state.formats) == {None} and "response format text 2" in res.output
    assert f"answers from {server.url} (gpt-test-fake)" in res.output
    per_key = expected_merge(list(imagenet1k().wnids[:2]), 1, 4)
    assert set(Vocabulary.load(tmp_path / "o.json").labels) == {lab for labels in per_key.values() for lab in labels}


# -- the verbatim format (part negrefine, issue 30): questions whose answer the task reads itself ------------
def test_verbatim_answers_are_kept_as_written_and_only_an_empty_one_fails():
    from negvocab.llm.batch import batch_line, interpret_line
    from negvocab.llm.formats import MODES, VERBATIM, BadAnswer, check_mode, messages_for, read_answer
    from negvocab.llm.run import Request

    assert check_mode(VERBATIM) == "verbatim" and VERBATIM not in MODES  # not offered to the label builders
    for text in (" Yes", "Yes, Paris is a proper noun.", "NO", "1. yes\n2. no"):  # no cleaning, no list parsing
        assert read_answer(text, None, None, 1, 1, VERBATIM) == ([text], [text])
    with pytest.raises(BadAnswer) as e:
        read_answer("  ", None, None, 1, 1, VERBATIM)
    assert e.value.kind == "empty"
    msgs = [{"role": "user", "content": "Is 'x' a proper noun?"}]
    assert messages_for(VERBATIM, msgs) == msgs  # the prompt as written: no format hint appended
    req = Request("x", 0, (("user", "Is 'x' a proper noun?"),), 1, 1)
    assert "response_format" not in batch_line(req, "m", 0.7, VERBATIM)["body"]
    cut = {"response": {"status_code": 200, "body": {"choices": [{"finish_reason": "length",
           "message": {"content": "Yes, because"}}]}}}  # fmt: skip
    answer, err = interpret_line(cut, req, VERBATIM)  # a cut answer is read as far as it went
    assert answer is not None and answer.status == "ok" and answer.labels == ["Yes, because"] and not err
    assert interpret_line(cut, req, "json_schema")[0].status == "invalid"


def test_label_builds_refuse_the_verbatim_format(tmp_path):
    from negvocab.llm.settings import LLMSettings

    run = gpt_run("m", classes=2, rounds=1, run_dir=tmp_path / "run")
    with pytest.raises(InputError, match="response_format 'verbatim'"):
        run.execute(LLMSettings(response_format="verbatim"))
    assert not (tmp_path / "run").exists()
