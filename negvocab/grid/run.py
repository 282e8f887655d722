"""Run an experiment grid: embed once per model, score every cell from cached embeddings, resumably.

For each model: every image set is embedded once (through the embedding cache, so a second grid
or a resumed one reads it back) and every vocabulary's labels once; then each (vocabulary, method)
is scored on the ID set once and on each OOD set once, and each cell (model, vocabulary, OOD set,
method, convention) gets its metrics from those scores.

Resuming: per-image scores go to ``DIR/scores/<digest>.npz`` (with the facts of their vocabulary:
size, hash, source, deployable, caveats) and each finished cell to ``DIR/cells/<digest>.json`` (both
atomic; a cell file carries a checksum). The digest covers the content of everything that decides
the result: model and weights, each image file (the embedding cache's key: path, size, modification
time, so an image replaced in place reruns its cells), the vocabulary file's bytes and labels' hash
or the builder spec, method parameters, templates, ID classes, and for cells the convention, tpr and
bootstrap. A cell whose valid file exists is skipped; a damaged one is computed again; a model whose
cells are all stored is not even loaded. A model that fails (missing weights) marks its cells failed
(``cells/<digest>.failed.json``, with the one-line reason); a vocabulary file or OOD set that cannot
be read fails only its own cells; the grid goes on.

The output folder is claimed for the run (:mod:`negvocab.core.outdir`: a lock, so a second run into it
refuses at once); a folder holding another grid's outputs is replaced only with ``overwrite``, and
the same grid resumes in it. The tables (:func:`write_grid`) are staged and moved in by one commit;
``grid.json`` holds only what a clean run would (the run's times and counts go to ``run.json``), so
a resumed grid's files equal a clean run's byte for byte.

Engines: the missing work is split into units below the model (:mod:`negvocab.grid.units`: image
shards, text, scoring from the cache); ``local`` runs them in this process, ``ray``
(:mod:`negvocab.grid.ray_engine`) on Ray actors that each keep a model, into the shared cache and
output folders. The metrics come from the stored scores either way, so the results are the same.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.atomic import write_json
from negvocab.core.errors import DiskFullError, InputError, NegvocabError
from negvocab.core.outdir import FolderClaim, claim_folder, staged_folder
from negvocab.core.plugins import loaded_plugins
from negvocab.data.benchmarks import MEAN
from negvocab.evaluation.accuracy import class_indices
from negvocab.evaluation.records import summary_intervals, summary_sets
from negvocab.grid.config import GridConfig, load_config, spec_digest
from negvocab.grid.ray_engine import run_models_on_ray
from negvocab.grid.sets import labels_digest
from negvocab.grid.store import load_scores, read_cell, read_failure, stored_facts, stored_json, write_failure
from negvocab.grid.tidy import GridResult
from negvocab.grid.units import deterministic_config, run_units_here
from negvocab.grid.work import (
    Cell,
    ModelWork,
    finish_cells,
    id_classes,
    made_on_other_device,
    merge_stats,
    open_sets,
    plan_cells,
    score_device,
)

if TYPE_CHECKING:
    from negvocab.grid.tidy import GridResult

logger = logging.getLogger(__name__)

__all__ = [
    "GRID_OUTPUTS",
    "SOURCE_FILE",
    "claim_grid_folder",
    "failure_summary",
    "grid_source",
    "grid_status",
    "mean_intervals",
    "read_source",
    "run_grid",
    "write_grid",
]

#: what identifies the grid a folder holds (the grid file and the --random-weights flag)
SOURCE_FILE = "grid_source.json"
#: the tables a grid run commits (the sweep figures ``sweep_*`` besides); ``grid.json`` is the marker
GRID_OUTPUTS = ("table.csv", "table.parquet", "pivots.md", "pivots.tex", "comparisons.md", "run.json", "grid.json")
#: the stats a clean and a resumed run share, kept in ``grid.json``; every other stat (times, counts of
#: work done, model loads, and any added later) goes to ``run.json``, so a new one cannot make them differ
GRID_STATS = ("cells", "engine")
#: what a grid stores file by file as it goes (resumable; a killed write's temporary files go on the next claim)
WORK_DIRS = ("cells", "scores", "means")


def _cells_by_model(cfg: GridConfig, cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {m.display: [] for m in cfg.models}
    for c in cells:
        out[c.model].append(c)
    return out


def grid_status(cfg: GridConfig, out_dir: str | Path) -> dict[str, Any]:
    """Done / pending / failed cells of a grid in ``out_dir``, per model and in total (nothing is run).

    Parameters
    ----------
    cfg : GridConfig
        The grid.
    out_dir : str or Path
        Its output folder.
    """
    out = Path(out_dir)
    errors: dict[str, str] = {}
    cells = plan_cells(cfg, open_sets(cfg, errors), errors)
    per: dict[str, dict[str, int]] = {}
    failed: list[dict[str, Any]] = []
    for c in cells:
        row = per.setdefault(c.model, {"done": 0, "pending": 0, "failed": 0})
        done = read_cell(out, c, drop=False) is not None  # status changes nothing
        error = None if done else read_failure(out, c, drop=False)
        if done:
            row["done"] += 1
        elif error is not None:
            row["failed"] += 1
            failed.append({"cell": list(c.key()), "error": error})
        else:
            row["pending"] += 1
    total = {k: sum(r[k] for r in per.values()) for k in ("done", "pending", "failed")}
    return {"total": total, "models": per, "failed": failed, "cells": len(cells)}


def read_source(folder: Path) -> dict[str, Any] | None:
    """The grid a results folder holds (``grid_source.json``: the grid file, the random-weights
    flag), None when there is none; a damaged one is one line."""
    path = folder / SOURCE_FILE
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise InputError(
            f"{path}: not a readable grid source file ({type(e).__name__}); give the grid file and -o instead"
        ) from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("config"), str)
        or not isinstance(doc.get("random_weights", False), bool)
    ):
        raise InputError(
            f"{path}: not a grid source file (a table with config = the grid file); give the grid file and -o instead"
        )
    return doc


def grid_source(cfg: GridConfig, random_weights: bool = False) -> dict[str, Any]:
    """What identifies a grid's folder: its file (absolute) and the ``--random-weights`` flag."""
    return {"config": str(Path(cfg.source).absolute()) if cfg.source else "", "random_weights": random_weights}


