"""The results folders of ``score`` and ``sweep``: tables, score files and the sweep plot.

:func:`write_results` and :func:`write_sweep` write a folder as a whole through
:func:`negvocab.outdir.staged_folder` (all files, then one commit step; an earlier run is replaced
only with ``overwrite``). :func:`format_table` is the terminal table.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import atomic_path, write_json, write_text
from negvocab.evaluation.row import interval, result_kind
from negvocab.evaluation.rows import SUMMARY_ROWS, conventions, grouping_params, jsonable, seed_sd
from negvocab.outdir import staged_folder
from negvocab.report.plots import check_plot_formats, plot_sweep
from negvocab.scoring.metrics import CCR_FPRS, ccr_column
from negvocab.textfiles import csv_text

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
    "TUNING_COLUMNS",
    "flat_row",
    "format_table",
    "test_time_notes",
    "tuning_notes",
    "write_results",
    "write_sweep",
]


TABLE_COLUMNS = [
    "method",
    "model",
    "pretrained",
    "random_weights",
    "vocabulary",
    "vocab_source",
    "vocab_hash",
    "vocab_size",
    "oracle",
    "deployable",
    "caveats",
    "ood_set",
    "convention",
    "tpr",
    "fpr",
    "auroc",
    "aupr_in",
    "aupr_out",
    "aupr_method",
    "n_id",
    "n_ood",
    "fpr_ci_low",
    "fpr_ci_high",
    "auroc_ci_low",
    "auroc_ci_high",
]


#: the columns a test-time (stream) method's rows add to results.csv: its stream and, over several
#: stream seeds, the spread of each metric
STREAM_COLUMNS: list[str] = [
    "test_time", "stream_order", "stream_batch_size", "stream_seed", "stream_seeds", "n_stream_seeds", "id_ood_ratio",
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
    """A results row with its FPR and AUROC intervals as ``<metric>_ci_low``/``_ci_high`` columns (NaN where none)."""
    out = dict(row)
    for name in ("fpr", "auroc"):
        ci = interval(out, name) or (math.nan, math.nan)
        out.pop(f"{name}_ci", None)
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = ci
    return out


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
            caveats[r["vocabulary"]] = r.get("caveats") or "oracle"
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
        f = flat_row(r)
        ci = f"[{100 * f['fpr_ci_low']:.1f}, {100 * f['fpr_ci_high']:.1f}]" if not math.isnan(f["fpr_ci_low"]) else "-"
        sd = seed_sd(r, "fpr")  # several stream seeds: their spread, in its own column, never as an interval
        sd_col = f"  {f'±{100 * sd[0]:.1f} (n={sd[1]})' if sd else '-':>12}" if spread else ""
        method = f"{r['method']} k={r['topk']}" if r.get("topk") else r["method"]  # top-k NegLabel is an estimate
        method += TEST_TIME_MARK if r.get("test_time") else ""
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
    return "\n".join(lines)


#: the columns of rows scored with parameters chosen on a tuning split
TUNING_COLUMNS: list[str] = ["tuned", "tuned_on", "tuning_criterion", "tuning_value"]


def tuning_notes(meta: Mapping[str, Any]) -> list[str]:
    """One footer line per (method, vocabulary) tuned on a tuning split: the parameters chosen and where."""
    out = []
    for key, t in (meta.get("tuning") or {}).items():
        chosen = ", ".join(f"{k}={t['params'][k]}" for k in t["grid"] if k in t["params"])
        split = t["split"]
        oods = ", ".join(f"{n} ({k})" for n, k in split["ood"].items())
        out.append(
            f"tuned {key}: {chosen} ({t['criterion']} {t['value']:.4f}, best of {len(t['trials'])}) "
            f"on {split['id']} ({split['n_id']}) vs {oods}, never the test sets"
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
        (r.get("stream_order"), r.get("stream_batch_size"), str(r.get("stream_seeds", r.get("stream_seed"))))
        for r in rows
        if r.get("test_time")
    }
    for order, batch, seeds in sorted(streams, key=str):
        out.append(
            f"[tt] test-time: scores depend on the test stream seen (one stream per OOD set, {order}, "
            f"batch {batch}, stream seed(s) {seeds}); not comparable one-to-one with batch rows"
        )
    kinds = list(dict.fromkeys(result_kind(r) for r in rows))
    if streams and len(kinds) > 1:  # oracle beside deployable rows is said by the NOT DEPLOYABLE lines already
        out.append(f"this table mixes result kinds ({', '.join(kinds)}): compare rows of one kind")
    return out


# every file a run leaves in its folder (report.html: written after, by `--report`)
RESULT_FILES = ("results.csv", "scores.npz", "scores.csv", "explanations.json", "report.html", "results.json")
SWEEP_FILES = ("sweep.csv", "sweep.png", "sweep.pdf", "sweep.svg", "report.html", "sweep.json")


def write_results(ev: Evaluation, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the results folder as a whole (:func:`negvocab.outdir.staged_folder`): all files, then
    one commit step, ``results.json`` last; an earlier run's output is replaced only with
    ``overwrite`` (as ``negvocab score --overwrite``), and kept whole when the write fails.

    Files: ``results.csv`` (the table), ``scores.npz`` (per-image scores with image ids and paths),
    ``scores.csv`` (the same, one row per image), ``explanations.json`` (top negatives and ID classes
    per OOD image and vocabulary, and per flagged ID image under ``id_images``), ``results.json`` (rows + run metadata).
    """
    with staged_folder(out_dir, RESULT_FILES, "results.json", overwrite=overwrite) as stage:
        _write_results_files(ev, stage)
    return Path(out_dir)


