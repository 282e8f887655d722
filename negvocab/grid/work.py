"""The work of one grid model: its cells and their identities, the model and its vocabularies,
scoring from the cache, and each cell's row (the files they are stored in: :mod:`negvocab.grid.store`,
whose readers are named here too). Both engines run a model's work as units
(:mod:`negvocab.grid.units`: in this process, or on a cluster through :mod:`negvocab.grid.ray_engine`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.builders.registry import get_builder
from negvocab.core.errors import InputError, ResourceError
from negvocab.evaluation.accuracy import full_spectrum, id_correct
from negvocab.evaluation.checks import ID_NAMES_CAVEAT, id_names_in
from negvocab.evaluation.records import metrics_row
from negvocab.grid.config import GridConfig, MethodSpec, ModelSpec, VocabSpec, spec_digest
from negvocab.grid.labelspace import id_classes, id_classes_file, mapping_doc
from negvocab.grid.sets import labels_digest, open_sets, set_digest
from negvocab.grid.store import (  # the stored files, named here as before
    _made_by,
    _save_scores,
    _write_cell,
    load_score_file,
    load_scores,
    read_cell,
    read_failure,
    read_scores,
    stored_facts,
    stored_json,
    write_failure,
)
from negvocab.grid.stream_cells import score_stream_cell, stream_fields, stream_identity, stream_setup
from negvocab.scoring.methods import get_method, scorer_params
from negvocab.scoring.providers import image_inputs
from negvocab.vlm.loading import resolve_device
from negvocab.vlm.model import VLM
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = [
    "Cell", "ModelWork", "finish_cells", "id_facts", "id_classes", "load_model",
    "load_score_file", "load_scores", "made_on_other_device", "merge_stats", "stored_facts",
    "method_spec", "needs_local", "score_device", "score_meta",
    "open_sets", "plan_cells", "read_cell", "read_failure", "read_scores", "score_files", "stored_json", "text_inputs",
    "write_failure",
]  # fmt: skip


# ----------------------------------------------------------------------------------------------
# identities and the plan
# ----------------------------------------------------------------------------------------------
def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e


def _model_doc(cfg: GridConfig, m: ModelSpec) -> dict[str, Any]:
    doc = m.doc()
    if m.model_config:
        doc["model_config"] = _file_digest(cfg.path(m.model_config))
    if m.pretrained and Path(cfg.path(m.pretrained)).is_file():
        doc["pretrained"] = cfg.path(m.pretrained)  # a checkpoint: its content is checked by the cache key
    return doc


def _vocab_docs(
    cfg: GridConfig, v: VocabSpec, model: dict[str, Any], files: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Identity of each grid vocabulary name of ``v`` (per model for builders): a file's by its
    content digest and its labels' hash. A file that cannot be read or parsed, or a size larger than
    it, gives ``{"error": reason}`` (only the cells of that entry fail). ``files`` memoizes."""
    if v.file:
        if v.file not in files:
            try:
                files[v.file] = {"file": _file_digest(cfg.path(v.file)), "labels": Vocabulary.load(cfg.path(v.file))}
            except InputError as e:
                files[v.file] = {"error": f"vocabularies.{v.name}: {e}"}
        got = files[v.file]
        if "error" in got:
            return {name: {"error": got["error"]} for name in v.names()}
        out: dict[str, dict[str, Any]] = {}
        for name, size in zip(v.names(), v.sizes or (None,), strict=True):
            n = len(got["labels"])
            if size is not None and size > n:
                out[name] = {"error": f"vocabularies.{v.name}: size {size} exceeds its {n} labels"}
            else:
                labels = got["labels"].head(size) if size is not None else got["labels"]
                out[name] = {"file": got["file"], "size": size, "hash": labels.short_hash}
        return out
    base = {"builder": v.builder, "options": list(v.options), "model": model}
    mapping = mapping_doc(cfg, v.builder)
    if mapping is not None:  # the label space it asks about and filters against (its WordNet senses)
        base["label_space"] = mapping
    read = _option_files(cfg, v.options)
    if read:  # an edited candidates file (any file a builder reads) is a new vocabulary, not a resumed one
        base["files"] = read
    return {name: {**base, "size": size} for name, size in zip(v.names(), v.sizes or (None,), strict=True)}


