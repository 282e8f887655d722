"""The main job: score a VLM with vocabularies on an ID set and one or more OOD sets, and write the results.

:func:`evaluate_vocabularies` embeds the images (cached), the ID class names and each vocabulary
(cached), scores every (method, vocabulary) pair, computes the metrics under a named convention for
each OOD set (against the one ID set, so the ID threshold is the same for all) and their mean, and
explains the OOD images; :func:`write_results` writes the results folder. :func:`sweep_vocabulary`
does the same for every pool size M of one ranked vocabulary, and :func:`negvocab.plot_sweep`
(:mod:`negvocab.scoring.plot`) draws FPR@95 and AUROC against M.

Every output built from a model with random weights says so (``random_weights: true``); every row
scored with a non-deployable vocabulary (oracle, transductive) says so (``deployable``, ``caveats``);
results name their convention, grouping, templates and threshold rule, and record the versions, the
command line, the bootstrap seed and the ID class list (:mod:`negvocab.provenance`).
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
from negvocab.scoring.checks import common_mistakes
from negvocab.scoring.encode import encode_sets
from negvocab.scoring.plot import plot_sweep
from negvocab.scoring.rows import (
    MEAN,
    conventions,
    grouping_params,
    jsonable,
    model_fields,
    named_ood_sets,
    ood_rows,
    run_meta,
    sets_meta,
    vocab_fields,
    vocab_meta,
)

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
    "csv_text",
    "ID_EXPLAINED_MAX",
    "Evaluation",
    "SweepResult",
    "evaluate_vocabularies",
    "flagged_id_images",
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


# ----------------------------------------------------------------------------------------------
# evaluation
# ----------------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Scores, metrics and explanations of one ``negvocab score`` run.

    ``rows``: one metrics dict per (method, vocabulary, OOD set), with a ``"mean"`` row per (method,
    vocabulary) when there are several OOD sets; ``scores``: key -> {"id": [n_id], "ood": [n_ood]}
    (every OOD set, in order); ``id_images``/``ood_images``: (id, path) of the scored images, aligned
    with the scores; ``ood_sets``: each OOD set's name and size, in the order of ``ood_images``;
    ``explanations``: vocabulary name -> one dict per OOD image; ``meta``: model, data, settings;
    ``id_explanations``: vocabulary name -> one dict per ID image flagged as OOD by one of its runs
    (:func:`flagged_id_images`: lowest score first, capped).
    """

    rows: list[dict[str, Any]]
    scores: dict[str, dict[str, np.ndarray]] = field(repr=False)
    id_images: list[tuple[str, str]] = field(repr=False)
    ood_images: list[tuple[str, str]] = field(repr=False)
    explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    meta: dict[str, Any] = field(default_factory=dict, repr=False)
    ood_sets: dict[str, int] = field(default_factory=dict)
    id_explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.ood_sets:
            self.ood_sets = {"ood": len(self.ood_images)}

    def __repr__(self) -> str:
        names = {r.get("vocabulary") or "-" for r in self.rows}
        return (
            f"Evaluation({len(self.rows)} rows: methods {sorted({r['method'] for r in self.rows})}, "
            f"vocabularies {sorted(names)}; {len(self.id_images)} ID images, OOD sets {self.ood_sets}; "
            f"scores for {len(self.scores)} keys{'; RANDOM WEIGHTS' if self.random_weights else ''})"
        )

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))

    def ood_set_of_images(self) -> list[str]:
        """The OOD set name of each image of ``ood_images``."""
        return [name for name, n in self.ood_sets.items() for _ in range(n)]


