"""The main job: score a VLM with vocabularies on an ID set and one or more OOD sets.

:func:`evaluate_vocabularies` embeds the images (cached), the ID class names and each vocabulary
(cached), scores every (method, vocabulary) pair, computes the metrics under a named convention for
each OOD set (against the one ID set, so the ID threshold is the same for all) and their mean, and
explains the OOD images. :func:`negvocab.write_results` (:mod:`negvocab.report.results`) writes
the results folder; :mod:`negvocab.evaluation.sweeps` does the same for every vocabulary size M.

Every output built from a model with random weights says so (``random_weights: true``); every row
scored with a non-deployable vocabulary (oracle, transductive) says so (``deployable``, ``caveats``);
results name their convention, grouping, templates and threshold rule, and record the versions, the
command line, the bootstrap seed and the ID class list (:mod:`negvocab.core.provenance`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.progress import track
from negvocab.core.types import Device
from negvocab.evaluation.accuracy import accuracy_summary, add_ccr, full_spectrum, id_correct
from negvocab.evaluation.checks import common_mistakes
from negvocab.evaluation.encode import EncodedSets, encode_labels, encode_run, run_id_classes
from negvocab.evaluation.records import (
    RANDOM_WEIGHTS_WARNING,
    images_meta,
    model_fields,
    named_ood_sets,
    ood_records,
    run_meta,
    vocab_identity,
    vocabularies_meta,
)
from negvocab.evaluation.row import ResultRow, file_row
from negvocab.scoring import metrics as M
from negvocab.scoring import scores as S
from negvocab.scoring.detector import BatchDetector, make_detector
from negvocab.scoring.methods import (
    INPUTS,
    PARAMS,
    Method,
    batch_method,
    canonical_method,
    check_evaluation,
    check_shared,
    scorer_params,
)
from negvocab.scoring.providers import InputContext, image_inputs, setup_inputs
from negvocab.vlm.templates import resolve_templates

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.evaluation.tuning import Tuning
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["ID_EXPLAINED_MAX", "RANDOM_WEIGHTS_WARNING", "Evaluation", "evaluate_vocabularies", "flagged_id_images"]


# ----------------------------------------------------------------------------------------------
# inputs
# ----------------------------------------------------------------------------------------------
def _vocab_name(name: str, vocab: Vocabulary) -> str:
    return name or f"{vocab.source}-{vocab.short_hash}"


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
        self.rows = [file_row(r) for r in self.rows]  # batch and test-time rows: the one row of every results file

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

    @property
    def records(self) -> list[ResultRow]:
        """:attr:`rows` as typed records (:class:`negvocab.ResultRow`)."""
        return [ResultRow.from_dict(r) for r in self.rows]

    def ood_set_of_images(self) -> list[str]:
        """The OOD set name of each image of ``ood_images``."""
        return [name for name, n in self.ood_sets.items() for _ in range(n)]

    def with_fields(self, fields: Mapping[str, Any]) -> Evaluation:
        """The same evaluation with ``fields`` recorded in every row: where the rows' settings came from
        (``negvocab score --authors``: ``authors`` and ``authors_setting``), so every table of them says so."""
        return dataclasses.replace(self, rows=[{**r, **fields} for r in self.rows])


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
    tuned: Sequence[Tuning] = (),
) -> Evaluation:
    """Score ``vlm`` on ``id_set`` vs each OOD set with every method and vocabulary.

    Each OOD set is scored against the same ID scores (so under the ``paper`` and ``hendrycks``
    conventions the same ID threshold), giving a row per set and, with several sets, a row
    ``ood_set="mean"`` averaging them. Methods that use no negatives (mcm, glmcm) are scored once.
    With full-spectrum ID sets (covariate-shifted ID joined) the rows hold CCR (``ccr@1e-4`` ... ``ccr@1e-1``).

    Parameters
    ----------
    vlm : VLM
        The model that encodes the images and the labels.
    id_set : ImageSet or ImageEmbeddings
        The ID images: an :class:`ImageSet` (encoded here, through the cache) or the
        :class:`ImageEmbeddings` that ``vlm.encode_images`` returned for it.
    ood_set : ImageSet, ImageEmbeddings, mapping name -> set, or sequence of ImageSet
        One OOD set, a mapping name -> set, or a list of sets (each named after itself).
    vocabs : mapping name -> Vocabulary, or sequence of Vocabulary
        The negative vocabularies; unnamed ones are named ``<source>-<hash>``.
    methods : sequence of str, default ("neglabel",)
        Any registered methods (``negvocab.list_methods()``).
    id_classes : IdClasses, optional
        The ID classes; default those the ID set's benchmark names, else ImageNet-1k's.
    templates : str, default "paper8"
        The prompt templates that encode the class names and labels.
    params : mapping, optional
        Go to each scorer that accepts them (tau, groups, grouping, seed, beta, T, penalty_T, lam,
        topk, and any registered method's own).
    convention : str, default "paper"
        The metrics' convention (see :mod:`negvocab.scoring.metrics`).
    tpr : float, default 0.95
        The true-positive rate at which FPR is read.
    n_boot : int, default 1000
        Bootstrap resamples (of the OOD images) for the intervals.
    seed : int, default 0
        Seed of the bootstrap draws.
    explain_k : int, default 5
        How many top negatives and ID classes explain each image; 0 explains none.
    progress : bool, default False
        Show progress bars.
    tuned : sequence of Tuning, default ()
        Parameters chosen on a tuning split (:func:`negvocab.tune_params`), each for its (method,
        vocabulary): they override ``params`` there, the rows record the tuning (``tuned``,
        ``tuned_on``, ...) and the meta its grid and trials; a test image in a tuning split is refused.

    Returns
    -------
    Evaluation
    """
    # long: the Parameters section is a third of it; the body is the pipeline in order, each step a call
    methods, specs, named = _checked_jobs(methods, vocabs, convention, tpr, n_boot, seed, params, templates, explain_k)
    convention = M.check_convention(convention)
    params = dict(params or {})
    id_classes = run_id_classes(id_classes, id_set)
    ood_sets = named_ood_sets(ood_set)
    common_mistakes(vlm, id_set, ood_sets, named, id_classes, templates)  # warned before the long part
    keys = [f"{m}@{v}" if v else m for m in methods for v in (named if specs[m].needs_negatives else [""])]
    tunings = tunings_by_key(tuned, keys, [id_set, *ood_sets.values()])  # refused before any image is read
    t0 = time.perf_counter()
    local = any(image_inputs(specs[m].inputs) for m in methods)
    enc, class_emb = encode_run(vlm, id_set, ood_sets, id_classes, templates, local=local, progress=progress)
    correct = id_correct(id_set, enc.id_images, enc.images[: enc.n_id], class_emb, id_classes)  # None: no labels
    accuracy = accuracy_summary(correct)
    ccr_hits = correct[0] if correct is not None and full_spectrum(id_set) else None  # CCR columns: full-spectrum

    rows: list[dict[str, Any]] = []
    all_scores: dict[str, dict[str, np.ndarray]] = {}
    jobs = [(m, name) for m in methods for name in (named if specs[m].needs_negatives else [None])]
    # label encoding is a step of its own (a cold run spends its time here, not in "scoring")
    neg_cache = {v: encode_labels(vlm, named[v], templates, progress) for v in dict.fromkeys(v for _, v in jobs if v)}
    boot: dict[str, Any] = {"tpr": tpr, "convention": convention, "n_boot": n_boot, "seed": seed, "groups": enc.groups}
    tau: Any = params.get("tau") or PARAMS["tau"].default  # the explanations' (NegLabel's) temperature
    explained = _Explanations(enc, class_emb, neg_cache, named, list(id_classes.names), explain_k, tau, vlm.device)
    for method, vname in _progress(jobs, progress, "scoring"):
        vocab = named[vname] if vname else None
        key = f"{method}@{vname}" if vname else method
        tuning = tunings.get(key)
        job_params = {**params, **tuning.params} if tuning is not None else params
        # a model-like object may not have a logit scale
        kw = scorer_params(method, job_params, getattr(vlm, "logit_scale", None))
        context = InputContext(vlm, templates, id_classes.names, vocab.labels if vocab else None)
        inputs = setup_inputs(specs[method].inputs, context, method=method)  # NegRefine's pair texts, a plug-in's
        neg = neg_cache[vname] if vname else None
        detector = make_detector(method, {**kw, "device": vlm.device}).setup(class_emb, neg, **inputs)
        scores, extra = _job_scores(cast(BatchDetector, detector), enc)
        for suffix, s in scores.items():
            all_scores[key + suffix] = {"id": s[: enc.n_id], "ood": s[enc.n_id :]}
        identity = _row_identity(method, vlm, vname, vocab, kw, templates, extra)
        if tuning is not None:
            identity["extra"].update(tuning.row_fields())
        s_id, s_sets = enc.split(scores[""])
        job_rows = [r.to_dict() for r in ood_records(s_id, s_sets, **boot, **identity)]
        if ccr_hits is not None:
            add_ccr(job_rows, s_id, s_sets, ccr_hits)
        rows += job_rows
        if vname is not None and explain_k > 0:
            explained.add(vname, s_id, s_sets, tpr, convention)
    if accuracy is not None:  # a column of every row, and the run's record in meta
        for r in rows:
            r["id_accuracy"] = accuracy["top1"]
    meta = {
        **run_meta(vlm, id_classes, templates, convention, tpr, params, seed, n_boot),
        **({"id_accuracy": dict(accuracy)} if accuracy is not None else {}),
        **({"tuning": {k: t.record() for k, t in tunings.items()}} if tunings else {}),
        **images_meta(id_set, ood_sets, enc),
        **vocabularies_meta(named),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = RANDOM_WEIGHTS_WARNING
    ood_explained, id_explained = explained.ood, explained.id_images()
    return Evaluation(rows, all_scores, enc.id_images, enc.ood_images, ood_explained, meta, enc.sizes, id_explained)


def _checked_jobs(
    methods: Sequence[str],
    vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary],
    convention: str,
    tpr: float,
    n_boot: int,
    seed: int,
    params: Mapping[str, Any] | None,
    templates: str,
    explain_k: int,
) -> tuple[list[str], dict[str, Method], dict[str, Vocabulary]]:
    """The methods (canonical names, each once), their specs and the vocabularies by name, every argument
    checked before any image is read."""
    methods = list(dict.fromkeys(canonical_method(m) for m in methods))
    if not methods:
        raise InputError("no scoring method given")
    check_evaluation(convention=convention, tpr=tpr, n_boot=n_boot, seed=seed)  # before any image is read
    check_shared(params or {})
    resolve_templates(templates)  # a bad preset or template file fails here, not after the image encoding
    if isinstance(explain_k, bool) or not isinstance(explain_k, int) or explain_k < 0:
        raise InputError(f"explain_k must be an integer >= 0, got {explain_k!r}", param="explain_k")
    named = _named(vocabs)
    specs = {m: batch_method(m, "evaluate_vocabularies") for m in methods}
    negs = [m for m in methods if specs[m].needs_negatives]
    if not named and negs:
        raise InputError(f"methods {', '.join(negs)} need a vocabulary (vocabularies)", param="vocabularies")
    return methods, specs, named


class _Explanations:
    """The explanations of a run: top negatives and ID classes of every OOD image (once per vocabulary:
    they do not depend on the method) and of the ID images any of its runs flagged as OOD."""

    def __init__(
        self,
        enc: EncodedSets,
        class_emb: np.ndarray,
        neg_emb: Mapping[str, np.ndarray],
        named: Mapping[str, Vocabulary],
        id_names: list[str],
        k: int,
        tau: float,
        device: Device,
    ) -> None:
        self.enc, self.class_emb, self.neg_emb, self.named = enc, class_emb, neg_emb, named
        self.id_names, self.k, self.tau, self.device = id_names, k, float(tau), device
        self.ood: dict[str, list[dict[str, Any]]] = {}
        self.flagged: dict[str, dict[int, None]] = {}  # vocabulary -> ID images flagged by any of its runs

    def explain(self, emb: np.ndarray, vname: str) -> list[dict[str, Any]]:
        neg = self.neg_emb[vname]
        labels = list(self.named[vname].labels)
        return S.explain(
            emb,
            self.class_emb,
            neg,
            id_labels=self.id_names,
            neg_labels=labels,
            k=self.k,
            tau=self.tau,
            device=self.device,
        )

    def add(self, vname: str, s_id: np.ndarray, s_sets: Mapping[str, np.ndarray], tpr: float, convention: str) -> None:
        """One (method, vocabulary)'s run: the ID images it flags; the OOD images, the vocabulary's first run."""
        flagged = flagged_id_images(s_id, s_sets.values(), tpr, convention)
        self.flagged.setdefault(vname, {}).update(dict.fromkeys(flagged))
        if vname not in self.ood:
            enc = self.enc
            ex = self.explain(enc.images[enc.n_id :], vname)
            set_of = [name for name, n in enc.sizes.items() for _ in range(n)]
            self.ood[vname] = [
                {"image": iid, "path": p, "ood_set": o, **e}
                for (iid, p), o, e in zip(enc.ood_images, set_of, ex, strict=True)
            ]

    def id_images(self) -> dict[str, list[dict[str, Any]]]:
        """The flagged ID images' explanations by vocabulary."""
        out: dict[str, list[dict[str, Any]]] = {}
        for vname, picked in self.flagged.items():
            idx = np.fromiter(picked, dtype=np.int64, count=len(picked))
            ex = self.explain(self.enc.images[idx], vname) if len(idx) else []
            out[vname] = [
                {"image": self.enc.id_images[j][0], "path": self.enc.id_images[j][1], **e}
                for j, e in zip(idx.tolist(), ex, strict=True)
            ]
        return out


#: ID images explained per run and OOD set: the lowest-scoring of those flagged as OOD (a report shows 100)
ID_EXPLAINED_MAX = 500


def flagged_id_images(
    s_id: np.ndarray, ood_scores: Iterable[np.ndarray], tpr: float, convention: str, cap: int = ID_EXPLAINED_MAX
) -> list[int]:
    """Indices of the ID images below the FPR@tpr threshold against any OOD set, lowest score
    first, at most ``cap`` per set: the ID images a report shows as wrongly flagged."""
    out: dict[int, None] = {}
    for s_ood in ood_scores:
        if len(s_id) == 0 or len(s_ood) == 0:
            continue
        idx = np.flatnonzero(M.operating_point(s_id, s_ood, tpr, convention=convention).id_flagged)  # type: ignore[arg-type]
        out.update(dict.fromkeys(idx[np.argsort(s_id[idx], kind="stable")][:cap].tolist()))
    return list(out)


def tunings_by_key(tuned: Sequence[Tuning], keys: Sequence[str], test_sets: Sequence[object]) -> dict[str, Tuning]:
    """The tunings by the scores key they apply to, each for a (method, vocabulary) scored here and each
    split disjoint from the test images, else one :class:`InputError`."""
    out = {t.key: t for t in tuned}
    unknown = [k for k in out if k not in keys]
    if unknown:
        raise InputError(f"tuned: {unknown[0]} is not scored in this run; scored: {', '.join(keys)}", param="tuned")
    test_paths = [str(p) for s in test_sets for p in getattr(s, "paths", [])]
    for t in out.values():
        t.check_disjoint(test_paths)
    return out


def _named(vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary]) -> dict[str, Vocabulary]:
    """Vocabularies by name: the given names, else ``<source>-<hash>``."""
    if isinstance(vocabs, Mapping):
        return {_vocab_name(k, v): v for k, v in vocabs.items()}
    return {_vocab_name("", v): v for v in vocabs}


