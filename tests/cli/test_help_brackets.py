"""Every command's --help shows its help texts as declared: square brackets ("edit its [id] and [ood]
paths", "[published: PAPER]") are text, not Rich markup tags that the help would drop."""

from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

from negvocab.cli import app

runner = CliRunner()


def _commands(group, ctx, path=()):
    """(path, command) of every command under ``group``, its sub-groups' too."""
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or getattr(cmd, "hidden", False):
            continue
        if isinstance(cmd, typer.core.TyperGroup):
            yield from _commands(cmd, typer.Context(cmd, info_name=name, parent=ctx), (*path, name))
        else:
            yield (*path, name), cmd


def _flat(text):
    """``text`` as words: Rich's box lines gone, whitespace made one space."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_every_help_text_is_shown_as_declared():
    root = typer.main.get_command(app)
    commands = list(_commands(root, typer.Context(root, info_name="negvocab")))
    assert len(commands) > 20 and ("grid", "init") in [p for p, _ in commands]
    missing = []
    for path, cmd in commands:
        r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "3000"})
        assert r.exit_code == 0, (path, r.output)
        shown = _flat(r.stdout)
        texts = [cmd.help.partition("\f")[0].split("\n\n")[0]] if cmd.help else []
        texts += [p.help for p in cmd.params if p.help and not getattr(p, "hidden", False)]
        missing += [f"{' '.join(path)}: {t!r}" for t in texts if _flat(t) not in shown]
    assert not missing, "\n".join(missing)


def test_the_brackets_that_were_dropped_show():
    r = runner.invoke(app, ["grid", "init", "--help"], env={"COLUMNS": "3000"})
    assert "edit its [id] and [ood] paths" in _flat(r.stdout)
    r = runner.invoke(app, ["table", "--help"], env={"COLUMNS": "3000"})
    assert "marked [published: PAPER, KIND]" in _flat(r.stdout)
    r = runner.invoke(app, ["grid", "run", "--help"], env={"COLUMNS": "3000"})
    assert "pip install 'negvocab[ray]'" in _flat(r.stdout) and "\\[" not in r.stdout
