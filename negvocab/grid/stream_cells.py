"""Test-time (stream) methods in a grid: a cell's ID and OOD scores from one stream, and its row's provenance.

A grid cell of a stream method (a ``[[methods]]`` entry of ``kind`` stream, with its ``stream`` table:
order, batch size, seed, ID:OOD ratio) is scored as :func:`negvocab.evaluate_stream` scores one OOD
set: one stream of the ID images and that set's images, from a fresh state. Its ID scores are
therefore the cell's own (their score file's digest names the OOD set and the stream), and its row
says ``test_time`` with the stream that made it. A method's set-up inputs that a model makes (TANL's
noise images, made by the input registry :mod:`negvocab.scoring.providers`) are made where the model
is (:func:`stream_setup`, in the text unit) and handed to the score units, which have no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.evaluation.stream_inputs import stream_setup_inputs
from negvocab.grid.config import MethodSpec
from negvocab.scoring.stream import make_stream

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM

__all__ = ["score_stream_cell", "stream_fields", "stream_identity", "stream_setup"]

#: stream settings as cell digests hold them: the names they were first written with, so that a grid
#: keeps the digests of its older folders (the API's ``stream_batch`` was ``batch_size``)
_IDENTITY_KEYS = {"stream_batch": "batch_size"}


def stream_identity(stream: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A method's stream settings as its cells' digests hold them (sorted pairs, the names they had)."""
    return sorted((_IDENTITY_KEYS.get(k, k), v) for k, v in stream)


def stream_setup(methods: Sequence[MethodSpec], vlm: VLM) -> dict[str, dict[str, np.ndarray]]:
    """The set-up inputs ``vlm`` makes for each stream method in ``methods`` that names some (TANL's
    noise-image features, seeded by its ``seed``), by the method's display name."""
    out = {}
    for spec in methods:
        if spec.stream:
            made = stream_setup_inputs(make_stream(spec.name, dict(spec.params)), vlm)
            if made:
                out[spec.display] = {k: np.asarray(v) for k, v in made.items()}
    return out


def score_stream_cell(
    spec: MethodSpec,
    ood_set: str,
    images: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    class_emb: np.ndarray,
    neg_emb: np.ndarray | None,
    setup: Mapping[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """``(id_scores, ood_scores, stream)`` of one cell: the stream of ``images["ID"]`` and
    ``images[ood_set]`` under the method's stream settings (``setup``: its set-up inputs, from
    :func:`stream_setup`); ``stream`` records them and the method's final state. With an ID:OOD ratio
    the scores are of the images the stream kept."""
    from negvocab.evaluation.stream_evaluation import evaluate_stream  # the scorers import torch: not at CLI start

    st = dict(spec.stream)
    sev = evaluate_stream(
        spec.name,
        images["ID"][0],
        {ood_set: images[ood_set][0]},
        class_emb,
        neg_emb,
        stream_batch=st["stream_batch"],
        order=st["order"],
        stream_seed=st["seed"],
        id_ood_ratio=st["id_ood_ratio"],
        params=dict(spec.params),
        setup_inputs=setup,
        n_boot=0,
    )
    scores = sev.scores[ood_set]
    kept = {k: v.tolist() for k, v in sev.kept[ood_set].items()} if st["id_ood_ratio"] is not None else None
    state = {
        **dict(stream_identity(spec.stream)),
        "state": sev.streams[ood_set].state,
        **({"kept": kept} if kept else {}),
    }
    return np.asarray(scores["id"], np.float64), np.asarray(scores["ood"], np.float64), state


def stream_fields(spec: MethodSpec) -> dict[str, Any]:
    """The fields a stream method's cell row adds (``test_time`` and its stream); none for a batch method."""
    st = dict(spec.stream)
    if not st:
        return {}
    out: dict[str, Any] = {"test_time": True, "stream_order": st["order"], "stream_batch_size": st["stream_batch"]}
    out["stream_seed"] = None if st["order"] == "given" else st["seed"]
    if st["id_ood_ratio"] is not None:
        out["id_ood_ratio"] = st["id_ood_ratio"]
    return out
