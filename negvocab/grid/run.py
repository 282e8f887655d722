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

Engines: ``local`` embeds in this process; ``ray`` (:mod:`negvocab.grid.ray_engine`) embeds the
image sets and label lists as Ray tasks into the shared cache folder first, after which this
process finds every embedding in the cache. Scoring is the same either way, so the results are too.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import atomic_path, write_json
from negvocab.errors import InputError, NegvocabError
from negvocab.grid.config import GridConfig, ImageSpec, MethodSpec, ModelSpec, VocabSpec, spec_digest

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.grid.tables import GridResult
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["Cell", "grid_status", "open_sets", "plan_cells", "run_grid"]


# ----------------------------------------------------------------------------------------------
# identities and the plan
# ----------------------------------------------------------------------------------------------
def _file_digest(path: str) -> str:
    import hashlib

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e


def open_set(cfg: GridConfig, spec: ImageSpec) -> ImageSet:
    """The :class:`ImageSet` of ``spec`` (paths relative to the grid file)."""
    from negvocab.data.images import open_image_set

    if spec.fi_ood:
        from negvocab.data.fi_imagenet import fi_imagenet

        fi = fi_imagenet(cfg.path(spec.path), cfg.path(spec.fi_ood), cfg.path(spec.fi_ambiguous) if spec.fi_ambiguous else None)
        return fi.id if spec.fi_part == "id" else fi.ood
    root = cfg.path(spec.image_root) if spec.image_root else None
    return open_image_set(cfg.path(spec.path), layout=spec.layout, name=spec.name, image_root=root)


def open_sets(cfg: GridConfig) -> dict[str, ImageSet]:
    """Every image set of the grid by name (``"ID"`` first)."""
    return {"ID": open_set(cfg, cfg.id_set), **{s.name: open_set(cfg, s) for s in cfg.ood_sets}}


def _model_doc(cfg: GridConfig, m: ModelSpec) -> dict[str, Any]:
    doc = m.doc()
    if m.model_config:
        doc["model_config"] = _file_digest(cfg.path(m.model_config))
    if m.pretrained and Path(cfg.path(m.pretrained)).is_file():
        doc["pretrained"] = cfg.path(m.pretrained)  # a checkpoint: its content is checked by the cache key
    return doc


