"""Test-time (stream) methods evaluated: one stream per OOD set, its metrics, marked as test-time.

:func:`evaluate_stream` runs a stream method of the registry (:mod:`negvocab.scoring.stream`, whose
docstring states the protocol) on each (ID set + one OOD set) stream: ID rows then that set's OOD
rows, ordered by ``order``/``stream_seed``, cut into batches of ``stream_batch`` images, from a fresh state
for every OOD set (as AdaNeg's and TANL's code reset their memory per ID/OOD pair). The ID scores
therefore differ from one OOD set to the next: each row's metrics use its own stream's ID scores, and
the summary rows (``near-ood`` and ``far-ood`` where the sets span both groups, then ``mean``) are the
batch path's (:func:`negvocab.evaluation.records.summary_records`): each averages its sets' rows, its
bootstrap intervals each set's draws against that set's own ID scores. Rows have the keys of
:func:`negvocab.evaluate_vocabularies`'s rows plus ``test_time: true`` and the stream's
``stream_order``, ``stream_batch_size``, ``stream_seed``: a test-time result depends on the stream
it saw, and says so wherever it is shown.

The protocol's further choices, each recorded: the ID:OOD mix (``id_ood_ratio``: the side in excess
subsampled, seeded by the stream seed; rows then carry ``id_ood_ratio`` and count only the images
scored), and several stream seeds (``stream_seed=[0, 1, 2]``): each seed is one evaluation
(``StreamEvaluation.by_seed``) and ``rows`` are their spread, one row per OOD set (and ``mean``) with
the metrics averaged over the seeds and ``<metric>_std`` (sample standard deviation), ``_min``,
``_max`` and ``stream_seeds`` beside them (no bootstrap interval: the seeds are the spread).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np

from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.core.types import Embeddings
from negvocab.data.benchmarks import set_groups
from negvocab.evaluation.encode import encode_labels, encode_run, encode_sets, run_id_classes
from negvocab.evaluation.records import (
    SPREAD_METRICS,
    images_meta,
    metrics_row,
    model_fields,
    named_ood_sets,
    run_meta,
    seed_spread,
    summary_records,
    vocab_fields,
    vocabularies_meta,
)
from negvocab.evaluation.result import Evaluation, EvaluationRun, named_vocabularies, tunings_by_key
from negvocab.evaluation.row import file_row
from negvocab.evaluation.stream_inputs import stream_setup_inputs
from negvocab.scoring.methods import check_evaluation, check_shared
from negvocab.scoring.stream import (
    SPLIT_ORDERS,
    StreamMethod,
    StreamResult,
    check_kind,
    check_ratio,
    check_stream,
    make_stream,
    phase_sets,
    run_stream,
    stream_mix,
)
from negvocab.vlm.templates import resolve_templates

if TYPE_CHECKING:
    import torch

    from negvocab.data.images import ImageSet
    from negvocab.evaluation.row import ResultRow
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

#: one test set of a stream: image embeddings (n, d), ImageEmbeddings, or (with a vlm) an ImageSet
StreamSet: TypeAlias = Union[np.ndarray, "torch.Tensor", "ImageEmbeddings", "ImageSet"]
#: the OOD side: one set, a list of sets, or a mapping name -> set
StreamSets: TypeAlias = StreamSet | Sequence[StreamSet] | Mapping[str, StreamSet]

__all__ = [
    "SPREAD_METRICS",
    "seed_spread",
    "STREAM_PROTOCOL",
    "TEST_TIME_NOTE",
    "StreamEvaluation",
    "evaluate_stream",
    "evaluate_stream_vocabularies",
    "merge_evaluations",
    "stream_seeds",
]

#: how a run streams the images (the ``protocol`` of a result's ``stream`` meta)
STREAM_PROTOCOL = "one stream per OOD set: ID rows then OOD rows, ordered, cut into batches, fresh state"
#: what every test-time row and result says about its kind
TEST_TIME_NOTE = "test-time: scores depend on the test stream seen (order, batch size, seed)"


@dataclass
class StreamEvaluation:
    """Rows, scores and streams of one :func:`evaluate_stream` run.

    ``rows``: one metrics dict per OOD set (and ``mean`` with several); ``scores``: OOD set ->
    ``{"id": [n_id], "ood": [n_ood]}`` in the images' own order; ``streams``: OOD set -> the
    :class:`~negvocab.scoring.stream.StreamResult` (its order and the method's final state);
    ``meta``: method, parameters and the stream protocol; ``kept``: OOD set -> ``{"id": rows, "ood":
    rows}``, the images of each set's stream (all of them unless ``id_ood_ratio`` subsampled; the
    scores are of these rows); ``by_seed``: with several stream seeds, seed -> that seed's evaluation
    (``scores``, ``streams`` and ``kept`` are then the first seed's, ``rows`` the spread).

    Parameters
    ----------
    rows : list of dict
        One metrics dict per OOD set (and ``mean`` with several).
    scores : dict
        OOD set -> ``{"id": [n_id], "ood": [n_ood]}``.
    streams : dict
        OOD set -> its :class:`~negvocab.scoring.stream.StreamResult`.
    meta : dict, default {}
        Method, parameters and the stream protocol.
    kept : dict, default {}
        OOD set -> the ID and OOD rows of its stream.
    by_seed : dict, default {}
        Stream seed -> that seed's evaluation.
    """

    rows: list[dict[str, Any]]
    scores: dict[str, dict[str, np.ndarray]] = field(repr=False)
    streams: dict[str, StreamResult] = field(repr=False)
    meta: dict[str, Any] = field(default_factory=dict, repr=False)
    kept: dict[str, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)
    by_seed: dict[int, StreamEvaluation] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.rows = [file_row(r) for r in self.rows]  # the one row of every results file


def stream_seeds(stream_seed: int | Sequence[int]) -> list[int]:
    """The stream seeds as a list (one seed or several, each an integer >= 0, none repeated)."""
    seeds = [stream_seed] if isinstance(stream_seed, (int, np.integer)) or stream_seed is None else list(stream_seed)
    if not seeds:
        raise InputError("stream_seed: give at least one seed")
    out = [check_stream(seed=s)[2] for s in seeds]
    if len(set(out)) < len(out):
        raise InputError(f"stream_seed: a seed is repeated in {out}")
    return out


@renamed_kwargs(batch_size="stream_batch")
def evaluate_stream(
    method: str | StreamMethod,
    id_set: StreamSet,
    ood_sets: StreamSets,
    id_emb: Embeddings,
    neg_emb: Embeddings | None = None,
    *,
    stream_batch: int,
    order: str = "shuffled",
    stream_seed: int | Sequence[int] = 0,
    id_ood_ratio: float | None = None,
    phases: str | None = None,
    params: Mapping[str, Any] | None = None,
    id_images: Embeddings | None = None,
    setup_inputs: Mapping[str, Any] | None = None,
    vlm: VLM | None = None,
    vocabulary: str = "",
    vocab: Vocabulary | None = None,
    templates: str = "",
    convention: str = "paper",
    tpr: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
    groups: Mapping[str, str | None] | None = None,
) -> StreamEvaluation:
    """Score a stream method on ``id_set`` + each OOD set, one stream per OOD set, and its metrics.

    Parameters
    ----------
    method : a registered stream method (``Method.kind == "stream"``), or a :class:`StreamMethod` instance
        (a notebook's own class, unregistered; ``params`` then go to its constructor, not here)
    id_set, ood_sets : the ID test images and the OOD sets (one, a list, or a mapping name -> set):
        image embeddings (n, d) or ``ImageEmbeddings``; with ``vlm``, also image sets (encoded here).
    id_emb, neg_emb : the ID class prompt embeddings (K, d) and the negatives (M, d)
    stream_batch, order, stream_seed : the stream (:func:`negvocab.scoring.stream.run_stream`); several
        stream seeds give one evaluation each and rows of their spread (module docstring)
    id_ood_ratio : ID images per OOD image in each stream (None: every image); the side in excess is
        subsampled (:func:`negvocab.scoring.stream.stream_mix`, seeded by the stream seed)
    phases : a temporal-shift phase order (``"ptis"``, ``"spti"``, ``"tisp"``: OpenOOD-VLM's): the
        OOD sets (the MOS four) streamed one after another in that order, each with the ID set, the
        method's state carried from one to the next (None: a fresh state per OOD set); rows record
        ``stream_phases`` and their set's ``stream_phase`` (1 = first)
    params : the method's parameters (checked against the registry; defaults fill the rest)
    id_images, setup_inputs : few-shot ID image features (n, d) and the method's further set-up inputs
    vlm, vocabulary, vocab, templates : what the rows say about the model and the vocabulary
    convention, tpr, n_boot, seed : the metrics (as :func:`negvocab.evaluate_vocabularies`; ``seed``
        draws the bootstrap, ``stream_seed`` the stream)
    groups : each OOD set's group (``near``/``far``; default: those of the benchmark the sets came
        from, :func:`negvocab.data.benchmarks.set_groups`): ``near-ood`` and ``far-ood`` rows where the
        sets span both, as :func:`negvocab.evaluate_vocabularies` gives them
    """
    # every check before any image is encoded or scored
    detector = _detector(method, params)
    seeds = stream_seeds(stream_seed)
    stream_batch, order, _ = check_stream(stream_batch=stream_batch, order=order, seed=seeds[0])
    ratio = None if id_ood_ratio is None else check_ratio(id_ood_ratio)
    check_evaluation(convention=convention, tpr=tpr, n_boot=n_boot, seed=seed)
    if detector.needs_negatives and neg_emb is None:
        raise InputError(f"method {detector.name} needs negative label embeddings (neg_emb)")
    sets = named_ood_sets(ood_sets)
    if phases is not None:
        sets = {name: sets[name] for name in phase_sets(phases, list(sets))}
    setup_inputs = stream_setup_inputs(detector, vlm, setup_inputs)  # inputs the model can make
    detector.setup(id_emb, neg_emb, id_images=id_images, **setup_inputs)
    t0 = time.perf_counter()
    id_x, ood_x = _embeddings(vlm, id_set, sets, progress)
    base = _row_base(detector, vlm, vocabulary, vocab, templates, order, stream_batch, ratio, phases)
    metric_kw: dict[str, Any] = {"tpr": tpr, "convention": convention, "n_boot": n_boot, "seed": seed}
    of = dict(groups) if groups is not None else set_groups(sets)  # each OOD set's group: the summary rows
    run: dict[str, Any] = {
        "order": order,
        "stream_batch": stream_batch,
        "ratio": ratio,
        "groups": of,
        "phased": bool(phases),
        "progress": progress,
    }
    by_seed = {s: _one_seed(detector, id_x, ood_x, base, stream=s, **run, **metric_kw) for s in seeds}
    first = by_seed[seeds[0]]
    stream = {"order": order, "batch_size": stream_batch, "seed": first.rows[0]["stream_seed"]}
    stream |= ({"seeds": seeds} if len(seeds) > 1 else {}) | ({"id_ood_ratio": ratio} if ratio is not None else {})
    stream |= {"phases": phases, "phase_sets": list(sets)} if phases is not None else {}
    meta = {
        "method": detector.name,
        "params": dict(detector.params),
        "test_time": True,
        "note": TEST_TIME_NOTE,
        "stream": {**stream, "protocol": STREAM_PROTOCOL},
        "n_id": int(id_x.shape[0]),
        "ood_sets": {name: int(x.shape[0]) for name, x in ood_x.items()},
        "convention": convention,
        "tpr": tpr,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "resample": "ood"},
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if len(seeds) == 1:
        first.meta = meta
        return first
    return StreamEvaluation(_spread(by_seed), first.scores, first.streams, meta, first.kept, by_seed)


def _detector(method: str | StreamMethod, params: Mapping[str, Any] | None) -> StreamMethod:
    """The stream method a run streams: an instance as given (built with its own parameters), else the
    registry's, built with ``params``."""
    if isinstance(method, StreamMethod):
        if params:
            raise InputError("params go to the registry's stream methods; an instance was built with its own")
        return method
    return make_stream(check_kind(method, "stream").name, params or {})


def _row_base(
    detector: StreamMethod,
    vlm: VLM | None,
    vocabulary: str,
    vocab: Vocabulary | None,
    templates: str,
    order: str,
    stream_batch: int,
    ratio: float | None,
    phases: str | None = None,
) -> dict[str, Any]:
    """What every row of a stream method's run holds besides its metrics: the model, the vocabulary, the
    method and its parameters, and the stream."""
    base: dict[str, Any] = {
        "method": detector.name,
        **(model_fields(vlm) if vlm is not None else {"model": "", "pretrained": "", "random_weights": False}),
        "vocabulary": vocabulary,
        **vocab_fields(vocab),
        "params": dict(detector.params),
        "templates": templates,
        "test_time": True,
        "stream_order": order,
        "stream_batch_size": stream_batch,
    }
    if ratio is not None:
        base["id_ood_ratio"] = ratio
    if phases is not None:
        base["stream_phases"] = phases
    return base


def _one_seed(
    detector: StreamMethod,
    id_x: Any,
    ood_x: Mapping[str, Any],
    base: Mapping[str, Any],
    *,
    order: str,
    stream_batch: int,
    stream: int,
    ratio: float | None,
    groups: Mapping[str, str | None],
    phased: bool = False,
    progress: bool = False,
    **metric_kw: Any,
) -> StreamEvaluation:
    """One stream per OOD set with the stream seed ``stream`` (the mix drawn from it too): rows, scores,
    streams; the summary rows (near-ood, far-ood, mean) as the batch path makes them
    (:func:`negvocab.evaluation.records.summary_records`), each set against its own stream's ID scores."""
    base = {**base, "stream_seed": None if order == "given" else stream}
    records: list[ResultRow] = []
    scores: dict[str, dict[str, np.ndarray]] = {}
    streams: dict[str, StreamResult] = {}
    kept: dict[str, dict[str, np.ndarray]] = {}
    phase_of: dict[str, int] = {}
    for phase, (name, x) in enumerate(ood_x.items()):
        keep_id, keep_ood = stream_mix(int(id_x.shape[0]), int(x.shape[0]), ratio=ratio, seed=stream)
        kept[name] = {"id": keep_id, "ood": keep_ood}
        a, b = (id_x, x) if ratio is None else (_take(id_x, keep_id), _take(x, keep_ood))
        n_id = len(keep_id)
        n_first = n_id if order in SPLIT_ORDERS else None
        fresh = not phased or phase == 0  # a later phase goes on from the state the last one left
        res = run_stream(
            detector,
            _stack(a, b),
            stream_batch=stream_batch,
            order=order,
            seed=stream,
            n_id=n_first,
            reset=fresh,
            progress=progress,
        )
        streams[name] = res
        scores[name] = {"id": res.scores[:n_id], "ood": res.scores[n_id:]}
        records.append(metrics_row(scores[name]["id"], scores[name]["ood"], ood_set=name, method="", **metric_kw))
        if phased:
            phase_of[name] = phase + 1
    own_id = {name: s["id"] for name, s in scores.items()}  # each set's stream scored the ID images anew
    records += summary_records(records, own_id, {n: s["ood"] for n, s in scores.items()}, groups=groups, **metric_kw)
    rows = [{**base, **r.metrics_dict()} for r in records]
    for row in rows:
        if row.get("ood_set") in phase_of:
            row["stream_phase"] = phase_of[row["ood_set"]]
    return StreamEvaluation(rows, scores, streams, {}, kept)


def _take(x: Any, rows: np.ndarray) -> Any:
    """Rows of an array or tensor."""
    if hasattr(x, "detach"):
        import torch  # only for embeddings that came in as tensors

        return x[torch.as_tensor(rows, device=x.device)]
    return np.asarray(x)[rows]


def _spread(by_seed: Mapping[int, StreamEvaluation]) -> list[dict[str, Any]]:
    """One row per OOD set (and ``mean``): each metric's mean over the seeds, its sample standard
    deviation, minimum and maximum; the seeds' bootstrap intervals left out (the seeds are the spread)."""
    seeds = list(by_seed)
    out = []
    for k, row in enumerate(by_seed[seeds[0]].rows):
        spread = {key: v for key, v in row.items() if not key.endswith(_CI_ENDS) and key not in _CI_KEYS}
        spread.update(seed_spread([by_seed[s].rows[k] for s in seeds], seeds))
        out.append(spread)
    return out


_CI_KEYS = ("ci_level", "n_boot", "ci_resample")
_CI_ENDS = ("_ci", "_ci_low", "_ci_high")


def _embeddings(vlm: VLM | None, id_set: Any, sets: Mapping[str, Any], progress: bool) -> tuple[Any, dict[str, Any]]:
    """The ID embeddings and each OOD set's: encoded by ``vlm`` (cached) when given, else as passed."""
    if vlm is not None:
        enc = encode_sets(vlm, id_set, sets, False, progress)
        return enc.id_emb.embeddings, {k: e.embeddings for k, e in enc.ood_embs.items()}
    out = {}
    for name, x in {"id_set": id_set, **sets}.items():
        x = getattr(x, "embeddings", x) if not hasattr(x, "shape") else x
        if not hasattr(x, "shape") or len(x.shape) != 2:
            raise InputError(f"{name}: pass image embeddings (rows x dimension), or image sets together with vlm=")
        out[name] = x
    id_x = out.pop("id_set")
    return id_x, out


def _stack(a: Any, b: Any) -> Any:
    """ID rows then OOD rows (numpy, or torch when the embeddings are tensors)."""
    if hasattr(a, "detach") or hasattr(b, "detach"):
        import torch  # only for tensors that came in as tensors

        return torch.cat([torch.as_tensor(a), torch.as_tensor(b).to(torch.as_tensor(a).device)])
    return np.concatenate([np.asarray(a), np.asarray(b)])


# ----------------------------------------------------------------------------------------------
# stream methods over a model and vocabularies: what ``negvocab score`` runs
# ----------------------------------------------------------------------------------------------
#: the keys of a test-time run's ``stream`` (``evaluate_vocabularies(stream=...)``); ``stream_batch`` is required
STREAM_KEYS = ("stream_batch", "order", "stream_seed", "id_ood_ratio", "phases")


@renamed_kwargs(batch_size="stream_batch")
def evaluate_stream_vocabularies(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings] | Sequence[ImageSet],
    vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary],
    methods: Sequence[str],
    *,
    stream_batch: int,
    order: str = "shuffled",
    stream_seed: int | Sequence[int] = 0,
    id_ood_ratio: float | None = None,
    phases: str | None = None,
    **kwargs: Any,
) -> Evaluation:
    """Deprecated (one release): :func:`negvocab.evaluate_vocabularies` with ``stream=``.

    ``evaluate_vocabularies`` takes test-time methods beside batch ones, with their stream as one mapping:
    ``stream={"stream_batch": ..., "order": ..., "stream_seed": ..., "id_ood_ratio": ..., "phases": ...}``.

    Parameters
    ----------
    vlm, id_set, ood_set, vocabs, methods
        As for :func:`negvocab.evaluate_vocabularies` (``methods``: test-time methods).
    stream_batch, order, stream_seed, id_ood_ratio, phases
        The stream: the keys of ``evaluate_vocabularies``' ``stream``.
    **kwargs
        The other keywords of :func:`negvocab.evaluate_vocabularies`.
    """
    warnings.warn(
        "evaluate_stream_vocabularies is deprecated: call evaluate_vocabularies(..., stream={'stream_batch': ...})",
        DeprecationWarning,
        stacklevel=2,
    )
    for m in methods:
        check_kind(m, "stream")
    from negvocab.evaluation.evaluate import evaluate_vocabularies

    stream = {"stream_batch": stream_batch, "order": order, "stream_seed": stream_seed}
    stream |= {"id_ood_ratio": id_ood_ratio, "phases": phases}
    return evaluate_vocabularies(vlm, id_set, ood_set, vocabs, methods, stream=stream, **kwargs)


