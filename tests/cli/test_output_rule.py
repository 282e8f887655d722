"""One output rule for every command that writes (issue 34): an output that is one of the command's
inputs is refused even with --overwrite, an existing file needs --overwrite, a folder is refused."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from tests.report.test_tables import _score_folder


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _refused(result, says):
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output, result.output


@pytest.fixture
def run(tmp_path):
    return _score_folder(tmp_path, np.random.default_rng(1))[0]


@pytest.mark.parametrize("name", ["results.json", "scores.npz"])
@pytest.mark.parametrize("command", [["report"], ["table", "--rows", "vocabulary", "--where", "method=neglabel"]])
def test_an_input_of_the_command_is_never_its_output(run, command, name):
    before = (run / name).read_bytes()
    _refused(_run(command[0], run, *command[1:], "-o", run / name, "--overwrite"), "it is an input of this command")
    assert (run / name).read_bytes() == before


def test_a_file_beside_the_inputs_is_written_and_then_needs_overwrite(run):
    args = ["table", run, "--rows", "vocabulary", "--where", "method=neglabel", "-o", run / "table.md"]
    assert _run(*args).exit_code == 0 and (run / "table.md").read_text().startswith("| vocabulary")
    _refused(_run(*args), "exists; give --overwrite")
    assert _run(*args, "--overwrite").exit_code == 0


@pytest.mark.parametrize(
    "command",
    [["methods", "-o"], ["methods", "-s", "Metrics", "-o"], ["grid", "init"]],
)
def test_every_writer_takes_the_overwrite_rule(tmp_path, command):
    out = tmp_path / "out.txt"
    out.write_text("mine\n")
    _refused(_run(*command, out), "exists; give --overwrite")
    assert out.read_text() == "mine\n"
    assert _run(*command, out, "--overwrite").exit_code == 0 and out.read_text() != "mine\n"
    _refused(_run(*command, tmp_path), "it is a folder")
    _refused(_run(*command, tmp_path / "out.txt" / "x"), "is not a folder")
