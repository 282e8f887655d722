"""``negvocab coverage``: what a vocabulary misses on a labelled OOD set. Options are parsed here;
the work is in :mod:`negvocab.diagnostics.coverage`."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.cli.app import app
from negvocab.cli.method_options import check_scoring_options, refuse_unused_params, scoring_options
from negvocab.cli.options import (
    IdClassesOpt,
    ImageOptions,
    ModelOptions,
    OverwriteOpt,
    ReportOpt,
    TemplatesOpt,
    load_vlm,
    option_group,
)
from negvocab.cli.outputs import claim_results_folder, warn_random, write_folder_report, writing
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.labels.imagenet import read_id_classes
from negvocab.report.plots import check_plot_formats
from negvocab.scoring.methods import Method, batch_method, get_method, list_methods
from negvocab.vocab import Vocabulary

__all__ = ["coverage_cmd"]

#: coverage analyses one labelled OOD set per run: its own --ood help says so (the shared one promises several)
CoverageOodOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ood",
        help="The labelled OOD images: class folders (NINCO layout) or an image list with a label column; NAME=PATH "
        "names the set in the results (a bare path is named after "
        "its folder). One set per run: run coverage once per set.",
    ),
]


def _served(m: Method) -> bool:
    """Coverage serves a method that takes negatives (by its gains form, else by rescoring)."""
    return m.needs_negatives and m.kind == "batch" and not m.inputs  # it gives no input (NegRefine's pair texts)


@app.command("coverage")
@scoring_options("seed", methods=_served, exclude=("topk",), evaluation=("convention", "tpr"))  # gains: every negative
@option_group("images", ImageOptions, leave=("allow_outside_root",), ood=CoverageOodOpt)
@option_group("vlm", ModelOptions, leave=("batch_size", "num_workers"))
def coverage_cmd(
    *,
    vocab: Annotated[Path, typer.Option("--vocab", "-V", help="The vocabulary to diagnose (JSON/TXT).")],
    images: ImageOptions,
    method: Annotated[str, typer.Option("--method", help="{methods}.")] = "neglabel",  # filled from the registry
    repair: Annotated[int, typer.Option("--repair", help="Labels on the greedy repair curve (0: none).")] = 10,
    candidates: Annotated[
        Path | None,
        typer.Option(
            "--candidates",
            "--pool",
            help="Candidate vocabulary for a deployable repair curve (default: the OOD labels, an ORACLE "
            "analysis; --pool: old name).",
        ),
    ] = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Output folder (coverage.json/.csv, confusions.csv, repair.csv and its plot, report.html).",
        ),
    ] = Path("coverage"),
    plot_format: Annotated[
        str, typer.Option("--plot-format", help="The repair plot's format: png, pdf or svg.")
    ] = "png",
    overwrite: OverwriteOpt = False,
    report: ReportOpt = True,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
    id_classes: IdClassesOpt = None,
    params: dict[str, Any] | None = None,  # the registry options above, from @scoring_options
    metrics: dict[str, Any] | None = None,
) -> None:
    """Which OOD classes the vocabulary misses, what they pass for, and which labels would help most.

    The OOD images need labels: an image list with a label column, class folders (NINCO layout) or
    a Fi-ImageNet-1k list with labels (--fi-ood).
    """
    assert params is not None and metrics is not None  # given by @scoring_options
    convention, tpr = metrics["convention"], metrics["tpr"]
    from negvocab.diagnostics.coverage import COVERAGE_FILES, coverage  # deferred: it imports torch

    key = batch_method(method, "negvocab coverage").name
    if not _served(get_method(key)):
        raise InputError(f"--method {key} uses no negative labels; coverage needs {', '.join(list_methods(_served))}")
    plot_format = check_plot_formats([plot_format], "--plot-format")[0]
    claim_results_folder(output, COVERAGE_FILES, overwrite=overwrite)
    check_scoring_options(params, convention=convention, tpr=tpr, n_boot=0)
    refuse_unused_params(params, [key])
    if repair < 0:
        raise InputError(f"--repair must be >= 0, got {repair}")
    voc = Vocabulary.load(vocab)
    pool_vocab = Vocabulary.load(candidates) if candidates is not None else None
    set_name, id_set, ood_set = _labelled_set(images)
    classes = read_id_classes(id_classes)
    top_k = tuple(sorted({k for k in (1, 5, 10) if k < repair} | {repair})) if repair else ()
    cov = coverage(
        load_vlm(**asdict(vlm)),
        voc,
        id_set,
        ood_set,
        key,
        id_classes=classes,
        templates=templates,
        params=params,
        convention=convention,
        tpr=tpr,
        top_k=top_k,
        progress=True,
        name=set_name,
    )
    curve = cov.repair(repair, candidates=pool_vocab) if repair and pool_vocab is not None else None
    with writing(output):
        out = cov.write(output, repair=curve, plot_format=plot_format, overwrite=overwrite)
    warn_random(cov.random_weights)
    for line in _coverage_lines(cov.summary, cov.classes, convention, tpr):
        typer.echo(line)
    typer.echo(
        f"wrote {out}/coverage.json, coverage.csv, confusions.csv, coverage_images.json"
        + (f", repair.csv, repair.{plot_format}" if (curve or cov.oracle_repair) else "")
    )
    if report:
        write_folder_report(output)


def _labelled_set(images: ImageOptions) -> tuple[str, ImageSet, ImageSet]:
    """The one labelled OOD set coverage analyses (its name), with the ID set."""
    id_set, ood_sets = images.open()
    if len(ood_sets) != 1:
        raise InputError(
            f"coverage analyses one OOD set at a time; got {len(ood_sets)} ({', '.join(ood_sets)}): run it once per set"
        )
    set_name, ood_set = next(iter(ood_sets.items()))
    if not ood_set.labels:
        raise InputError(
            f"the OOD images ({ood_set.name}) carry no labels: give class folders, "
            "an image list with a label column, or --fi-ood with a labelled list"
        )
    return set_name, id_set, ood_set


def _coverage_lines(s: dict[str, Any], classes: list[dict[str, Any]], convention: str, tpr: float) -> list[str]:
    """The summary: classes and coverage, the FPR with its oracle, and the five classes whose labels would help most."""
    lines = [
        f"{s['n_classes']} OOD classes, {s['n_ood_images']} images; "
        f"exact coverage {100 * s['exact_coverage']:.1f}% of classes",
        f"FPR@{int(round(100 * tpr))} ({convention}) {100 * s['fpr']:.2f}%; "
        f"ORACLE (every OOD label added) {100 * s['oracle_fpr']:.2f}%",
    ]
    for row in sorted(classes, key=lambda r: -r["fpr_gain"])[:5]:
        lines.append(
            f"  {row['label'][:30]:<30} passing {100 * row['passing_share']:5.1f}%  "
            f"gain {100 * row['fpr_gain']:+.2f} pts  nearest {row['nearest']!r}"
        )
    return lines