def _write_results_files(ev: Evaluation, out: Path) -> None:
    flat = [{**flat_row(r), "params": json.dumps(r.get("params", {}))} for r in ev.rows]
    stream = [c for c in STREAM_COLUMNS if any(c in r for r in ev.rows)]  # only where a test-time method ran
    accuracy = accuracy_columns_in(ev.rows) + [c for c in TUNING_COLUMNS if any(c in r for r in ev.rows)]
    for f, r in zip(flat, ev.rows, strict=True):
        f.update({k: r[k] for k in accuracy if k in r})
    write_text(out / "results.csv", csv_text(flat, [*TABLE_COLUMNS, "params", "templates", *accuracy, *stream]))
    arrays: dict[str, np.ndarray] = {
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
    write_json(out / "results.json", {**ev.meta, "rows": ev.rows})


SWEEP_COLUMNS = [
    "kind", "vocabulary", "M", "method", "model", "pretrained", "random_weights", "vocab_source", "vocab_hash",
    "deployable",
    "caveats", "ood_set", "convention", "tpr", "fpr", "auroc", "aupr_in", "aupr_out", "aupr_method", "n_id", "n_ood",
    "fpr_ci_low", "fpr_ci_high", "auroc_ci_low", "auroc_ci_high", "templates",
]  # fmt: skip


def write_sweep(
    result: SweepResult, out_dir: str | os.PathLike[str], *, overwrite: bool = False, plot_formats: Sequence[str] = ()
) -> Path:
    """``sweep.csv`` (M, FPR, AUROC, AUPR, CI; the reference vocabularies too, ``kind=reference``),
    ``sweep.png`` (the report shows it), the same figure as ``sweep.pdf``/``sweep.svg`` for each of
    ``plot_formats`` ("pdf", "svg"), and ``sweep.json`` in ``out_dir``, written as a whole like
    :func:`write_results` (``sweep.json`` last; ``overwrite`` as there)."""
    plot_formats = check_plot_formats(plot_formats) if plot_formats else []
    with staged_folder(out_dir, SWEEP_FILES, "sweep.json", overwrite=overwrite) as stage:
        _write_sweep_files(result, stage, plot_formats)
    return Path(out_dir)


def _write_sweep_files(result: SweepResult, out: Path, plot_formats: Sequence[str] = ()) -> None:
    table = [{"kind": "sweep", **flat_row(r)} for r in result.rows] + [
        {"kind": "reference", **flat_row(r)} for r in result.references
    ]
    write_text(out / "sweep.csv", csv_text(table, [*SWEEP_COLUMNS, *accuracy_columns_in(table)]))
    for fmt in dict.fromkeys(["png", *plot_formats]):
        plot_sweep(
            result.rows, out / f"sweep.{fmt}", references=result.references, random_weights=result.random_weights
        )
    write_json(out / "sweep.json", {**jsonable(result.meta), "rows": result.rows, "references": result.references})
