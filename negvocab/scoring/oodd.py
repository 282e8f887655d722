"""OODD: a dynamic dictionary of the test stream's most OOD-looking features, a stream method
(docs/methods.md#oodd).

OODD (Yang et al., "OODD: Test-time Out-of-Distribution Detection with Dynamic Dictionary", CVPR 2025,
arXiv:2503.10468) keeps a priority queue of the image features that the base score (MCM or NegLabel)
found least ID so far, and takes from each image's score its similarity to that dictionary. Per batch
``x`` (B, d) of unit-norm image features, in stream order:

1. ``s(x)``: the base score of the batch (``oodd_base``: ``neglabel`` with ``tau``, ``groups``,
   ``grouping``, ``seed``, or ``mcm`` with ``T``; high = ID).
2. **The dictionary takes the batch first**: each image joins the queue with its ``s``; while the
   queue holds more than ``oodd_queue`` features, the one of the highest ``s`` (the most ID-looking)
   leaves. So the queue holds the ``oodd_queue`` lowest-scored images seen, this batch included.
3. ``score(x) = s(x) - q_k(x)``, ``q_k(x)`` the ``oodd_k``-th largest cosine between ``x`` and the
   queue's features (an image in the queue meets itself at cosine 1).

Equal to the authors' MCM and NegLabel code, ``zxk1212/OODD`` ``MCM/eval_ood_detection.py`` and
``NegLabel/tools/ood_test.py`` (``ScoreData``, ``kth_largest_per_column``, ``batched_matrix_multiply``
and the "Continue Learning" loop; their repository carries no licence, so this is a re-implementation
and ``tests/reference/oodd.py`` a line-by-line one, with attribution), on the same features and the
same stream (``tests/scoring/test_oodd.py``). Where negvocab differs, only where their code has no
answer: a queue of fewer than ``oodd_k`` features (a first stream batch smaller than ``oodd_k``) gives
its smallest cosine, where ``torch.kthvalue`` stops with an error. The dictionary is their heap
(``heapq``, which their ``PriorityQueue`` wraps, with their comparison), so equal base scores leave it
in their order too.

Their "dual OOD stabilisation" (outliers made from ID data put in the queue before the stream, and
the first five kept in it for good) is in their OpenOOD (trained classifier, KNN score) code only,
``openood/postprocessors/knn_postprocessor.py``, not in their MCM or NegLabel code: negvocab's OODD,
on CLIP's MCM and NegLabel scores, is their MCM/NegLabel variant and has none.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from negvocab.scoring.methods import Param, get_method
from negvocab.scoring.stream import StreamMethod, register_stream_method

if TYPE_CHECKING:
    from negvocab.core.types import Embeddings

__all__ = ["OODD", "OODD_BASES", "OODD_PARAMS", "register_oodd"]

#: the base scores OODD's dictionary is plugged into (their MCM and NegLabel variants)
OODD_BASES: tuple[str, ...] = ("neglabel", "mcm")

_DOC = "OODD (stream): "
OODD_PARAMS: tuple[Param, ...] = (
    Param("oodd_queue", int, 2048, _DOC + "features the dictionary keeps, the lowest-scored seen (their queue_size).",
          check="min", low=1),
    Param("oodd_k", int, 5, _DOC + "the k-th largest cosine to the dictionary is subtracted (their K, 5).",
          check="min", low=1),
    Param("oodd_base", str, "neglabel", _DOC + "the base score: neglabel (their NegLabel variant) or mcm.",
          check="choice", choices=OODD_BASES),
)  # fmt: skip


class OODD(StreamMethod):
    """OODD's priority-queue dictionary over the test stream (the module docstring gives the steps).

    State: ``queue`` (q, d) float64 features and ``queue_scores`` (q,) their base scores, in numpy.

    Parameters
    ----------
    **params
        The method's parameters, as :func:`negvocab.make_stream` gives them (the registry's defaults
        filled in): ``oodd_queue`` (features the dictionary keeps, 2048), ``oodd_k`` (the k-th largest
        cosine to the dictionary is subtracted, 5), ``oodd_base`` (the base score: ``neglabel`` or
        ``mcm``) and the base score's own parameters.
    """

    @property  # the base score, not the registry's flag, decides
    def needs_negatives(self) -> bool:
        """Whether the base score reads negatives (its registry entry says): NegLabel's does, MCM's does not."""
        return get_method(str(self.params.get("oodd_base", OODD_BASES[0]))).needs_negatives

    @needs_negatives.setter
    def needs_negatives(self, value: bool) -> None:
        """The registry's flag (that of the default base) is not kept: ``oodd_base`` decides."""

    def init_state(self) -> None:
        base = get_method(self.params["oodd_base"])  # its parameters, of those OODD is given
        self.base_params = {p: self.params[p] for p in base.params if self.params.get(p) is not None}
        d = int(self.id_emb.shape[1])
        self.heap: list[_Entry] = []
        self.queue = np.zeros((0, d), dtype=np.float64)
        self.queue_scores = np.zeros(0, dtype=np.float64)

    def step(self, image_emb: Embeddings) -> np.ndarray:
        """Score a batch with its base score, put it in the dictionary, subtract the k-th cosine."""
        from negvocab.scoring.scores import score  # torch, on first use: the registry is read without it

        x = np.asarray(_numpy(image_emb), dtype=np.float64)
        base = self.params["oodd_base"]
        neg = self.neg_emb if self.needs_negatives else None
        s = np.asarray(score(base, x, self.id_emb, neg, **self.base_params), dtype=np.float64)
        self._put(x, s)
        sims = x @ self.queue.T  # (B, q)
        k = min(int(self.params["oodd_k"]), sims.shape[1])
        kth = np.partition(sims, sims.shape[1] - k, axis=1)[:, sims.shape[1] - k]
        return s - kth

    def _put(self, x: np.ndarray, s: np.ndarray) -> None:
        """Each image of the batch joins the heap in turn; past ``oodd_queue`` entries the one of the
        highest base score leaves: their ``PriorityQueue`` of ``ScoreData`` (whose ``<`` is "higher
        score"), so equal scores leave in the order their heap gives."""
        size = int(self.params["oodd_queue"])
        for row, value in zip(x, s.tolist(), strict=True):
            heapq.heappush(self.heap, _Entry(value, row))
            if len(self.heap) > size:
                heapq.heappop(self.heap)
        self.queue = np.stack([e.data for e in self.heap])
        self.queue_scores = np.array([e.score for e in self.heap], dtype=np.float64)

    def summary(self) -> dict[str, float | int]:
        """The dictionary's fill and its highest base score (the bar a new image must pass under)."""
        top = float(self.queue_scores.max()) if len(self.queue_scores) else float("nan")
        return {"queue": int(self.queue.shape[0]), "queue_top_score": top}


class _Entry:
    """A dictionary entry: an image feature and its base score; ``<`` is "higher score" (their
    ``ScoreData``), so the heap's head is the most ID-looking entry."""

    __slots__ = ("data", "score")

    def __init__(self, score: float, data: np.ndarray) -> None:
        self.score, self.data = score, data

    def __lt__(self, other: _Entry) -> bool:
        return self.score > other.score


def _numpy(x: object) -> object:
    """A tensor (anywhere) as a numpy array; arrays as they are."""
    detach = getattr(x, "detach", None)
    return detach().cpu().numpy() if detach is not None else x


def register_oodd() -> None:
    """Register ``oodd`` through the public :func:`negvocab.register_stream_method` (called on import
    of :mod:`negvocab.scoring`; tests that clear the registry call it again)."""
    register_stream_method(
        "oodd",
        "negvocab.scoring.oodd:OODD",
        params=(*OODD_PARAMS, "tau", "groups", "grouping", "seed", "T"),
        needs_negatives=True,
        paper="Yang et al., OODD: Test-time Out-of-Distribution Detection with Dynamic Dictionary, CVPR 2025 "
        "(arXiv:2503.10468)",
        replace=True,
    )


register_oodd()
