"""One CLI vocabulary: every command that writes a file or folder takes it as -o/--output (subsample and
the grid commands took --out, which they still accept)."""

from __future__ import annotations

import typer.main

from negvocab.cli import app, load_commands


def _commands(group, prefix=()):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), cmd


def test_every_output_option_is_dash_o_and_dash_dash_output():
    seen = []
    load_commands()  # every command, not only those imported so far
    for name, cmd in _commands(typer.main.get_command(app)):
        for param in cmd.params:
            opts = set(param.opts) | set(param.secondary_opts)
            if "-o" in opts or "--out" in opts or "--output" in opts:
                seen.append(name)
                assert {"-o", "--output"} <= opts, (name, sorted(opts))
    assert {"subsample", "grid run", "grid status", "score", "build wordnet"} <= set(seen)