def _option_files(cfg: GridConfig, options: Any) -> dict[str, str]:
    """Content digests of the files a builder's options name (values that are paths of existing files)."""
    out = {}
    for key, value in options:
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and item and Path(cfg.path(item)).is_file():
                out[f"{key}={item}"] = _file_digest(cfg.path(item))
    return out


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
    error: str = ""  # why the cell cannot run (a bad vocabulary file or OOD set): it fails alone

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.model, self.vocabulary, self.ood_set, self.method, self.convention)


def _id_classes_doc(cfg: GridConfig) -> str:
    return "imagenet1k" if cfg.id_classes == "imagenet1k" else _file_digest(id_classes_file(cfg))


def plan_cells(
    cfg: GridConfig, sets: Mapping[str, ImageSet], set_errors: Mapping[str, str] | None = None
) -> list[Cell]:
    """Every cell of the grid, in model, vocabulary, OOD set, method, convention order. Each digest
    covers the content of what decides it (image files, vocabulary labels, parameters); an OOD set in
    ``set_errors`` (or a bad vocabulary file) gives cells carrying that error."""
    set_errors = set_errors or {}
    set_docs = {name: set_digest(s) for name, s in sets.items()}
    common = {"templates": cfg.templates, "id_classes": _id_classes_doc(cfg)}
    cells = []
    files: dict[str, Any] = {}
    for m in cfg.models:
        mdoc = _model_doc(cfg, m)
        vdocs: dict[str, dict[str, Any]] = {}
        for v in cfg.vocabularies:
            vdocs.update(_vocab_docs(cfg, v, mdoc, files))
        for meth in cfg.methods:
            spec = get_method(meth.name)
            for vname in vdocs if spec.needs_negatives else [""]:
                score_doc = {
                    **common,
                    "model": mdoc,
                    "vocab": vdocs.get(vname),
                    "method": meth.name,
                    "params": list(meth.params),
                }
                if spec.model_scale is not None and spec.model_scale not in dict(meth.params):
                    score_doc[spec.model_scale] = (
                        "the model's own"  # not 100, as files made before the baselines took it
                    )
                if meth.stream:  # a test-time method: its ID scores come from each OOD set's own stream
                    score_doc["stream"] = stream_identity(meth.stream)
                id_d = spec_digest({**score_doc, "set": set_docs["ID"]})
                for ood in (s.name for s in cfg.ood_sets):
                    ood_doc = set_docs.get(ood, set_errors.get(ood))
                    ood_d = spec_digest({**score_doc, "set": ood_doc})
                    if meth.stream:
                        id_d = spec_digest({**score_doc, "set": set_docs["ID"], "stream_with": ood_doc})
                    error = (vdocs.get(vname) or {}).get("error") or set_errors.get(ood, "")
                    for conv in cfg.conventions:
                        metrics = {"id": id_d, "ood": ood_d, "convention": conv, "tpr": cfg.tpr, "n_boot": cfg.n_boot}
                        cells.append(
                            Cell(m.display, vname, ood, meth.display, conv, spec_digest(metrics), id_d, ood_d, error)
                        )
    return cells


# ----------------------------------------------------------------------------------------------
# per-model work
# ----------------------------------------------------------------------------------------------
def load_model(cfg: GridConfig, m: ModelSpec, device: str | None = None) -> VLM:
    """The :class:`VLM` of a model spec (registering its ``model_config`` with open_clip first)."""
    if m.model_config:
        import open_clip

        open_clip.add_model_config(cfg.path(m.model_config))
    pretrained = (
        None
        if m.random_weights
        else (cfg.path(m.pretrained) if m.pretrained and Path(cfg.path(m.pretrained)).exists() else m.pretrained)
    )
    return VLM(
        m.name,
        pretrained=pretrained,
        device=device or cfg.device,
        precision=m.precision,
        cache_dir=cfg.path(cfg.cache_dir) if cfg.cache_dir else None,
        tag=m.tag,
        seed=m.seed,
        random_weights=m.random_weights,
    )


