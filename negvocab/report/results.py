"""The results folders of ``score`` and ``sweep``: tables, score files and the sweep plot.

:func:`write_results` and :func:`write_sweep` write a folder as a whole through
:func:`negvocab.core.outdir.staged_folder` (all files, then one commit step; an earlier run is replaced
only with ``overwrite``). :func:`format_table` is the terminal table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.atomic import atomic_path, write_json, write_text
from negvocab.core.outdir import staged_folder
from negvocab.core.textfiles import csv_text
from negvocab.evaluation.kinds import KIND_LABELS, caveat_kinds, is_test_tuned, kind_marks
from negvocab.evaluation.records import SUMMARY_ROWS, conventions, grouping_params, jsonable, seed_sd
from negvocab.evaluation.row import INTERVAL_METRICS, ROW_COLUMNS, file_row, interval, result_kind, table_cell
from negvocab.report.plots import check_plot_formats, plot_sweep
from negvocab.scoring.metrics import CCR_FPRS, ccr_column

if TYPE_CHECKING:
    from negvocab.evaluation.evaluate import Evaluation
    from negvocab.evaluation.sweeps import SweepResult

__all__ = [
    "RESULT_FILES",
    "CCR_COLUMNS",
    "accuracy_columns_in",
    "accuracy_lines",
    "SWEEP_COLUMNS",
    "STREAM_COLUMNS",
    "SWEEP_FILES",
    "TABLE_COLUMNS",
    "TEST_TIME_MARK",
    "TEST_TUNED_NOTE",
    "TUNING_COLUMNS",
    "AUTHORS_COLUMNS",
    "authors_notes",
    "flat_row",
    "table_columns",
    "table_csv",
    "format_table",
    "test_time_notes",
    "tuning_notes",
    "write_results",
    "write_sweep",
]


#: the columns every results table starts with (results.csv, sweep.csv, a grid's table.csv): the one row
#: of every results file (:data:`negvocab.evaluation.row.ROW_COLUMNS`)
TABLE_COLUMNS = list(ROW_COLUMNS)


#: the columns a test-time (stream) method's rows add to results.csv: its stream and, over several
#: stream seeds, the spread of each metric
STREAM_COLUMNS: list[str] = [
    "test_time", "stream_order", "stream_batch_size", "stream_seed", "stream_seeds", "n_stream_seeds", "id_ood_ratio",
    "stream_phases", "stream_phase",
    *(f"{m}_{s}" for m in ("fpr", "auroc", "aupr_in", "aupr_out") for s in ("std", "min", "max")),
]  # fmt: skip


#: the CCR columns of a full-spectrum run's rows: CCR at OpenOOD's FPR levels
CCR_COLUMNS: list[str] = [ccr_column(f) for f in CCR_FPRS]


def accuracy_lines(meta: Mapping[str, Any]) -> list[str]:
    """The line under a printed table saying the run's ID accuracy (``meta["id_accuracy"]``); none without it."""
    acc = meta.get("id_accuracy")
    if not acc:
        return []
    return [f"ID accuracy (zero-shot top-1 with the ID prompts): {100 * acc['top1']:.1f}% of {acc['n']} ID images"]


