"""Command-line interface: ``negvocab <command>``; see ``negvocab --help``."""

from __future__ import annotations

# Importing a topic module registers its commands on ``app`` / ``build_app``.
from negvocab.cli import (  # noqa: F401
    benchmarks,
    build_generic,
    build_llm,
    build_offline,
    build_wordnet,
    cache,
    coverage,
    demo,
    discover,
    embed,
    grid,
    labels,
    labelspace,  # part "labelspace" (issue 31): map-classes
    published,  # part "tanl" (issue 30): the anchors' published figures
    report,
    score,
    subsample,
    table,
)
from negvocab.cli.app import EXIT_USER_ERROR, app, build_app
from negvocab.errors import NegvocabError

__all__ = ["app", "build_app", "main"]

build_generic.add_builder_commands(plugins=False)  # builders registered before the CLI was imported


def main() -> None:
    """Entry point of the ``negvocab`` console script: plug-ins' builders get their commands first."""
    import sys

    try:
        build_generic.add_builder_commands()
    except NegvocabError as e:  # a plug-in that does not import: one line, no traceback
        if not any(a in ("--help", "-h", "--version") for a in sys.argv[1:]) and sys.argv[1:]:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(EXIT_USER_ERROR) from None
        build_generic.add_builder_commands(plugins=False)  # help still helps: the app warns once
    app(prog_name="negvocab")
