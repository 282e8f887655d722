"""``negvocab grid run`` and ``negvocab grid status``: experiment grids from a TOML file."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.atomic import write_json, write_text
from negvocab.cli.app import CommandGroup, app
from negvocab.errors import InputError
from negvocab.grid.config import load_config
from negvocab.grid.run import grid_status, run_grid
from negvocab.grid.tables import RANDOM_NOTE

__all__ = ["SOURCE_FILE", "grid_app", "init_cmd", "run_cmd", "status_cmd"]

grid_app = typer.Typer(cls=CommandGroup, help="Experiment grids: models x vocabularies x OOD sets x methods (TOML).", no_args_is_help=True, pretty_exceptions_enable=False)
app.add_typer(grid_app, name="grid")

SOURCE_FILE = "grid_source.json"


def _default_out(config: Path) -> Path:
    return config.absolute().parent / config.stem


@grid_app.command("init")
def init_cmd(
    path: Annotated[Path, typer.Argument(help="Where to write the example grid file.")] = Path("grid.toml"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing file.")] = False,
) -> None:
    """Write the example grid file (2 models x 4 vocabularies x 3 OOD sets x 2 methods), shipped in
    the package: edit its [id] and [ood] paths, then 'negvocab grid run'."""
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; give --overwrite to replace it")
    write_text(path, (resources.files("negvocab") / "resources" / "grid.toml").read_text(encoding="utf-8"))
    typer.echo(f"wrote {path}; edit its [id] and [ood] paths, then: negvocab grid run {path}")


@grid_app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="Grid file (TOML; 'negvocab grid init' writes an example).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Results folder (default: next to the file, named after it).")] = None,  # noqa: UP045
    engine: Annotated[str, typer.Option("--engine", help="local (this process) or ray (a Ray cluster; pip install 'negvocab[ray]').")] = "local",
    ray_address: Annotated[Optional[str], typer.Option("--ray-address", help="Address of an existing Ray cluster (default: start a local one for the run).")] = None,  # noqa: UP045
    random_weights: Annotated[bool, typer.Option("--random-weights", help="Every model with RANDOM weights (a dry run; numbers meaningless).")] = False,
) -> None:
    """Run (or resume) a grid: embed each image set once per model, score every cell, write the
    tidy table (CSV, Parquet), pivots (Markdown, LaTeX), comparisons and M-sweep figures."""
    cfg = load_config(config, random_weights=random_weights)
    folder = out or _default_out(config)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / SOURCE_FILE, {"config": str(config.absolute()), "random_weights": random_weights})
    res = run_grid(cfg, folder, engine=engine, ray_address=ray_address, on_model=lambda m, s: typer.echo(f"{m}: {s}", err=True))
    res.write(folder)
    st = res.status["total"]
    if res.random_weights:
        typer.secho(f"WARNING: {RANDOM_NOTE}", fg="red", bold=True, err=True)
    typer.echo(f"{len(res.rows)} cells ({st['done']} done, {st['pending']} pending, {st['failed']} failed); wrote {folder}")
    for line in res.comparisons()[:12]:
        typer.echo(f"  {line}")
    if st["failed"]:
        for f in res.status["failed"][:5]:
            typer.echo(f"failed: {' / '.join(f['cell'])}: {f['error']}", err=True)
        raise typer.Exit(1)


@grid_app.command("status")
def status_cmd(
    target: Annotated[Path, typer.Argument(help="A grid results folder, or the grid file (with -o when its folder is elsewhere).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Results folder of the grid file.")] = None,  # noqa: UP045
) -> None:
    """Done / pending / failed cells of a grid, per model (runs nothing)."""
    if target.is_dir():
        src = target / SOURCE_FILE
        if not src.is_file():
            raise InputError(f"{target}: not a grid results folder (no {SOURCE_FILE}); give the grid file and -o")
        doc = json.loads(src.read_text(encoding="utf-8"))
        cfg, folder = load_config(doc["config"], random_weights=bool(doc.get("random_weights"))), target
    else:
        cfg, folder = load_config(target), out or _default_out(target)
    st = grid_status(cfg, folder)
    typer.echo(f"{'model':<32}{'done':>8}{'pending':>9}{'failed':>8}")
    for model, row in st["models"].items():
        typer.echo(f"{model:<32}{row['done']:>8}{row['pending']:>9}{row['failed']:>8}")
    t = st["total"]
    typer.echo(f"{'total':<32}{t['done']:>8}{t['pending']:>9}{t['failed']:>8}")
    for f in st["failed"][:10]:
        typer.echo(f"failed: {' / '.join(f['cell'])}: {f['error']}")