def _job_scores(detector: BatchDetector, enc: EncodedSets) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """One method's scores of every image by its set-up detector (key ``""``; with ``topk`` also ``/lower``
    and ``/log_omitted_bound``) and row extras. A method that takes the patch features is scored set by
    set (the [n, p, d] patch features are never copied into one array)."""
    if detector.batch_inputs:
        embs = [enc.id_emb, *enc.ood_embs.values()]
        return {"": np.concatenate([detector.score_batch(e.embeddings, local=e.local) for e in embs])}, {}
    scores = detector.score_batch(enc.images)
    res = detector.bounds
    if res is None:
        return {"": scores}, {}
    # the exact score of every image lies in [lower, upper]; the gap says whether k sufficed; the
    # log of the certified bound (M - k) e^{s_k} on each image's omitted negative mass
    bound = res.log_omitted_bound
    extra = {"topk": res.k, "topk_max_gap": res.max_gap, "topk_max_log_omitted_bound": float(np.max(bound))}
    return {"": scores, "/lower": res.lower, "/log_omitted_bound": bound}, extra


def _row_identity(
    method: str,
    vlm: VLM,
    vname: str | None,
    vocab: Vocabulary | None,
    kw: Mapping[str, Any],
    templates: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """The fields of one (method, vocabulary)'s :class:`ResultRow` besides the metrics of an OOD set."""
    return {
        "method": method,
        **model_fields(vlm),
        "vocabulary": vname or "",
        **vocab_identity(vocab),
        "params": {k: v for k, v in kw.items() if k not in INPUTS},
        "templates": templates,
        "extra": dict(extra),
        "layout": "score",
    }


def _progress(items: list[Any], enabled: bool, desc: str) -> Iterable[Any]:
    if len(items) < 2:
        return items

    return track(items, len(items), desc, "run", bar=enabled)  # a bar on terminals, a log line every 30 s
