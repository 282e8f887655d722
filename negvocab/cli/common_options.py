"""Typer options that several command modules share, declared once (the model options are in
:mod:`negvocab.cli.options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["OutOpt"]

#: the vocabulary file every ``negvocab build`` command writes
OutOpt = Annotated[
    Path, typer.Option("--output", "-o", help="Vocabulary file to write (.json; .txt writes one label a line).")
]
