"""Command-line interface: ``negvocab <command>``; see ``negvocab --help``."""

from __future__ import annotations

# Importing a topic module registers its commands on ``app`` / ``build_app``.
from negvocab.cli import (  # noqa: F401
    benchmarks,
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
    report,
    score,
    subsample,
    table,
)
from negvocab.cli.app import app, build_app

__all__ = ["app", "build_app", "main"]


def main() -> None:
    """Entry point of the ``negvocab`` console script."""
    app(prog_name="negvocab")