def claim_grid_folder(out: Path, source: dict[str, Any], *, overwrite: bool) -> FolderClaim:
    """Claim ``out`` for a run of the grid ``source`` (see :mod:`negvocab.core.outdir`): a run of the same
    grid resumes there; another grid's (or another command's) outputs are replaced only with
    ``overwrite``. Records ``source`` in the folder."""
    same = (out / SOURCE_FILE).is_file() and _same_source(out, source)
    outputs = [] if same else [*GRID_OUTPUTS, SOURCE_FILE, *_sweeps(out)]
    claim = claim_folder(out, outputs, overwrite=overwrite, work_dirs=WORK_DIRS)
    try:
        if not same:
            write_json(out / SOURCE_FILE, source)
    except BaseException:
        claim.release()
        raise
    return claim


def _same_source(out: Path, source: dict[str, Any]) -> bool:
    try:
        return read_source(out) == source
    except InputError:
        return False  # a damaged record: not this grid's, replaced only with overwrite


def _sweeps(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("sweep_*")) if out.is_dir() else []


def run_grid(
    config: GridConfig | str | Path,
    out_dir: str | Path | None = None,
    *,
    engine: str = "local",
    ray_address: str | None = None,
    random_weights: bool = False,
    overwrite: bool = False,
    on_model: Callable[[str, str], None] | None = None,
    deterministic: bool = False,
) -> GridResult:
    """Run (or resume) a grid and return its :class:`~negvocab.grid.tidy.GridResult`.

    ``config`` is a :class:`GridConfig` or the path of a grid TOML file; ``out_dir`` keeps the
    stored scores and cells (default: a folder named after the file, next to it); it may hold this
    grid's earlier run (resumed) and holds another grid's only with ``overwrite``. ``engine`` is
    ``"local"`` or ``"ray"`` (``ray_address``: an existing cluster; default: a local one started for
    the run). ``on_model(model, status)`` is called as each model starts and ends (progress).
    ``deterministic``: fp32, deterministic kernels, fixed shards (:mod:`negvocab.grid.units`).

    Parameters
    ----------
    config : GridConfig, str or Path
        The grid, or the path of a grid TOML file.
    out_dir : str or Path, optional
        Keeps the stored scores and cells (default: a folder named after the file, next to it).
    engine : str, default "local"
        ``"local"`` or ``"ray"``.
    ray_address : str, optional
        An existing Ray cluster (default: a local one started for the run).
    random_weights : bool, default False
        Every model of the grid file with random weights (where ``config`` is a path).
    overwrite : bool, default False
        Replace another grid's output in ``out_dir``.
    on_model : callable, optional
        ``on_model(model, status)``, called as each model starts and ends.
    deterministic : bool, default False
        fp32, deterministic kernels, fixed shards.
    """
    if engine not in ("local", "ray"):
        raise InputError(f"unknown engine {engine!r}; choose local or ray")
    cfg = config if isinstance(config, GridConfig) else load_config(config, random_weights=random_weights)
    cfg = deterministic_config(cfg) if deterministic or cfg.deterministic else cfg
    if not Path(cfg.base).is_absolute():  # paths the same wherever the work runs (a Ray worker's folder differs)
        cfg = replace(cfg, base=str(Path(cfg.base).absolute()))
    # every plug-in this process loaded ($NEGVOCAB_PLUGINS, entry points, a notebook's load_plugins) goes to
    # the workers with the file's own: a Ray worker is a fresh process that would not know their entries
    cfg = replace(cfg, plugins=tuple(dict.fromkeys([*cfg.plugins, *loaded_plugins()])))
    out = Path(out_dir) if out_dir is not None else Path(cfg.base) / (Path(cfg.source).stem or "grid")
    claim = claim_grid_folder(out, grid_source(cfg, random_weights), overwrite=overwrite)
    try:
        return _run_claimed(cfg, out, engine, ray_address, on_model)
    finally:
        claim.release()