def accuracy_columns_in(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``id_accuracy`` and the CCR columns, those the rows hold (where the ID labels allow; CCR on a
    full-spectrum ID set): what a results, sweep or grid table adds after its own columns."""
    return [c for c in ["id_accuracy", *CCR_COLUMNS] if any(c in r for r in rows)]


def flat_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A results row of any version with its intervals as ``<metric>_ci_low``/``_ci_high`` columns (None
    where none), as results files hold them; its other fields as they are."""
    out = dict(row)
    for name in INTERVAL_METRICS:
        ci = interval(out, name) or (None, None)
        out.pop(f"{name}_ci", None)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = ci
    return out


def table_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of a results table of ``rows``: :data:`TABLE_COLUMNS`, then those of a test-time
    method's stream, ID accuracy and CCR, and tuning, where some row holds them."""
    more = [*STREAM_COLUMNS, *accuracy_columns_in(rows), *TUNING_COLUMNS, *AUTHORS_COLUMNS]
    return [*TABLE_COLUMNS, *(c for c in more if any(c in r for r in rows))]


def table_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """The CSV text of a results table (``columns``: default :func:`table_columns`), its objects and lists
    as JSON text (:func:`negvocab.evaluation.row.table_cell`)."""
    cells = [{k: table_cell(v) for k, v in r.items()} for r in rows]
    return csv_text(cells, table_columns(rows) if columns is None else columns)


def format_table(rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None) -> str:
    """A plain-text table of the metric rows (percentages), for the terminal.

    A vocabulary that is not deployable is marked in its row; the footer names the FPR convention,
    threshold rule, grouping and templates (``meta["conventions"]`` when given, else read off the
    rows), the caveats, and where the conventions are compared with the anchors' code.
    """
    lines = []
    conv = rows[0]["convention"] if rows else "paper"
    tpr = int(round(100 * rows[0]["tpr"])) if rows else 95
    sets = list(dict.fromkeys(str(r.get("ood_set", "")) for r in rows))
    set_w = max(8, *(len(x) + 2 for x in sets)) if len(sets) > 1 else 0
    caveats: dict[str, str] = {}
    names = []
    for r in rows:
        name = r["vocabulary"] or "-"
        if r.get("deployable") is False or r.get("oracle"):
            caveats[r["vocabulary"]] = ";".join(caveat_kinds(r.get("caveats"))) or "oracle"
            name = f"{name[:40]} (not deployable: {caveats[r['vocabulary']]})"
        names.append(name)
    name_w = max(28, *(len(n) + 2 for n in names)) if names else 28
    spread = any(seed_sd(r, "fpr") for r in rows)  # test-time rows over several seeds: a column of its own
    head = (
        f"{'method':<14}{'vocabulary':<{name_w}}{'OOD set' if set_w else '':<{set_w}}{'M':>7}  "
        f"{f'FPR@{tpr}':>7}  {'95% CI':>15}"
        + (f"  {SPREAD_HEAD:>12}" if spread else "")
        + f"  {'AUROC':>6}  {'AUPR-In':>7}  {'AUPR-Out':>8}"
    )
    ccr = [c for c in CCR_COLUMNS if any(c in r for r in rows)]  # full-spectrum runs only
    head += "".join(f"  {c.upper():>8}" for c in ccr)
    lines.append(head)
    for r, name in zip(rows, names, strict=True):
        fpr_ci = interval(r, "fpr")
        ci = f"[{100 * fpr_ci[0]:.1f}, {100 * fpr_ci[1]:.1f}]" if fpr_ci is not None else "-"
        sd = seed_sd(r, "fpr")  # several stream seeds: their spread, in its own column, never as an interval
        sd_col = f"  {f'±{100 * sd[0]:.1f} (n={sd[1]})' if sd else '-':>12}" if spread else ""
        method = f"{r['method']} k={r['topk']}" if r.get("topk") else r["method"]  # top-k NegLabel is an estimate
        method += kind_marks(r, TEST_TIME_MARK)
        set_col = f"{str(r.get('ood_set', ''))[: set_w - 1]:<{set_w}}" if set_w else ""
        lines.append(
            f"{method:<14}{name:<{name_w}}{set_col}{r['vocab_size'] or '-':>7}  {100 * r['fpr']:>6.2f}%  "
            f"{ci:>15}{sd_col}  {100 * r['auroc']:>6.2f}  {100 * r['aupr_in']:>7.2f}  {100 * r['aupr_out']:>8.2f}"
            + "".join(f"  {100 * r[c]:>8.2f}" if c in r else f"  {'-':>8}" for c in ccr)
        )
    n_ood = {str(r.get("ood_set")): r["n_ood"] for r in rows if r.get("ood_set") not in SUMMARY_ROWS}
    lines.append(
        f"n_id={rows[0]['n_id'] if rows else 0}, n_ood="
        + (", ".join(f"{k} {v}" for k, v in n_ood.items()) if len(n_ood) > 1 else str(next(iter(n_ood.values()), 0)))
    )
    conv_meta = (meta or {}).get("conventions") or conventions(
        conv,
        str(rows[0].get("templates", "?")) if rows else "?",
        grouping_params(rows),
        rows[0]["tpr"] if rows else 0.95,
    )
    lines.append(f"FPR convention: {conv_meta['convention']}; threshold: {conv_meta['threshold']}")
    lines.append(f"grouping: {conv_meta['grouping']}; templates: {conv_meta['templates']}")
    lines.append(f"how these differ from NegLabel's, OpenOOD's and the Hendrycks code: {conv_meta['see']}")
    lines += accuracy_lines(meta or {})
    for vname, kinds in caveats.items():
        lines.append(f"NOT DEPLOYABLE: {vname} ({kinds}); a bound for comparison, not a detector's result")
    if spread:
        lines.append(
            f"{SPREAD_HEAD}: FPR's sample sd over a test-time row's stream seeds (its values: their mean); "
            "95% CI: bootstrap over OOD images"
        )
    lines += test_time_notes(rows)
    lines += tuning_notes(meta or {})
    lines += authors_notes(rows)
    return "\n".join(lines)


#: the columns of rows scored with the authors' setting (``negvocab score --authors``): its name and flags
AUTHORS_COLUMNS: list[str] = ["authors", "authors_setting"]


def authors_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One footer line per authors' setting the rows were scored with (``negvocab score --authors``)."""
    settings = dict.fromkeys((str(r["authors"]), str(r.get("authors_setting", ""))) for r in rows if r.get("authors"))
    return [f"settings of --authors {name} (the authors' code): {flags}" for name, flags in settings]


#: the columns of rows scored with parameters chosen on a tuning split
TUNING_COLUMNS: list[str] = ["tuned", "tuned_on", "tuning_criterion", "tuning_value", "tuning_space", "tuned_on_test"]
#: what every table says of a row marked ``[tuned on test]``
TEST_TUNED_NOTE = (
    "[tuned on test] parameters tuned on the test sets themselves (asked for by name): a flattering upper "
    "estimate, never bold and never averaged with the other kinds"
)


def tuning_notes(meta: Mapping[str, Any]) -> list[str]:
    """One footer line per (method, vocabulary) tuned on a tuning split: the parameters chosen and where."""
    out = []
    for key, t in (meta.get("tuning") or {}).items():
        chosen = ", ".join(f"{k}={t['params'][k]}" for k in t["grid"] if k in t["params"])
        split = t["split"]
        oods = ", ".join(f"{n} ({k})" for n, k in split["ood"].items())
        where = "ON THE TEST SETS" if t.get("on_test") else "never the test sets"
        out.append(
            f"tuned {key}: {chosen} ({t['criterion']} {t['value']:.4f}, best of {len(t['trials'])}) "
            f"on {split['id']} ({split['n_id']}) vs {oods}, {where}"
        )
    return out


#: the mark of a test-time (stream) method's row in the terminal table
TEST_TIME_MARK = " [tt]"
#: the terminal table's column of a spread over stream seeds (never the bootstrap interval's)
SPREAD_HEAD = "± sd (seeds)"


def test_time_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The footnote of the test-time rows (their stream protocol) and, when a table holds results of
    several kinds (deployable, test-time, ...) with a test-time one, a line saying so: a comparison never
    mixes them silently."""
    out = []
    streams = {
        (
            r.get("stream_order"),
            r.get("stream_batch_size"),
            str(r.get("stream_seeds", r.get("stream_seed"))),
            r.get("stream_phases") or "",
        )
        for r in rows
        if r.get("test_time")
    }
    for order, batch, seeds, phases in sorted(streams, key=str):
        per_set = f"the OOD sets in phases {phases}, the state carried over" if phases else "one stream per OOD set"
        out.append(
            f"[tt] test-time: scores depend on the test stream seen ({per_set}, {order}, "
            f"batch {batch}, stream seed(s) {seeds}); not comparable one-to-one with batch rows"
        )
    if any(is_test_tuned(r) for r in rows):
        out.append(TEST_TUNED_NOTE)
    kinds = list(dict.fromkeys(KIND_LABELS[result_kind(r)] for r in rows))
    if streams and len(kinds) > 1:  # oracle beside deployable rows is said by the NOT DEPLOYABLE lines already
        out.append(f"this table mixes result kinds ({', '.join(kinds)}): compare rows of one kind")
    return out


# every file a run leaves in its folder (report.html: written after, by `--report`)
RESULT_FILES = ("results.csv", "scores.npz", "scores.csv", "explanations.json", "report.html", "results.json")
SWEEP_FILES = ("sweep.csv", "sweep.png", "sweep.pdf", "sweep.svg", "report.html", "sweep.json")


def write_results(ev: Evaluation, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the results folder as a whole (:func:`negvocab.core.outdir.staged_folder`): all files, then
    one commit step, ``results.json`` last; an earlier run's output is replaced only with
    ``overwrite`` (as ``negvocab score --overwrite``), and kept whole when the write fails.

    Files: ``results.csv`` (the table), ``scores.npz`` (per-image scores with image ids and paths),
    ``scores.csv`` (the same, one row per image), ``explanations.json`` (top negatives and ID classes
    per OOD image and vocabulary, and per flagged ID image under ``id_images``), ``results.json`` (rows + run metadata).

    Parameters
    ----------
    ev : Evaluation
        What :func:`negvocab.evaluate_vocabularies` (or the stream evaluation) returned.
    out_dir : str or PathLike
        The results folder.
    overwrite : bool, default False
        Replace an earlier run's output there.
    """
    with staged_folder(out_dir, RESULT_FILES, "results.json", overwrite=overwrite) as stage:
        _write_results_files(ev, stage)
    return Path(out_dir)


def _write_results_files(ev: Evaluation, out: Path) -> None:
    rows = [file_row(r) for r in ev.rows]  # the one row shape of every results file
    write_text(out / "results.csv", table_csv(rows))
    arrays: dict[str, Any] = {  # Any: numpy's stubs type savez_compressed's **kwds with its allow_pickle
        "id_image_ids": np.array([i for i, _ in ev.id_images]),
        "id_paths": np.array([p for _, p in ev.id_images]),
        "ood_image_ids": np.array([i for i, _ in ev.ood_images]),
        "ood_paths": np.array([p for _, p in ev.ood_images]),
        "ood_sets": np.array(ev.ood_set_of_images()),
        # scores travel without results.json: they say themselves whether the weights were random
        "random_weights": np.array(ev.random_weights),
        "model": np.array(str(ev.meta.get("model", ""))),
    }
    for key, d in ev.scores.items():
        arrays[f"id/{key}"] = d["id"]
        arrays[f"ood/{key}"] = d["ood"]
    with atomic_path(out / "scores.npz") as tmp, open(tmp, "wb") as fh:  # a handle: savez adds no suffix
        np.savez_compressed(fh, **arrays)
    keys = list(ev.scores)
    per_image = []
    for split, imgs, set_of in (
        ("id", ev.id_images, [""] * len(ev.id_images)),
        ("ood", ev.ood_images, ev.ood_set_of_images()),
    ):
        for j, (iid, path) in enumerate(imgs):
            per_image.append(
                {
                    "set": split,
                    "ood_set": set_of[j],
                    "image": iid,
                    "path": path,
                    "random_weights": ev.random_weights,
                    **{k: repr(float(ev.scores[k][split][j])) for k in keys},
                }
            )
    write_text(out / "scores.csv", csv_text(per_image, ["set", "ood_set", "image", "path", "random_weights", *keys]))
    write_json(
        out / "explanations.json",
        {
            "random_weights": ev.random_weights,
            "note": (
                "top negatives and ID classes of each OOD image (vocabularies) and of the ID images "
                "flagged as OOD (id_images; lowest score first, capped); ungrouped shares at tau"
            ),
            "vocabularies": ev.explanations,
            "id_images": ev.id_explanations,
        },
    )
    write_json(out / "results.json", {**ev.meta, "rows": rows})


#: sweep.csv's columns: a results table's (:data:`TABLE_COLUMNS`), then ``kind`` (``sweep`` or ``reference``)
SWEEP_COLUMNS = [*TABLE_COLUMNS, "kind"]


def write_sweep(
    result: SweepResult, out_dir: str | os.PathLike[str], *, overwrite: bool = False, plot_formats: Sequence[str] = ()
) -> Path:
    """``sweep.csv`` (M, FPR, AUROC, AUPR, CI; the reference vocabularies too, ``kind=reference``),
    ``sweep.png`` (the report shows it), the same figure as ``sweep.pdf``/``sweep.svg`` for each of
    ``plot_formats`` ("pdf", "svg"), and ``sweep.json`` in ``out_dir``, written as a whole like
    :func:`write_results` (``sweep.json`` last; ``overwrite`` as there).

    Parameters
    ----------
    result : SweepResult
        What :func:`negvocab.sweep_vocabulary` returned.
    out_dir : str or PathLike
        The folder written.
    overwrite : bool, default False
        Replace an earlier run's output there.
    plot_formats : sequence of str, default ()
        Further figure formats beside PNG: ``"pdf"``, ``"svg"``.
    """
    plot_formats = check_plot_formats(plot_formats) if plot_formats else []
    with staged_folder(out_dir, SWEEP_FILES, "sweep.json", overwrite=overwrite) as stage:
        _write_sweep_files(result, stage, plot_formats)
    return Path(out_dir)


def _write_sweep_files(result: SweepResult, out: Path, plot_formats: Sequence[str] = ()) -> None:
    rows, refs = [file_row(r) for r in result.rows], [file_row(r) for r in result.references]
    table = [{**r, "kind": "sweep"} for r in rows] + [{**r, "kind": "reference"} for r in refs]
    write_text(out / "sweep.csv", table_csv(table, [*SWEEP_COLUMNS, *table_columns(table)[len(TABLE_COLUMNS) :]]))
    for fmt in dict.fromkeys(["png", *plot_formats]):
        plot_sweep(rows, out / f"sweep.{fmt}", references=refs, random_weights=result.random_weights)
    write_json(out / "sweep.json", {**jsonable(result.meta), "rows": rows, "references": refs})
