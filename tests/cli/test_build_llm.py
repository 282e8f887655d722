"""``negvocab build gpt|eoe``: kill -9 and resume in a subprocess, dry run, errors, the key."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from negvocab import Vocabulary, build_gpt_vocabulary
from negvocab.cli import app
from negvocab.llm.journal import JOURNAL, Journal
from tests.llm.conftest import *  # noqa: F403  (the fixtures of tests/llm/, where this file began)
from tests.llm.conftest import DUMMY_KEY, FAST, assert_no_key
from tests.llm.fake_openai import FakeOpenAI

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def test_kill_9_mid_run_then_resume_repeats_no_journaled_request(tmp_path, synonym_filter):
    run_dir, out = tmp_path / "run", tmp_path / "gpt.json"
    args = [
        "build",
        "gpt",
        "-m",
        "gpt-test",
        "--per-class",
        "6",
        "--rounds",
        "3",
        "--classes",
        "40",
        "--concurrency",
        "2",
        "--run-dir",
        str(run_dir),
        "-o",
        str(out),
    ]
    with FakeOpenAI(latency=0.03) as srv:
        env = {**os.environ, "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": srv.url}
        proc = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        journal = run_dir / JOURNAL
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_bytes().count(b"\n") >= 16:  # the identity line and 15 results
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        done_before = set(Journal.open_existing(run_dir).results)
        assert 15 <= len(done_before) < 120
        with open(journal, "ab") as fh:  # and a torn last line, as a crash mid-write leaves
            fh.write(b'{"kind":"result","custom_id":"n0')
        res = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        counts = dict(srv.state.chat_counts)
    assert len(counts) == 120
    assert all(counts[cid] == 1 for cid in done_before)  # journaled work is never asked again
    assert sum(c - 1 for c in counts.values()) <= 2  # at most the requests in flight at the kill
    assert "gpt vocabulary" in res.stdout and "unique per class: min 12, mean 12.0, max 12" in res.stdout
    # the same vocabulary as an uninterrupted run
    with FakeOpenAI() as srv2:
        clean = build_gpt_vocabulary(
            "gpt-test",
            per_class=6,
            rounds=3,
            classes=40,
            run_dir=tmp_path / "clean",
            base_url=srv2.url,
            api_key=DUMMY_KEY,
            synonym_filter=synonym_filter,
            client_options=FAST,
        )
    resumed = Vocabulary.load(out)
    assert resumed.labels == clean.labels and resumed.views == clean.views and resumed.meta == clean.meta
    assert_no_key(tmp_path, texts=[res.stdout, res.stderr])


def invoke(args, env):
    return CliRunner().invoke(app, args, env=env)


def test_dry_run_reaches_no_server(tmp_path, server):
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    res = invoke(
        [
            "build",
            "gpt",
            "-m",
            "gpt-4o-mini",
            "--classes",
            "3",
            "--run-dir",
            str(tmp_path / "r"),
            "--dry-run",
            "-o",
            str(tmp_path / "o.json"),
        ],
        env,
    )
    assert res.exit_code == 0, res.output
    assert (
        "30 requests to send (0 already in the journal)" in res.output and "gpt-4o-mini, synchronous API" in res.output
    )
    res = invoke(
        [
            "build",
            "eoe",
            "--mode",
            "far",
            "-m",
            "some-local-model",
            "--size",
            "100",
            "--batch",
            "--dry-run",
            "-o",
            str(tmp_path / "o.json"),
        ],
        env,
    )
    assert res.exit_code == 0, res.output
    assert (
        "10 requests to send" in res.output
        and "unknown (the server is not OpenAI's own endpoint" in res.output
        and "Batch API" in res.output
    )
    assert sum(server.state.chat_counts.values()) == 0 and not server.state.files
    assert not (tmp_path / "r").exists() and not (tmp_path / "o.json").exists()


def test_cli_builds_eoe_and_reports(tmp_path, server, monkeypatch):
    env = {"OPENAI_BASE_URL": server.url, "MY_KEY": DUMMY_KEY}
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.state.extra_labels = ["Goldfish"]  # an ImageNet-1k class name in every answer
    out = tmp_path / "eoe.txt"
    res = invoke(
        [
            "build",
            "eoe",
            "--mode",
            "near",
            "-m",
            "gpt-4o-mini",
            "-n",
            "3",
            "--classes",
            "4",
            "--api-key-env",
            "MY_KEY",
            "--run-dir",
            str(tmp_path / "r"),
            "--retry-wait",
            "0.001",
            "-o",
            str(out),
        ],
        env,
    )
    assert res.exit_code == 0, res.output
    assert "eoe-near vocabulary" in res.output and "this session: 4 requests answered (4 HTTP requests" in res.output
    assert "cost unknown (no price for this model or server)" in res.output  # a local server that echoes an OpenAI name
    assert "synonym filter removed 1 of 7 unique labels as ImageNet-1k names/synonyms (e.g. goldfish)" in res.output
    assert len(out.read_text().splitlines()) > 4
    assert_no_key(tmp_path, texts=[res.output])


def test_missing_key_and_bad_options_are_one_line_errors(tmp_path, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = invoke(
        ["build", "gpt", "-m", "x", "--classes", "2", "--run-dir", str(tmp_path / "r"), "-o", str(tmp_path / "o.json")],
        {"OPENAI_BASE_URL": server.url},
    )
    assert res.exit_code == 2 and "error: no API key" in res.output and "OPENAI_API_KEY" in res.output
    res = invoke(
        ["build", "gpt", "-m", "x", "--classes", "nofile.txt", "-o", str(tmp_path / "o.json"), "--dry-run"], {}
    )
    assert res.exit_code == 2 and "nofile.txt: no such class file" in res.output
    res = invoke(
        [
            "build",
            "gpt",
            "-m",
            "x",
            "--classes",
            "2",
            "--max-rounds-used",
            "11",
            "-o",
            str(tmp_path / "o.json"),
            "--dry-run",
        ],
        {},
    )
    assert res.exit_code == 2 and "between 1 and the run's 10 rounds" in res.output


def test_run_folder_and_option_mistakes_are_one_line_errors(tmp_path, server, monkeypatch):
    """A file, a foreign folder or an unwritable place as --run-dir, a missing --api-key-env
    variable, an empty model name and --size with near: one line each, nothing sent or written."""
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"jpeg")
    base = ["build", "gpt", "-m", "x", "--classes", "2", "--rounds", "1", "-o", str(tmp_path / "o.json")]
    cases = [
        (["--run-dir", str(tmp_path / "a_file")], env, "is a file; give a folder"),
        (["--run-dir", str(tmp_path / "photos")], env, "is not empty and not a negvocab run folder (holds cat.jpg"),
        (["--run-dir", str(tmp_path / "a_file" / "run")], env, "cannot write the run folder"),
        (
            ["--run-dir", str(tmp_path / "r"), "--api-key-env", "MY_KEY"],
            {"OPENAI_BASE_URL": server.url},
            "no API key: set MY_KEY",
        ),
    ]
    monkeypatch.delenv("MY_KEY", raising=False)
    for extra, e, message in cases:
        res = invoke([*base, *extra], e)
        assert res.exit_code == 2 and message in res.output and res.output.count("\n") == 1, (extra, res.output)
    res = invoke(["build", "gpt", "-m", " ", "--classes", "2", "-o", str(tmp_path / "o.json"), "--dry-run"], env)
    assert res.exit_code == 2 and "no chat model name" in res.output
    res = invoke(
        ["build", "eoe", "--mode", "near", "-m", "x", "--size", "50", "-o", str(tmp_path / "o.json"), "--dry-run"], env
    )
    assert res.exit_code == 2 and "near asks per_request labels per class" in res.output
    assert sum(server.state.chat_counts.values()) == 0 and not (tmp_path / "o.json").exists()
    assert sorted(p.name for p in (tmp_path / "photos").iterdir()) == ["cat.jpg"]


def test_dead_server_is_a_clear_error_and_nothing_is_lost(tmp_path, monkeypatch):
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": DUMMY_KEY}
    res = invoke(
        [
            "build",
            "gpt",
            "-m",
            "x",
            "--classes",
            "2",
            "--rounds",
            "1",
            "--run-dir",
            str(tmp_path / "r"),
            "--retry-wait",
            "0.001",
            "-o",
            str(tmp_path / "o.json"),
        ],
        env,
    )
    assert res.exit_code == 2
    err = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "http://127.0.0.1:9/v1: cannot connect" in err[0]
    assert "after 2 attempts; the server never answered" in err[0] and "re-run the same command" in err[0]
    assert res.output.count("\n") == 1, res.output  # no per-request warnings before it
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["identity"]["model"] == "x"
    assert not (tmp_path / "o.json").exists()
    assert_no_key(tmp_path, texts=[res.output])


def test_server_going_down_mid_run_stops_the_run_early(tmp_path, server, synonym_filter):
    import pytest

    from negvocab import imagenet1k
    from negvocab.core.errors import ResourceError

    # round 0 answers; then every request fails with 500s: the server as a whole looks broken
    for w in imagenet1k().wnids[:10]:
        server.state.add_faults(f"{w}/r1", *["500"] * 50)
    opts = {**FAST, "transport_attempts": 2}
    kw = dict(
        per_class=6,
        rounds=2,
        classes=10,
        run_dir=tmp_path / "r",
        base_url=server.url,
        api_key=DUMMY_KEY,
        synonym_filter=synonym_filter,
        concurrency=2,
    )
    with pytest.raises(ResourceError, match="no answer among the last 10 attempts across requests, so the run stopped"):
        build_gpt_vocabulary("gpt-test", client_options=opts, **kw)
    asked_r1 = sum(n for cid, n in server.state.chat_counts.items() if cid.endswith("/r1"))
    assert 10 <= asked_r1 <= 11  # ten attempts across requests (one more in flight), not all of them deferred
    assert len(Journal.open_existing(tmp_path / "r").results) == 10  # round 0 is journaled
    server.state.faults.clear()
    vocab = build_gpt_vocabulary("gpt-test", client_options=FAST, **kw)  # the server is back: resume
    assert vocab.settings["session"]["sent"] == 10
    assert all(n == 1 for cid, n in server.state.chat_counts.items() if cid.endswith("/r0"))


def test_wrong_key_and_bad_base_url_are_one_line_errors(tmp_path, server):
    server.state.api_key = "sk-the-right-one"
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    args = [
        "build",
        "gpt",
        "-m",
        "x",
        "--classes",
        "3",
        "--rounds",
        "1",
        "--run-dir",
        str(tmp_path / "r"),
        "-o",
        str(tmp_path / "o.json"),
    ]
    res = invoke(args, env)
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith(
        f"error: {server.url}: authentication failed (HTTP 401); check the API key in OPENAI_API_KEY"
    )
    assert not (tmp_path / "o.json").exists() and not Journal.open_existing(tmp_path / "r").results
    assert_no_key(tmp_path, texts=[res.output])
    res = invoke(
        [
            *args[:-4],
            "--run-dir",
            str(tmp_path / "r2"),
            "-o",
            str(tmp_path / "o.json"),
            "--base-url",
            "localhost:8000/v1",
        ],
        env,
    )
    assert res.exit_code == 2 and res.output.count("\n") == 1
    assert "base URL 'localhost:8000/v1' is not an http(s) URL" in res.output
    assert not (tmp_path / "r2").exists()  # refused before the run folder was made


def test_unwritable_output_fails_before_any_request(tmp_path, server):
    (tmp_path / "a_file").write_text("x")
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    res = invoke(
        [
            "build",
            "gpt",
            "-m",
            "x",
            "--classes",
            "2",
            "--rounds",
            "1",
            "--run-dir",
            str(tmp_path / "r"),
            "-o",
            str(tmp_path / "a_file" / "o.json"),
        ],
        env,
    )
    assert res.exit_code == 2 and "is not a folder" in res.output and res.output.count("\n") == 1, res.output
    assert sum(server.state.chat_counts.values()) == 0 and not (tmp_path / "r").exists()


def test_verbose_logs_show_no_url_credentials(tmp_path):
    # -v logs INFO; the HTTP client's own INFO lines would print the base URL with its password
    with FakeOpenAI() as srv:
        url = srv.url.replace("http://", "http://me:PASS-IN-URL@")
        env = {**os.environ, "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": url}
        args = ["-v", "build", "gpt", "-m", "gpt-test", "--per-class", "4", "--rounds", "1", "--classes", "2",
                "--run-dir", str(tmp_path / "r"), "-o", str(tmp_path / "o.json")]  # fmt: skip
        res = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "INFO" in res.stderr and "2 requests to send" in res.stderr  # verbose logging is on
    assert "PASS-IN-URL" not in res.stderr + res.stdout
    assert_no_key(tmp_path, texts=[res.stdout, res.stderr])


def test_bad_build_options_fail_before_anything_is_written(tmp_path, server):
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    cls = tmp_path / "cls.txt"
    cls.write_text("n01440764\n")
    base = ["build", "gpt", "-m", "x", "--rounds", "1", "-n", "4", "--run-dir", str(tmp_path / "r")]
    cases = [
        (["--classes", "2", "-o", str(tmp_path / "r" / "journal.jsonl")], "it is in the run folder"),
        (["--classes", "2", "-o", str(tmp_path / "r" / ".." / "r" / "journal.jsonl")], "it is in the run folder"),
        (
            ["--classes", "2", "--base-url", "http://localhost:80000/v1", "-o", str(tmp_path / "o.json")],
            "base URL is malformed",
        ),
        (["--classes", str(cls), "-o", str(cls)], "it is an input of this command"),
        (
            ["--classes", "2", "--temperature", "inf", "-o", str(tmp_path / "o.json")],
            "temperature must be a finite number",
        ),
        (
            ["--classes", "2", "--min-labels", "9", "-o", str(tmp_path / "o.json")],
            "min_labels must be between 1 and the 4 labels asked",
        ),
    ]
    for args, message in cases:
        res = invoke([*base, *args], env)
        assert res.exit_code == 2 and res.output.count("\n") == 1 and message in res.output, res.output
    assert sum(server.state.chat_counts.values()) == 0 and cls.read_text() == "n01440764\n"
    assert not (tmp_path / "o.json").exists()


def test_ctrl_c_keeps_the_answers_in_flight(tmp_path, synonym_filter):
    # the first SIGINT sends nothing new but waits for the questions already sent: every question
    # the server saw is journaled, so a resume pays for none of them again
    run_dir, out = tmp_path / "run", tmp_path / "gpt.json"
    args = ["build", "gpt", "-m", "gpt-test", "--per-class", "6", "--rounds", "3", "--classes", "40",
            "--concurrency", "4", "--run-dir", str(run_dir), "-o", str(out)]  # fmt: skip
    with FakeOpenAI(latency=0.4) as srv:
        env = {**os.environ, "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": srv.url}
        proc = subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sum(srv.state.chat_counts.values()) < 6:
            time.sleep(0.01)
        time.sleep(0.1)  # four questions are on the wire now
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        asked = set(srv.state.chat_counts)
    assert proc.returncode != 0 and "interrupted; re-run the same command to resume" in err
    assert "sending nothing new; waiting for the" in err
    journaled = set(Journal.open_existing(run_dir).results)
    assert 6 <= len(asked) < 120
    assert journaled == asked  # nothing the server answered was dropped
    assert not out.exists()


def test_nonsense_answers_fail_whatever_min_labels_says(tmp_path, server):
    # a small model's short nonsense lines: the issue's --min-labels 6 once gave exit 0 and 61 such labels
    server.state.kind = "babble"
    server.state.babble_lines = [
        "ség familiacolor bother involving",
        "%> чтоs register",
        "ölç gridTerm >>",
        "{{ trans sitting of",
    ] * 2
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "x"}
    args = [
        "build",
        "gpt",
        "-m",
        "tiny",
        "--classes",
        "5",
        "--rounds",
        "1",
        "-n",
        "6",
        "--min-labels",
        "1",
        "--run-dir",
        str(tmp_path / "r"),
        "-o",
        str(tmp_path / "o.json"),
    ]
    res = invoke(args, env)
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert res.exit_code == 2 and len(errors) == 1 and "Traceback" not in res.output, (
        res.output
    )  # log lines may precede it
    assert "not language" in errors[0] and "--min-labels cannot help" in errors[0]
    assert not (tmp_path / "o.json").exists()
    assert sum(server.state.chat_counts.values()) <= 10


def test_the_summary_counts_http_requests_and_states_the_size_reached(tmp_path, server):
    from negvocab import imagenet1k

    server.state.add_faults("chunk000/r0", "500")  # retried: 4 HTTP requests for 3 questions
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "x"}
    args = ["build", "eoe", "-m", "gpt-4o-mini", "--mode", "far", "--size", "30", "--chunk-size", "4",
            "--classes", "10",
            "--retry-wait", "0.001", "--run-dir", str(tmp_path / "r"), "-o", str(tmp_path / "o.json")]  # fmt: skip
    res = invoke(args, env)
    assert res.exit_code == 0, res.output
    assert "this session: 6 requests answered (7 HTTP requests, retries included)" in res.output
    assert "size: 41 labels of the 30 asked (--size)" in res.output
    assert "unknown (no price for this model or server)" in res.output  # a local server echoing an OpenAI name
    assert imagenet1k()  # the ID space the chunks came from
