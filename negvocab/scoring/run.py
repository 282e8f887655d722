"""The main job: score a VLM with vocabularies on an ID and an OOD image set, and write the results.

:func:`evaluate_vocabularies` embeds the images (cached), the ID class names and each vocabulary
(cached), scores every (method, vocabulary) pair, computes the metrics under a named convention, and
explains the OOD images; :func:`write_results` writes the results folder. :func:`sweep_vocabulary`
does the same for every pool size M of one ranked vocabulary, and :func:`plot_sweep` draws FPR@95
and AUROC against M.

Every output built from a model with random weights says so (``random_weights: true``).
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import logging
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.atomic import atomic_path, write_json, write_text
from negvocab.errors import InputError
from negvocab.scoring import metrics as M
from negvocab.scoring import scores as S

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

RANDOM_WEIGHTS_WARNING = "RANDOM WEIGHTS: these numbers are meaningless (a dry run of the pipeline, not a result)"

__all__ = [
    "RANDOM_WEIGHTS_WARNING",
    "Evaluation",
    "SweepResult",
    "evaluate_vocabularies",
    "format_table",
    "plot_sweep",
    "sweep_vocabulary",
    "write_results",
    "write_sweep",
]


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------
def _vocab_name(name: str, vocab: Vocabulary) -> str:
    return name or f"{vocab.source}-{vocab.short_hash}"


def _params_for(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``params`` the scorer of ``method`` accepts (``topk`` goes to NegLabel)."""
    if method == "neglabel_eoe" and params.get("T") is not None and params.get("penalty_T") is None:
        logger.warning("T is the temperature of mcm/glmcm/eoe; neglabel_eoe's penalty takes penalty_T (default: tau)")
    fn = S.METHODS[method]
    accepted = set(inspect.signature(fn).parameters) | ({"topk"} if method == "neglabel" else set())
    return {k: v for k, v in params.items() if k in accepted and v is not None}


def _model_fields(vlm: VLM) -> dict[str, Any]:
    return {"model": vlm.name, "pretrained": vlm.pretrained, "random_weights": bool(vlm.random_weights)}


