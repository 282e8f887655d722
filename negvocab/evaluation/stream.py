"""Test-time (stream) methods evaluated: one stream per OOD set, its metrics, marked as test-time.

:func:`evaluate_stream` runs a stream method of the registry (:mod:`negvocab.scoring.stream`, whose
docstring states the protocol) on each (ID set + one OOD set) stream: ID rows then that set's OOD
rows, ordered by ``order``/``stream_seed``, cut into batches of ``batch_size``, from a fresh state
for every OOD set (as AdaNeg's and TANL's code reset their memory per ID/OOD pair). The ID scores
therefore differ from one OOD set to the next: each row's metrics use its own stream's ID scores, and
the ``mean`` row averages the rows (its bootstrap intervals average each set's draws, each against
its own ID scores). Rows have the keys of :func:`negvocab.evaluate_vocabularies`'s rows plus
``test_time: true`` and the stream's ``stream_order``, ``stream_batch_size``, ``stream_seed``: a
test-time result depends on the stream it saw, and says so wherever it is shown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.errors import InputError
from negvocab.evaluation.encode import encode_sets
from negvocab.evaluation.rows import MEAN, model_fields, named_ood_sets, ood_rows, vocab_fields
from negvocab.evaluation.stream_inputs import stream_setup_inputs
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import check_evaluation
from negvocab.scoring.stream import StreamMethod, StreamResult, check_kind, check_stream, make_stream, run_stream

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["StreamEvaluation", "evaluate_stream"]

#: what every test-time row and result says about its kind
TEST_TIME_NOTE = "test-time: scores depend on the test stream seen (order, batch size, seed)"


@dataclass
class StreamEvaluation:
    """Rows, scores and streams of one :func:`evaluate_stream` run.

    ``rows``: one metrics dict per OOD set (and ``mean`` with several); ``scores``: OOD set ->
    ``{"id": [n_id], "ood": [n_ood]}`` in the images' own order; ``streams``: OOD set -> the
    :class:`~negvocab.scoring.stream.StreamResult` (its order and the method's final state);
    ``meta``: method, parameters and the stream protocol."""

    rows: list[dict[str, Any]]
    scores: dict[str, dict[str, np.ndarray]] = field(repr=False)
    streams: dict[str, StreamResult] = field(repr=False)
    meta: dict[str, Any] = field(default_factory=dict, repr=False)


def evaluate_stream(
    method: str | StreamMethod,
    id_set: Any,
    ood_sets: Any,
    id_emb: Any,
    neg_emb: Any = None,
    *,
    batch_size: int,
    order: str = "shuffled",
    stream_seed: int = 0,
    params: Mapping[str, Any] | None = None,
    id_images: Any = None,
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
) -> StreamEvaluation:
    """Score a stream method on ``id_set`` + each OOD set, one stream per OOD set, and its metrics.

    Parameters
    ----------
    method : a registered stream method (``Method.kind == "stream"``), or a :class:`StreamMethod` instance
        (a notebook's own class, unregistered; ``params`` then go to its constructor, not here)
    id_set, ood_sets : the ID test images and the OOD sets (one, a list, or a mapping name -> set):
        image embeddings (n, d) or ``ImageEmbeddings``; with ``vlm``, also image sets (encoded here).
    id_emb, neg_emb : the ID class prompt embeddings (K, d) and the negatives (M, d)
    batch_size, order, stream_seed : the stream (:func:`negvocab.scoring.stream.run_stream`)
    params : the method's parameters (checked against the registry; defaults fill the rest)
    id_images, setup_inputs : few-shot ID image features (n, d) and the method's further set-up inputs
    vlm, vocabulary, vocab, templates : what the rows say about the model and the vocabulary
    convention, tpr, n_boot, seed : the metrics (as :func:`negvocab.evaluate_vocabularies`; ``seed``
        draws the bootstrap, ``stream_seed`` the stream)
    """
    # long: the checks, then one stream per OOD set and its rows, then the mean row and meta, in order
    # every check before any image is encoded or scored
    if isinstance(method, StreamMethod):
        if params:
            raise InputError("params go to the registry's stream methods; an instance was built with its own")
        detector = method
    else:
        detector = make_stream(check_kind(method, "stream").name, params or {})
    batch_size, order, stream_seed = check_stream(batch_size=batch_size, order=order, seed=stream_seed)
    check_evaluation(convention=convention, tpr=tpr, n_boot=n_boot, seed=seed)
    if detector.needs_negatives and neg_emb is None:
        raise InputError(f"method {detector.name} needs negative label embeddings (neg_emb)")
    sets = named_ood_sets(ood_sets)
    setup_inputs = stream_setup_inputs(detector, vlm, setup_inputs)  # part "tanl": inputs the model can make
    detector.setup(id_emb, neg_emb, id_images=id_images, **setup_inputs)
    t0 = time.perf_counter()
    id_x, ood_x = _embeddings(vlm, id_set, sets, progress)
    n_id = int(id_x.shape[0])

    base: dict[str, Any] = {
        "method": detector.name,
        **(model_fields(vlm) if vlm is not None else {"model": "", "pretrained": "", "random_weights": False}),
        "vocabulary": vocabulary,
        **vocab_fields(vocab),
        "params": dict(detector.params),
        "templates": templates,
        "test_time": True,
        "stream_order": order,
        "stream_batch_size": batch_size,
        "stream_seed": stream_seed if order == "shuffled" else None,
    }
    rows: list[dict[str, Any]] = []
    scores: dict[str, dict[str, np.ndarray]] = {}
    streams: dict[str, StreamResult] = {}
    for name, x in ood_x.items():
        res = run_stream(detector, _stack(id_x, x), batch_size=batch_size, order=order, seed=stream_seed)
        streams[name] = res
        scores[name] = {"id": res.scores[:n_id], "ood": res.scores[n_id:]}
        rows += ood_rows(
            base,
            scores[name]["id"],
            {name: scores[name]["ood"]},
            tpr=tpr,
            convention=convention,
            n_boot=n_boot,
            seed=seed,
        )
    if len(rows) > 1:
        rows.append(_mean_row(base, rows, scores, tpr=tpr, convention=convention, n_boot=n_boot, seed=seed))
    meta = {
        "method": detector.name,
        "params": dict(detector.params),
        "test_time": True,
        "note": TEST_TIME_NOTE,
        "stream": {
            "order": order,
            "batch_size": batch_size,
            "seed": base["stream_seed"],
            "protocol": "one stream per OOD set: ID rows then OOD rows, ordered, cut into batches, fresh state",
        },
        "n_id": n_id,
        "ood_sets": {name: int(x.shape[0]) for name, x in ood_x.items()},
        "convention": convention,
        "tpr": tpr,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "resample": "ood"},
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return StreamEvaluation(rows, scores, streams, meta)


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


def _mean_row(
    base: Mapping[str, Any],
    rows: list[dict[str, Any]],
    scores: Mapping[str, Mapping[str, np.ndarray]],
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """The ``mean`` row: each metric averaged over the OOD sets' rows; bootstrap intervals of the mean
    averaged draw by draw, each set's OOD images resampled against that set's own stream's ID scores."""
    mean = {**base, "ood_set": MEAN, "convention": convention, "tpr": rows[0]["tpr"]}
    for key in ("fpr", "auroc", "aupr_in", "aupr_out"):
        mean[key] = float(np.mean([r[key] for r in rows]))
    mean.update(n_id=rows[0]["n_id"], n_ood=sum(r["n_ood"] for r in rows), n_ood_sets=len(rows))
    if n_boot:
        level = rows[0]["ci_level"]
        metric_kw: tuple[tuple[str, dict[str, Any]], ...] = (
            ("fpr", {"tpr": tpr, "convention": convention}),
            ("auroc", {}),
        )
        for key, kw in metric_kw:
            draws = [
                M.bootstrap_values(key, s["id"], s["ood"], n_boot=n_boot, seed=seed, **kw) for s in scores.values()
            ]
            kept = [d for d in draws if d is not None]
            if len(kept) == len(draws):
                low, high = np.quantile(np.mean(np.stack(kept), axis=0), [(1 - level) / 2, 1 - (1 - level) / 2])
                mean[f"{key}_ci"] = [float(low), float(high)]
        mean.update(ci_level=level, n_boot=int(n_boot), ci_resample="ood, within each set")
    return mean