def evaluate_vocabularies(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings] | Sequence[ImageSet],
    vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary],
    methods: Sequence[str] = ("neglabel",),
    *,
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    params: Mapping[str, Any] | None = None,
    convention: str = "paper",
    tpr: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    explain_k: int = 5,
    progress: bool = False,
) -> Evaluation:
    """Score ``vlm`` on ``id_set`` vs each OOD set with every method and vocabulary.

    Each set is an :class:`ImageSet` (encoded here, through the cache) or the
    :class:`ImageEmbeddings` that ``vlm.encode_images`` returned for it. ``ood_set`` is one set or
    a mapping name -> set (or a list of sets, each named after itself): each is scored against the same ID scores (so under the ``paper`` and
    ``hendrycks`` conventions the same ID threshold), giving a row per set and, with several sets,
    a row ``ood_set="mean"`` averaging them.
    Methods that use no negatives (mcm, glmcm) are scored once. ``params`` go to each scorer that
    accepts them (tau, groups, grouping, seed, beta, T, penalty_T, lam, topk). The metrics follow
    ``convention`` (see :mod:`negvocab.scoring.metrics`); bootstrap intervals resample OOD images,
    drawn from ``seed``.
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
    ood_sets = named_ood_sets(ood_set)
    common_mistakes(vlm, id_set, ood_sets, named, id_classes, templates)  # warned before the long part
    t0 = time.perf_counter()
    enc = encode_sets(vlm, id_set, ood_sets, "glmcm" in methods, progress)
    images, n_id, sizes = enc.images, enc.n_id, enc.sizes
    class_emb = vlm.encode_text(list(id_classes.names), templates, pos="n", progress=progress)

    rows: list[dict[str, Any]] = []
    all_scores: dict[str, dict[str, np.ndarray]] = {}
    explanations: dict[str, list[dict[str, Any]]] = {}
    flagged_ids: dict[str, dict[int, None]] = {}  # vocabulary -> ID images flagged by any of its runs
    jobs = [(m, name) for m in methods for name in (named if m in S.NEEDS_NEGATIVES else [None])]
    # label encoding is a step of its own (a cold run spends its time here, not in "scoring")
    neg_cache: dict[str, np.ndarray] = {
        vname: vlm.encode_text(list(named[vname].labels), templates, pos=named[vname].parts_of_speech(), progress=progress)
        for vname in dict.fromkeys(v for _, v in jobs if v)
    }

    def explain(emb: np.ndarray, vname: str) -> list[dict[str, Any]]:
        labels = {"id_labels": list(id_classes.names), "neg_labels": list(named[vname].labels)}
        return S.explain(emb, class_emb, neg_cache[vname], **labels, k=explain_k, tau=float(params.get("tau") or 0.01), device=vlm.device)

    for method, vname in _progress(jobs, progress, "scoring"):
        vocab = named[vname] if vname else None
        kw = _params_for(method, params)
        neg = neg_cache[vname] if vname else None
        key = f"{method}@{vname}" if vname else method
        if method == "glmcm":  # per set: the [n, p, d] patch features are never copied into one array
            embs = [enc.id_emb, *enc.ood_embs.values()]
            parts = [S.score(method, e.embeddings, class_emb, local=e.local, device=vlm.device, **kw) for e in embs]
            scores, extra = {"": np.concatenate(parts)}, {}
        else:
            scores, extra = _score_job(method, images, class_emb, neg, vlm.device, kw)
        for suffix, s in scores.items():
            all_scores[key + suffix] = {"id": s[:n_id], "ood": s[n_id:]}
        base = _result_row(method, vlm, vname, vocab, kw, templates, extra)
        rows += ood_rows(base, *enc.split(scores[""]), tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)
        if vname is not None and explain_k > 0:
            s_id, s_sets = enc.split(scores[""])
            flagged_ids.setdefault(vname, {}).update(dict.fromkeys(flagged_id_images(s_id, s_sets.values(), tpr, convention)))
            if vname not in explanations:
                ex = explain(images[n_id:], vname)
                set_of = [name for name, n in sizes.items() for _ in range(n)]
                explanations[vname] = [{"image": iid, "path": p, "ood_set": o, **e} for (iid, p), o, e in zip(enc.ood_images, set_of, ex, strict=True)]
    id_explanations: dict[str, list[dict[str, Any]]] = {}
    for vname, picked in flagged_ids.items():
        idx = np.fromiter(picked, dtype=np.int64, count=len(picked))
        ex = explain(images[idx], vname) if len(idx) else []
        id_explanations[vname] = [{"image": enc.id_images[j][0], "path": enc.id_images[j][1], **e} for j, e in zip(idx.tolist(), ex, strict=True)]
    meta = {
        **run_meta(vlm, id_classes, templates, convention, tpr, params, seed, n_boot),
        **sets_meta(id_set, ood_sets, enc),
        "failed_images": enc.failed(),
        "vocabularies": {k: vocab_meta(v) for k, v in named.items()},
        "deployable": all(v.deployable for v in named.values()),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = RANDOM_WEIGHTS_WARNING
    return Evaluation(rows, all_scores, enc.id_images, enc.ood_images, explanations, meta, sizes, id_explanations)


#: ID images explained per run and OOD set: the lowest-scoring of those flagged as OOD (a report shows 100)
ID_EXPLAINED_MAX = 500


def flagged_id_images(s_id: np.ndarray, ood_scores: Iterable[np.ndarray], tpr: float, convention: str, cap: int = ID_EXPLAINED_MAX) -> list[int]:
    """Indices of the ID images below the FPR@tpr threshold against any OOD set, lowest score
    first, at most ``cap`` per set: the ID images a report shows as wrongly flagged."""
    out: dict[int, None] = {}
    for s_ood in ood_scores:
        if len(s_id) == 0 or len(s_ood) == 0:
            continue
        idx = np.flatnonzero(M.operating_point(s_id, s_ood, tpr, convention=convention).id_flagged)  # type: ignore[arg-type]
        out.update(dict.fromkeys(idx[np.argsort(s_id[idx], kind="stable")][:cap].tolist()))
    return list(out)


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
    kw: Mapping[str, Any],
    templates: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The fields of one (method, vocabulary)'s results rows, before the metrics of an OOD set."""
    return {
        "method": method,
        **model_fields(vlm),
        "vocabulary": vname or "",
        **vocab_fields(vocab),
        "params": {k: v for k, v in kw.items() if k != "local"},
        "templates": templates,
        **extra,
    }


