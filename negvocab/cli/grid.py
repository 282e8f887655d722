"""``negvocab grid run`` and ``negvocab grid status``: experiment grids from a TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.cli.app import CommandGroup, app
from negvocab.errors import InputError
from negvocab.grid.config import load_config
from negvocab.grid.run import (
    SOURCE_FILE,
    claim_grid_folder,
    failure_summary,
    grid_source,
    grid_status,
    read_source,
    run_grid,
    write_grid,
)
from negvocab.grid.tables import RANDOM_NOTE

__all__ = ["SOURCE_FILE", "grid_app", "run_cmd", "status_cmd"]

grid_app = typer.Typer(cls=CommandGroup, help="Experiment grids: models x vocabularies x OOD sets x methods (TOML).", no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(grid_app, name="grid")

#: the ray extra as the help shows it (rich markup would eat a bare [ray])
RAY_EXTRA = "pip install 'negvocab\\[ray]'"


def _default_out(config: Path) -> Path:
    return config.absolute().parent / config.stem


def _report_failures(status: dict) -> None:
    """One line per distinct failure reason, with how many cells it failed."""
    for reason, n in failure_summary(status):
        typer.echo(f"failed: {n} cell{'s' if n != 1 else ''}: {reason}", err=True)


@grid_app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="Grid file (TOML; see examples/grid.toml).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Results folder (default: next to the file, named after it).")] = None,  # noqa: UP045
    engine: Annotated[str, typer.Option("--engine", help=f"local (this process) or ray (a Ray cluster; {RAY_EXTRA}).")] = "local",
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="Address of an existing Ray cluster (default: start a local one for the run).")] = None,  # noqa: UP045
    random_weights: Annotated[bool, typer.Option("--random-weights", help="Every model with RANDOM weights (a dry run; numbers meaningless).")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace another grid's tables in the folder (a run of the same grid resumes there without it).")] = False,
) -> None:
    """Run (or resume) a grid: embed each image set once per model, score every cell, write the
    tidy table (CSV, Parquet), pivots (Markdown, LaTeX), comparisons and M-sweep figures."""
    if engine not in ("local", "ray"):
        raise InputError(f"unknown engine {engine!r}; choose local or ray")
    cfg = load_config(config, random_weights=random_weights)  # every check before the folder or a model
    folder = out or _default_out(config)
    claim = claim_grid_folder(folder, grid_source(cfg, random_weights), overwrite=overwrite)  # held to the last table
    try:
        res = run_grid(cfg, folder, engine=engine, ray_address=ray_address, random_weights=random_weights, on_model=lambda m, s: typer.echo(f"{m}: {s}", err=True))
        write_grid(res, folder, overwrite=True)  # the folder is this grid's now
    finally:
        claim.release()
    st = res.status["total"]
    if res.random_weights:
        typer.secho(f"WARNING: {RANDOM_NOTE}", fg="red", bold=True, err=True)
    typer.echo(f"{len(res.rows)} cells ({st['done']} done, {st['pending']} pending, {st['failed']} failed); wrote {folder}")
    for line in res.comparisons()[:12]:
        typer.echo(f"  {line}")
    if st["failed"]:
        _report_failures(res.status)
        raise typer.Exit(1)


@grid_app.command("status")
def status_cmd(
    target: Annotated[Path, typer.Argument(help="A grid results folder, or the grid file (with -o when its folder is elsewhere).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Results folder of the grid file.")] = None,  # noqa: UP045
    random_weights: Annotated[bool, typer.Option("--random-weights", help="The grid was run with --random-weights (read from the folder when TARGET is one).")] = False,
) -> None:
    """Done / pending / failed cells of a grid, per model (runs nothing)."""
    if target.is_dir():
        doc = read_source(target)
        if doc is None:
            raise InputError(f"{target}: not a grid results folder (no {SOURCE_FILE}); give the grid file and -o")
        cfg, folder = load_config(doc["config"], random_weights=bool(doc.get("random_weights")) or random_weights), target
    else:
        cfg, folder = load_config(target, random_weights=random_weights), out or _default_out(target)
    st = grid_status(cfg, folder)
    typer.echo(f"{'model':<32}{'done':>8}{'pending':>9}{'failed':>8}")
    for model, row in st["models"].items():
        typer.echo(f"{model:<32}{row['done']:>8}{row['pending']:>9}{row['failed']:>8}")
    t = st["total"]
    typer.echo(f"{'total':<32}{t['done']:>8}{t['pending']:>9}{t['failed']:>8}")
    for reason, n in failure_summary(st):
        typer.echo(f"failed: {n} cell{'s' if n != 1 else ''}: {reason}")