# ----------------------------------------------------------------------------------------------
# evaluation
# ----------------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Scores, metrics and explanations of one ``negvocab score`` run.

    ``rows``: one metrics dict per (method, vocabulary); ``scores``: key -> {"id": [n_id], "ood":
    [n_ood]}; ``id_images``/``ood_images``: (id, path) of the scored images, aligned with the scores;
    ``explanations``: vocabulary name -> one dict per OOD image; ``meta``: model, data, settings.
    """

    rows: list[dict[str, Any]]
    scores: dict[str, dict[str, np.ndarray]]
    id_images: list[tuple[str, str]]
    ood_images: list[tuple[str, str]]
    explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))


def _encode_set(
    vlm: VLM, images: ImageSet | ImageEmbeddings, local: bool, progress: bool
) -> tuple[ImageEmbeddings, list[tuple[str, str]]]:
    """The embeddings of an image set (encoded, or given) and its (id, path) rows."""
    from negvocab.vlm.images import ImageEmbeddings

    if isinstance(images, ImageEmbeddings):
        if local and images.local is None:
            raise InputError("glmcm needs local (patch) features: encode the images with local_features=True")
        if images.embeddings.shape[1] != vlm.dim:
            raise InputError(
                f"the given image embeddings have dimension {images.embeddings.shape[1]}, {vlm.name} embeds in "
                f"{vlm.dim}: pass embeddings of the same model"
            )
        made_by, ours = _image_identity(images.model or {}), _image_identity(vlm.identity)
        for field_ in made_by:
            if made_by[field_] != ours.get(field_):
                raise InputError(
                    f"the given image embeddings were made by another model ({field_} differs from {vlm.name}'s): "
                    "encode the images with this VLM, or score with the VLM that made them"
                )
        emb = images
    else:
        emb = vlm.encode_images(images, local_features=local, progress=progress)
    return emb, list(zip(emb.ids, emb.paths, strict=True))


def _image_identity(identity: Mapping[str, Any]) -> dict[str, Any]:
    """What decides an image embedding: model name, weights and preprocessing values (not where the
    preprocessing came from)."""
    out = {k: identity[k] for k in ("name", "weights") if k in identity}
    if isinstance(identity.get("preprocessing"), Mapping):
        out["preprocessing"] = {k: v for k, v in identity["preprocessing"].items() if k != "from"}
    return out


def _set_meta(images: ImageSet | ImageEmbeddings, n: int) -> dict[str, Any]:
    """Name, size and provenance of an image set, for results."""
    if not hasattr(images, "info"):  # ImageEmbeddings: encoded before, by the caller
        return {"name": "given embeddings", "n": n, "embeddings_given": True}
    return {"name": images.name, "n": n, **_jsonable(images.info)}


def evaluate_vocabularies(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings,
    vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary],
    methods: Sequence[str] = ("neglabel",),
    *,
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    params: Mapping[str, Any] | None = None,
    convention: str = "paper",
    tpr: float = 0.95,
    n_boot: int = 1000,
    explain_k: int = 5,
    progress: bool = False,
) -> Evaluation:
    """Score ``vlm`` on ``id_set`` vs ``ood_set`` with every method and vocabulary.

    Each set is an :class:`ImageSet` (encoded here, through the cache) or the
    :class:`ImageEmbeddings` that ``vlm.encode_images`` returned for it.
    Methods that use no negatives (mcm, glmcm) are scored once. ``params`` go to each scorer that
    accepts them (tau, groups, grouping, seed, beta, T, penalty_T, lam, topk). The metrics follow
    ``convention`` (see :mod:`negvocab.scoring.metrics`); bootstrap intervals resample OOD images.
    """
    from negvocab.labels.imagenet import imagenet1k

    methods = list(dict.fromkeys(S.canonical_method(m) for m in methods))
    if not methods:
        raise InputError("no scoring method given")
    named = _named(vocabs)
    if not named and any(m in S.NEEDS_NEGATIVES for m in methods):
        raise InputError(f"methods {', '.join(m for m in methods if m in S.NEEDS_NEGATIVES)} need a vocabulary (--vocab)")
    convention = M.check_convention(convention)
    params = dict(params or {})
    id_classes = id_classes if id_classes is not None else imagenet1k()
    t0 = time.perf_counter()
    local = "glmcm" in methods
    id_emb_img, id_images = _encode_set(vlm, id_set, local, progress)
    ood_emb_img, ood_images = _encode_set(vlm, ood_set, local, progress)
    logger.info("embedded %d ID and %d OOD images in %.1fs", len(id_images), len(ood_images), time.perf_counter() - t0)
    images = np.concatenate([id_emb_img.embeddings, ood_emb_img.embeddings])
    n_id = len(id_images)
    class_emb = vlm.encode_text(list(id_classes.names), templates, pos="n", progress=progress)

    rows: list[dict[str, Any]] = []
    all_scores: dict[str, dict[str, np.ndarray]] = {}
    explanations: dict[str, list[dict[str, Any]]] = {}
    jobs = [(m, name) for m in methods for name in (named if m in S.NEEDS_NEGATIVES else [None])]
    # label encoding is a step of its own (a cold run spends its time here, not in "scoring")
    neg_cache = {
        vname: vlm.encode_text(list(named[vname].labels), templates, pos=named[vname].parts_of_speech(), progress=progress)
        for vname in dict.fromkeys(v for _, v in jobs if v)
    }
    for method, vname in _progress(jobs, progress, "scoring"):
        vocab = named[vname] if vname else None
        kw = _params_for(method, params)
        neg = neg_cache[vname] if vname else None
        key = f"{method}@{vname}" if vname else method
        if method == "glmcm":  # per set: the [n, p, d] patch features are never copied into one array
            parts = [S.score(method, e.embeddings, class_emb, local=e.local, device=vlm.device, **kw) for e in (id_emb_img, ood_emb_img)]
            scores, extra = {"": np.concatenate(parts)}, {}
        else:
            scores, extra = _score_job(method, images, class_emb, neg, vlm.device, kw)
        for suffix, s in scores.items():
            all_scores[key + suffix] = {"id": s[:n_id], "ood": s[n_id:]}
        s = scores[""]
        rep = M.evaluate(s[:n_id], s[n_id:], tpr=tpr, convention=convention, n_boot=n_boot)  # type: ignore[arg-type]
        rows.append(_result_row(method, vlm, vname, vocab, rep, kw, templates, extra))
        if vocab is not None and neg is not None and vname not in explanations and explain_k > 0:
            ex = S.explain(
                ood_emb_img.embeddings,
                class_emb,
                neg,
                id_labels=list(id_classes.names),
                neg_labels=list(vocab.labels),
                k=explain_k,
                tau=float(params.get("tau") or 0.01),
                device=vlm.device,
            )
            explanations[vname] = [{"image": iid, "path": p, **e} for (iid, p), e in zip(ood_images, ex, strict=True)]
    meta = {
        "negvocab_version": _version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **_model_fields(vlm),
        "model_identity": vlm.identity,
        "templates": templates,
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "convention": convention,
        "tpr": tpr,
        "id_set": _set_meta(id_set, n_id),
        "ood_set": _set_meta(ood_set, len(ood_images)),
        "failed_images": [list(x) for x in (*id_emb_img.failed, *ood_emb_img.failed)],
        "vocabularies": {
            k: {"source": v.source, "sha256": v.sha256, "size": len(v), "oracle": bool(v.settings.get("oracle"))} for k, v in named.items()
        },
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = RANDOM_WEIGHTS_WARNING
    return Evaluation(rows, all_scores, id_images, ood_images, explanations, meta)


def _named(vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary]) -> dict[str, Vocabulary]:
    """Vocabularies by name: the given names, else ``<source>-<hash>``."""
    if isinstance(vocabs, Mapping):
        return {_vocab_name(k, v): v for k, v in vocabs.items()}
    return {_vocab_name("", v): v for v in vocabs}


def _score_job(
    method: str, images: np.ndarray, class_emb: np.ndarray, neg: np.ndarray | None, device: Any, kw: dict[str, Any]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """One method's scores (key ``""``; with ``topk`` also ``/lower`` and ``/log_omitted_bound``) and row extras."""
    if kw.get("topk") is None:
        return {"": np.asarray(S.score(method, images, class_emb, neg, device=device, **kw))}, {}
    res = S.score(method, images, class_emb, neg, device=device, return_bounds=True, **kw)
    assert isinstance(res, S.TopkScores)
    # the exact score of every image lies in [lower, upper]; the gap says whether k sufficed; the
    # log of the certified bound (M - k) e^{s_k} on each image's omitted negative mass
    bound = res.log_omitted_bound
    extra = {"topk": res.k, "topk_max_gap": res.max_gap, "topk_max_log_omitted_bound": float(np.max(bound))}
    return {"": res.scores, "/lower": res.lower, "/log_omitted_bound": bound}, extra


