"""The work of one grid model: its cells and their identities, the model and its vocabularies,
scoring from the cache, and the cell files. Both engines (:mod:`negvocab.grid.run` in this process,
:mod:`negvocab.grid.ray_engine` on a cluster) run a model through :func:`compute_model`.
"""


from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import atomic_path, write_json
from negvocab.builders.wordnet import build_wordnet_vocabulary
from negvocab.data.fi_imagenet import fi_imagenet
from negvocab.data.layouts import open_image_set
from negvocab.errors import InputError
from negvocab.grid.config import GridConfig, ImageSpec, MethodSpec, ModelSpec, VocabSpec, spec_digest
from negvocab.labels.candidates import sample_pool
from negvocab.labels.imagenet import imagenet1k, read_id_classes
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import NEEDS_NEGATIVES
from negvocab.vlm.model import VLM
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["Cell", "ModelWork", "compute_model", "finish_cells", "load_model", "load_scores", "merge_stats", "method_spec", "open_sets", "plan_cells"]


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
    if spec.fi_ood:
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
    return imagenet1k() if cfg.id_classes == "imagenet1k" else read_id_classes(cfg.path(cfg.id_classes))


def resolve_vocabularies(cfg: GridConfig, vlm: VLM, files: dict[str, Vocabulary]) -> dict[str, Vocabulary]:
    """Every grid vocabulary for this model: files (loaded once for all models, ``files`` memo) and
    builder specs (built with this model; heads of one ranking per size)."""
    out: dict[str, Vocabulary] = {}
    for v in cfg.vocabularies:
        if v.file:
            if v.file not in files:
                files[v.file] = Vocabulary.load(cfg.path(v.file))
            full = files[v.file]
        else:
            opts = dict(v.options)
            if "pool" in opts:
                opts["candidates"] = sample_pool(int(opts.pop("pool")))
            full = build_wordnet_vocabulary(vlm, None, templates=cfg.templates, id_classes=id_classes(cfg), batch_size=cfg.batch_size, **opts)
        for name, size in zip(v.names(), v.sizes or (None,), strict=True):
            if size is not None and size > len(full):
                raise InputError(f"vocabularies.{v.name}: size {size} exceeds its {len(full)} labels")
            out[name] = full.head(size) if size is not None else full
    return out


def _save_scores(path: Path, scores: np.ndarray, meta: Mapping[str, Any] | None = None) -> None:
    """``scores`` (and, when given, ``meta``: who made them, a JSON string; see negvocab.grid.units)."""
    extra = {"meta": np.array(json.dumps(dict(meta), sort_keys=True))} if meta else {}
    with atomic_path(path, suffix=".npz") as tmp, open(tmp, "wb") as fh:
        np.savez(fh, scores=scores, **extra)


def load_scores(path: Path) -> np.ndarray | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            return np.asarray(z["scores"], dtype=np.float64)
    except (OSError, ValueError, KeyError):
        return None


@dataclass
class ModelWork:
    """What one model still needs: its cells and the score files missing for them."""

    spec: ModelSpec
    cells: list[Cell]
    missing: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # score digest -> (vocab, method, set)


def method_spec(cfg: GridConfig, display: str) -> MethodSpec:
    return next(m for m in cfg.methods if m.display == display)


def score_model(
    cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], out: Path, vlm: VLM, stats: dict[str, Any], meta: Mapping[str, Any] | None = None
) -> None:
    """Compute and store the missing score files of one model (the embeddings come from the cache
    when an engine filled it); ``meta`` is stored with each score file."""
    from negvocab.scoring.scores import score

    need_sets = sorted({s for _, _, s in work.missing.values()}, key=list(sets).index)
    local = any(method_spec(cfg, meth).name == "glmcm" for _, meth, _ in work.missing.values())
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
        spec = method_spec(cfg, meth)
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
        _save_scores(out / "scores" / f"{digest}.npz", np.asarray(s, dtype=np.float64), meta)
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
        "params": json.dumps(dict(method_spec(cfg, cell.method).params), sort_keys=True),
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
def compute_model(cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], out: Path, device: str | None = None) -> dict[str, Any]:
    """Load one model and store its missing score files; returns its stats (embedding calls,
    vocabulary sizes/hashes/deployability, scoring time). Runs in this process or in a Ray task."""
    stats: dict[str, Any] = {"embed_calls": {}}
    vlm = load_model(cfg, work.spec, device)
    score_model(cfg, work, sets, out, vlm, stats)
    stats.pop("_files", None)
    return stats


def merge_stats(stats: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, n in more.get("embed_calls", {}).items():
        stats["embed_calls"][key] = stats["embed_calls"].get(key, 0) + n
    for model, info in more.get("vocabularies", {}).items():
        stats.setdefault("vocabularies", {}).setdefault(model, {}).update(info)
    stats["score_seconds"] = stats.get("score_seconds", 0.0) + more.get("score_seconds", 0.0)
    if "model_loads" in more:  # {model: loads} of the units' model workers (negvocab.grid.units)
        stats.setdefault("model_loads", {}).update(more["model_loads"])


def finish_cells(cfg: GridConfig, work: ModelWork, out: Path, stats: dict[str, Any], vlm: VLM | None) -> None:
    """Metrics of every pending cell of a model from its stored scores; each cell stored atomically."""
    vinfo = stats.get("vocabularies", {}).get(work.spec.display)
    for c in work.cells:
        s_id, s_ood = load_scores(out / "scores" / f"{c.id_scores}.npz"), load_scores(out / "scores" / f"{c.ood_scores}.npz")
        if s_id is None or s_ood is None:  # a torn or deleted score file: recompute it
            if vlm is None:
                vlm = load_model(cfg, work.spec)
            work.missing = {c.id_scores: (c.vocabulary, c.method, "ID"), c.ood_scores: (c.vocabulary, c.method, c.ood_set)}
            score_model(cfg, work, open_sets(cfg), out, vlm, stats)
            vinfo = stats.get("vocabularies", {}).get(work.spec.display)
            s_id, s_ood = load_scores(out / "scores" / f"{c.id_scores}.npz"), load_scores(out / "scores" / f"{c.ood_scores}.npz")
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