def _vocab_docs(cfg: GridConfig, v: VocabSpec, model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Identity of each grid vocabulary name of ``v`` (per model for builders)."""
    if v.file:
        base = {"file": _file_digest(cfg.path(v.file))}
    else:
        base = {"builder": v.builder, "options": list(v.options), "model": model}
    return {name: {**base, "size": size} for name, size in zip(v.names(), v.sizes or (None,), strict=True)}


@dataclass(frozen=True)
class Cell:
    """One grid cell and the digests of its stored scores and metrics."""

    model: str
    vocabulary: str
    ood_set: str
    method: str
    convention: str
    digest: str
    id_scores: str
    ood_scores: str

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.model, self.vocabulary, self.ood_set, self.method, self.convention)


def _id_classes_doc(cfg: GridConfig) -> str:
    return "imagenet1k" if cfg.id_classes == "imagenet1k" else _file_digest(cfg.path(cfg.id_classes))


def plan_cells(cfg: GridConfig, sets: Mapping[str, ImageSet]) -> list[Cell]:
    """Every cell of the grid, in model, vocabulary, OOD set, method, convention order."""
    from negvocab.scoring.scores import NEEDS_NEGATIVES

    set_docs = {name: spec_digest({"paths": s.paths, "ids": s.ids}) for name, s in sets.items()}
    common = {"templates": cfg.templates, "id_classes": _id_classes_doc(cfg)}
    cells = []
    for m in cfg.models:
        mdoc = _model_doc(cfg, m)
        vdocs: dict[str, dict[str, Any]] = {}
        for v in cfg.vocabularies:
            vdocs.update(_vocab_docs(cfg, v, mdoc))
        for meth in cfg.methods:
            for vname in vdocs if meth.name in NEEDS_NEGATIVES else [""]:
                score_doc = {**common, "model": mdoc, "vocab": vdocs.get(vname), "method": meth.name, "params": list(meth.params)}
                id_d = spec_digest({**score_doc, "set": set_docs["ID"]})
                for ood in (s.name for s in cfg.ood_sets):
                    ood_d = spec_digest({**score_doc, "set": set_docs[ood]})
                    for conv in cfg.conventions:
                        metrics = {"id": id_d, "ood": ood_d, "convention": conv, "tpr": cfg.tpr, "n_boot": cfg.n_boot}
                        cells.append(Cell(m.display, vname, ood, meth.display, conv, spec_digest(metrics), id_d, ood_d))
    return cells


# ----------------------------------------------------------------------------------------------
# per-model work
# ----------------------------------------------------------------------------------------------
def load_model(cfg: GridConfig, m: ModelSpec, device: str | None = None) -> VLM:
    """The :class:`VLM` of a model spec (registering its ``model_config`` with open_clip first)."""
    from negvocab.vlm.model import VLM

    if m.model_config:
        import open_clip

        open_clip.add_model_config(cfg.path(m.model_config))
    pretrained = None if m.random_weights else (cfg.path(m.pretrained) if m.pretrained and Path(cfg.path(m.pretrained)).exists() else m.pretrained)
    return VLM(
        m.name,
        pretrained=pretrained,
        device=device or cfg.device,
        precision=m.precision,
        cache_dir=cfg.path(cfg.cache_dir) if cfg.cache_dir else None,
        tag=m.tag,
        seed=m.seed,
    )


def id_classes(cfg: GridConfig) -> Any:
    from negvocab.labels.imagenet import imagenet1k, read_id_classes

    return imagenet1k() if cfg.id_classes == "imagenet1k" else read_id_classes(cfg.path(cfg.id_classes))


def resolve_vocabularies(cfg: GridConfig, vlm: VLM, files: dict[str, Vocabulary]) -> dict[str, Vocabulary]:
    """Every grid vocabulary for this model: files (loaded once for all models, ``files`` memo) and
    builder specs (built with this model; heads of one ranking per size)."""
    from negvocab.vocab import Vocabulary

    out: dict[str, Vocabulary] = {}
    for v in cfg.vocabularies:
        if v.file:
            if v.file not in files:
                files[v.file] = Vocabulary.load(cfg.path(v.file))
            full = files[v.file]
        else:
            from negvocab.build.wordnet import build_wordnet_vocabulary

            opts = dict(v.options)
            if "pool" in opts:
                from negvocab.scoring.demo import sample_pool

                opts["candidates"] = sample_pool(int(opts.pop("pool")))
            full = build_wordnet_vocabulary(vlm, None, templates=cfg.templates, id_classes=id_classes(cfg), batch_size=cfg.batch_size, **opts)
        for name, size in zip(v.names(), v.sizes or (None,), strict=True):
            if size is not None and size > len(full):
                raise InputError(f"vocabularies.{v.name}: size {size} exceeds its {len(full)} labels")
            out[name] = full.head(size) if size is not None else full
    return out


def _save_scores(path: Path, scores: np.ndarray) -> None:
    with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, scores=scores)


def _load_scores(path: Path) -> np.ndarray | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            return np.asarray(z["scores"], dtype=np.float64)
    except (OSError, ValueError, KeyError):
        return None


@dataclass
class _ModelWork:
    """What one model still needs: its cells and the score files missing for them."""

    spec: ModelSpec
    cells: list[Cell]
    missing: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # score digest -> (vocab, method, set)


def _method_spec(cfg: GridConfig, display: str) -> MethodSpec:
    return next(m for m in cfg.methods if m.display == display)


def score_model(cfg: GridConfig, work: _ModelWork, sets: Mapping[str, ImageSet], out: Path, vlm: VLM, stats: dict[str, Any]) -> None:
    """Compute and store the missing score files of one model (the embeddings come from the cache
    when an engine filled it)."""
    from negvocab.scoring.scores import score

    need_sets = sorted({s for _, _, s in work.missing.values()}, key=list(sets).index)
    local = any(_method_spec(cfg, meth).name == "glmcm" for _, meth, _ in work.missing.values())
    embeddings = {}
    for name in need_sets:
        t0 = time.perf_counter()
        embeddings[name] = vlm.encode_images(sets[name], local_features=local, batch_size=cfg.batch_size)
        stats["embed_calls"][(work.spec.display, name)] = stats["embed_calls"].get((work.spec.display, name), 0) + 1
        logger.info("%s: %s embedded (%d images) in %.1fs", work.spec.display, name, len(sets[name]), time.perf_counter() - t0)
    classes = id_classes(cfg)
    class_emb = vlm.encode_text(list(classes.names), cfg.templates, pos="n", batch_size=cfg.batch_size)
    vocabs = resolve_vocabularies(cfg, vlm, stats.setdefault("_files", {})) if any(v for v, _, _ in work.missing.values()) else {}
    stats.setdefault("vocabularies", {}).setdefault(work.spec.display, {}).update({k: _vocab_info(v) for k, v in vocabs.items()})
    neg_emb: dict[str, np.ndarray] = {}
    t_score = 0.0
    for digest, (vname, meth, set_name) in work.missing.items():
        spec = _method_spec(cfg, meth)
        if vname and vname not in neg_emb:
            v = vocabs[vname]
            neg_emb[vname] = vlm.encode_text(list(v.labels), cfg.templates, pos=v.parts_of_speech(), batch_size=cfg.batch_size)
        emb = embeddings[set_name]
        params = dict(spec.params)
        t0 = time.perf_counter()
        if spec.name == "glmcm":
            s = score(spec.name, emb.embeddings, class_emb, local=emb.local, device=vlm.device, **params)
        else:
            s = score(spec.name, emb.embeddings, class_emb, neg_emb.get(vname), device=vlm.device, **params)
        t_score += time.perf_counter() - t0
        _save_scores(out / "scores" / f"{digest}.npz", np.asarray(s, dtype=np.float64))
    stats["score_seconds"] = stats.get("score_seconds", 0.0) + t_score


def _vocab_info(v: Vocabulary) -> dict[str, Any]:
    caveats = dict(v.settings.get("caveats") or {})
    if v.settings.get("oracle") and "oracle" not in caveats:
        caveats["oracle"] = "built from the benchmark's OOD labels"
    deployable = bool(getattr(v, "deployable", v.settings.get("deployable", not caveats)))
    return {"size": len(v), "hash": v.short_hash, "source": v.source, "deployable": deployable and not caveats, "caveats": caveats, "random_weights": v.random_weights}


# ----------------------------------------------------------------------------------------------
# metrics of a cell
# ----------------------------------------------------------------------------------------------
def cell_row(cfg: GridConfig, cell: Cell, s_id: np.ndarray, s_ood: np.ndarray, model: ModelSpec, vinfo: Mapping[str, Any] | None) -> dict[str, Any]:
    """The tidy-table row of one cell from its scores."""
    from negvocab.scoring import metrics as M

    rep = M.evaluate(s_id, s_ood, tpr=cfg.tpr, convention=cell.convention, n_boot=cfg.n_boot)  # type: ignore[arg-type]
    ci = {}
    if cfg.n_boot:
        meth = M.aupr_method_for(cell.convention)
        for name in ("aupr_in", "aupr_out"):
            c = M.bootstrap_ci(name, s_id, s_ood, n_boot=cfg.n_boot, method=meth)
            ci[f"{name}_ci_low"], ci[f"{name}_ci_high"] = c.low, c.high
    vinfo = vinfo or {}
    return {
        "model": cell.model,
        "pretrained": None if model.random_weights else model.pretrained,
        "random_weights": model.random_weights or bool(vinfo.get("random_weights")),  # or the vocabulary's builder
        "vocabulary": cell.vocabulary,
        "vocab_source": vinfo.get("source", ""),
        "vocab_size": vinfo.get("size", 0),
        "vocab_hash": vinfo.get("hash", ""),
        "deployable": vinfo.get("deployable", True),
        "caveats": "; ".join(f"{k}: {v}" for k, v in (vinfo.get("caveats") or {}).items()),
        "ood_set": cell.ood_set,
        "method": cell.method,
        "params": json.dumps(dict(_method_spec(cfg, cell.method).params), sort_keys=True),
        "convention": cell.convention,
        "tpr": rep["tpr"],
        "fpr": rep["fpr"],
        "fpr_ci_low": rep.get("fpr_ci", [math.nan] * 2)[0],
        "fpr_ci_high": rep.get("fpr_ci", [math.nan] * 2)[1],
        "auroc": rep["auroc"],
        "auroc_ci_low": rep.get("auroc_ci", [math.nan] * 2)[0],
        "auroc_ci_high": rep.get("auroc_ci", [math.nan] * 2)[1],
        "aupr_in": rep["aupr_in"],
        "aupr_out": rep["aupr_out"],
        "aupr_method": rep["aupr_method"],
        **{k: ci.get(k, math.nan) for k in ("aupr_in_ci_low", "aupr_in_ci_high", "aupr_out_ci_low", "aupr_out_ci_high")},
        "n_id": rep["n_id"],
        "n_ood": rep["n_ood"],
        "templates": cfg.templates,
        "cell": cell.digest[:16],
    }


# ----------------------------------------------------------------------------------------------
# the grid
# ----------------------------------------------------------------------------------------------
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
) -> GridResult:
    """Run (or resume) a grid and return its :class:`~negvocab.grid.tables.GridResult`.

    ``config`` is a :class:`GridConfig` or the path of a grid TOML file; ``out_dir`` keeps the
    stored scores and cells (default: a folder named after the file, next to it). ``engine`` is
    ``"local"`` or ``"ray"`` (``ray_address``: an existing cluster; default: a local one started for
    the run). ``on_model(model, status)`` is called as each model starts and ends (progress).
    """
    from negvocab.grid.config import load_config
    from negvocab.grid.tables import GridResult

    if engine not in ("local", "ray"):
        raise InputError(f"unknown engine {engine!r}; choose local or ray")
    cfg = config if isinstance(config, GridConfig) else load_config(config, random_weights=random_weights)
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
    todo: list[_ModelWork] = []
    for m in cfg.models:
        work = _ModelWork(m, [c for c in by_model[m.display] if not (out / "cells" / f"{c.digest}.json").exists()])
        for c in work.cells:
            for digest, set_name in ((c.id_scores, "ID"), (c.ood_scores, c.ood_set)):
                if not (out / "scores" / f"{digest}.npz").exists():
                    work.missing[digest] = (c.vocabulary, c.method, set_name)
        if work.cells:
            todo.append(work)
    stats["cells_to_run"] = sum(len(w.cells) for w in todo)
    errors: dict[str, str] = {}
    if engine == "ray" and any(w.missing for w in todo):
        from negvocab.grid.ray_engine import run_models_on_ray

        for name, result in run_models_on_ray(cfg, [w for w in todo if w.missing], sets, out, ray_address=ray_address).items():
            if isinstance(result, str):
                errors[name] = result
            else:
                _merge_stats(stats, result)
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
            if work.missing and engine == "local":
                _merge_stats(stats, compute_model(cfg, work, sets, out))
            _finish_cells(cfg, work, out, stats, None)
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
    from negvocab.scoring import metrics as M

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
            s_id, s_ood = _load_scores(out / "scores" / f"{c.id_scores}.npz"), _load_scores(out / "scores" / f"{c.ood_scores}.npz")
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


def compute_model(cfg: GridConfig, work: _ModelWork, sets: Mapping[str, ImageSet], out: Path, device: str | None = None) -> dict[str, Any]:
    """Load one model and store its missing score files; returns its stats (embedding calls,
    vocabulary sizes/hashes/deployability, scoring time). Runs in this process or in a Ray task."""
    stats: dict[str, Any] = {"embed_calls": {}}
    vlm = load_model(cfg, work.spec, device)
    score_model(cfg, work, sets, out, vlm, stats)
    stats.pop("_files", None)
    return stats


def _merge_stats(stats: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, n in more.get("embed_calls", {}).items():
        stats["embed_calls"][key] = stats["embed_calls"].get(key, 0) + n
    for model, info in more.get("vocabularies", {}).items():
        stats.setdefault("vocabularies", {}).setdefault(model, {}).update(info)
    stats["score_seconds"] = stats.get("score_seconds", 0.0) + more.get("score_seconds", 0.0)


def _finish_cells(cfg: GridConfig, work: _ModelWork, out: Path, stats: dict[str, Any], vlm: VLM | None) -> None:
    """Metrics of every pending cell of a model from its stored scores; each cell stored atomically."""
    vinfo = stats.get("vocabularies", {}).get(work.spec.display)
    for c in work.cells:
        s_id, s_ood = _load_scores(out / "scores" / f"{c.id_scores}.npz"), _load_scores(out / "scores" / f"{c.ood_scores}.npz")
        if s_id is None or s_ood is None:  # a torn or deleted score file: recompute it
            if vlm is None:
                vlm = load_model(cfg, work.spec)
            work.missing = {c.id_scores: (c.vocabulary, c.method, "ID"), c.ood_scores: (c.vocabulary, c.method, c.ood_set)}
            score_model(cfg, work, open_sets(cfg), out, vlm, stats)
            vinfo = stats.get("vocabularies", {}).get(work.spec.display)
            s_id, s_ood = _load_scores(out / "scores" / f"{c.id_scores}.npz"), _load_scores(out / "scores" / f"{c.ood_scores}.npz")
            assert s_id is not None and s_ood is not None
        if c.vocabulary and (vinfo is None or c.vocabulary not in vinfo):
            vinfo = _stored_vocab_info(out, work.spec.display, vinfo)
        row = cell_row(cfg, c, s_id, s_ood, work.spec, (vinfo or {}).get(c.vocabulary))
        write_json(out / "cells" / f"{c.digest}.json", {"row": row, "digest": c.digest})
        (out / "cells" / f"{c.digest}.failed.json").unlink(missing_ok=True)
    if vinfo:  # what later runs that need not load the model report for its vocabularies
        write_json(out / "vocabularies.json", _merge_vocab_file(out, work.spec.display, vinfo))


def _merge_vocab_file(out: Path, model: str, vinfo: Mapping[str, Any]) -> dict[str, Any]:
    path = out / "vocabularies.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.setdefault(model, {}).update(vinfo)
    return doc


def _stored_vocab_info(out: Path, model: str, current: dict[str, Any] | None) -> dict[str, Any]:
    """The vocabulary facts an earlier run stored for ``model`` (a run that needs no model load)."""
    path = out / "vocabularies.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    return {**doc.get(model, {}), **(current or {})}
