"""``negvocab subsample``: the OOD-subsampling analysis on a results folder's stored per-image scores,
one analysis per OOD set (the pooled one only when asked, and labelled so)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from negvocab.cli.app import app
from negvocab.cli.outputs import writing
from negvocab.core.atomic import write_json, write_text
from negvocab.core.errors import InputError
from negvocab.core.outdir import staged_folder
from negvocab.core.textfiles import csv_text
from negvocab.evaluation.stored import read_scores_npz
from negvocab.evaluation.subsample import POOLED, check_draws, subsample
from negvocab.grid.tidy import grid_scores, is_grid_folder
from negvocab.report.plots import PLOT_FORMATS, plot_subsample

__all__ = ["SUBSAMPLE_FILES", "read_scores", "read_scores_file", "subsample_cmd"]

#: everything a run writes (an earlier run's files of any plot format go when one is replaced)
SUBSAMPLE_FILES = ("subsample.csv", *(f"subsample{s}" for s in PLOT_FORMATS), "subsample.json")


def read_scores_file(path: Path) -> tuple[dict[str, Any], dict[str, Any], bool, list[str] | None]:
    """(ID scores, OOD scores, random_weights, OOD set of every OOD image or None) by score key from
    ``scores.npz`` (or a results folder holding one), read through the one validation layer
    (:func:`negvocab.evaluation.stored.read_scores_npz`: anything wrong is one line naming the file
    and what to do); the top-k bound arrays (``key/lower``...) are left out."""
    got = read_scores_npz(path)
    sets = got.images.get("ood_sets")
    return got.id, got.ood, got.random_weights, None if sets is None else [str(x) for x in sets.tolist()]


def read_scores(path: Path) -> tuple[dict[str, object], dict[str, object], bool]:
    """(ID scores, OOD scores, random_weights) by score key (see :func:`read_scores_file`)."""
    s_id, s_ood, random, _ = read_scores_file(path)
    return s_id, s_ood, random


def _pick_sets(sets: list[str] | None, wanted: list[str] | None) -> list[str] | None:
    """Keep the OOD images of the sets named by ``--ood-set`` (refusing an unknown name)."""
    if not wanted:
        return None
    have = list(dict.fromkeys(sets or ["ood"]))
    unknown = [w for w in wanted if w not in have]
    if unknown:
        raise InputError(f"--ood-set {unknown[0]!r}: the scores hold OOD sets {', '.join(have)}")
    return wanted


def _flatten(
    entries: dict[str, tuple[Any, dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """A grid model's entries as a score file holds them: ID scores by key, the OOD scores of every
    set one after the other by key, and the set of each OOD image (the sets in the first entry's order)."""
    order = list(next(iter(entries.values()))[1])
    s_id = {k: v[0] for k, v in entries.items() if list(v[1]) == order}
    s_ood = {k: np.concatenate([entries[k][1][s] for s in order]) for k in s_id}
    sets = [s for s in order for _ in range(len(next(iter(entries.values()))[1][s]))]
    return s_id, s_ood, sets


def _fmt(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


@app.command("subsample")
def subsample_cmd(
    scores: Annotated[
        Path,
        typer.Argument(
            help="Results folder of `negvocab score` (or its scores.npz), or a grid folder (one analysis per model)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--output", "-o", "--out", help="Output folder (subsample.csv, subsample.json, the plot).")
    ],
    sizes: Annotated[
        str,
        typer.Option(
            "--sizes",
            help="Subset sizes n, comma-separated (e.g. 50,100,200,655); 'auto': a ladder up to each set's N.",
        ),
    ] = "auto",
    draws: Annotated[int, typer.Option("--draws", help="Draws without replacement per size.")] = 1000,
    convention: Annotated[
        str, typer.Option("--convention", help="FPR convention: paper, hendrycks or openood.")
    ] = "paper",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draws (>= 0).")] = 0,
    key: Annotated[list[str] | None, typer.Option("--key", help="Score key(s) to analyse (default: all).")] = None,
    ood_set: Annotated[
        list[str] | None,
        typer.Option("--ood-set", help="OOD set(s) to analyse, repeatable (default: each set, one analysis per set)."),
    ] = None,
    pooled: Annotated[
        bool, typer.Option("--pooled", help="Also analyse all OOD sets pooled together (labelled 'pooled').")
    ] = False,
    plot_format: Annotated[str, typer.Option("--plot-format", help="pdf, svg or png.")] = "pdf",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier analysis in --out.")] = False,
) -> None:
    """Mean and SD of FPR@95 over random subsets of n OOD images, the analytical FPC SD and the
    detectors' rank stability (the paper's Appendix C), for each OOD set on its own."""
    # long: options, reading, one analysis per set and the summary lines
    from negvocab.scoring.prefix_scores import parse_sizes

    if plot_format not in ("pdf", "svg", "png"):
        raise InputError(f"unknown --plot-format {plot_format!r}; choose pdf, svg or png")
    want_sizes = None if sizes.strip().lower() == "auto" else parse_sizes(sizes)
    check_draws(draws, seed)  # before anything is read or allocated
    if is_grid_folder(scores):  # one analysis per model of the grid, over its entries' stored scores
        per_model, random = grid_scores(scores)
        found: dict[str, tuple[dict[str, Any], dict[str, Any], list[str] | None]] = {
            m: _flatten(entries) for m, entries in per_model.items()
        }
    else:
        s_id, s_ood, random, sets = read_scores_file(scores)
        found = {"": (s_id, s_ood, sets)}
    rows, names = [], []
    for model, (s_id, s_ood, sets) in found.items():
        if key:
            missing = [k for k in key if k not in s_id]
            if missing:
                raise InputError(f"no scores named {missing[0]!r}; the file holds {', '.join(s_id)}")
            s_id, s_ood = {k: s_id[k] for k in key}, {k: s_ood[k] for k in key}
        chosen = _pick_sets(sets, ood_set)
        if chosen is not None and sets is not None:
            keep = [i for i, s in enumerate(sets) if s in chosen]
            s_ood = {k: v[keep] for k, v in s_ood.items()}
            sets = [sets[i] for i in keep]
        names += [n for n in dict.fromkeys(sets or ["ood"]) if n not in names]
        got = subsample(
            s_id, s_ood, sizes=want_sizes, draws=draws, convention=convention, seed=seed, ood_sets=sets, pooled=pooled
        )
        rows += [{"model": model, **r} if model else r for r in got]
    doc = {"scores": str(scores), "random_weights": random, "seed": seed, "ood_sets": names, "pooled": pooled,
           "pooled_sets": names if pooled else [], "rows": rows}  # fmt: skip
    with writing(out), staged_folder(out, SUBSAMPLE_FILES, "subsample.json", overwrite=overwrite) as stage:
        write_text(
            stage / "subsample.csv",
            csv_text([{**r, "random_weights": random} for r in rows], [*rows[0], "random_weights"]),
        )
        title = (
            "OOD subsampling"
            + (f" (pooled = {' + '.join(names)})" if pooled else "")
            + ("  [RANDOM WEIGHTS: meaningless]" if random else "")
        )
        shown = [{**r, "detector": f"{r['model']}: {r['detector']}"} if "model" in r else r for r in rows]
        plot_subsample(shown, stage / f"subsample.{plot_format}", title=title)
        write_json(stage / "subsample.json", doc)
    for r in rows:
        label = f"{r['ood_set']} (all sets)" if r["ood_set"] == POOLED else r["ood_set"]
        typer.echo(
            (f"{r['model']:<16} " if "model" in r else "") + f"{label:<16} {r['detector']:<24}"
            f"  n={r['n']:>6}  FPR "
            f"mean {100 * r['mean']:6.2f}%  SD {100 * r['sd']:5.2f}  "
            f"analytic {100 * r['sd_analytic']:5.2f}  full {100 * r['full']:6.2f}%"
            + (
                f"  Spearman mean {_fmt(r['spearman_mean'])} q05 "
                f"{_fmt(r['spearman_q05'])} same best {_fmt(r['same_best'])}"
                f" ({r['dropped_tied']} all-tied draws dropped)"
                if "spearman_mean" in r
                else ""
            )  # fmt: skip
        )
    typer.echo(f"wrote {out}")