def _run_claimed(
    cfg: GridConfig, out: Path, engine: str, ray_address: str | None, on_model: Callable[[str, str], None] | None
) -> GridResult:
    try:
        for sub in WORK_DIRS:
            (out / sub).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot write into {out}: {e.strerror or e}") from e
    t0 = time.perf_counter()
    set_errors: dict[str, str] = {}
    sets = open_sets(cfg, set_errors)
    cells = plan_cells(cfg, sets, set_errors)
    stats: dict[str, Any] = {"embed_calls": {}, "cells": len(cells), "engine": engine}
    for c in cells:
        if c.error:  # a bad vocabulary file or OOD set: its cells fail, the rest runs
            write_failure(out, c, c.error)
    by_model = _cells_by_model(cfg, [c for c in cells if not c.error])
    todo: list[ModelWork] = []
    device = score_device(cfg, engine)  # where score units compute: a method bound to it is redone on another
    for m in cfg.models:
        elsewhere = {c.digest for c in by_model[m.display] if made_on_other_device(cfg, out, c, device)}
        if elsewhere:
            logger.warning(
                "%s: %d cells of a method whose scores depend on the device (grouping = "
                "neglabel) were scored on another kind of device than %s; computing them again",
                m.display,
                len(elsewhere),
                device,
            )
        older = _without_hits(cfg, sets, out, by_model[m.display])  # ID accuracy and CCR: as a clean run gives them
        redo = elsewhere | older
        work = ModelWork(m, [c for c in by_model[m.display] if c.digest in redo or read_cell(out, c) is None])
        for c in work.cells:
            for digest, set_name in ((c.id_scores, "ID"), (c.ood_scores, c.ood_set)):
                again = c.digest in elsewhere or (set_name == "ID" and c.digest in older)
                if again or load_scores(out / "scores" / f"{digest}.npz") is None:
                    work.missing[digest] = (c.vocabulary, c.method, set_name)
        if work.cells:
            todo.append(work)
    stats["cells_to_run"] = sum(len(w.cells) for w in todo)
    errors: dict[str, str] = {}
    if any(w.missing for w in todo):  # the units below the model (negvocab.grid.units), on either engine
        busy = [w for w in todo if w.missing]
        computed = (
            run_models_on_ray(cfg, busy, sets, out, ray_address=ray_address)
            if engine == "ray"
            else run_units_here(cfg, busy, sets, out)
        )
        for name, result in computed.items():
            if isinstance(result, str):
                errors[name] = result
            else:
                merge_stats(stats, result)
                lost = [
                    d
                    for w in todo
                    if w.spec.display == name
                    for d in w.missing
                    if not (out / "scores" / f"{d}.npz").exists()
                ]
                if lost:  # the workers wrote elsewhere: computed again below, here
                    logger.warning(
                        "%s: %d score files the Ray workers wrote are not "
                        "in %s; computing them here (the output folder "
                        "must be on a filesystem every node sees, at the same path)",
                        name,
                        len(lost),
                        out.absolute(),
                    )
    for work in todo:
        name = work.spec.display
        if on_model:
            on_model(name, "start")
        try:
            if name in errors:
                raise NegvocabError(errors[name])
            finish_cells(cfg, work, out, stats, None, engine)
        except DiskFullError:
            raise  # not the model's fault: the run stops, a rerun resumes where it stopped
        except NegvocabError as e:
            logger.error("%s: %s", name, e)
            for c in work.cells:
                if read_cell(out, c) is None:
                    write_failure(out, c, str(e))
        if on_model:
            on_model(name, "done")
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    rows = [row for row in (read_cell(out, c) for c in cells) if row is not None]
    stats.pop("_files", None)
    means = mean_intervals(cfg, cells, out)
    return GridResult(rows, cfg, stats=stats, out_dir=out, status=grid_status(cfg, out) if cells else {}, means=means)


