"""``negvocab build NAME`` for a builder of a plug-in (tests/plugins/toy_builder.py): a command generated from
its options model, seen by the CLI through $NEGVOCAB_PLUGINS; bad options and plug-ins are one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.cli.build_generic import add_builder_commands

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def _cli(*args: str, plugins: str = "tests.plugins.toy_builder") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NEGVOCAB_PLUGINS": plugins, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


@pytest.fixture
def toy_command():
    """``build toy`` on this process's app, removed afterwards (other tests see the built-ins only)."""
    from tests.plugins import toy_builder

    toy_builder.unregister()  # an earlier test in this worker may have left a ``build toy`` command
    add_builder_commands(plugins=False)  # the built-ins' commands (made on first use since issue 31)
    toy_builder.register()
    assert add_builder_commands() == ["toy"]
    yield
    toy_builder.unregister()


def test_the_cli_sees_a_builder_named_in_the_environment(tmp_path):
    r = _cli("build", "--help")
    # the built-ins first (later parts add theirs after mined), then the plug-in's
    assert r.returncode == 0 and "(wordnet, gpt, eoe, oracle, siblings, mined, " in r.stdout, r.stderr
    assert ", toy)" in r.stdout
    r = _cli("build", "toy", "--help")
    assert r.returncode == 0 and "Examples:" in r.stdout
    for flag in ("--stride", "--words", "--id-classes", "--templates", "--random-weights", "--output"):
        assert flag in r.stdout, flag
    assert "keep every stride-th ranked word" in r.stdout  # the help is the field's description
    out = tmp_path / "t.json"
    r = _cli("build", "toy", "--stride", "9", "-o", str(out))
    assert r.returncode == 2 and not out.exists()
    assert (
        r.stderr.strip()
        == "error: builder 'toy': --stride = 9: must be an integer between 1 and 5 (keep every stride-th ranked word)"
    )
    r = _cli("build", "--help", plugins="")  # without the plug-in: no such command
    assert r.returncode == 0 and "toy" not in r.stdout


def test_a_plugin_that_does_not_import_is_one_line_and_help_still_helps():
    line = (
        "plug-in 'tests.plugins.no_such_module' ($NEGVOCAB_PLUGINS) failed to import: "
        "ModuleNotFoundError: No module named 'tests.plugins.no_such_module'"
    )
    r = _cli("build", "wordnet", "-o", "x.json", plugins="tests.plugins.no_such_module")  # a command: stops
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [f"error: {line}"]
    r = _cli("build", "--help", plugins="tests.plugins.no_such_module")  # help: a warning, then the help
    assert r.returncode == 0 and "Traceback" not in r.stderr and "wordnet" in r.stdout
    assert r.stderr.strip().splitlines() == [f"warning: {line}; what it registers is missing below"]


def test_the_generated_command_builds_and_records_the_source(toy_command, model_args, tmp_path):
    words = ["sofa", "mountain", "cloud", "bridge", "violin"]
    out = tmp_path / "toy.json"
    argv = ["build", "toy", *model_args, "--stride", "2", *[a for w in words for a in ("--words", w)], "-o", str(out)]
    r = CliRunner().invoke(app, argv)
    assert r.exit_code == 0, r.output
    assert f"wrote {out}: 3 toy labels (RANDOM weights: not a real vocabulary)" in r.output
    doc = json.loads(out.read_text())
    assert doc["source"] == "toy" and doc["settings"]["stride"] == 2
    assert len(doc["labels"]) == 3 and set(doc["labels"]) <= set(words)
    r = CliRunner().invoke(app, argv)  # the output rules of every command: no silent replacement
    assert r.exit_code == 2 and "--overwrite" in r.output
    r = CliRunner().invoke(app, ["build", "toy", "--words", "a", "--stride", "0", "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and r.output.strip().splitlines() == [
        "error: builder 'toy': --stride = 0: must be an integer between 1 and 5 (keep every stride-th ranked word)"
    ]
