"""``negvocab subsample``: the OOD-subsampling analysis on a results folder's stored per-image scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.atomic import write_json, write_text
from negvocab.cli.app import app
from negvocab.cli.outputs import check_results_folder, writing
from negvocab.errors import InputError
from negvocab.evaluation.subsample import plot_subsample, subsample
from negvocab.textfiles import csv_text

__all__ = ["read_scores", "subsample_cmd"]


def read_scores(path: Path) -> tuple[dict[str, object], dict[str, object], bool]:
    """(ID scores, OOD scores, random_weights) by score key from ``scores.npz`` (or a results folder
    holding one); the top-k bound arrays (``key/lower``...) are left out."""
    import numpy as np

    file = path / "scores.npz" if path.is_dir() else path
    if not file.is_file():
        raise InputError(f"{file}: no scores file; give a results folder of `negvocab score` or its scores.npz")
    try:
        data = np.load(file, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"{file}: not a readable scores.npz ({e})") from e
    keys = [k[3:] for k in data.files if k.startswith("id/") and "/" not in k[3:]]
    if not keys:
        raise InputError(f"{file}: holds no per-image scores (id/<method>... arrays)")
    random = bool(data["random_weights"]) if "random_weights" in data.files else False
    return {k: data[f"id/{k}"] for k in keys}, {k: data[f"ood/{k}"] for k in keys}, random


@app.command("subsample")
def subsample_cmd(
    scores: Annotated[Path, typer.Argument(help="Results folder of `negvocab score` (or its scores.npz).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (subsample.csv, subsample.json, the plot).")],
    sizes: Annotated[str, typer.Option("--sizes", help="Subset sizes n, comma-separated (e.g. 50,100,200,655).")] = "655",
    draws: Annotated[int, typer.Option("--draws", help="Draws without replacement per size.")] = 1000,
    convention: Annotated[str, typer.Option("--convention", help="FPR convention: paper, hendrycks or openood.")] = "paper",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draws.")] = 0,
    key: Annotated[Optional[list[str]], typer.Option("--key", help="Score key(s) to analyse (default: all).")] = None,  # noqa: UP045
    plot_format: Annotated[str, typer.Option("--plot-format", help="pdf, svg or png.")] = "pdf",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier analysis in --out.")] = False,
) -> None:
    """Mean and SD of FPR@95 over random subsets of n OOD images, the analytical FPC SD and the
    detectors' rank stability (the paper's Appendix C)."""
    from negvocab.scoring.sweep import parse_sizes

    if plot_format not in ("pdf", "svg", "png"):
        raise InputError(f"unknown --plot-format {plot_format!r}; choose pdf, svg or png")
    check_results_folder(out, "subsample.json", overwrite=overwrite)
    s_id, s_ood, random = read_scores(scores)
    if key:
        missing = [k for k in key if k not in s_id]
        if missing:
            raise InputError(f"no scores named {missing[0]!r}; the file holds {', '.join(s_id)}")
        s_id, s_ood = {k: s_id[k] for k in key}, {k: s_ood[k] for k in key}
    rows = subsample(s_id, s_ood, sizes=parse_sizes(sizes), draws=draws, convention=convention, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    with writing(out):
        (out / "subsample.json").unlink(missing_ok=True)
        write_text(out / "subsample.csv", csv_text([{**r, "random_weights": random} for r in rows], [*rows[0], "random_weights"]))
        title = "OOD subsampling" + ("  [RANDOM WEIGHTS: meaningless]" if random else "")
        plot_subsample(rows, out / f"subsample.{plot_format}", title=title)
        write_json(out / "subsample.json", {"scores": str(scores), "random_weights": random, "seed": seed, "rows": rows})
    for r in rows:
        typer.echo(
            f"{r['detector']:<28} n={r['n']:>6}  FPR mean {100 * r['mean']:6.2f}%  SD {100 * r['sd']:5.2f}  "
            f"analytic {100 * r['sd_analytic']:5.2f}  full {100 * r['full']:6.2f}%"
            + (f"  Spearman {r['spearman_mean']:.3f}" if "spearman_mean" in r else "")
        )
    typer.echo(f"wrote {out}")
