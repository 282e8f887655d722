"""An empty path is refused everywhere a path is taken, never read as the working folder."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from negvocab.cli import app, load_commands
from negvocab.cli.app import _takes_paths


def _commands(group, path=()):
    """(command path, command) for every leaf command of the app."""
    ctx = group.make_context("negvocab", [], resilient_parsing=True)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if hasattr(cmd, "list_commands"):
            yield from _commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def _cases():
    load_commands()  # every command, not only those imported so far
    root = typer.main.get_command(app)
    out = []
    for path, cmd in _commands(root):
        positional = [p for p in cmd.params if not getattr(p, "opts", [""])[0].startswith("-")]
        for param in cmd.params:
            if not _takes_paths(param):
                continue
            flag = param.opts[0]
            if flag.startswith("-"):
                args = [flag, ""]
            else:  # an argument: the ones before it get a harmless value
                args = ["x"] * positional.index(param) + [""]
            out.append(pytest.param([*path, *args], id=" ".join([*path, flag])))
    return out


CASES = _cases()


def test_every_command_taking_a_path_is_covered():
    names = {c.id for c in CASES}
    assert len(CASES) > 40
    for case in ("report DIR", "table folders", "filter --output", "methods --output", "score --vocab"):
        assert any(n.startswith(case.split()[0]) for n in names), case


@pytest.mark.parametrize("args", CASES)
def test_an_empty_path_is_refused_in_one_line(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b").mkdir()  # a sibling folder an empty path would have pulled in
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert "an empty path" in result.output, result.output
    assert "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # nothing written


def test_report_of_a_folder_and_an_empty_one_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", "a", "", "-o", "out.html"])
    assert result.exit_code == 2 and "an empty path" in result.output
    assert not (tmp_path / "out.html").exists()


@pytest.mark.parametrize(
    ("ood", "says"),
    [
        ("openood-near=", "--ood 'openood-near=': an empty data root"),
        ("mine=", "--ood 'mine=': an empty path"),
        ("fi-imagenet-1k=r", "--fi-ood fi_ood.txt"),  # a carve benchmark: not a plain set named after it
    ],
)
def test_score_refuses_an_empty_benchmark_root_and_routes_a_carve(ood, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x.png").write_bytes(b"")  # a plain set would have scored this image
    (tmp_path / "v.txt").write_text("tench\n")
    result = CliRunner().invoke(app, ["score", "-m", "ViT-B-32", "--vocab", "v.txt", "--ood", ood, "-o", "out"])
    assert result.exit_code == 2, result.output
    assert says in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "out").exists()
