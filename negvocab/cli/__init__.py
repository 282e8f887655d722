"""Command-line interface: ``negvocab <command>``; see ``negvocab --help``.

Importing this package imports no command: each command's module is imported when it runs (the
table of :mod:`negvocab.cli.commands`); :func:`load_commands` imports them all.
"""

from __future__ import annotations

import importlib

from negvocab.cli.app import app, build_app, import_build_commands
from negvocab.cli.commands import COMMANDS, builders_known

__all__ = ["app", "build_app", "load_commands", "main"]


def load_commands() -> None:
    """Import every command's module, so that ``app`` holds every command (as typer builds it into a
    click group: ``typer.main.get_command(app).commands``), the generated ``build`` ones included."""
    for module in dict.fromkeys(c.module for c in COMMANDS.values()):
        importlib.import_module(module)
    import_build_commands()


def main() -> None:
    """Entry point of the ``negvocab`` console script. Plug-ins are loaded with the app
    (:mod:`negvocab.cli.app`); one that registered a builder gets its ``build`` command, and its name
    in the ``build`` help, before any help is written."""
    if not builders_known():
        import_build_commands()
    app(prog_name="negvocab")
