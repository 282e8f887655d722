"""The ``negvocab`` command itself, run as a process: version, help, and one-line usage errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import negvocab

ROOT = Path(__file__).resolve().parents[2]

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def negvocab_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_version_and_bare_groups():
    r = negvocab_cli("--version")
    assert (r.returncode, r.stdout.strip()) == (0, negvocab.__version__)
    r = negvocab_cli("build")  # a group without a command: its help, no error line
    assert r.returncode == 2 and "wordnet" in r.stdout and "error" not in r.stderr


def test_usage_errors_are_one_line_at_every_level():
    for args, where in [
        (["--bogus"], "negvocab"),
        (["score", "--bogus"], "negvocab score"),
        (["build", "wordnet", "--bogus"], "negvocab build wordnet"),
    ]:
        r = negvocab_cli(*args)
        assert r.returncode == 2 and r.stdout == "", args
        lines = r.stderr.strip().splitlines()
        # click's wording differs by version: "No such option: --bogus (Possible options: ...)" (8.5),
        # "No such option '--bogus'. Did you mean ...?" (the lower-bound check's typer 0.16 with click 8.4)
        assert (
            len(lines) == 1
            and re.match(r"error: No such option:? '?--bogus\b", lines[0])
            and f"(see '{where} --help')" in lines[0]
        ), r.stderr


def test_the_ctrl_c_line_says_resume_only_when_something_was_kept():
    from negvocab.cli.app import interrupted_line
    from negvocab.core.progress import forget_kept, note_kept

    forget_kept()
    assert interrupted_line() == "interrupted; nothing was kept (no work had finished): a re-run starts over"
    note_kept("text embeddings in the cache", 4096)
    note_kept("text embeddings in the cache", 512)
    assert (
        interrupted_line()
        == "interrupted; re-run the same command to resume (kept: 4,608 text embeddings in the cache)"
    )
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
    r = CliRunner().invoke(
        app,
        [
            "build",
            "mined",
            "--random-weights",
            "--images",
            str(tmp_path / "s"),
            "--pool",
            str(tmp_path / "pool.txt"),
            "-o",
            str(tmp_path / "m.json"),
        ],
    )
    assert r.exit_code == 130 and "nothing was kept" in r.stderr and "resume" not in r.stderr, r.output


def _commands() -> list[str]:
    import typer

    from negvocab.cli import app, load_commands

    load_commands()  # every command, not only those imported so far
    out: list[str] = []

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            if hasattr(cmd, "commands"):
                walk(cmd, [*prefix, name])
            else:
                out.append(" ".join([*prefix, name]))

    walk(typer.main.get_command(app), [])
    return out


def test_every_command_has_examples_in_its_help_that_name_it_and_its_options():
    from typer.testing import CliRunner

    from negvocab.cli import app
    from negvocab.cli.examples import EXAMPLES

    commands = _commands()
    assert len(commands) >= 25 and set(commands) == set(EXAMPLES)
    runner = CliRunner()
    for path in commands:
        r = runner.invoke(app, [*path.split(), "--help"], terminal_width=200)
        assert r.exit_code == 0 and "Examples:" in r.stdout, path
        for example in EXAMPLES[path]:
            words = example.split()
            assert (
                " ".join(words[: len(path.split()) + 1 + ("-q" in words[1:2])]).replace("-q ", "") == f"negvocab {path}"
            ), example
            assert example in " ".join(r.stdout.split()), (path, example)
            for flag in (w.split("=")[0] for w in words if w.startswith("--")):
                assert flag in r.stdout, (path, flag)  # every option an example uses exists


def test_shell_completion_is_on():
    r = negvocab_cli("--help")
    assert r.returncode == 0 and "--install-completion" in r.stdout and "--show-completion" in r.stdout


def test_demo_n_candidates_is_a_number_and_pool_is_not_shown():
    import os

    env = {**os.environ, "COLUMNS": "200"}
    r = subprocess.run([*CLI, "demo", "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert "--n-candidates" in r.stdout and not re.search(r"--pool\b(?!-)", r.stdout)
    r = subprocess.run([*CLI, "build", "wordnet", "--help"], capture_output=True, text=True, timeout=60, env=env)
    assert "--candidates" in r.stdout and "--pool" in r.stdout  # there --pool names candidates


def test_grid_init_writes_the_shipped_example(tmp_path):
    r = subprocess.run([*CLI, "grid", "init", "g.toml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and (tmp_path / "g.toml").read_text(encoding="utf-8") == (
        ROOT / "examples" / "grid.toml"
    ).read_text(encoding="utf-8")
    r = subprocess.run([*CLI, "grid", "init", "g.toml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == (
        "error: g.toml exists; give --overwrite to replace it, or another output file"  # the one output rule
    )


def test_demo_pool_and_pool_size_are_still_read_as_n_candidates(tmp_path):
    """The old spelling keeps working for a release: the same check (before any model loads) sees its value."""
    for flag in ("--n-candidates", "--pool-size", "--pool"):
        r = negvocab_cli("demo", "--random-weights", flag, "1", "-o", str(tmp_path / "d"))
        assert r.returncode == 2 and r.stderr.strip().endswith(
            "error: --n-candidates must be >= 2 WordNet candidates, got 1"
        ), r.stderr
        assert ("now --n-candidates" in r.stderr) == (flag == "--pool")