def resolve_vocabularies(
    cfg: GridConfig, vlm: VLM, files: dict[str, Vocabulary], names: set[str] | None = None
) -> dict[str, Vocabulary]:
    """The grid vocabularies (those in ``names``, default all) for this model: files (loaded once for
    all models, ``files`` memo) and builder specs (built with this model; heads of one ranking per size)."""
    out: dict[str, Vocabulary] = {}
    for v in cfg.vocabularies:
        if names is not None and not names & set(v.names()):
            continue
        if v.file:
            if v.file not in files:
                files[v.file] = Vocabulary.load(cfg.path(v.file))
            full = files[v.file]
        else:
            full = build_in_grid(cfg, v, vlm)
        for name, size in zip(v.names(), v.sizes or (None,), strict=True):
            if size is not None and size > len(full):
                raise InputError(f"vocabularies.{v.name}: size {size} exceeds its {len(full)} labels")
            out[name] = full.head(size) if size is not None else full
    return out


def build_in_grid(cfg: GridConfig, v: VocabSpec, vlm: VLM) -> Vocabulary:
    """The vocabulary of builder spec ``v`` for this model, through the builder registry: its options
    (paths against the grid file), and of templates, ID classes and batch size what it takes, from [grid]."""
    builder = get_builder(v.builder or "")
    fields = builder.options.model_fields
    given: dict[str, Any] = {"templates": cfg.templates, "batch_size": cfg.batch_size}
    if "id_classes" in fields:  # the ID classes as an object where the builder takes one, else their file
        classes = id_classes(cfg, mapped=True)
        file = None if cfg.id_classes == "imagenet1k" else id_classes_file(cfg)
        given["id_classes"] = classes if builder.accepts("id_classes", classes) else file
    options = {**{k: x for k, x in given.items() if k in fields}, **builder.with_paths(dict(v.options), cfg.base)}
    return builder.run(vlm=vlm if "vlm" in builder.needs else None, **options)


def made_on_other_device(cfg: GridConfig, out: Path, cell: Cell, device: str) -> bool:
    """True when ``cell``'s method depends on the kind of device it scores on (NegLabel's own
    grouping: ``Method.depends_on_device``) and a stored score file of it says it was computed on
    another kind than ``device``: a resumed run computes it again, as a clean run here would. Reads
    only what the files record and never removes one (a file it cannot read is left to the run's
    own checks: a finished cell's file may be of an older format that tables still read)."""
    spec = method_spec(cfg, cell.method)
    if not get_method(spec.name).depends_on_device(dict(spec.params)):
        return False
    want = str(device).split(":")[0]
    for digest in (cell.id_scores, cell.ood_scores):
        made = _made_by(out / "scores" / f"{digest}.npz").get("score_device")
        if made is not None and str(made).split(":")[0] != want:
            return True
    return False


@dataclass
class ModelWork:
    """What one model still needs: its cells and the score files missing for them."""

    spec: ModelSpec
    cells: list[Cell]
    missing: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # score digest -> (vocab, method, set)


def method_spec(cfg: GridConfig, display: str) -> MethodSpec:
    return next(m for m in cfg.methods if m.display == display)


def needs_local(cfg: GridConfig, work: ModelWork) -> bool:
    """Whether a missing cell's method takes the patch features (input ``local``: GL-MCM)."""
    return any(image_inputs(get_method(method_spec(cfg, meth).name).inputs) for _, meth, _ in work.missing.values())


