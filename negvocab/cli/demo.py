"""``negvocab demo``: the whole pipeline on sample images shipped with installed packages."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.options import (
    IdClassesOpt,
    ModelOptions,
    OverwriteOpt,
    ReportOpt,
    load_vlm,
    option_group,
    templates_value,
)
from negvocab.cli.outputs import check_output, write_folder_report
from negvocab.core.errors import InputError, ResourceError
from negvocab.demo import SPLIT_NOTE, DemoResult, check_demo_sizes, run_demo
from negvocab.labels.imagenet import read_id_classes
from negvocab.report.results import format_table
from negvocab.vlm.model import VLM

__all__ = ["demo"]


@app.command("demo")
@option_group("vlm", ModelOptions)
def demo(
    *,
    vlm: ModelOptions,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder for the demo's images, vocabulary and results.")
    ] = Path("negvocab-demo"),
    n_candidates: Annotated[
        int,
        typer.Option(
            "--n-candidates",
            "--pool-size",
            help="How many WordNet candidates to rank (spread over the NegLabel pool; --pool-size: old name).",
        ),
    ] = 1000,
    old_pool: Annotated[
        int | None,
        typer.Option("--pool", hidden=True, help="Old name of --n-candidates (elsewhere --pool names candidates)."),
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", "-M", help="Vocabulary size M (default: half the filtered pool).")
    ] = None,
    templates: Annotated[
        str,
        typer.Option(
            "--templates",
            "-t",
            parser=templates_value,
            help="Prompt templates (single is fastest; paper8 as in the paper).",
        ),
    ] = "single",
    id_classes: IdClassesOpt = None,
    overwrite: OverwriteOpt = False,
    report: ReportOpt = True,
) -> None:
    """Run WordNet vocabulary -> filtering -> NegLabel and MCM -> metrics -> plot on a toy image set.

    Weights: --pretrained (default: the openai tag), or --random-weights for an offline dry run.
    """
    if vlm.random_weights and (vlm.pretrained or vlm.tag):
        raise InputError("give either --pretrained/--tag or --random-weights, not both")
    if old_pool is not None:  # kept working for one release; --pool means a candidate file in build wordnet/mined
        typer.echo(
            "warning: negvocab demo --pool N is now --n-candidates N (--pool names candidates in the build commands)",
            err=True,
        )
        n_candidates = old_pool
    check_demo_sizes(n_candidates, size)
    check_output(output / "vocab.json", overwrite=overwrite)
    classes = read_id_classes(id_classes)
    model = _demo_model(replace(vlm, pretrained=None if vlm.random_weights else vlm.pretrained or "openai"))
    res = run_demo(
        model,
        output,
        n_candidates=n_candidates,
        size=size,
        templates=templates,
        id_classes=classes,
        progress=True,
        overwrite=overwrite,
    )
    _say_demo(res, n_candidates, random_weights=model.random_weights)
    if report:  # the results' report (tables, evading OOD and flagged ID images) and the sweep's
        for folder in (res.output / "results", res.output / "sweep"):
            write_folder_report(folder)


def _demo_model(vlm: ModelOptions) -> VLM:
    """The demo's VLM; weights that cannot be had say how to get on without them."""
    try:
        return load_vlm(**asdict(vlm))
    except ResourceError as e:
        if vlm.random_weights:
            raise
        hint = (
            ""
            if "pretrained" in e.param or "--pretrained" in str(e)
            else f"; pass a checkpoint: --pretrained /path/to/open_clip_pytorch_model.bin --tag {vlm.pretrained}"
        )
        raise ResourceError(
            f"{e}{hint}; or run the pipeline offline (meaningless numbers): negvocab demo --random-weights",
            param=e.param,
        ) from e


def _say_demo(res: DemoResult, n_candidates: int, *, random_weights: bool) -> None:
    """What the demo did: its vocabulary, the results table, an example and the sweep."""
    from negvocab.evaluation.evaluate import RANDOM_WEIGHTS_WARNING

    if random_weights:  # once, above everything it concerns (the table's heading says so too)
        typer.secho(f"WARNING: {RANDOM_WEIGHTS_WARNING}", fg="red", bold=True)
    n_removed = res.vocabulary.settings.get("synonym_filter", {}).get("removed_count", 0)
    typer.echo(SPLIT_NOTE)
    typer.echo(
        f"vocabulary: {len(res.vocabulary)} WordNet labels, farthest first "
        f"from {n_candidates} candidates ({n_removed} removed as ID names/synonyms)"
    )
    typer.echo(format_table(res.evaluation.rows))
    ood_ex = next(iter(res.evaluation.explanations.values()), [])
    if ood_ex:
        first = ood_ex[0]
        labels = ", ".join(x["label"] for x in first["top_negatives"][:3])
        typer.echo(f"example: OOD image {first['image']}: top negatives {labels}")
    typer.echo("sweep (FPR@95 vs M): " + ", ".join(f"M={r['M']}: {100 * r['fpr']:.1f}%" for r in res.sweep.rows))
    typer.echo(f"wrote {res.output}/vocab.json, results/, sweep/sweep.png")
