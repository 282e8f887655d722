"""``negvocab report``: the HTML report of a results folder; the work is in :mod:`negvocab.report.html`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.cli.app import app
from negvocab.cli.options import (
    OverwriteOpt,
)
from negvocab.cli.outputs import check_output, writing
from negvocab.errors import InputError
from negvocab.report.html import write_report

__all__ = ["report_cmd"]


@app.command("report")
def report_cmd(
    results_dir: Annotated[Path, typer.Argument(help="A folder written by negvocab score, sweep or coverage.")],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", help="HTML file to write (default: RESULTS_DIR/report.html)."),
    ] = None,
    key: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--run", help="The run whose images make the cards, as method@vocabulary (default: the first with a vocabulary)."),
    ] = None,
    max_cards: Annotated[int, typer.Option("--max-cards", help="Most evading OOD images shown (worst first).")] = 200,
    max_flagged: Annotated[int, typer.Option("--max-flagged", help="Most flagged ID images shown (worst first).")] = 100,
    overwrite: OverwriteOpt = False,
) -> None:
    """One self-contained HTML report: results with CIs, sweep plot, evading OOD images, coverage."""
    if max_cards < 0 or max_flagged < 0:
        raise InputError("--max-cards and --max-flagged must be >= 0")
    out = output or results_dir / "report.html"
    check_output(out, overwrite=overwrite)
    with writing(out):
        path = write_report(results_dir, out, key=key, max_cards=max_cards, max_flagged=max_flagged)
    typer.echo(f"wrote {path}")


