"""Servers that hang, never accept or drip bytes: a total deadline per request, a heartbeat, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from negvocab import build_gpt_vocabulary
from negvocab.errors import ResourceError
from tests.llm.bad_servers import DripServer, FullBacklog, SilentServer
from tests.llm.conftest import DUMMY_KEY, FAST

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]
SERVERS = {"silent": SilentServer, "drip": lambda: DripServer(every=0.3), "never_accepts": FullBacklog}


@pytest.mark.parametrize("kind", list(SERVERS))
def test_a_stuck_server_is_given_up_on_within_the_request_deadline(tmp_path, synonym_filter, kind):
    with SERVERS[kind]() as srv:
        start = time.monotonic()
        with pytest.raises(ResourceError) as e:
            build_gpt_vocabulary(
                "gpt-test",
                per_class=4,
                rounds=1,
                classes=5,
                run_dir=tmp_path / "run",
                base_url=srv.url,
                api_key=DUMMY_KEY,
                synonym_filter=synonym_filter,
                client_options=FAST,
                request_timeout=1.5,
            )
        took = time.monotonic() - start
    msg = str(e.value)
    assert "\n" not in msg and "the server never answered" in msg
    assert "request deadline (--request-timeout)" in msg or "cannot connect" in msg
    assert took < 1.5 * 4, took  # the requests in flight share the deadline; no 8 x 120 s


def start_cli(tmp_path, url, *extra):
    args = ["build", "gpt", "-m", "gpt-test", "-n", "4", "--rounds", "1", "--classes", "20",
            "--run-dir", str(tmp_path / "run"), "-o", str(tmp_path / "out.json"), *extra]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_BASE_URL": url}
    return subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_dripping_server_shows_a_heartbeat_then_one_line(tmp_path):
    with DripServer(every=0.3) as srv:
        proc = start_cli(tmp_path, srv.url, "--request-timeout", "4")
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "waiting for http://127.0.0.1" in err and "--request-timeout" in err  # seen without -v
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "4 s request deadline" in errors[0], err
    assert "Traceback" not in err and "never retrieved" not in err


@pytest.mark.parametrize("kind", ["silent", "drip"])
def test_ctrl_c_stops_long_before_the_request_deadline_whatever_the_server_does(tmp_path, kind):
    with SERVERS[kind]() as srv:
        proc = start_cli(tmp_path, srv.url, "--request-timeout", "120")
        deadline = time.monotonic() + 60
        while srv.connections < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(0.5)  # the questions are on the wire, the server holds them
        assert proc.poll() is None
        sent = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=90)  # longer than the bound below, so the bound is what fails
        took = time.monotonic() - sent
    assert proc.returncode == 130, err
    # ~2 s on an idle machine (the quiet spell of 1 s); the bound is a quarter of the 120 s request deadline,
    # so a loaded machine does not fail it and a run that waits for the deadline does
    assert took < 30, took
    assert "interrupted; re-run the same command to resume" in err
    assert "Traceback" not in err and "never retrieved" not in err and "Task exception" not in err, err