def check_streams(methods: Sequence[str], stream: Mapping[str, Any] | None, run: EvaluationRun) -> None:
    """Refuse a test-time run's bad argument before any image is read: no ``stream``, a key not of
    :data:`STREAM_KEYS`, a bad stream, phase order or parameter (one :class:`InputError`)."""
    if stream is None:
        raise InputError(
            f"{', '.join(methods)}: test-time method(s) score a stream; give it (stream={{'stream_batch': 256}})",
            param="stream",
        )
    unknown = sorted(set(stream) - set(STREAM_KEYS))
    if unknown or "stream_batch" not in stream:
        raise InputError(
            f"stream: {'unknown key(s) ' + ', '.join(unknown) if unknown else 'stream_batch is missing'}; "
            f"keys: {', '.join(STREAM_KEYS)} (stream_batch required)",
            param="stream",
        )
    _checked_methods(methods, run, **stream)


def evaluate_streams(run: EvaluationRun, methods: Sequence[str], stream: Mapping[str, Any]) -> Evaluation:
    """The test-time part of :func:`negvocab.evaluate_vocabularies`: every stream method x vocabulary.

    The images are embedded once (cached), the ID class names and each vocabulary once; each (method,
    vocabulary) runs :func:`evaluate_stream` (one stream per OOD set). ``scores`` are keyed
    ``method@vocabulary@ood_set`` (and ``#s<seed>`` with several stream seeds), each with every ID and
    every OOD image, NaN where the stream did not hold the image (another OOD set's, or left out by
    ``id_ood_ratio``); ``meta["stream"]`` states the protocol."""
    specs, own, seeds = _checked_methods(methods, run, **stream)
    order, stream_batch = stream.get("order", "shuffled"), stream["stream_batch"]
    id_ood_ratio, phases = stream.get("id_ood_ratio"), stream.get("phases")
    templates, params, convention, tpr, n_boot, seed = (
        run.templates, run.params, run.convention, run.tpr, run.n_boot, run.seed
    )  # fmt: skip
    vlm, id_set = run.vlm, run.id_set
    named = named_vocabularies(run.vocabs)
    negs = [m.name for m in specs.values() if m.needs_negatives]
    if negs and not named:
        raise InputError(f"methods {', '.join(negs)} need a vocabulary (vocabularies)", param="vocabularies")
    # a benchmark's ID set names its label space (CUB-200's ...), as evaluate_vocabularies reads it
    id_classes = run_id_classes(run.id_classes, id_set)
    ood_sets = named_ood_sets(run.ood_set)
    keys = [f"{m.name}@{v}" if v else m.name for m in specs.values() for v in (named if m.needs_negatives else [""])]
    tunings = tunings_by_key(run.tuned, keys, [id_set, *ood_sets.values()])  # refused before any image is read
    if phases is not None:
        phase_sets(phases, list(ood_sets))  # before any image is encoded
    t0 = time.perf_counter()
    enc, class_emb = encode_run(vlm, id_set, ood_sets, id_classes, templates, progress=run.progress)
    rows: list[dict[str, Any]] = []
    scores: dict[str, dict[str, np.ndarray]] = {}
    for name, m in specs.items():
        for vname in named if m.needs_negatives else [None]:
            vocab = named[vname] if vname else None
            neg = encode_labels(vlm, vocab, templates, run.progress) if vocab is not None else None
            key = f"{m.name}@{vname}" if vname else m.name
            tuning = tunings.get(key)
            sev = evaluate_stream(
                m.name,
                enc.id_emb,
                enc.ood_embs,
                class_emb,
                neg,
                stream_batch=stream_batch,
                order=order,
                stream_seed=seeds,
                id_ood_ratio=id_ood_ratio,
                phases=phases,
                params={**own[name], **(tuning.params if tuning is not None else {})},
                vlm=vlm,
                vocabulary=vname or "",
                vocab=vocab,
                templates=templates,
                convention=convention,
                tpr=tpr,
                n_boot=n_boot,
                seed=seed,
                groups=enc.groups,
            )
            rows += [{**r, **tuning.row_fields()} for r in sev.rows] if tuning is not None else sev.rows
            for s, one in (sev.by_seed or {seeds[0]: sev}).items():
                tag = f"#s{s}" if len(seeds) > 1 else ""
                scores.update(_full_scores(one, enc.n_id, enc.sizes, f"{key}{{set}}{tag}"))
    stream_meta = {
        "order": order,
        "batch_size": stream_batch,  # the file key keeps its name
        "seeds": seeds,
        "id_ood_ratio": id_ood_ratio,
        **({"phases": phases} if phases is not None else {}),
        "protocol": STREAM_PROTOCOL,
        "scores": "keyed method@vocabulary@ood_set[#s<seed>]; NaN: an image the stream did not hold",
    }
    meta = {
        **run_meta(vlm, id_classes, templates, convention, tpr, params, seed, n_boot),
        **images_meta(id_set, ood_sets, enc),
        **vocabularies_meta(named),
        "test_time": True,
        "note": TEST_TIME_NOTE,
        "stream": stream_meta,
        **({"tuning": {k: t.record() for k, t in tunings.items()}} if tunings else {}),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return Evaluation(rows, scores, enc.id_images, enc.ood_images, {}, meta, dict(enc.sizes))


def _checked_methods(
    methods: Sequence[str],
    run: EvaluationRun,
    *,
    stream_batch: int,
    order: str = "shuffled",
    stream_seed: int | Sequence[int] = 0,
    id_ood_ratio: float | None = None,
    phases: str | None = None,  # checked against the OOD sets' names, which only the run knows
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[int]]:
    """The stream methods' registry entries, each one's own parameters (of the shared ``params``) and the stream
    seeds, every argument checked before any image is read."""
    specs = {m: check_kind(m, "stream") for m in dict.fromkeys(methods)}
    if not specs:
        raise InputError("no stream method given", param="methods")
    params = run.params
    check_shared(params)
    own = {name: {k: v for k, v in params.items() if k in m.params and v is not None} for name, m in specs.items()}
    for name, m in specs.items():  # every parameter checked before any image is read
        make_stream(m.name, own[name])
    seeds = stream_seeds(stream_seed)
    check_stream(stream_batch=stream_batch, order=order, seed=seeds[0])
    if id_ood_ratio is not None:
        check_ratio(id_ood_ratio)
    check_evaluation(convention=run.convention, tpr=run.tpr, n_boot=run.n_boot, seed=run.seed)
    resolve_templates(run.templates)
    return specs, own, seeds


def _full_scores(
    sev: StreamEvaluation, n_id: int, sizes: Mapping[str, int], key: str
) -> dict[str, dict[str, np.ndarray]]:
    """Each OOD set's stream scores spread over every ID and OOD image (NaN where the stream had none)."""
    out = {}
    offsets = dict(zip(sizes, np.cumsum([0, *sizes.values()])[:-1].tolist(), strict=True))
    for name, s in sev.scores.items():
        kept = sev.kept.get(name) or {"id": np.arange(n_id), "ood": np.arange(sizes[name])}
        id_full = np.full(n_id, np.nan)
        ood_full = np.full(sum(sizes.values()), np.nan)
        id_full[kept["id"]] = s["id"]
        ood_full[offsets[name] + kept["ood"]] = s["ood"]
        out[key.replace("{set}", f"@{name}")] = {"id": id_full, "ood": ood_full}
    return out


def merge_evaluations(batch: Evaluation, stream: Evaluation) -> Evaluation:
    """One results folder's evaluation from a batch run and a stream run over the same images: rows and
    scores of both, the batch run's meta with the stream run's ``stream`` protocol and note added.

    Parameters
    ----------
    batch : Evaluation
        The batch run's (:func:`negvocab.evaluate_vocabularies`).
    stream : Evaluation
        The stream run's (:func:`evaluate_stream_vocabularies`), over the same ID and OOD images.
    """
    if batch.id_images != stream.id_images or batch.ood_images != stream.ood_images:
        raise InputError("the batch and stream evaluations scored different images; run them on the same sets")
    meta = {**batch.meta, "test_time": True, "note": TEST_TIME_NOTE, "stream": stream.meta["stream"]}
    tuning = {**batch.meta.get("tuning", {}), **stream.meta.get("tuning", {})}
    meta |= {"tuning": tuning} if tuning else {}
    meta["deployable"] = batch.meta.get("deployable", True) and stream.meta.get("deployable", True)
    return Evaluation(
        [*batch.rows, *stream.rows],
        {**batch.scores, **stream.scores},
        batch.id_images,
        batch.ood_images,
        batch.explanations,
        meta,
        batch.ood_sets,
        batch.id_explanations,
    )