def _read_means(path: Path) -> dict[str, float] | None:
    """A stored interval of the mean, or None (missing; a damaged one is logged and computed again)."""
    there, doc = stored_json(path)
    if not there:
        return None
    if not isinstance(doc, dict) or not all(isinstance(v, float) for v in doc.values()):
        logger.warning("%s: a damaged stored interval; computing it again", path)
        return None
    return doc


def write_grid(res: GridResult, out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Write a grid's tables into ``out_dir`` as one commit (:func:`negvocab.core.outdir.staged_folder`:
    staged, ``grid.json`` last; a failure leaves the earlier tables whole). ``grid.json`` holds what
    a clean run holds; the run's times and counts go to ``run.json``. Figures carry a fixed date
    (``SOURCE_DATE_EPOCH``, default 0) and SVG ids a fixed salt, so the same grid gives the same bytes."""
    import matplotlib

    out = Path(out_dir)
    outputs = [*GRID_OUTPUTS, *_sweeps(out)]
    kept = {k: v for k, v in res.stats.items() if k in GRID_STATS}
    run = {k: v for k, v in res.stats.items() if k not in GRID_STATS}
    run["embed_calls"] = {f"{m} / {s}": n for (m, s), n in run.get("embed_calls", {}).items()}
    tables = GridResult(res.rows, res.config, stats=kept, out_dir=out, status=res.status, means=res.means)
    fix_date = "SOURCE_DATE_EPOCH" not in os.environ
    if fix_date:
        os.environ["SOURCE_DATE_EPOCH"] = "0"
    try:
        with (
            staged_folder(out, outputs, "grid.json", overwrite=overwrite) as stage,
            matplotlib.rc_context({"svg.hashsalt": "negvocab-grid"}),
        ):
            tables.write(stage)
            write_json(
                stage / "run.json",
                {
                    **json.loads(json.dumps(run, default=str)),
                    "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
    finally:
        if fix_date:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
    return out


def failure_summary(status: Mapping[str, Any]) -> list[tuple[str, int]]:
    """Each distinct failure reason with how many cells it failed, most first."""
    counts: dict[str, int] = {}
    for f in status.get("failed", []):
        counts[f["error"]] = counts.get(f["error"], 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _without_hits(cfg: GridConfig, sets: Mapping[str, Any], out: Path, cells: Iterable[Cell]) -> set[str]:
    """The cells whose stored ID score file holds hits of other labels than the ID set's now
    (:func:`negvocab.grid.work.id_facts`): none where the labels name the ID classes (written before a grid
    stored them), those of labels since edited, or hits where the ID set now has no usable labels. Their
    ID score file and row are made again, so that the grid ends as a clean run would, ``id_accuracy`` and
    CCR included (the cell digests cover the images, not their labels)."""
    labels = getattr(sets.get("ID"), "labels", None)
    usable = bool(labels) and class_indices(list(labels or ()), id_classes(cfg)) is not None
    now = labels_digest(sets["ID"]) if usable else None
    older: dict[str, bool] = {}
    for c in cells:
        path = out / "scores" / f"{c.id_scores}.npz"
        if c.id_scores not in older:
            facts = stored_facts(path) if path.exists() else None
            if facts is None:  # not made yet: made as any missing file
                older[c.id_scores] = False
            else:
                hits = "id_correct" in facts
                older[c.id_scores] = (not hits or facts.get("id_labels") != now) if usable else hits
    found = {c.digest for c in cells if older[c.id_scores]}
    if found:
        logger.warning(
            "%d cells' ID score files hold the ID accuracy of other labels (or none): made again", len(found)
        )
    return found


def mean_intervals(cfg: GridConfig, cells: Iterable[Cell], out: Path) -> dict[tuple[str, ...], dict[str, float]]:
    """Bootstrap intervals of the mean over OOD sets per (model, vocabulary, method, convention):
    each set's OOD images resampled within the set with the same draws as its cell's interval, the
    metric averaged over sets per draw (stored under ``means/``, so a resumed grid reuses them); the
    ``near-ood`` and ``far-ood`` rows' under the key plus the row's name, each over its group's sets."""
    by_key: dict[tuple[str, str, str, str], list[Cell]] = {}
    for c in cells:
        by_key.setdefault((c.model, c.vocabulary, c.method, c.convention), []).append(c)
    group_of = {s.name: s.group for s in cfg.ood_sets}
    result: dict[tuple[str, ...], dict[str, float]] = {}
    for key, cell_list in by_key.items():
        if not cfg.n_boot or not all(read_cell(out, c) is not None for c in cell_list):
            continue
        for name, names in summary_sets([c.ood_set for c in cell_list], group_of):
            ci = _interval_of_mean(cfg, [c for c in cell_list if c.ood_set in names], out)
            if ci is not None:
                result[key if name == MEAN else (*key, name)] = ci
    return result


