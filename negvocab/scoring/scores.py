"""Zero-shot OOD scores from embeddings: MCM, GL-MCM, NegLabel, EOE and NegLabel + EOE penalty.

Every scorer is a pure function of L2-normalised embeddings (numpy arrays or torch tensors, CPU or
GPU) and returns one float64 score per image, high for in-distribution (ID). The maths runs in torch
on ``device`` (default: the device of ``image_emb`` if it is a tensor, else the CPU), in the
precision of the inputs (float16/bfloat16 are promoted to float32), streaming images in chunks so
memory is bounded by the chunk, never by N x M. Softmax ratios are evaluated with log-sum-exp, so
``tau = 0.01`` (logits up to 100) never overflows.

Use :func:`score` (``negvocab.score``) to dispatch by name. This module is the entry point and holds
EOE, NegLabel + EOE and the dispatch; the other scorers live by concept and are re-exported here:
input checks in :mod:`negvocab.scoring.inputs`, MCM/GL-MCM in :mod:`negvocab.scoring.mcm`, groups in
:mod:`negvocab.scoring.grouping`, the NegLabel kernel in :mod:`negvocab.scoring.neglabel`, top-k and
explanations in :mod:`negvocab.scoring.explain`.
Formulas follow the methods document (docs/methods.md#scores) and Rozumnyi et al., "Fi-ImageNet-1k: An OOD
Benchmark From the Inside of the ImageNet-1k Validation Set", arXiv:2609.01027.

Conventions decided here (documented again on each function):

- NegLabel groups: ``grouping="stratified"`` (default) puts the label of rank ``r`` in group
  ``r mod G``; ``"random"`` draws a seeded permutation and splits it into ``G`` contiguous groups of
  near-equal size (``numpy.array_split``). Neither drops a negative, and ``G = 1`` is the plain
  NegLabel formula. ``"neglabel"`` is NegLabel's released code exactly, for reproducing its numbers:
  the last ``M mod G`` negatives are dropped, ``torch.randperm`` seeded with ``seed`` (their 0) on the
  scoring device permutes the rest, and the permutation is cut into ``G`` contiguous groups.
- ``G > M`` (more groups than negatives) is clamped to ``G = M`` (every negative its own group) and
  logged; the effective value is what any grouping gives when groups cannot be filled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from negvocab.errors import InputError
from negvocab.scoring.explain import TopkScores, explain, neglabel_topk
from negvocab.scoring.grouping import GROUPINGS, Grouping, effective_groups, neglabel_groups
from negvocab.scoring.inputs import chunk_rows, embeddings_of, finite, join_chunks, positive, prefix_sizes, prepare
from negvocab.scoring.mcm import glmcm, mcm
from negvocab.scoring.neglabel import neglabel, neglabel_pass, neglabel_prefixes

logger = logging.getLogger(__name__)

JOINT_SEGMENT = 256

__all__ = [
    "GROUPINGS",
    "Grouping",
    "METHODS",
    "NEEDS_NEGATIVES",
    "TopkScores",
    "eoe",
    "eoe_prefixes",
    "embeddings_of",
    "explain",
    "glmcm",
    "mcm",
    "neglabel",
    "neglabel_eoe",
    "neglabel_eoe_prefixes",
    "neglabel_groups",
    "neglabel_prefixes",
    "neglabel_topk",
    "score",
]


# ----------------------------------------------------------------------------------------------
# EOE, NegLabel + EOE
# ----------------------------------------------------------------------------------------------
def eoe(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Any = None,
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
    v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, T: float, chunk_size: int | None, sizes: Sequence[int] | None = None
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
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Sequence[int],
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Any = None,
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
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Any = None,
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
    return _neglabel_eoe_sizes(v, t, n, [m], tau=tau, temp=temp, beta=beta, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size)[m]


def _neglabel_eoe_sizes(
    v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, sizes: Sequence[int], *, tau: float, temp: float, beta: float, **kw: Any
) -> dict[int, np.ndarray]:
    """NegLabel+EOE at every prefix size: the penalty comes off NegLabel's pass when its
    temperature ``temp`` is ``tau``, else from a pass of its own."""
    base, penalty = neglabel_pass(v, t, n, sizes, tau=tau, **kw)
    g = effective_groups(kw["groups"], max(sizes))
    if temp != tau or (kw["grouping"] == "neglabel" and max(sizes) % g):  # the penalty sees every negative, dropped or not
        penalty = {m: p_neg for m, (_, p_neg) in _joint_max_probs(v, t, n, temp, kw["chunk_size"], sizes).items()}
    return {m: base[m] - beta * penalty[m] for m in sorted(set(sizes))}


def neglabel_eoe_prefixes(
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Sequence[int],
    *,
    tau: float = 0.01,
    groups: int = 100,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Any = None,
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
    return _neglabel_eoe_sizes(v, t, n, wanted, tau=tau, temp=temp, beta=beta, groups=groups, grouping="stratified", seed=0, chunk_size=chunk_size)


# ----------------------------------------------------------------------------------------------
# dispatch
# ----------------------------------------------------------------------------------------------
METHODS: dict[str, Callable[..., np.ndarray]] = {
    "mcm": mcm,
    "glmcm": glmcm,
    "neglabel": neglabel,
    "eoe": eoe,
    "neglabel_eoe": neglabel_eoe,
}
_ALIASES = {"gl-mcm": "glmcm", "gl_mcm": "glmcm", "neglabel+eoe": "neglabel_eoe", "neglabel-eoe": "neglabel_eoe"}
#: the methods that take negative (or outlier) label embeddings
NEEDS_NEGATIVES: frozenset[str] = frozenset({"neglabel", "eoe", "neglabel_eoe"})


def canonical_method(method: str) -> str:
    """The registered name of ``method`` (case-insensitive, aliases accepted) or :class:`InputError`."""
    key = str(method).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return key


def score(
    method: str,
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any = None,
    **params: Any,
) -> np.ndarray | TopkScores:
    """Score images with a zero-shot OOD method by name: one float64 score per image, high = ID.

    Parameters
    ----------
    method : {"mcm", "glmcm", "neglabel", "eoe", "neglabel_eoe"}
        Aliases: "gl-mcm", "neglabel+eoe".
    image_emb : array or tensor, shape (n, d), or an ``ImageEmbeddings``
    id_emb : array or tensor, shape (K, d)
    neg_emb : array or tensor, shape (M, d), optional
        Negative (or outlier) label embeddings; required by neglabel, eoe, neglabel_eoe.
    **params
        Passed to the scorer: ``tau``, ``groups``, ``grouping``, ``seed`` (NegLabel); ``beta``,
        ``T`` (EOE); ``T`` (MCM); ``local``, ``lam``, ``T`` (GL-MCM); ``beta``, ``penalty_T``
        (NegLabel + EOE); ``device``, ``chunk_size``.
        ``topk=k`` (NegLabel only) sums each image's k nearest negatives; with ``return_bounds=True``
        it returns the :class:`TopkScores` (estimate, certified lower/upper bounds) instead.

    Returns
    -------
    ndarray of float64, shape (n,), or TopkScores

    Examples
    --------
    >>> import numpy as np, negvocab
    >>> rng = np.random.default_rng(0)
    >>> unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
    >>> img, idt, neg = (unit(rng.normal(size=(n, 8))).astype("float32") for n in (3, 5, 20))
    >>> negvocab.score("neglabel", img, idt, neg, groups=4).shape
    (3,)
    """
    key = canonical_method(method)
    topk = params.pop("topk", None)
    return_bounds = params.pop("return_bounds", False)
    if topk is not None:
        if key != "neglabel":
            raise InputError(f"topk is only available for neglabel, not {key}")
        res = neglabel_topk(image_emb, id_emb, neg_emb, topk, **params)
        return res if return_bounds else res.scores
    if return_bounds:
        raise InputError("return_bounds needs topk=k")
    fn = METHODS[key]
    try:
        if key in NEEDS_NEGATIVES:
            return fn(image_emb, id_emb, neg_emb, **params)
        if neg_emb is not None:
            logger.info("%s ignores the negative labels", key)
        return fn(image_emb, id_emb, **params)
    except TypeError as e:
        if "unexpected keyword argument" in str(e):
            raise InputError(f"{key}: {e}".replace(f"{fn.__name__}() ", "")) from e
        raise
