"""The ``negvocab`` command itself, run as a process: version, help, and one-line usage errors."""

from __future__ import annotations

import subprocess
import sys

import negvocab

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def negvocab_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_version_and_bare_groups():
    r = negvocab_cli("--version")
    assert (r.returncode, r.stdout.strip()) == (0, negvocab.__version__)
    r = negvocab_cli("build")  # a group without a command: its help, no error line
    assert r.returncode == 2 and "wordnet" in r.stdout and "error" not in r.stderr


def test_usage_errors_are_one_line_at_every_level():
    for args, where in [(["--bogus"], "negvocab"), (["score", "--bogus"], "negvocab score"), (["build", "wordnet", "--bogus"], "negvocab build wordnet")]:
        r = negvocab_cli(*args)
        assert r.returncode == 2 and r.stdout == "", args
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: No such option: --bogus") and f"(see '{where} --help')" in lines[0], r.stderr
