r"""NegRefine's score: NegLabel plus its multi-matching term (Ansari et al., ICCV 2025; docs/methods.md#negrefine).

An image that matches an ID class *and* a negative label (a dog on a sofa) loses NegLabel's score to
the negative. NegRefine's multi-matching term asks, for the image's ``k_id`` (5) nearest ID classes
:math:`p` and its ``k_neg`` (5) nearest negatives :math:`n_j` (logits :math:`\tilde s_j = \cos(v,
n_j)/\tau`), whether the text "<p> and <n_j>" explains the image better than :math:`n_j` alone:

.. math:: S_{mm}(v) = \max_{p, j} \frac{e^{\cos(v, e(p \text{ and } n_j))/\tau}}
          {e^{\cos(v, e(p \text{ and } n_j))/\tau} + e^{\tilde s_j}}, \qquad
          S(v) = S_{NegLabel}(v) + w\, S_{mm}(v)

with :math:`w = 2` (their ``detection_score``) and :math:`1/\tau = 100`. The pair texts depend on the
image, so the kernel takes an embedder of them (the input ``pair_texts``: a function of (ID indices,
negative indices) -> unit-norm embeddings, made by the pipelines from the run's model, templates, ID
names and vocabulary; :class:`negvocab.vlm.pairs.PairTexts`). Each distinct pair of a chunk of
images is embedded once. The fraction is evaluated as ``sigmoid(s - s_j)`` in float64 (no overflow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from negvocab.core.errors import InputError
from negvocab.scoring.grouping import Grouping
from negvocab.scoring.inputs import chunk_rows, join_chunks, positive, prepare
from negvocab.scoring.neglabel import neglabel

__all__ = ["PairEmbedder", "multi_matching", "negrefine"]

#: (ID class indices, negative indices), equal lengths -> unit-norm embeddings of "<ID class> and <negative>"
PairEmbedder = Callable[[np.ndarray, np.ndarray], Any]


def multi_matching(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    pair_texts: PairEmbedder | None,
    tau: float = 0.01,
    k_id: int = 5,
    k_neg: int = 5,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    """NegRefine's multi-matching term :math:`S_{mm}` per image (float64, in [0, 1]; see the module docstring)."""
    if pair_texts is None:
        raise InputError(
            "negrefine needs pair_texts (the embedder of '<ID class> and <negative>' texts): negvocab score, "
            "sweep and the adapters give it; from Python pass pair_texts=negvocab.PairTexts(vlm, templates, "
            "id_names, neg_labels)"
        )
    tau = positive(tau, "tau")
    v, t, n = prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="negrefine")
    assert n is not None
    ki, kn = min(int(k_id), t.shape[0]), min(int(k_neg), n.shape[0])
    step = chunk_rows(v.shape[0], t.shape[0] + n.shape[0], v.element_size(), chunk_size)
    parts = []
    for a in range(0, v.shape[0], step):
        z = v[a : a + step]
        top_id = torch.topk(z @ t.T, ki, dim=1).indices  # as their topk over 100 * cos
        neg_cos, top_neg = torch.topk(z @ n.T, kn, dim=1)
        c = z.shape[0]
        pairs = torch.stack([top_id[:, :, None].expand(c, ki, kn), top_neg[:, None, :].expand(c, ki, kn)], -1)
        uniq, inverse = torch.unique(pairs.reshape(-1, 2), dim=0, return_inverse=True)
        got = np.asarray(pair_texts(uniq[:, 0].cpu().numpy(), uniq[:, 1].cpu().numpy()))
        if got.shape != (uniq.shape[0], z.shape[1]):
            raise InputError(f"pair_texts returned shape {got.shape}, expected {(uniq.shape[0], z.shape[1])}")
        emb = torch.from_numpy(got).to(z.device, torch.float64)[inverse].reshape(c, ki * kn, -1)
        s = torch.einsum("cd,cpd->cp", z.double(), emb) / tau
        s_neg = (neg_cos.double() / tau)[:, None, :].expand(c, ki, kn).reshape(c, ki * kn)
        parts.append(torch.sigmoid(s - s_neg).amax(dim=1))  # e^s / (e^s + e^s_neg)
    return join_chunks(parts)


def negrefine(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    pair_texts: PairEmbedder | None = None,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    mm_weight: float = 2.0,
    mm_k_id: int = 5,
    mm_k_neg: int = 5,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""NegRefine's score :math:`S_{NegLabel} + w S_{mm}` (float64 per image, high = ID).

    ``tau``, ``groups``, ``grouping``, ``seed``: NegLabel's (:func:`negvocab.scoring.neglabel.neglabel`;
    NegRefine's code: G = 100 and NegLabel's own grouping, ``grouping="neglabel"``); ``mm_weight`` (w, 2),
    ``mm_k_id`` (5) and ``mm_k_neg`` (5): the multi-matching term (:func:`multi_matching`)."""
    mm = multi_matching(
        image_emb,
        id_emb,
        neg_emb,
        pair_texts=pair_texts,
        tau=tau,
        k_id=mm_k_id,
        k_neg=mm_k_neg,
        device=device,
        chunk_size=chunk_size,
    )
    base = neglabel(
        image_emb, id_emb, neg_emb, tau=tau, groups=groups, grouping=grouping, seed=seed, device=device,
        chunk_size=chunk_size,
    )  # fmt: skip
    return base + float(mm_weight) * mm