def _progress(items: list[Any], enabled: bool, desc: str) -> Iterable[Any]:
    if len(items) < 2:
        return items
    from negvocab.progress import track

    return track(items, len(items), desc, "run", bar=enabled)  # a bar on terminals, a log line every 30 s


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


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for name in ("fpr_ci", "auroc_ci"):
        ci = out.pop(name, None) or [math.nan, math.nan]
        out[f"{name}_low"], out[f"{name}_high"] = ci
    return out


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text of ``rows`` with ``columns`` in order (extra keys ignored): the one CSV writer of results tables."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


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
    head = f"{'method':<14}{'vocabulary':<{name_w}}{'OOD set' if set_w else '':<{set_w}}{'M':>7}  {f'FPR@{tpr}':>7}  {'95% CI':>15}  {'AUROC':>6}  {'AUPR-In':>7}  {'AUPR-Out':>8}"
    lines.append(head)
    for r, name in zip(rows, names, strict=True):
        f = _flat(r)
        ci = f"[{100 * f['fpr_ci_low']:.1f}, {100 * f['fpr_ci_high']:.1f}]" if not math.isnan(f["fpr_ci_low"]) else "-"
        method = f"{r['method']} k={r['topk']}" if r.get("topk") else r["method"]  # top-k NegLabel is an estimate
        set_col = f"{str(r.get('ood_set', ''))[: set_w - 1]:<{set_w}}" if set_w else ""
        lines.append(
            f"{method:<14}{name:<{name_w}}{set_col}{r['vocab_size'] or '-':>7}  {100 * r['fpr']:>6.2f}%  {ci:>15}  "
            f"{100 * r['auroc']:>6.2f}  {100 * r['aupr_in']:>7.2f}  {100 * r['aupr_out']:>8.2f}"
        )
    n_ood = {str(r.get("ood_set")): r["n_ood"] for r in rows if r.get("ood_set") != MEAN}
    lines.append(f"n_id={rows[0]['n_id'] if rows else 0}, n_ood=" + (", ".join(f"{k} {v}" for k, v in n_ood.items()) if len(n_ood) > 1 else str(next(iter(n_ood.values()), 0))))
    conv_meta = (meta or {}).get("conventions") or conventions(conv, str(rows[0].get("templates", "?")) if rows else "?", grouping_params(rows), rows[0]["tpr"] if rows else 0.95)
    lines.append(f"FPR convention: {conv_meta['convention']}; threshold: {conv_meta['threshold']}")
    lines.append(f"grouping: {conv_meta['grouping']}; templates: {conv_meta['templates']}")
    lines.append(f"how these differ from NegLabel's, OpenOOD's and the Hendrycks code: {conv_meta['see']}")
    for vname, kinds in caveats.items():
        lines.append(f"NOT DEPLOYABLE: {vname} ({kinds}); a bound for comparison, not a detector's result")
    return "\n".join(lines)


