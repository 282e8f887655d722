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


def test_the_ctrl_c_line_says_resume_only_when_something_was_kept():
    from negvocab.cli.app import interrupted_line
    from negvocab.progress import forget_kept, note_kept

    forget_kept()
    assert interrupted_line() == "interrupted; nothing was kept (no work had finished): a re-run starts over"
    note_kept("text embeddings in the cache", 4096)
    note_kept("text embeddings in the cache", 512)
    assert interrupted_line() == "interrupted; re-run the same command to resume (kept: 4,608 text embeddings in the cache)"
    forget_kept()


def test_an_interrupted_command_before_any_work_says_nothing_was_kept(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import negvocab.cli.build_offline as cmd
    from negvocab.cli import app

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "a.png").write_bytes(b"x")
    (tmp_path / "pool.txt").write_text("aurora\ncanyon\n", encoding="utf-8")

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmd, "load_vlm", ctrl_c)  # Ctrl-C while the model loads: nothing done yet
    r = CliRunner().invoke(app, ["build", "mined", "--random-weights", "--images", str(tmp_path / "s"), "--pool", str(tmp_path / "pool.txt"), "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 130 and "nothing was kept" in r.stderr and "resume" not in r.stderr, r.output
