"""EOE and NegLabel + EOE: one softmax over ID labels and outlier (negative) labels.

EOE (Cao et al., ICML 2024) scores the largest ID probability minus ``beta`` times the largest outlier
probability of that softmax; NegLabel + EOE (the Fi-ImageNet-1k paper) subtracts the same penalty
from the grouped NegLabel score. Both read every vocabulary size M off one pass (a running log-sum-exp and
maximum over segments of the ranked labels), as :mod:`negvocab.scoring.prefix_scores` uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from negvocab.core.types import Device, Embeddings
from negvocab.scoring.grouping import Grouping, effective_groups
from negvocab.scoring.inputs import chunk_rows, finite, join_chunks, positive, prefix_sizes, prepare
from negvocab.scoring.neglabel import neglabel_pass

__all__ = ["JOINT_SEGMENT", "eoe", "eoe_prefixes", "neglabel_eoe", "neglabel_eoe_prefixes"]

JOINT_SEGMENT = 256


def eoe(
    image_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Envisioning Outlier Exposure (Cao et al., "Envisioning outlier exposure by large language
    models for out-of-distribution detection", ICML 2024).

    One softmax over ID labels and outlier labels, :math:`p_k = e^{\cos(v,t_k)/T} / \sum_{k'}
    e^{\cos(v,t_{k'})/T}` with k over ID ∪ outliers, and

    .. math:: S(v) = \max_{i \in ID} p_i - \beta \max_{j \in outliers} p_j

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); neg_emb : (M, d)
        L2-normalised embeddings; ``neg_emb`` are the envisioned outlier labels.
    beta : float, default 0.25
        Weight of the outlier penalty.
    T : float, default 1
        Softmax temperature on cosine similarities.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    T = positive(T, "T")
    beta = finite(beta, "beta")
    v, t, n = prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="eoe")
    assert n is not None
    p_id, p_neg = _joint_max_probs(v, t, n, T, chunk_size)[n.shape[0]]
    return p_id - beta * p_neg


def _joint_max_probs(
    v: torch.Tensor,
    t: torch.Tensor,
    n: torch.Tensor,
    T: float,
    chunk_size: int | None,
    sizes: Sequence[int] | None = None,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{M: (max_ID p, max_neg p)}`` of one softmax over ID ∪ the first M negatives of cos/T, per
    image, for every M in ``sizes`` (default: all negatives). One pass: each segment of negatives
    between two sizes adds its log-sum-exp and maximum to the running ones."""
    wanted = sorted(set(sizes or [n.shape[0]]))
    # segments of at most JOINT_SEGMENT negatives: on 2 CPU cores EOE at 71,000 labels runs 1.8x faster
    ends = sorted(set(wanted) | set(range(JOINT_SEGMENT, wanted[-1], JOINT_SEGMENT)))
    widest = max(b - a for a, b in zip([0, *ends[:-1]], ends, strict=True))
    step = chunk_rows(len(v), t.shape[0] + widest, v.element_size(), chunk_size)
    parts: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {m: ([], []) for m in wanted}
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sid = vc @ t.T / T
        lse_id, max_id = torch.logsumexp(sid, -1), sid.amax(-1)
        lse_neg, max_neg, start = None, None, 0
        for m in ends:
            sneg = vc @ n[start:m].T / T
            seg_lse, seg_max = torch.logsumexp(sneg, -1), sneg.amax(-1)
            lse_neg = seg_lse if lse_neg is None else torch.logaddexp(lse_neg, seg_lse)
            max_neg = seg_max if max_neg is None else torch.maximum(max_neg, seg_max)
            if m in parts:
                lse = torch.logaddexp(lse_id, lse_neg)
                parts[m][0].append(torch.exp(max_id - lse))
                parts[m][1].append(torch.exp(max_neg - lse))
            start = m
    return {m: (join_chunks(p_id), join_chunks(p_neg)) for m, (p_id, p_neg) in parts.items()}