# every file a run leaves in its folder (report.html: written after, by `--report`)
RESULT_FILES = ("results.csv", "scores.npz", "scores.csv", "explanations.json", "report.html", "results.json")
SWEEP_FILES = ("sweep.csv", "sweep.png", "report.html", "sweep.json")


def write_results(ev: Evaluation, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the results folder as a whole (:func:`negvocab.outdir.staged_folder`): all files, then
    one commit step, ``results.json`` last; an earlier run's output is replaced only with
    ``overwrite`` (as ``negvocab score --overwrite``), and kept whole when the write fails.

    Files: ``results.csv`` (the table), ``scores.npz`` (per-image scores with image ids and paths),
    ``scores.csv`` (the same, one row per image), ``explanations.json`` (top negatives and ID classes
    per OOD image and vocabulary, and per flagged ID image under ``id_images``), ``results.json`` (rows + run metadata).
    """
    from negvocab.outdir import staged_folder

    with staged_folder(out_dir, RESULT_FILES, "results.json", overwrite=overwrite) as stage:
        _write_results_files(ev, stage)
    return Path(out_dir)


def _write_results_files(ev: Evaluation, out: Path) -> None:
    flat = [{**_flat(r), "params": json.dumps(r.get("params", {}))} for r in ev.rows]
    write_text(out / "results.csv", csv_text(flat, [*TABLE_COLUMNS, "params", "templates"]))
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
    for split, imgs, set_of in (("id", ev.id_images, [""] * len(ev.id_images)), ("ood", ev.ood_images, ev.ood_set_of_images())):
        for j, (iid, path) in enumerate(imgs):
            per_image.append(
                {"set": split, "ood_set": set_of[j], "image": iid, "path": path, "random_weights": ev.random_weights, **{k: repr(float(ev.scores[k][split][j])) for k in keys}}
            )
    write_text(out / "scores.csv", csv_text(per_image, ["set", "ood_set", "image", "path", "random_weights", *keys]))
    write_json(
        out / "explanations.json",
        {
            "random_weights": ev.random_weights,
            "note": "top negatives and ID classes of each OOD image (vocabularies) and of the ID images flagged as OOD (id_images; lowest score first, capped); ungrouped shares at tau",
            "vocabularies": ev.explanations,
            "id_images": ev.id_explanations,
        },
    )
    write_json(out / "results.json", {**ev.meta, "rows": ev.rows})


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


def is_ranked(vocab: Vocabulary) -> bool:
    """Whether the vocabulary's order is a farthest-first ranking (WordNet, or ranks in its metadata)."""
    return vocab.source == "wordnet" or all("rank" in vocab.meta.get(x, {}) for x in vocab.labels)


def sweep_vocabulary(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings] | Sequence[ImageSet],
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
    seed: int = 0,
    name: str | None = None,
    order: str = "ranked",
    progress: bool = False,
) -> SweepResult:
    """Metrics for every pool size M (the first M labels of ``vocab``), from one pass of
    :func:`negvocab.sweep`; ``references`` (e.g. GPT, oracle) are scored at their full size.
    Image sets as in :func:`evaluate_vocabularies` (one OOD set or several by name: rows per set and
    their mean). ``name`` names the swept vocabulary in rows and legends (default its source).

    ``order="ranked"`` (default) sweeps a farthest-first ranking; a union (which has none) is
    refused, another unranked vocabulary warned about. ``order="given"`` sweeps the file order of
    any vocabulary, and says so in the rows.
    """
    from negvocab.labels.imagenet import imagenet1k
    from negvocab.scoring.sweep import parse_sizes, sweep

    method = S.canonical_method(method)
    wanted = parse_sizes(sizes, len(vocab))
    if order not in ("ranked", "given"):
        raise InputError(f"unknown sweep order {order!r}; choose ranked or given")
    ranked_order = is_ranked(vocab)
    if order == "ranked" and not ranked_order:
        if vocab.source == "union":
            raise InputError(
                "a union vocabulary has no farthest-first order, so its first M labels are no pool of size M: "
                "sweep a ranked (WordNet) vocabulary, or pass order='given' (--order given) to sweep the file order"
            )
        logger.warning(
            "sweeping a %s vocabulary that carries no ranking: its first M labels are in file order, "
            "not farthest first (build a ranked one with `negvocab build wordnet`)",
            vocab.source,
        )
    params = dict(params or {})
    convention = M.check_convention(convention)
    id_classes = id_classes if id_classes is not None else imagenet1k()
    common_mistakes(vlm, id_set, named_ood_sets(ood_set), {"swept": vocab, **(references or {})}, id_classes, templates)
    t0 = time.perf_counter()
    enc = encode_sets(vlm, id_set, named_ood_sets(ood_set), False, progress)
    class_emb = vlm.encode_text(list(id_classes.names), templates, pos="n", progress=progress)
    ranked = vlm.encode_text(list(vocab.labels[: max(wanted)]), templates, pos=vocab.parts_of_speech()[: max(wanted)], progress=progress)
    kw = _params_for(method, params)
    by_m = sweep(enc.images, class_emb, ranked, wanted, method=method, device=vlm.device, **kw)
    common = {"method": method, **model_fields(vlm), "templates": templates}
    vname = name or vocab.source
    rows = []
    for m, s in by_m.items():
        base = {"M": m, **common, "vocabulary": vname, **vocab_fields(vocab), "order": "ranked" if ranked_order else "given"}
        rows += ood_rows(base, *enc.split(s), tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)
    refs = []
    for rname, ref in (references or {}).items():
        neg = vlm.encode_text(list(ref.labels), templates, pos=ref.parts_of_speech(), progress=progress)
        s = np.asarray(S.score(method, enc.images, class_emb, neg, device=vlm.device, **kw))
        base = {"name": rname, "M": len(ref), **common, "vocabulary": rname, **vocab_fields(ref)}
        refs += ood_rows(base, *enc.split(s), tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)
    meta = {
        **run_meta(vlm, id_classes, templates, convention, tpr, kw, seed, n_boot),
        "method": method,
        "params": kw,
        "vocabulary": {"name": vname, "order": "ranked" if ranked_order else "given", **vocab_meta(vocab)},
        "references": {k: vocab_meta(v) for k, v in (references or {}).items()},
        "n_id": enc.n_id,
        "n_ood": len(enc.ood_images),
        **sets_meta(id_set, named_ood_sets(ood_set), enc),
        "failed_images": enc.failed(),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = RANDOM_WEIGHTS_WARNING
    return SweepResult(rows, refs, meta)


SWEEP_COLUMNS = [
    "kind", "vocabulary", "M", "method", "model", "pretrained", "random_weights", "vocab_source", "vocab_hash", "deployable",
    "caveats", "ood_set", "convention", "tpr", "fpr", "auroc", "aupr_in", "aupr_out", "aupr_method", "n_id", "n_ood",
    "fpr_ci_low", "fpr_ci_high", "auroc_ci_low", "auroc_ci_high", "templates",
]  # fmt: skip


def write_sweep(result: SweepResult, out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """``sweep.csv`` (M, FPR, AUROC, AUPR, CI; the reference vocabularies too, ``kind=reference``),
    ``sweep.png`` and ``sweep.json`` in ``out_dir``, written as a whole like :func:`write_results`
    (``sweep.json`` last; ``overwrite`` as there)."""
    from negvocab.outdir import staged_folder

    with staged_folder(out_dir, SWEEP_FILES, "sweep.json", overwrite=overwrite) as stage:
        _write_sweep_files(result, stage)
    return Path(out_dir)


def _write_sweep_files(result: SweepResult, out: Path) -> None:
    table = [{"kind": "sweep", **_flat(r)} for r in result.rows] + [{"kind": "reference", **_flat(r)} for r in result.references]
    write_text(out / "sweep.csv", csv_text(table, SWEEP_COLUMNS))
    plot_sweep(result.rows, out / "sweep.png", references=result.references, random_weights=result.random_weights)
    write_json(out / "sweep.json", {**jsonable(result.meta), "rows": result.rows, "references": result.references})
