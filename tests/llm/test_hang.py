"""Servers that hang, never accept or drip bytes: a total deadline per request, a heartbeat, Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from negvocab import build_gpt_vocabulary
from negvocab.core.errors import ResourceError
from tests.llm.bad_servers import DripServer, FullBacklog, SilentServer
from tests.llm.conftest import DUMMY_KEY, FAST

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]
SERVERS = {"silent": SilentServer, "drip": lambda: DripServer(every=0.3), "never_accepts": FullBacklog}


@pytest.mark.parametrize("kind", list(SERVERS))
def test_a_stuck_server_is_given_up_on_within_the_request_deadline(tmp_path, synonym_filter, kind):
    with SERVERS[kind]() as srv:
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
    msg = str(e.value)
    assert "\n" not in msg and "the server never answered" in msg
    assert "1.5 s request deadline (--request-timeout) after 1 attempts" in msg or "cannot connect" in msg
    # given up on at the first deadline: no request was sent again (5 classes, each asked at most once)
    assert srv.connections <= 5, srv.connections


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
        proc = start_cli(tmp_path, srv.url, "--request-timeout", "3600")
        deadline = time.monotonic() + 60
        while srv.connections < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(0.5)  # the questions are on the wire, the server holds them
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGINT)
        # ~2 s on an idle machine; a run that waited for the 3600 s request deadline would hang here
        # (communicate's guard, not a timing assertion: any load passes, only a wait for the deadline fails)
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err
    assert "interrupted; re-run the same command to resume" in err
    assert "Traceback" not in err and "never retrieved" not in err and "Task exception" not in err, err