def score_model(
    cfg: GridConfig,
    work: ModelWork,
    sets: Mapping[str, ImageSet],
    out: Path,
    vlm: VLM,
    stats: dict[str, Any],
    engine: str,
    pairs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Compute and store the missing score files of one model with its model (the embeddings come
    from the cache when an engine filled it); each file records who made it (:func:`score_meta`)."""
    need_sets = sorted({s for _, _, s in work.missing.values()}, key=list(sets).index)
    local = needs_local(cfg, work)
    images, ids = {}, {}
    for name in need_sets:
        t0 = time.perf_counter()
        emb = vlm.encode_images(sets[name], local_features=local, batch_size=cfg.batch_size)
        images[name], ids[name] = (emb.embeddings, emb.local), list(emb.ids)
        stats["embed_calls"][(work.spec.display, name)] = stats["embed_calls"].get((work.spec.display, name), 0) + 1
        logger.info(
            "%s: %s embedded (%d images) in %.1fs", work.spec.display, name, len(sets[name]), time.perf_counter() - t0
        )
    class_emb, neg_emb, infos = text_inputs(cfg, work, vlm, stats.setdefault("_files", {}))
    stats.setdefault("vocabularies", {}).setdefault(work.spec.display, {}).update(infos)
    device = score_device(cfg, engine)  # as the score units: a device-bound method gives the same scores
    meta = {**score_meta(vlm, engine, cfg.deterministic), "score_device": device}
    setup = stream_setup(cfg.methods, vlm)
    facts = id_facts(cfg, sets["ID"], ids["ID"], images["ID"][0], class_emb) if "ID" in images else {}
    seconds = score_files(
        cfg, work, out, images, class_emb, neg_emb, infos, device, meta, vlm.logit_scale, setup, pairs, facts
    )
    stats["score_seconds"] = stats.get("score_seconds", 0.0) + seconds


def id_facts(
    cfg: GridConfig, id_set: ImageSet, ids: Sequence[str], id_emb: np.ndarray, class_emb: np.ndarray
) -> dict[str, Any]:
    """What a cell row needs of the ID images' classification, stored with the ID score files (a resumed grid
    reports what a clean one does): each encoded image's top-1 hit (``ids``: the rows of ``id_emb``;
    :func:`negvocab.evaluation.accuracy.id_correct`, as ``score``) as a ``0``/``1`` string, whether the ID set
    is full-spectrum (CCR) and the labels' digest; ``{}`` where the ID set's labels name no ID class."""
    paths = dict(zip(id_set.ids, map(str, id_set.paths), strict=True))
    got = id_correct(id_set, [(i, paths.get(i, "")) for i in ids], id_emb, class_emb, id_classes(cfg))
    if got is None:
        return {}
    hits = "".join("1" if hit else "0" for hit in got[0])
    return {"id_correct": hits, "full_spectrum": full_spectrum(id_set), "id_labels": labels_digest(id_set)}


def score_device(cfg: GridConfig, engine: str = "ray") -> str:
    """Where score units compute: ``[resources.score] num_gpus`` decides when given; else the grid's
    device on the local engine (as before score units: NegLabel's grouping permutation depends on
    the device, and its published numbers were scored on CUDA) and the CPU on Ray (no GPU asked)."""
    own = dict(cfg.resources.kinds).get("score")
    if engine == "local" and (own is None or own.num_gpus is None):
        return str(resolve_device(cfg.device))
    if (cfg.resources.unit("score").num_gpus or 0) <= 0:
        return "cpu"
    import torch

    if engine == "local" and not torch.cuda.is_available():  # on Ray the task runs where Ray puts it (a GPU node)
        raise ResourceError(
            f"{cfg.source}: [resources.score] num_gpus asks for a GPU to "
            "score on, but torch sees no CUDA device here; set num_gpus = 0"
        )
    return "cuda"


def score_meta(vlm: VLM, engine: str, deterministic: bool) -> dict[str, Any]:
    """What a score file records about who made it: engine, device, dtype, library versions."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy
    import open_clip
    import torch

    try:
        ours = version("negvocab")
    except PackageNotFoundError:
        ours = None
    versions = {"negvocab": ours, "torch": torch.__version__, "open_clip": open_clip.__version__}
    versions["numpy"] = numpy.__version__
    made = {"engine": engine, "device": str(vlm.device), "dtype": vlm.precision, "deterministic": deterministic}
    return made | {"python": platform.python_version(), "versions": versions}


def text_inputs(
    cfg: GridConfig, work: ModelWork, vlm: VLM, files: dict[str, Vocabulary]
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, dict[str, Any]]]:
    """The ID class embeddings, the embeddings and facts of each vocabulary ``work`` still needs."""
    classes = id_classes(cfg)
    class_emb = vlm.encode_text(list(classes.names), cfg.templates, pos="n", batch_size=cfg.batch_size)
    needed = {v for v, _, _ in work.missing.values() if v}
    vocabs = resolve_vocabularies(cfg, vlm, files, needed) if needed else {}
    neg_emb = {
        n: vlm.encode_text(list(v.labels), cfg.templates, pos=v.parts_of_speech(), batch_size=cfg.batch_size)
        for n, v in vocabs.items()
        if n in needed
    }
    return class_emb, neg_emb, {n: _vocab_info(v, classes.names, name=n) for n, v in vocabs.items()}


