"""``negvocab published``: the anchors' published figures with their settings and sources (never computed here)."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.core.errors import InputError
from negvocab.data.published import PUBLISHED_COLUMNS, published_results

__all__ = ["published_cmd"]


def _figure(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


@app.command("published")
def published_cmd(
    method: Annotated[
        str | None, typer.Option("--method", help="Only this method (negvocab's name or the paper's, e.g. csp).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only this model, e.g. ViT-B-16.")] = None,
    benchmark: Annotated[
        str | None, typer.Option("--benchmark", help="Only figures on this benchmark (negvocab benchmarks lists them).")
    ] = None,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print every column as CSV (the shipped file's rows).")] = False,
) -> None:
    """The anchors' published figures (FPR@95 and AUROC in percent, as published) with their exact
    settings, benchmark and ID split, kind, source and how each was checked; tables mark them published,
    beside negvocab's own rows of the same benchmark and ID split only."""
    rows = published_results(method=method, model=model, benchmark=benchmark)
    if not rows and not as_csv:  # a filter that matches nothing says so, with what it could match
        every = published_results()
        asked = {"--method": method, "--model": model, "--benchmark": benchmark}
        given = " ".join(f"{k} {v}" for k, v in asked.items() if v is not None)
        known = sorted({r.method for r in every} | {r.paper for r in every})
        raise InputError(
            f"no published figure matches {given}; methods: {', '.join(known)}; models: "
            f"{', '.join(sorted({r.model for r in every}))}; benchmarks: "
            f"{', '.join(sorted({r.benchmark for r in every if r.benchmark}))}"
        )
    if as_csv:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, PUBLISHED_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if v is None else v for k, v in asdict(r).items()})
        typer.echo(buf.getvalue(), nl=False)
        return
    head: tuple[str, ...] = ("paper", "method", "vocabulary", "model", "pretrained", "benchmark", "ood_set")
    head += ("FPR95", "AUROC", "conv.", "kind")
    table = [
        (r.paper, r.method, r.vocabulary or "-", r.model, r.pretrained, r.benchmark or "(none)", r.ood_set)
        + (_figure(r.fpr95), _figure(r.auroc), r.convention, r.kind)
        for r in rows
    ]
    widths = [max(len(str(c)) for c in col) for col in zip(head, *table, strict=True)]
    for line in (head, *table):
        typer.echo("  ".join(f"{c:<{w}}" for c, w in zip(line, widths, strict=True)).rstrip())
    for n, r in enumerate(rows, 1):
        typer.echo(
            f"[{n}] {r.paper} {r.ood_set} ({r.kind}; ID {r.id_split}): {r.source}; checked: {r.checked}"
            + (f" ({r.note})" if r.note else "")
        )
    typer.echo(
        "Published, not computed here: settings not stated by a source are left empty; benchmark (none): no "
        "negvocab benchmark pairs those sets with that ID split, so the figure meets no row."
    )
