"""``negvocab grid run``, ``negvocab grid status`` and ``negvocab grid plan``: experiment grids from a TOML file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import CommandGroup, app
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import write_text
from negvocab.core.errors import InputError
from negvocab.grid.config import load_config
from negvocab.grid.plan import plan_grid, plan_lines
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
from negvocab.grid.tidy import RANDOM_NOTE

__all__ = ["SOURCE_FILE", "grid_app", "init_cmd", "plan_cmd", "run_cmd", "status_cmd"]

grid_app = typer.Typer(
    cls=CommandGroup,
    help="Experiment grids: models x vocabularies x OOD sets x methods (TOML).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(grid_app, name="grid")

#: the ray extra as the help shows it
RAY_EXTRA = "pip install 'negvocab[ray]'"


def _default_out(config: Path) -> Path:
    return config.absolute().parent / config.stem


def _report_failures(status: dict) -> None:
    """One line per distinct failure reason, with how many cells it failed."""
    for reason, n in failure_summary(status):
        typer.echo(f"failed: {n} cell{'s' if n != 1 else ''}: {reason}", err=True)


@grid_app.command("init")
def init_cmd(
    path: Annotated[Path, typer.Argument(help="Where to write the example grid file.")] = Path("grid.toml"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing file.")] = False,
) -> None:
    """Write the example grid file (2 models x 4 vocabularies x 3 OOD sets x 2 methods), shipped in
    the package: edit its [id] and [ood] paths, then 'negvocab grid run'."""
    check_output(path, overwrite=overwrite)
    with writing(path):
        write_text(path, (resources.files("negvocab") / "resources" / "grid.toml").read_text(encoding="utf-8"))
    typer.echo(f"wrote {path}; edit its [id] and [ood] paths, then: negvocab grid run {path}")


@grid_app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="Grid file (TOML; 'negvocab grid init' writes an example).")],
    out: Annotated[
        Path | None,
        typer.Option("--output", "-o", "--out", help="Results folder (default: next to the file, named after it)."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help=f"local (this process) or ray (a Ray cluster; {RAY_EXTRA}).")
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="Address of an existing Ray cluster (default: start a local one for the run)."
        ),
    ] = None,
    random_weights: Annotated[
        bool, typer.Option("--random-weights", help="Every model with RANDOM weights (a dry run; numbers meaningless).")
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace another grid's tables in the folder (a run of the same grid resumes there without it).",
        ),
    ] = False,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--deterministic",
            help="fp32, deterministic kernels, fixed shards: the same score files on either engine (CPU).",
        ),
    ] = False,
) -> None:
    """Run (or resume) a grid: embed each image set once per model, score every cell, write the
    tidy table (CSV, Parquet), pivots (Markdown, LaTeX), comparisons and M-sweep figures."""
    if engine not in ("local", "ray"):
        raise InputError(f"unknown engine {engine!r}; choose local or ray")
    cfg = load_config(config, random_weights=random_weights)  # every check before the folder or a model
    folder = out or _default_out(config)
    claim = claim_grid_folder(folder, grid_source(cfg, random_weights), overwrite=overwrite)  # held to the last table
    try:
        res = run_grid(
            cfg,
            folder,
            engine=engine,
            ray_address=ray_address,
            random_weights=random_weights,
            on_model=lambda m, s: typer.echo(f"{m}: {s}", err=True),
            deterministic=deterministic,
        )
        write_grid(res, folder, overwrite=True)  # the folder is this grid's now
    finally:
        claim.release()
    st = res.status["total"]
    if res.random_weights:
        typer.secho(f"WARNING: {RANDOM_NOTE}", fg="red", bold=True, err=True)
    typer.echo(
        f"{len(res.rows)} cells ({st['done']} done, {st['pending']} pending, {st['failed']} failed); wrote {folder}"
    )
    for line in res.comparisons()[:12]:
        typer.echo(f"  {line}")
    if st["failed"]:
        _report_failures(res.status)
        raise typer.Exit(1)


@grid_app.command("status")
def status_cmd(
    target: Annotated[
        Path, typer.Argument(help="A grid results folder, or the grid file (with -o when its folder is elsewhere).")
    ],
    out: Annotated[
        Path | None, typer.Option("--output", "-o", "--out", help="Results folder of the grid file.")
    ] = None,
    random_weights: Annotated[
        bool,
        typer.Option(
            "--random-weights", help="The grid was run with --random-weights (read from the folder when TARGET is one)."
        ),
    ] = False,
) -> None:
    """Done / pending / failed cells of a grid, per model (runs nothing)."""
    if target.is_dir():
        doc = read_source(target)
        if doc is None:
            raise InputError(f"{target}: not a grid results folder (no {SOURCE_FILE}); give the grid file and -o")
        cfg, folder = (
            load_config(doc["config"], random_weights=bool(doc.get("random_weights")) or random_weights),
            target,
        )
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


def _sizes(values: list[str]) -> dict[str, int]:
    out = {}
    for v in values:
        name, _, n = v.partition("=")
        if not name or not n.strip().replace(",", "").isdigit():
            raise InputError(f"--size {v!r}: give NAME=N, e.g. --size iNaturalist=10000")
        out[name.strip()] = int(n.strip().replace(",", ""))
    return out


@grid_app.command("plan")
def plan_cmd(
    config: Annotated[Path, typer.Argument(help="Grid file (TOML).")],
    random_weights: Annotated[
        bool,
        typer.Option(
            "--random-weights",
            help="Probe every model with RANDOM weights (no downloads; the costs are the architecture's).",
        ),
    ] = False,
    workers: Annotated[
        str, typer.Option("--workers", help="Numbers of model workers (GPUs) to estimate for, comma-separated.")
    ] = "1,8,64",
    size: Annotated[
        list[str] | None,
        typer.Option(
            "--size", help="NAME=N: the images of a set or the labels of a vocabulary file not on disk (repeatable)."
        ),
    ] = None,
    probe: Annotated[
        bool, typer.Option("--probe/--no-probe", help="Load each model and time a few batches (default) or only count.")
    ] = True,
) -> None:
    """Units, images and labels to encode, what the cache holds, and a time estimate from a short
    measured probe per model (runs nothing of the grid, writes nothing)."""
    try:
        counts = [int(x) for x in workers.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise InputError(f"--workers {workers!r}: give positive whole numbers, e.g. 1,8,64")
    cfg = load_config(config, random_weights=random_weights)
    plans, notes = plan_grid(cfg, sizes=_sizes(size or []), probe=probe)
    for line in [*notes, *plan_lines(plans, counts, random_weights=random_weights)]:
        typer.echo(line)
