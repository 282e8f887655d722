"""``negvocab report``: one HTML page over one or more results folders (score, sweep, coverage, grid);
the work is in :mod:`negvocab.report.html`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.options import (
    OverwriteOpt,
)
from negvocab.cli.outputs import check_output, writing
from negvocab.core.errors import InputError
from negvocab.report.html import study_folders, write_report

__all__ = ["report_cmd"]


@app.command("report")
def report_cmd(
    results_dirs: Annotated[
        list[Path],
        typer.Argument(
            help=(
                "Folders written by negvocab score, sweep, coverage or grid "
                "(a folder holding such folders counts as all of them)."
            ),
            metavar="DIR...",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="HTML file to write (default: DIR/report.html for one results folder; needed for several).",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="The run whose images make the cards, as method@vocabulary (default: the first with a vocabulary).",
        ),
    ] = None,
    max_cards: Annotated[int, typer.Option("--max-cards", help="Most evading OOD images shown (worst first).")] = 200,
    max_flagged: Annotated[
        int, typer.Option("--max-flagged", help="Most flagged ID images shown (worst first).")
    ] = 100,
    overwrite: OverwriteOpt = False,
) -> None:
    """One self-contained HTML page: results with CIs, score distributions and ROC, sweep plots,
    evading OOD images, coverage; one section per results folder, with a table of contents."""
    if max_cards < 0 or max_flagged < 0:
        raise InputError("--max-cards and --max-flagged must be >= 0")
    folders = study_folders(results_dirs)
    if output is None and len(folders) > 1:
        raise InputError(
            f"{len(folders)} results folders make one page: give it a file name with -o (e.g. -o study.html)"
        )
    out = output or folders[0] / "report.html"
    check_output(out, inputs=[*results_dirs, *folders], overwrite=overwrite)
    with writing(out):
        path = write_report(results_dirs, out, key=key, max_cards=max_cards, max_flagged=max_flagged)
    typer.echo(f"wrote {path}")
