"""``negvocab benchmarks``: the named OOD benchmarks, their sets and groups, and where each expects its files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.cli.app import app
from negvocab.data.benchmarks import BENCHMARKS, benchmark_table
from negvocab.errors import InputError

__all__ = ["benchmarks_cmd"]


@app.command("benchmarks")
def benchmarks_cmd(
    root: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--root", help="A data root: say for each set whether its list or folder is there."),
    ] = None,
) -> None:
    """List the named OOD benchmarks (--ood BENCHMARK=ROOT) with each set's group and the files it
    expects under ROOT; --root ROOT checks which are there."""
    if root is not None and not root.expanduser().is_dir():
        raise InputError(f"--root {root}: no such folder")
    where = {(b.name, s.name): s.where for b in BENCHMARKS.values() for s in b.sets}
    last = None
    for row in benchmark_table():
        if row["benchmark"] != last:
            last = row["benchmark"]
            bench = BENCHMARKS.get(last)
            head = f"--ood {last}=ROOT" if bench else "(not --ood)"
            typer.echo(f"\n{last}: {bench.title if bench else row['id']}  [{head}]")
            typer.echo(
                f"  ID: {bench.id_set if bench else 'the rest of the validation set (Fi-ImageNet-1k carves it)'}"
            )
        found = ""
        if root is not None and (last, row["set"]) in where:
            found = "  [found]" if (root.expanduser() / where[(last, row["set"])]).exists() else "  [MISSING]"
        typer.echo(f"  {row['set']:<13} {row['group']:<5} {row['expects']}{found}")
        typer.echo(f"  {'':<13} {'':<5} {row['source']}")
    typer.echo("\nResults add near-ood and far-ood mean rows when the OOD sets span both groups; mean averages all.")
