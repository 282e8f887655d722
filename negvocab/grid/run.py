"""Run an experiment grid: embed once per model, score every cell from cached embeddings, resumably.

For each model: every image set is embedded once (through the embedding cache, so a second grid
or a resumed one reads it back) and every vocabulary's labels once; then each (vocabulary, method)
is scored on the ID set once and on each OOD set once, and each cell (model, vocabulary, OOD set,
method, convention) gets its metrics from those scores.

Resuming: per-image scores go to ``DIR/scores/<digest>.npz`` and each finished cell to
``DIR/cells/<digest>.json`` (both atomic; the digest covers everything that decides the content:
model, weights, image list, vocabulary hash or builder spec, method parameters, templates, ID
classes, and for cells the convention, tpr and bootstrap). A cell whose file exists is skipped; a
model whose cells are all stored is not even loaded; changing one parameter changes the digests of
exactly the cells it touches. A model that fails (missing weights, unreadable set) marks its cells
failed (``cells/<digest>.failed.json``, with the one-line reason) and the grid goes on.

Engines: the missing work is split into units below the model (:mod:`negvocab.grid.units`: image
shards, text, scoring from the cache); ``local`` runs them in this process, ``ray``
(:mod:`negvocab.grid.ray_engine`) on Ray actors that each keep a model, into the shared cache and
output folders. The metrics come from the stored scores either way, so the results are the same.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import write_json
from negvocab.errors import InputError, NegvocabError
from negvocab.grid.config import GridConfig, load_config, spec_digest
from negvocab.grid.ray_engine import run_models_on_ray
from negvocab.grid.tables import GridResult
from negvocab.grid.units import deterministic_config, run_units_here
from negvocab.grid.work import (
    Cell,
    ModelWork,
    finish_cells,
    load_scores,
    merge_stats,
    open_sets,
    plan_cells,
)
from negvocab.scoring import metrics as M

if TYPE_CHECKING:
    from negvocab.grid.tables import GridResult

logger = logging.getLogger(__name__)

__all__ = ["grid_status", "mean_intervals", "run_grid"]


def _cells_by_model(cfg: GridConfig, cells: Iterable[Cell]) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {m.display: [] for m in cfg.models}
    for c in cells:
        out[c.model].append(c)
    return out


def grid_status(cfg: GridConfig, out_dir: str | Path) -> dict[str, Any]:
    """Done / pending / failed cells of a grid in ``out_dir``, per model and in total (nothing is run)."""
    out = Path(out_dir)
    cells = plan_cells(cfg, open_sets(cfg))
    per: dict[str, dict[str, int]] = {}
    failed: list[dict[str, Any]] = []
    for c in cells:
        row = per.setdefault(c.model, {"done": 0, "pending": 0, "failed": 0})
        if (out / "cells" / f"{c.digest}.json").exists():
            row["done"] += 1
        elif (out / "cells" / f"{c.digest}.failed.json").exists():
            row["failed"] += 1
            info = json.loads((out / "cells" / f"{c.digest}.failed.json").read_text())
            failed.append({"cell": list(c.key()), "error": info.get("error", "")})
        else:
            row["pending"] += 1
    total = {k: sum(r[k] for r in per.values()) for k in ("done", "pending", "failed")}
    return {"total": total, "models": per, "failed": failed, "cells": len(cells)}


def run_grid(
    config: GridConfig | str | Path,
    out_dir: str | Path | None = None,
    *,
    engine: str = "local",
    ray_address: str | None = None,
    random_weights: bool = False,
    on_model: Callable[[str, str], None] | None = None,
    deterministic: bool = False,
) -> GridResult:
    """Run (or resume) a grid and return its :class:`~negvocab.grid.tables.GridResult`.

    ``config`` is a :class:`GridConfig` or the path of a grid TOML file; ``out_dir`` keeps the
    stored scores and cells (default: a folder named after the file, next to it). ``engine`` is
    ``"local"`` or ``"ray"`` (``ray_address``: an existing cluster; default: a local one started for
    the run). ``on_model(model, status)`` is called as each model starts and ends (progress).
    ``deterministic``: fp32, deterministic kernels, fixed shards (:mod:`negvocab.grid.units`).    """
    if engine not in ("local", "ray"):
        raise InputError(f"unknown engine {engine!r}; choose local or ray")
    cfg = config if isinstance(config, GridConfig) else load_config(config, random_weights=random_weights)
    cfg = deterministic_config(cfg) if deterministic or cfg.deterministic else cfg
    if not Path(cfg.base).is_absolute():  # paths the same wherever the work runs (a Ray worker's folder differs)
        cfg = replace(cfg, base=str(Path(cfg.base).absolute()))
    out = Path(out_dir) if out_dir is not None else Path(cfg.base) / (Path(cfg.source).stem or "grid")
    (out / "cells").mkdir(parents=True, exist_ok=True)
    (out / "scores").mkdir(parents=True, exist_ok=True)
    (out / "means").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    sets = open_sets(cfg)
    cells = plan_cells(cfg, sets)
    stats: dict[str, Any] = {"embed_calls": {}, "cells": len(cells), "engine": engine}
    by_model = _cells_by_model(cfg, cells)
    todo: list[ModelWork] = []
    for m in cfg.models:
        work = ModelWork(m, [c for c in by_model[m.display] if not (out / "cells" / f"{c.digest}.json").exists()])
        for c in work.cells:
            for digest, set_name in ((c.id_scores, "ID"), (c.ood_scores, c.ood_set)):
                if not (out / "scores" / f"{digest}.npz").exists():
                    work.missing[digest] = (c.vocabulary, c.method, set_name)
        if work.cells:
            todo.append(work)
    stats["cells_to_run"] = sum(len(w.cells) for w in todo)
    errors: dict[str, str] = {}
    if any(w.missing for w in todo):  # the units below the model (negvocab.grid.units), on either engine
        busy = [w for w in todo if w.missing]
        computed = run_models_on_ray(cfg, busy, sets, out, ray_address=ray_address) if engine == "ray" else run_units_here(cfg, busy, sets, out)
        for name, result in computed.items():
            if isinstance(result, str):
                errors[name] = result
            else:
                merge_stats(stats, result)
                lost = [d for w in todo if w.spec.display == name for d in w.missing if not (out / "scores" / f"{d}.npz").exists()]
                if lost:  # the workers wrote elsewhere: computed again below, here
                    logger.warning(
                        "%s: %d score files the Ray workers wrote are not in %s; computing them here (the output folder "
                        "must be on a filesystem every node sees, at the same path)", name, len(lost), out.absolute()
                    )
    for work in todo:
        name = work.spec.display
        if on_model:
            on_model(name, "start")
        try:
            if name in errors:
                raise NegvocabError(errors[name])
            finish_cells(cfg, work, out, stats, None)
        except NegvocabError as e:
            logger.error("%s: %s", name, e)
            for c in work.cells:
                write_json(out / "cells" / f"{c.digest}.failed.json", {"cell": list(c.key()), "error": str(e)})
        if on_model:
            on_model(name, "done")
    stats["seconds"] = round(time.perf_counter() - t0, 2)
    rows = []
    for c in cells:
        path = out / "cells" / f"{c.digest}.json"
        if path.exists():
            rows.append(json.loads(path.read_text(encoding="utf-8"))["row"])
    stats.pop("_files", None)
    means = mean_intervals(cfg, cells, out)
    return GridResult(rows, cfg, stats=stats, out_dir=out, status=grid_status(cfg, out) if cells else {}, means=means)


def mean_intervals(cfg: GridConfig, cells: Iterable[Cell], out: Path) -> dict[tuple[str, str, str, str], dict[str, float]]:
    """Bootstrap intervals of the mean over OOD sets per (model, vocabulary, method, convention):
    each set's OOD images resampled within the set with the same draws as its cell's interval, the
    metric averaged over sets per draw (stored under ``means/``, so a resumed grid reuses them)."""
    groups: dict[tuple[str, str, str, str], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.model, c.vocabulary, c.method, c.convention), []).append(c)
    result = {}
    for key, members in groups.items():
        if len(members) < 2 or not cfg.n_boot or not all((out / "cells" / f"{c.digest}.json").exists() for c in members):
            continue
        path = out / "means" / f"{spec_digest(sorted(c.digest for c in members))}.json"
        if path.exists():
            result[key] = json.loads(path.read_text(encoding="utf-8"))
            continue
        draws: dict[str, list[np.ndarray]] = {}
        for c in members:
            s_id, s_ood = load_scores(out / "scores" / f"{c.id_scores}.npz"), load_scores(out / "scores" / f"{c.ood_scores}.npz")
            if s_id is None or s_ood is None:
                break
            kw = {"fpr": {"tpr": cfg.tpr, "convention": c.convention}, "auroc": {}}
            kw |= {m: {"method": M.aupr_method_for(c.convention)} for m in ("aupr_in", "aupr_out")}
            for metric, extra in kw.items():
                values = M.bootstrap_values(metric, s_id, s_ood, n_boot=cfg.n_boot, **extra)
                draws.setdefault(metric, []).append(values)
        else:
            ci = {}
            for metric, per_set in draws.items():
                lo, hi = np.quantile(np.mean(per_set, axis=0), [0.025, 0.975])
                ci[f"{metric}_ci_low"], ci[f"{metric}_ci_high"] = float(lo), float(hi)
            write_json(path, ci)
            result[key] = ci
    return result