def _result_row(
    method: str,
    vlm: VLM,
    vname: str | None,
    vocab: Vocabulary | None,
    rep: Mapping[str, Any],
    kw: Mapping[str, Any],
    templates: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The results-table row of one (method, vocabulary)."""
    return {
        "method": method,
        **_model_fields(vlm),
        "vocabulary": vname or "",
        "vocab_source": vocab.source if vocab else "",
        "vocab_hash": vocab.short_hash if vocab else "",
        "vocab_size": len(vocab) if vocab else 0,
        "oracle": bool(vocab.settings.get("oracle")) if vocab else False,
        **rep,
        "params": {k: v for k, v in kw.items() if k != "local"},
        "templates": templates,
        **extra,
    }


def _progress(items: list[Any], enabled: bool, desc: str) -> Iterable[Any]:
    if len(items) < 2:
        return items
    from negvocab.progress import track

    return track(items, len(items), desc, "run", bar=enabled)  # a bar on terminals, a log line every 30 s


def _version() -> str:
    import negvocab

    return negvocab.__version__


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


# ----------------------------------------------------------------------------------------------
# tables and files
# ----------------------------------------------------------------------------------------------
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
    "convention",
    "tpr",
    "fpr",
    "auroc",
    "aupr_in",
    "aupr_out",
    "n_id",
    "n_ood",
    "fpr_ci_low",
    "fpr_ci_high",
    "auroc_ci_low",
    "auroc_ci_high",
]


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for name in ("fpr_ci", "auroc_ci"):
        ci = out.pop(name, None) or [math.nan, math.nan]
        out[f"{name}_low"], out[f"{name}_high"] = ci
    return out


def _csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text table of the metric rows (percentages), for the terminal."""
    lines = []
    conv = rows[0]["convention"] if rows else "paper"
    tpr = int(round(100 * rows[0]["tpr"])) if rows else 95
    head = f"{'method':<14}{'vocabulary':<28}{'M':>7}  {f'FPR@{tpr}':>7}  {'95% CI':>15}  {'AUROC':>6}  {'AUPR-In':>7}  {'AUPR-Out':>8}"
    lines.append(head)
    for r in rows:
        f = _flat(r)
        ci = f"[{100 * f['fpr_ci_low']:.1f}, {100 * f['fpr_ci_high']:.1f}]" if not math.isnan(f["fpr_ci_low"]) else "-"
        name = (r["vocabulary"] or "-") + (" (oracle)" if r.get("oracle") else "")
        method = f"{r['method']} k={r['topk']}" if r.get("topk") else r["method"]  # top-k NegLabel is an estimate
        lines.append(
            f"{method:<14}{name[:27]:<28}{r['vocab_size'] or '-':>7}  {100 * r['fpr']:>6.2f}%  {ci:>15}  "
            f"{100 * r['auroc']:>6.2f}  {100 * r['aupr_in']:>7.2f}  {100 * r['aupr_out']:>8.2f}"
        )
    lines.append(f"FPR convention: {conv} (see negvocab.metrics); n_id={rows[0]['n_id'] if rows else 0}, n_ood={rows[0]['n_ood'] if rows else 0}")
    return "\n".join(lines)


def write_results(ev: Evaluation, out_dir: str | os.PathLike[str]) -> Path:
    """Write the results folder; each file atomically, ``results.json`` last.

    Files: ``results.csv`` (the table), ``scores.npz`` (per-image scores with image ids and paths),
    ``scores.csv`` (the same, one row per image), ``explanations.json`` (top negatives and ID classes
    per OOD image and vocabulary), ``results.json`` (rows + run metadata). A reader that finds
    ``results.json`` finds the rest complete: an earlier run's ``results.json`` goes first.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").unlink(missing_ok=True)
    flat = [{**_flat(r), "params": json.dumps(r.get("params", {}))} for r in ev.rows]
    write_text(out / "results.csv", _csv_text(flat, [*TABLE_COLUMNS, "params", "templates"]))
    arrays: dict[str, np.ndarray] = {
        "id_image_ids": np.array([i for i, _ in ev.id_images]),
        "id_paths": np.array([p for _, p in ev.id_images]),
        "ood_image_ids": np.array([i for i, _ in ev.ood_images]),
        "ood_paths": np.array([p for _, p in ev.ood_images]),
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
    for split, imgs in (("id", ev.id_images), ("ood", ev.ood_images)):
        for j, (iid, path) in enumerate(imgs):
            per_image.append(
                {"set": split, "image": iid, "path": path, "random_weights": ev.random_weights, **{k: repr(float(ev.scores[k][split][j])) for k in keys}}
            )
    write_text(out / "scores.csv", _csv_text(per_image, ["set", "image", "path", "random_weights", *keys]))
    write_json(
        out / "explanations.json",
        {"random_weights": ev.random_weights, "note": "top negatives and ID classes of each OOD image (ungrouped shares at tau)", "vocabularies": ev.explanations},
    )
    write_json(out / "results.json", {**ev.meta, "rows": ev.rows})
    return out


# ----------------------------------------------------------------------------------------------
# pool-size sweep
# ----------------------------------------------------------------------------------------------
@dataclass
class SweepResult:
    """FPR/AUROC against pool size M for one ranked vocabulary, with optional references."""

    rows: list[dict[str, Any]]
    references: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))


def sweep_vocabulary(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings,
    vocab: Vocabulary,
    sizes: str | Iterable[int],
    *,
    method: str = "neglabel",
    references: Mapping[str, Vocabulary] | None = None,
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    params: Mapping[str, Any] | None = None,
    convention: str = "paper",
    tpr: float = 0.95,
    n_boot: int = 1000,
    progress: bool = False,
) -> SweepResult:
    """Metrics for every pool size M (the first M labels of ``vocab``), from one pass of
    :func:`negvocab.sweep`; ``references`` (e.g. GPT, oracle) are scored at their full size.
    Image sets as in :func:`evaluate_vocabularies`."""
    from negvocab.labels.imagenet import imagenet1k
    from negvocab.scoring.sweep import parse_sizes, sweep

    method = S.canonical_method(method)
    wanted = parse_sizes(sizes, len(vocab))
    if vocab.source != "wordnet" and not all("rank" in vocab.meta.get(x, {}) for x in vocab.labels):
        logger.warning(
            "sweeping a %s vocabulary that carries no ranking: its first M labels are in file order, "
            "not farthest first (build a ranked one with `negvocab build wordnet`)",
            vocab.source,
        )
    params = dict(params or {})
    convention = M.check_convention(convention)
    id_classes = id_classes if id_classes is not None else imagenet1k()
    t0 = time.perf_counter()
    id_e, id_images = _encode_set(vlm, id_set, False, progress)
    ood_e, ood_images = _encode_set(vlm, ood_set, False, progress)
    images = np.concatenate([id_e.embeddings, ood_e.embeddings])
    n_id = len(id_images)
    class_emb = vlm.encode_text(list(id_classes.names), templates, pos="n", progress=progress)
    ranked = vlm.encode_text(list(vocab.labels[: max(wanted)]), templates, pos=vocab.parts_of_speech()[: max(wanted)], progress=progress)
    kw = _params_for(method, params)
    by_m = sweep(images, class_emb, ranked, wanted, method=method, device=vlm.device, **kw)
    rows = []
    for m, s in by_m.items():
        rep = M.evaluate(s[:n_id], s[n_id:], tpr=tpr, convention=convention, n_boot=n_boot)  # type: ignore[arg-type]
        rows.append({"M": m, "method": method, **_model_fields(vlm), "vocab_hash": vocab.short_hash, **rep})
    refs = []
    for name, ref in (references or {}).items():
        neg = vlm.encode_text(list(ref.labels), templates, pos=ref.parts_of_speech(), progress=progress)
        s = np.asarray(S.score(method, images, class_emb, neg, device=vlm.device, **kw))
        rep = M.evaluate(s[:n_id], s[n_id:], tpr=tpr, convention=convention, n_boot=n_boot)  # type: ignore[arg-type]
        refs.append({"name": name, "M": len(ref), "oracle": bool(ref.settings.get("oracle")), "vocab_hash": ref.short_hash, **rep})
    meta = {
        "negvocab_version": _version(),
        **_model_fields(vlm),
        "model_identity": vlm.identity,
        "method": method,
        "params": kw,
        "templates": templates,
        "convention": convention,
        "tpr": tpr,
        "vocabulary": {"source": vocab.source, "sha256": vocab.sha256, "size": len(vocab)},
        "n_id": n_id,
        "n_ood": len(ood_images),
        "failed_images": [list(x) for x in (*id_e.failed, *ood_e.failed)],
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = RANDOM_WEIGHTS_WARNING
    return SweepResult(rows, refs, meta)


def plot_sweep(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    references: Sequence[Mapping[str, Any]] = (),
    title: str | None = None,
    random_weights: bool = False,
) -> Path:
    """FPR@tpr and AUROC against M (log x axis), references as horizontal lines; written atomically."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    if not rows:
        raise InputError("nothing to plot: no sweep rows")
    ms = [r["M"] for r in rows]
    conv = rows[0].get("convention", "paper")
    tpr = int(round(100 * rows[0].get("tpr", 0.95)))
    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, key, label in ((axes[0], "fpr", f"FPR@{tpr} (%), {conv} convention"), (axes[1], "auroc", "AUROC (%)")):
        ax.plot(ms, [100 * r[key] for r in rows], marker="o", label="WordNet, first M")
        if key == "fpr" and all(r.get("fpr_ci") for r in rows):
            lo, hi = zip(*[(100 * r["fpr_ci"][0], 100 * r["fpr_ci"][1]) for r in rows], strict=True)
            ax.fill_between(ms, lo, hi, alpha=0.2, label="95% CI (OOD bootstrap)")
        for i, ref in enumerate(references):
            name = f"{ref['name']} (oracle)" if ref.get("oracle") and "oracle" not in ref["name"].lower() else ref["name"]
            ax.axhline(100 * ref[key], linestyle="--", color=f"C{i + 1}", label=f"{name}, M={ref['M']}")
        ax.set_xscale("log")
        ax.set_xticks(ms, [f"{m:,}" for m in ms])  # the swept sizes, not powers of ten
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("pool size M")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    heading = title or "Pool-size ablation"
    if random_weights:
        heading += "  [RANDOM WEIGHTS: meaningless]"
    fig.suptitle(heading)
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return Path(path)


def write_sweep(result: SweepResult, out_dir: str | os.PathLike[str]) -> Path:
    """``sweep.csv`` (M, FPR, AUROC, AUPR, CI), ``sweep.png`` and ``sweep.json`` (last; an earlier
    run's goes first, so a ``sweep.json`` always describes the files beside it) in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").unlink(missing_ok=True)
    cols = ["M", "method", "model", "pretrained", "random_weights", "convention", "tpr", "fpr", "auroc", "aupr_in", "aupr_out", "n_id", "n_ood", "fpr_ci_low", "fpr_ci_high", "auroc_ci_low", "auroc_ci_high"]
    write_text(out / "sweep.csv", _csv_text([_flat(r) for r in result.rows], cols))
    plot_sweep(result.rows, out / "sweep.png", references=result.references, random_weights=result.random_weights)
    write_json(out / "sweep.json", {**_jsonable(result.meta), "rows": result.rows, "references": result.references})
    return out
