"""Command-line interface: ``negvocab <command>``; see ``negvocab --help``."""

from __future__ import annotations

import importlib

from negvocab.cli.app import app, build_app

# one module per topic; importing registers its commands on ``app`` / ``build_app``
_COMMAND_MODULES = ("labels", "build_wordnet", "build_llm", "score", "demo")
for _name in _COMMAND_MODULES:
    try:
        importlib.import_module(f"negvocab.cli.{_name}")
    except ModuleNotFoundError as e:  # module not written yet during development
        if e.name != f"negvocab.cli.{_name}":
            raise

__all__ = ["app", "build_app", "main"]


def main() -> None:
    """Entry point of the ``negvocab`` console script."""
    app(prog_name="negvocab")