def _interval_of_mean(cfg: GridConfig, members: list[Cell], out: Path) -> dict[str, float] | None:
    """The bootstrap intervals of the mean over the cells ``members`` (stored, or computed and stored)."""
    path = out / "means" / f"{spec_digest(sorted(c.digest for c in members))}.json"
    stored = _read_means(path)
    if stored is not None:
        return stored
    s_id: dict[str, np.ndarray] = {}
    s_ood: dict[str, np.ndarray] = {}
    for c in members:  # one cell per OOD set; a test-time method's cells each against their own stream's ID scores
        got_id, got_ood = (
            load_scores(out / "scores" / f"{c.id_scores}.npz"),
            load_scores(out / "scores" / f"{c.ood_scores}.npz"),
        )
        if got_id is None or got_ood is None:
            return None
        s_id[c.ood_set], s_ood[c.ood_set] = got_id, got_ood
    conv = members[0].convention  # the cells' bootstrap: seed 0, the 2.5% and 97.5% quantiles
    got = summary_intervals(s_id, s_ood, tpr=cfg.tpr, convention=conv, n_boot=cfg.n_boot, quantiles=(0.025, 0.975))
    ci = {f"{metric}_ci_{end}": v for metric, pair in got.items() for end, v in zip(("low", "high"), pair, strict=True)}
    write_json(path, ci)
    return ci
