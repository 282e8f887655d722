"""``negvocab table``: the paper's tables (and paired comparisons) from grid, score and sweep folders.

The options are parsed here; the tables are :mod:`negvocab.report.tables`, the folders are read by
:func:`negvocab.grid.tidy.load_rows`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.options import OverwriteOpt
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout, write_text
from negvocab.core.errors import InputError
from negvocab.data.published import published_table_rows
from negvocab.grid.tidy import load_rows
from negvocab.report.tables import build_table, comparisons
from negvocab.scoring.methods import check_evaluation

__all__ = ["parse_pairs", "table_cmd"]

_FORMATS = {".md": "md", ".markdown": "md", ".tex": "tex", ".csv": "csv"}


def parse_pairs(values: list[str] | None, option: str, *, lists: bool = False) -> dict[str, object]:
    """``KEY=VALUE`` options as a dict (``lists``: VALUE comma-separated); one line naming the
    option and the bad value otherwise."""
    out: dict[str, object] = {}
    for v in values or []:
        key, sep, value = v.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"{option} {v!r}: expected NAME=VALUE" + (" (VALUE: a,b,...)" if lists else ""))
        if key.strip() in out:
            raise InputError(f"{option}: {key.strip()!r} given twice")
        out[key.strip()] = [x.strip() for x in value.split(",") if x.strip()] if lists else value.strip()
    return out


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


@app.command("table")
def table_cmd(
    folders: Annotated[list[Path], typer.Argument(help="Folders of negvocab grid run, score or sweep (any mix).")],
    rows: Annotated[
        str,
        typer.Option(
            "--rows", help="Row axis (or axes, comma-separated): model, vocabulary, method, ood_set, convention."
        ),
    ] = "model",
    cols: Annotated[str, typer.Option("--cols", help="Column axis (or axes, comma-separated), as --rows.")] = "ood_set",
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            help="fpr, auroc, aupr_in, aupr_out, id_accuracy, ccr@1e-4 ... ccr@1e-1 (where the rows hold them); "
            "several comma-separated sit side by side.",
        ),
    ] = "fpr",
    where: Annotated[
        list[str] | None, typer.Option("--where", help="Fix an axis not shown: AXIS=VALUE (repeat for several).")
    ] = None,
    mean_rows: Annotated[
        bool, typer.Option("--mean-rows", help="Add the mean over the rows (the paper's mean over VLMs).")
    ] = False,
    mean_cols: Annotated[bool, typer.Option("--mean-cols", help="Add the mean over the columns.")] = False,
    col_group: Annotated[
        list[str] | None, typer.Option("--col-group", help="A group-mean column: NAME=a,b (near/far OOD); repeat.")
    ] = None,
    row_group: Annotated[
        list[str] | None, typer.Option("--row-group", help="A group-mean row: NAME=a,b; repeat.")
    ] = None,
    intervals: Annotated[
        bool,
        typer.Option(
            "--intervals",
            help="Show the 95% bootstrap intervals (a test-time entry over several stream seeds shows ± its sd "
            "over them instead, with or without this flag).",
        ),
    ] = False,
    bold: Annotated[
        str,
        typer.Option(
            "--bold",
            help="paired (the best entry where a paired bootstrap over the same images finds it better than "
            "every other; needs stored per-image scores) or none.",
        ),
    ] = "paired",
    bold_by: Annotated[
        str, typer.Option("--bold-by", help="cols: the best row of each column; rows: the best column of each row.")
    ] = "cols",
    level: Annotated[float, typer.Option("--level", help="Level of the paired intervals behind bold.")] = 0.95,
    ties: Annotated[
        str,
        typer.Option(
            "--ties",
            help="none: bold only a significant winner; all: also every entry not distinguishable from the best.",
        ),
    ] = "none",
    mix_kinds: Annotated[
        bool,
        typer.Option(
            "--mix-kinds", help="Average deployable, no-vocabulary, oracle and test-time entries together in means."
        ),
    ] = False,
    fmt: Annotated[
        str | None, typer.Option("--format", help="md, tex or csv (default: from the -o suffix, else md).")
    ] = None,
    siunitx: Annotated[bool, typer.Option("--siunitx", help="LaTeX: siunitx S columns.")] = False,
    wide: Annotated[
        bool, typer.Option("--wide", help="LaTeX: a table* across both columns of a two-column paper.")
    ] = False,
    caption: Annotated[str, typer.Option("--caption", help="Caption text before what the table states itself.")] = "",
    label: Annotated[str, typer.Option("--label", help="LaTeX \\label (default tab:results).")] = "",
    no_baselines: Annotated[
        bool,
        typer.Option(
            "--no-baselines", help="Leave out the baselines: batch methods without a vocabulary (MCM, GL-MCM)."
        ),
    ] = False,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare", help="Also print paired comparisons of each pair of vocabularies (per method, convention)."
        ),
    ] = False,
    compare_across: Annotated[
        str,
        typer.Option(
            "--compare-across",
            help="vocabularies (pairs of vocabularies and MCM, per model), models (pairs of models per entry), or "
            "auto: what bold compares (models where the bold entries are models).",
        ),
    ] = "auto",
    compare_set: Annotated[
        str, typer.Option("--compare-set", help="OOD set the comparisons are on (mean: all sets).")
    ] = "mean",
    n_boot: Annotated[int, typer.Option("--n-boot", help="Paired-bootstrap draws of bold and the comparisons.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="The bootstrap seed of the paired bootstrap.")] = 0,
    published: Annotated[
        bool,
        typer.Option(
            "--published",
            help="Add the anchors' published figures whose settings match a row (ID label space, method, model, "
            "weights, OOD set, convention) beside it, marked [published: PAPER] (negvocab published lists them).",
        ),
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: standard output).")
    ] = None,
    overwrite: OverwriteOpt = False,
) -> None:
    # long: one option per table setting, as the command's help lists them
    """A table as in the paper from results folders: any rows x columns, means, intervals, captions."""
    check_evaluation(cli=True, n_boot=n_boot, seed=seed)
    form = fmt or (_FORMATS.get(output.suffix.lower(), "md") if output is not None and not is_stdout(output) else "md")
    if form not in ("md", "tex", "csv"):
        raise InputError(f"--format {form!r}: choose md, tex or csv")
    if output is not None:
        check_output(output, inputs=folders, overwrite=overwrite)
    data, scores, failed = load_rows(folders)
    with warnings.catch_warnings():  # said below in the command's words
        warnings.simplefilter("ignore")
        shown = data + published_table_rows(data) if published else data  # published figures: never in comparisons
    unknown = sum(1 for r in data if not r.get("id_classes")) if published else 0
    if unknown:
        typer.echo(
            f"--published: {unknown} rows come from a folder that does not name its ID label space (a grid of an "
            "older release, or one without its grid.json): no published figure is set beside them; `negvocab grid "
            "run CONFIG -o FOLDER` on the same grid records it (it resumes: what is still valid is kept)",
            err=True,
        )
    table = build_table(
        shown,
        metric=_split(metric),
        rows_by=_split(rows),
        cols_by=_split(cols),
        where={k: str(v) for k, v in parse_pairs(where, "--where").items()},
        mean_rows=mean_rows,
        mean_cols=mean_cols,
        row_groups=parse_pairs(row_group, "--row-group", lists=True),  # type: ignore[arg-type]
        col_groups=parse_pairs(col_group, "--col-group", lists=True),  # type: ignore[arg-type]
        intervals=intervals,
        bold=bold,
        bold_by=bold_by,
        ties=ties,
        scores=scores,
        level=level,
        n_boot=n_boot,
        seed=seed,
        mix_kinds=mix_kinds,
        baselines=not no_baselines,
        caption=caption,
        label=label,
        failed=failed,
    )
    text = table.render(form, siunitx=siunitx, wide=wide)
    said: list[str] = []
    if compare:  # before anything is written: a scores file that cannot serve is refused first
        ranked = _split(rows) if bold_by == "cols" else _split(cols)  # the axis whose entries bold compares
        across = compare_across if compare_across != "auto" else ("models" if "model" in ranked else "vocabularies")
        said = comparisons(
            data,
            scores,
            metric=_split(metric)[0],
            ood_set=compare_set,
            n_boot=n_boot,
            seed=seed,
            level=level,
            where={k: str(v) for k, v in parse_pairs(where, "--where").items()},
            across=across,
        )
    if output is None or is_stdout(output):
        typer.echo(text, nl=False)
    else:
        with writing(output):
            write_text(output, text)
        typer.echo(f"wrote {output}", err=True)
    if compare:
        for s in said or ["nothing to compare: no two vocabularies share a method, convention and model"]:
            typer.echo(f"- {s}", err=output is None or is_stdout(output))