def eoe_prefixes(
    image_emb: Embeddings,
    id_emb: Embeddings,
    ranked_neg_emb: Embeddings,
    sizes: Sequence[int],
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Device = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """:func:`eoe` scores with the first M ranked outlier labels for every M in ``sizes``, in one
    pass over the labels (about one :func:`eoe` run at ``max(sizes)``).

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: eoe(image_emb, id_emb, ranked_neg_emb[:M], beta=beta, T=T)}``.
    """
    T = positive(T, "T")
    beta = finite(beta, "beta")
    v, t, n = prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="eoe")
    assert n is not None
    probs = _joint_max_probs(v, t, n, T, chunk_size, prefix_sizes(sizes, n.shape[0], "eoe"))
    return {m: p_id - beta * p_neg for m, (p_id, p_neg) in probs.items()}


def neglabel_eoe(
    image_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""NegLabel with EOE's penalty term on top (as used in the Fi-ImageNet-1k paper).

    .. math:: S(v) = S_{NegLabel}(v) - \beta \max_{j \in neg} p_j, \qquad
              p_k = \frac{e^{\cos(v,t_k)/T_p}}{\sum_{k' \in ID \cup neg} e^{\cos(v,t_{k'})/T_p}}

    i.e. EOE's penalty (the largest probability of any negative label in ONE softmax over the ID
    labels and all M negatives, ungrouped) subtracted from the grouped NegLabel score.
    The penalty temperature ``penalty_T`` (:math:`T_p`) defaults to ``tau`` so that the penalty
    lives on the same logit scale as the NegLabel term (with :math:`T_p = 1` on cosines and thousands
    of labels the penalty is ~1e-4 and vanishes). It is named apart from the ``T`` of MCM and EOE
    so that one set of parameters can drive every scorer.

    Parameters are those of :func:`neglabel` plus ``beta`` (default 0.25) and ``penalty_T``.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    tau = positive(tau, "tau")
    temp = tau if penalty_T is None else positive(penalty_T, "penalty_T")
    beta = finite(beta, "beta")
    v, t, n = prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="neglabel_eoe")
    assert n is not None
    m = n.shape[0]
    return _neglabel_eoe_sizes(
        v, t, n, [m], tau=tau, temp=temp, beta=beta, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size
    )[m]


def _neglabel_eoe_sizes(
    v: torch.Tensor,
    t: torch.Tensor,
    n: torch.Tensor,
    sizes: Sequence[int],
    *,
    tau: float,
    temp: float,
    beta: float,
    **kw: Any,
) -> dict[int, np.ndarray]:
    """NegLabel+EOE at every prefix size: the penalty comes off NegLabel's pass when its
    temperature ``temp`` is ``tau``, else from a pass of its own."""
    base, penalty = neglabel_pass(v, t, n, sizes, tau=tau, **kw)
    g = effective_groups(kw["groups"], max(sizes))
    if temp != tau or (
        kw["grouping"] == "neglabel" and max(sizes) % g
    ):  # the penalty sees every negative, dropped or not
        penalty = {m: p_neg for m, (_, p_neg) in _joint_max_probs(v, t, n, temp, kw["chunk_size"], sizes).items()}
    return {m: base[m] - beta * penalty[m] for m in sorted(set(sizes))}


def neglabel_eoe_prefixes(
    image_emb: Embeddings,
    id_emb: Embeddings,
    ranked_neg_emb: Embeddings,
    sizes: Sequence[int],
    *,
    tau: float = 0.01,
    groups: int = 100,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Device = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """Stratified :func:`neglabel_eoe` scores with the first M ranked negatives for every M in
    ``sizes``, in one pass (as :func:`neglabel_prefixes`; a second one when ``penalty_T != tau``).

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: neglabel_eoe(image_emb, id_emb, ranked_neg_emb[:M], tau=tau, groups=groups, beta=beta,
        penalty_T=penalty_T)}``.
    """
    tau = positive(tau, "tau")
    temp = tau if penalty_T is None else positive(penalty_T, "penalty_T")
    beta = finite(beta, "beta")
    v, t, n = prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="neglabel_eoe")
    assert n is not None
    wanted = prefix_sizes(sizes, n.shape[0], "neglabel_eoe")
    return _neglabel_eoe_sizes(
        v,
        t,
        n,
        wanted,
        tau=tau,
        temp=temp,
        beta=beta,
        groups=groups,
        grouping="stratified",
        seed=0,
        chunk_size=chunk_size,
    )
