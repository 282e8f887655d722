"""Typer options that several command modules share, declared once (the model options are in
:mod:`negvocab.cli.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["OutOpt", "PrintedOutputOpt", "SynonymFilterOpt"]

#: the vocabulary file every ``negvocab build`` command writes
OutOpt = Annotated[
    Path, typer.Option("--output", "-o", help="Vocabulary file to write (.json; .txt writes one label a line).")
]
#: the file a command that prints its document writes instead (``-`` prints too)
PrintedOutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="File to write (default: print it; - also prints).")
]
#: the synonym filter of the builders that take it (on by default)
SynonymFilterOpt = Annotated[
    bool,
    typer.Option("--synonym-filter/--no-synonym-filter", help="Drop labels naming an ID class or its synonyms."),
]
