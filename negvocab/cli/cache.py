"""``negvocab cache``: what the embedding cache holds, and clearing it."""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.options import CacheDirOpt
from negvocab.core.errors import InputError
from negvocab.core.paths import cache_dir as default_cache_dir
from negvocab.vlm.cache import list_stores, remove_store

__all__ = ["cache"]


def _can_ask() -> bool:
    return sys.stdin.isatty()


@app.command("cache")
def cache(
    cache_dir: CacheDirOpt = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only the stores of this model name.")] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Delete the stores listed (all, or those of --model).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --clear: do not ask for confirmation.")] = False,
) -> None:
    """List the embedding stores (model, weights fingerprint, activation, kind, precision, image
    preprocessing, templates, rows, size); --clear deletes them."""
    root = cache_dir.expanduser() if cache_dir is not None else default_cache_dir() / "embeddings"
    if root.exists() and not root.is_dir():
        raise InputError(f"--cache-dir {root} is a file; give the embedding cache folder")
    if cache_dir is not None and not list_stores(root) and list_stores(root / "embeddings"):
        root = root / "embeddings"  # given the cache root ($NEGVOCAB_CACHE_DIR) rather than its embeddings/
    stores = [s for s in list_stores(root) if model is None or s.model == model]
    if not stores:
        typer.echo(f"{root}: no embedding stores" + (f" of {model}" if model else ""))
        return
    for s in stores:
        ident = s.key_doc.get("model", {})
        templates = s.key_doc.get("templates")
        what = f"{len(templates)} template{'s' * (len(templates) != 1)}" if isinstance(templates, list) else ""
        weights = str(ident.get("weights", "?")).split(":")[-1][:12]
        act = "QuickGELU" if ident.get("quick_gelu") else "GELU"
        pp = ident.get("preprocessing")
        pp_id = f"pp {hashlib.sha256(json.dumps(pp, sort_keys=True).encode()).hexdigest()[:6]}" if pp else ""
        typer.echo(
            f"{s.folder.relative_to(root)}  {s.model:<24} weights {weights:<12} "
            f"{act:<9} {s.kind:<12} {ident.get('precision', '?'):<5} "
            f"{pp_id:<9} {what:<13} {s.rows:>9,} rows {s.bytes / 2**20:>9.1f} MiB"
        )
    total = sum(s.bytes for s in stores)
    typer.echo(f"{len(stores)} stores, {total / 2**20:.1f} MiB in {root}")
    if clear:
        if not yes and not _can_ask():
            raise InputError("--clear asks before deleting; without a terminal to ask on, add --yes")
        if not yes and not typer.confirm(f"delete these {len(stores)} stores?", default=False, err=True):
            typer.echo("nothing deleted")
            return
        for s in stores:
            remove_store(s)
        typer.echo(f"cleared {len(stores)} stores ({total / 2**20:.1f} MiB)")
