"""``negvocab benchmarks``: the registered OOD benchmarks, their sets and groups, and where each expects its files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import BenchmarkSet, benchmark_table, get_benchmark

__all__ = ["benchmarks_cmd"]


@app.command("benchmarks")
def benchmarks_cmd(
    root: Annotated[
        Path | None, typer.Option("--root", help="A data root: say for each set whether its list or folder is there.")
    ] = None,
) -> None:
    """List the named OOD benchmarks (--ood BENCHMARK=ROOT; then --id may be left out: the benchmark's
    own ID set is used) with each set's group and the files it expects under ROOT; --root ROOT checks
    which are there."""
    if root is not None and not root.expanduser().is_dir():
        raise InputError(f"--root {root}: no such folder")
    last = None
    for row in benchmark_table():
        bench = get_benchmark(row["benchmark"])
        if bench.name != last:
            last = bench.name
            carve = bench.kind == "carve"
            head = "carved: given as below, not --ood" if carve else f"--ood {last}=ROOT"
            typer.echo(f"\n{last}: {bench.title}  [{head}]")
            typer.echo(f"  ID: {bench.id_set}{_found(root, bench.id) if not carve else ''}")
            for cs in bench.csid:
                typer.echo(f"  ID (covariate-shifted) {cs.name}: {cs.expects()}{_found(root, cs)}")
            if bench.classes:
                typer.echo(f"  ID classes: {bench.classes} ({bench.classes_source()})")
        found = ""
        spec = next(s for s in bench.sets if s.name == row["set"])
        if bench.kind == "sets":
            found = _found(root, spec)
        typer.echo(f"  {row['set']:<13} {row['group']:<5} {row['expects']}{found}")
        typer.echo(f"  {'':<13} {'':<5} {row['source']}")
    typer.echo("\nResults add near-ood and far-ood mean rows when the OOD sets span both groups; mean averages all.")


def _found(root: Path | None, spec: BenchmarkSet | None) -> str:
    """ "  [found]" or "  [MISSING]" for a set's list or folder under ``root`` ("" without a root); a table's
    other files (joined tables, class names) that are missing are named."""
    if root is None or spec is None:
        return ""
    if not (root.expanduser() / spec.where).exists():
        return "  [MISSING]"
    missing = [p for p in spec.needs()[1:] if not (root.expanduser() / p).exists()]
    return f"  [found; MISSING {', '.join(missing)}]" if missing else "  [found]"
