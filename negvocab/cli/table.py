"""``negvocab table``: the paper's tables (and paired comparisons) from grid, score and sweep folders.

The options are parsed here; the tables are :mod:`negvocab.report.tables`, the folders are read by
:func:`negvocab.grid.tidy.load_rows`.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, overload

import typer

from negvocab.cli.app import app
from negvocab.cli.common_options import PrintedOutputOpt
from negvocab.cli.options import OverwriteOpt, option_group
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout, write_text
from negvocab.core.errors import InputError
from negvocab.data.published import published_table_rows, row_benchmark
from negvocab.grid.tidy import load_rows
from negvocab.report.tables import build_table, comparisons, default_rows
from negvocab.scoring.methods import check_evaluation

__all__ = ["parse_pairs", "table_cmd"]

_FORMATS = {".md": "md", ".markdown": "md", ".tex": "tex", ".csv": "csv"}


@overload
def parse_pairs(values: list[str] | None, option: str, *, lists: Literal[False] = False) -> dict[str, str]: ...
@overload
def parse_pairs(values: list[str] | None, option: str, *, lists: Literal[True]) -> dict[str, list[str]]: ...
def parse_pairs(values: list[str] | None, option: str, *, lists: bool = False) -> dict[str, str] | dict[str, list[str]]:
    """``KEY=VALUE`` options as a dict (``lists``: VALUE comma-separated); one line naming the
    option and the bad value otherwise."""
    out: dict[str, Any] = {}
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


@dataclass(frozen=True)
class TableLayout:
    """How ``negvocab table`` lays out and marks the table: means, intervals, bold and kinds (a group
    of :func:`~negvocab.cli.options.option_group`; each field is the :func:`~negvocab.report.tables.build_table`
    argument of its name)."""

    mean_rows: Annotated[
        bool, typer.Option("--mean-rows", help="Add the mean over the rows (the paper's mean over VLMs).")
    ] = False
    mean_cols: Annotated[bool, typer.Option("--mean-cols", help="Add the mean over the columns.")] = False
    intervals: Annotated[
        bool,
        typer.Option(
            "--intervals",
            help="Show the 95% bootstrap intervals (a test-time entry over several stream seeds shows ± its sd "
            "over them instead, with or without this flag).",
        ),
    ] = False
    bold: Annotated[
        str,
        typer.Option(
            "--bold",
            help="paired (the best entry where a paired bootstrap over the same images finds it better than "
            "every other; needs stored per-image scores) or none.",
        ),
    ] = "paired"
    bold_by: Annotated[
        str, typer.Option("--bold-by", help="cols: the best row of each column; rows: the best column of each row.")
    ] = "cols"
    level: Annotated[float, typer.Option("--level", help="Level of the paired intervals behind bold.")] = 0.95
    ties: Annotated[
        str,
        typer.Option(
            "--ties",
            help="none: bold only a significant winner; all: also every entry not distinguishable from the best.",
        ),
    ] = "none"
    mix_kinds: Annotated[
        bool,
        typer.Option(
            "--mix-kinds", help="Average deployable, no-vocabulary, oracle and test-time entries together in means."
        ),
    ] = False


@dataclass(frozen=True)
class CompareOptions:
    """The paired comparisons ``negvocab table --compare`` prints (a group of
    :func:`~negvocab.cli.options.option_group`)."""

    compare: Annotated[
        bool,
        typer.Option(
            "--compare", help="Also print paired comparisons of each pair of vocabularies (per method, convention)."
        ),
    ] = False
    compare_across: Annotated[
        str,
        typer.Option(
            "--compare-across",
            help="vocabularies (pairs of vocabularies and MCM, per model), models (pairs of models per entry), or "
            "auto: what bold compares (models where the bold entries are models).",
        ),
    ] = "auto"
    compare_set: Annotated[
        str, typer.Option("--compare-set", help="OOD set the comparisons are on (mean: all sets).")
    ] = "mean"

    def lines(
        self,
        data: list[dict[str, Any]],
        scores: Any,
        metric: str,
        ranked: list[str],
        where: dict[str, str],
        **bootstrap: Any,
    ) -> list[str]:
        """The comparisons' lines (none without ``--compare``): ``ranked`` is the axis whose entries bold
        compares (``--compare-across auto`` compares models where it is the model axis); ``bootstrap``:
        n_boot, seed and level."""
        if not self.compare:
            return []
        across = self.compare_across
        if across == "auto":
            across = "models" if "model" in ranked else "vocabularies"
        said = comparisons(
            data, scores, metric=metric, ood_set=self.compare_set, where=where, across=across, **bootstrap
        )
        return said or ["nothing to compare: no two vocabularies share a method, convention and model"]


_ROWS_HELP = (
    "Row axis (or axes, comma-separated): model, vocabulary, method, ood_set, convention (default: "
    "the axes the rows differ on, not columns nor fixed by --where; else model)."
)


@app.command("table")
@option_group("layout", TableLayout)
@option_group("comparing", CompareOptions)
def table_cmd(
    *,
    folders: Annotated[list[Path], typer.Argument(help="Folders of negvocab grid run, score or sweep (any mix).")],
    rows: Annotated[
        str | None,
        typer.Option("--rows", help=_ROWS_HELP),
    ] = None,
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
    layout: TableLayout,
    col_group: Annotated[
        list[str] | None, typer.Option("--col-group", help="A group-mean column: NAME=a,b (near/far OOD); repeat.")
    ] = None,
    row_group: Annotated[
        list[str] | None, typer.Option("--row-group", help="A group-mean row: NAME=a,b; repeat.")
    ] = None,
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
    comparing: CompareOptions,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Paired-bootstrap draws of bold and the comparisons.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="The bootstrap seed of the paired bootstrap.")] = 0,
    published: Annotated[
        bool,
        typer.Option(
            "--published",
            help="Add the anchors' published figures measured as a row was (benchmark sets and ID split, ID label "
            "space, method, model, weights, OOD set, convention) beside it, marked [published: PAPER, KIND]; the "
            "caption names each one's source (negvocab published lists them).",
        ),
    ] = False,
    output: PrintedOutputOpt = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """A table as in the paper from results folders: any rows x columns, means, intervals, captions."""
    check_evaluation(cli=True, n_boot=n_boot, seed=seed)
    form = fmt or (_FORMATS.get(output.suffix.lower(), "md") if output is not None and not is_stdout(output) else "md")
    if form not in ("md", "tex", "csv"):
        raise InputError(f"--format {form!r}: choose md, tex or csv")
    if output is not None:
        check_output(output, inputs=folders, overwrite=overwrite)
    data, scores, failed = load_rows(folders)
    shown = _with_published(data) if published else data  # published figures: never in comparisons
    fixed = parse_pairs(where, "--where")
    rows_by = _split(rows) if rows is not None else list(default_rows(data, _split(cols), fixed))
    table = build_table(
        shown,
        metric=_split(metric),
        rows_by=rows_by,
        cols_by=_split(cols),
        where=fixed,
        row_groups=parse_pairs(row_group, "--row-group", lists=True),
        col_groups=parse_pairs(col_group, "--col-group", lists=True),
        scores=scores,
        n_boot=n_boot,
        seed=seed,
        baselines=not no_baselines,
        caption=caption,
        label=label,
        failed=failed,
        **dataclasses.asdict(layout),
    )
    text = table.render(form, siunitx=siunitx, wide=wide)
    ranked = rows_by if layout.bold_by == "cols" else _split(cols)  # the axis whose entries bold compares
    # before anything is written: a scores file that cannot serve is refused first
    said = comparing.lines(data, scores, _split(metric)[0], ranked, fixed, n_boot=n_boot, seed=seed, level=layout.level)
    if output is None or is_stdout(output):
        typer.echo(text, nl=False)
    else:
        with writing(output):
            write_text(output, text)
        typer.echo(f"wrote {output}", err=True)
    for line in said:
        typer.echo(f"- {line}", err=output is None or is_stdout(output))


def _with_published(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the anchors' published figures whose settings match one; rows from a folder that does
    not name its ID label space get none, and the command says so."""
    with warnings.catch_warnings():  # said below in the command's words
        warnings.simplefilter("ignore")
        shown = data + published_table_rows(data)
    unknown = sum(1 for r in data if not r.get("id_classes"))
    if unknown:
        typer.echo(
            f"--published: {unknown} rows come from a folder that does not name its ID label space (a grid of an "
            "older release, or one without its grid.json): no published figure is set beside them; `negvocab grid "
            "run CONFIG -o FOLDER` on the same grid records it (it resumes: what is still valid is kept)",
            err=True,
        )
    unsaid = sum(1 for r in data if r.get("id_classes") and not (r.get("id_split") and row_benchmark(r)))
    if unsaid:
        typer.echo(
            f"--published: {unsaid} rows were not measured on a registered benchmark's sets and ID split (their "
            "own folders, part of a benchmark's sets, or a folder of an older release): no published figure is "
            "set beside them, as set names alone (mean, textures) are shared across benchmarks",
            err=True,
        )
    return shown