def score_files(
    cfg: GridConfig,
    work: ModelWork,
    out: Path,
    images: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    class_emb: np.ndarray,
    neg_emb: Mapping[str, np.ndarray],
    infos: Mapping[str, Mapping[str, Any]],
    device: str,
    meta: Mapping[str, Any] | None = None,
    logit_scale: float | None = None,
    setup: Mapping[str, Mapping[str, Any]] | None = None,
    pairs: Mapping[str, Mapping[str, Any]] | None = None,
    facts: Mapping[str, Any] | None = None,
) -> float:
    """Store the missing score files of ``work`` from embeddings (``images`` maps a set to its (global,
    local) rows; ``logit_scale``: the model's own, for the logit baselines; ``setup``: the stream methods'
    set-up inputs, :func:`~negvocab.grid.stream_cells.stream_setup`; ``pairs``: NegRefine's pair texts per
    vocabulary, made with the model, :func:`~negvocab.grid.units.pair_texts`; ``facts``: the ID images'
    classification, :func:`id_facts`, stored with each ID score file); the seconds spent."""
    from negvocab.scoring.detector import make_detector

    t_score = 0.0
    streamed: set[str] = set()  # the files a test-time method's stream wrote (an ID file with its OOD file)
    for digest, (vname, meth, set_name) in work.missing.items():
        spec = method_spec(cfg, meth)
        if spec.stream:  # one stream of the ID set and the cell's OOD set writes both of its files
            if digest not in streamed:
                cell = next(c for c in work.cells if digest in (c.id_scores, c.ood_scores))
                t0 = time.perf_counter()
                made = (setup or {}).get(spec.display)
                s_id, s_ood, state = score_stream_cell(spec, cell.ood_set, images, class_emb, neg_emb.get(vname), made)
                t_score += time.perf_counter() - t0
                file_meta = {
                    "vocab": dict(infos[vname]) if vname else None,
                    **({"made_by": dict(meta)} if meta else {}),
                }
                for d, s, more in ((cell.id_scores, s_id, facts), (cell.ood_scores, s_ood, None)):
                    _save_scores(out / "scores" / f"{d}.npz", s, {**file_meta, "stream": state, **(more or {})})
                streamed |= {cell.id_scores, cell.ood_scores}
            continue
        glob, local = images[set_name]
        params = scorer_params(
            spec.name, dict(spec.params), logit_scale
        )  # the logit baselines: this model's logit scale
        t0 = time.perf_counter()
        inputs = get_method(spec.name).inputs
        extra = dict((pairs or {}).get(vname or "", {})) if "pair_texts" in inputs else {}
        detector = make_detector(spec.name, {**params, "device": device}).setup(class_emb, neg_emb.get(vname), **extra)
        scored = detector.score_batch(glob, **({"local": local} if image_inputs(inputs) else {}))
        t_score += time.perf_counter() - t0
        file_meta = {"vocab": dict(infos[vname]) if vname else None, **({"made_by": dict(meta)} if meta else {})}
        file_meta.update((facts or {}) if set_name == "ID" else {})
        _save_scores(out / "scores" / f"{digest}.npz", scored, file_meta)
    return t_score


def _vocab_info(v: Vocabulary, id_names: Sequence[str] = (), *, name: str = "") -> dict[str, Any]:
    """What a cell row reports of its vocabulary (stored with its score files): its caveats, and
    ``id_names`` where it holds ID class names (as ``negvocab score`` warns; logged here too)."""
    caveats = dict(v.caveats)
    deployable = bool(v.deployable) and not caveats
    hits = id_names_in(v.labels, id_names)
    if hits:
        caveats["id_names"] = ID_NAMES_CAVEAT.format(n=len(hits), size=len(v), names=", ".join(map(repr, hits[:3])))
        logger.warning("vocabulary %s: %s", name or v.source, caveats["id_names"])
    return {
        "size": len(v),
        "hash": v.short_hash,
        "source": v.source,
        "deployable": deployable,
        "caveats": caveats,
        "random_weights": v.random_weights,
    }


# ----------------------------------------------------------------------------------------------
# metrics of a cell
# ----------------------------------------------------------------------------------------------
def cell_row(
    cfg: GridConfig,
    cell: Cell,
    s_id: np.ndarray,
    s_ood: np.ndarray,
    model: ModelSpec,
    vinfo: Mapping[str, Any] | None,
    facts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The tidy-table row of one cell from its scores (:func:`negvocab.evaluation.records.metrics_row`,
    every metric's interval; the bootstrap seed is 0); with the ID score file's ``facts`` (:func:`id_facts`)
    ``id_accuracy`` and, on a full-spectrum ID set, the CCR columns."""
    vinfo = vinfo or {}
    hits = _hits(facts or {}, len(s_id))
    spec = method_spec(cfg, cell.method)
    extra = stream_fields(spec)  # a test-time method's row carries its stream (none for a batch method)
    rec = metrics_row(
        s_id,
        s_ood,
        ood_set=cell.ood_set,
        convention=cell.convention,
        tpr=cfg.tpr,
        n_boot=cfg.n_boot,
        seed=0,
        correct=hits,
        ccr=hits is not None and bool((facts or {}).get("full_spectrum")) and not extra,  # a stream: no CCR yet
        layout="grid",
        model=cell.model,
        pretrained=None if model.random_weights else model.pretrained,
        random_weights=model.random_weights or bool(vinfo.get("random_weights")),  # or the vocabulary's builder
        vocabulary=cell.vocabulary,
        vocab_source=vinfo.get("source", ""),
        vocab_size=vinfo.get("size", 0),
        vocab_hash=vinfo.get("hash", ""),
        deployable=vinfo.get("deployable", True),
        caveats=dict(vinfo.get("caveats") or {}),
        method=cell.method,
        params=dict(spec.params),
        templates=cfg.templates,
        cell=cell.digest[:16],
        extra=extra,  # a test-time method's stream; none for a batch method
    )
    return rec.to_dict()


def _hits(facts: Mapping[str, Any], n_id: int) -> np.ndarray | None:
    """The ID images' top-1 hits an ID score file stores (:func:`id_facts`); None where it stores none (an
    unlabelled ID set, a file of an older version) or not one per ID score (a stream that kept a share)."""
    text = facts.get("id_correct")
    if not isinstance(text, str) or len(text) != n_id:
        return None
    return np.frombuffer(text.encode("ascii"), dtype=np.uint8) == ord("1")


# ----------------------------------------------------------------------------------------------
# the grid
# ----------------------------------------------------------------------------------------------
def merge_stats(stats: dict[str, Any], more: Mapping[str, Any]) -> None:
    for key, n in more.get("embed_calls", {}).items():
        stats["embed_calls"][key] = stats["embed_calls"].get(key, 0) + n
    for model, info in more.get("vocabularies", {}).items():
        stats.setdefault("vocabularies", {}).setdefault(model, {}).update(info)
    stats["score_seconds"] = stats.get("score_seconds", 0.0) + more.get("score_seconds", 0.0)
    if "model_loads" in more:  # {model: loads} of the units' model workers (negvocab.grid.units)
        stats.setdefault("model_loads", {}).update(more["model_loads"])


def finish_cells(
    cfg: GridConfig, work: ModelWork, out: Path, stats: dict[str, Any], vlm: VLM | None, engine: str
) -> None:
    """Metrics of every pending cell of a model from its stored scores (and the vocabulary facts
    stored with them); each cell stored atomically with its checksum. A score file gone since its
    unit wrote it is computed again here, with the model (recorded as made by ``engine``'s driver)."""
    for c in work.cells:
        s_id, s_ood = (
            load_score_file(out / "scores" / f"{c.id_scores}.npz"),
            load_score_file(out / "scores" / f"{c.ood_scores}.npz"),
        )
        if s_id is None or s_ood is None:  # a torn, damaged or deleted score file: recompute it
            if vlm is None:
                vlm = load_model(cfg, work.spec)
            work.missing = {
                c.id_scores: (c.vocabulary, c.method, "ID"),
                c.ood_scores: (c.vocabulary, c.method, c.ood_set),
            }
            score_model(cfg, work, open_sets(cfg, {}), out, vlm, stats, engine)
            s_id, s_ood = (
                load_score_file(out / "scores" / f"{c.id_scores}.npz"),
                load_score_file(out / "scores" / f"{c.ood_scores}.npz"),
            )
            if s_id is None or s_ood is None:
                raise InputError(f"{out / 'scores'}: cannot store score files there")
        row = cell_row(cfg, c, s_id[0], s_ood[0], work.spec, s_id[1].get("vocab"), s_id[1])
        _write_cell(out, c, row)
