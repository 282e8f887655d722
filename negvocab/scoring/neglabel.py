"""NegLabel: the streaming grouped-softmax kernel, exact for every prefix of a ranked vocabulary
in one pass (see negvocab.scoring.scores for the conventions)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from negvocab.core.types import Device, Embeddings
from negvocab.scoring.grouping import PERMUTED, Grouping, effective_groups, layout, layout_embeddings, neglabel_groups
from negvocab.scoring.inputs import chunk_rows, positive, prefix_sizes, prepare

__all__ = ["Segment", "neglabel", "neglabel_pass", "neglabel_prefixes"]

logger = logging.getLogger("negvocab.scoring.scores")  # records keep the name of the entry point

Segment = tuple[int, int, list[tuple[int, torch.Tensor]]]


def _neglabel_setup(
    neg: torch.Tensor, sizes: Sequence[int], groups: int, grouping: Grouping, seed: int
) -> tuple[torch.Tensor, int, list[Segment], list[int], torch.Tensor | None]:
    """Layout and segments for scoring every vocabulary size M in ``sizes`` (prefixes of the ranking).

    Returns (layout embeddings [L*G, d], G, segments, small sizes, padded columns of the last row).
    Segment k adds the ranks ``[sizes[k-1], sizes[k])``: whole layout rows ``[r0, r1)`` plus partial
    rows ``(row, 0/1 mask [G])``; the running sum over segments is each group's mass at that size.
    Sizes below G (clamped to one negative per group) are returned separately.
    """
    m_max = max(sizes)
    g = effective_groups(groups, m_max)
    if grouping in PERMUTED and len(sizes) > 1:
        raise ValueError("a permuted grouping scores one size per layout")  # internal: sweep loops instead
    index, valid = layout(neglabel_groups(m_max, g, grouping, seed, device=neg.device))
    lay = layout_embeddings(neg, index)
    big = sorted(s for s in set(sizes) if s >= g)
    small = sorted(s for s in set(sizes) if s < g)
    segments: list[Segment] = []
    prev = 0
    for size in big:
        # stratified: rank r sits at row r // G; permuted groupings have a single size == m_max
        lo, hi = (prev // g, -(-size // g)) if grouping == "stratified" else (0, len(index))
        inside = valid[lo:hi] & (index[lo:hi] >= prev) & (index[lo:hi] < size)  # (rows, G), all rows at once
        whole = inside.all(1)
        if grouping in PERMUTED:
            whole |= (inside == valid[lo:hi]).all(1)  # padding (invalid) entries are zero after the exponential
        full = (lo + np.flatnonzero(whole)).tolist()
        partial = [
            (lo + int(r), torch.as_tensor(inside[r], dtype=neg.dtype, device=neg.device))
            for r in np.flatnonzero(~whole & inside.any(1))
        ]
        r0, r1 = (full[0], full[-1] + 1) if full else (0, 0)
        assert r1 - r0 == len(full)
        segments.append((r0, r1, partial))
        prev = size
    pad = np.flatnonzero(~valid[-1])
    return lay, g, segments, small, (torch.as_tensor(pad, device=neg.device) if pad.size else None)


def _shifted_lse(cos: torch.Tensor, tau: float) -> torch.Tensor:
    """float64 ``logsumexp(cos / tau)`` along the last axis, exponentials in the input precision.

    ``log(sum exp((cos - max) / tau)) + max / tau``: the terms are in (0, 1], the one at the max is
    1, so the sum is exact to float32 rounding and terms that underflow are below 1e-38 of it.
    (Consumes ``cos``.)
    """
    cmax = cos.amax(-1, keepdim=True)
    mass = cos.sub_(cmax).mul_(1.0 / tau).exp_().sum(-1)
    return torch.log(mass.double()) + cmax[..., 0].double() / tau


def _neglabel_chunk(
    v: torch.Tensor,
    t: torch.Tensor,
    lay: torch.Tensor,
    g: int,
    segments: list[Segment],
    small: list[int],
    tau: float,
    rows_needed: int,
    pad: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """NegLabel for one image chunk at each size, and EOE's penalty at each size.

    Each image's negative logits are shifted by that image's largest one, exponentiated in place in
    the input precision (no term overflows; with cosines and tau = 0.01 none that matters underflows)
    and summed per group; group masses accumulate across segments in float64. The ID log-mass is an
    exact float64 log-sum-exp. Returns (scores [n, n_big], scores of small sizes [n, n_small], a
    flag [n] for images whose smallest group mass fell below 1e-30 of the largest term (to be
    recomputed by :func:`_neglabel_chunk_exact`), and the penalties [n, n_big], [n, n_small]: the
    top negative's probability in one softmax of cos/tau over ID ∪ the first M negatives.
    """
    n = v.shape[0]
    a = _shifted_lse(v @ t.T, tau)  # [n], float64
    cos = (v @ lay[: rows_needed * g].T).view(n, rows_needed, g)
    if pad is not None and rows_needed * g == lay.shape[0]:
        cos[:, -1, pad] = float("-inf")
    small_out, small_pen = [], []
    if small:
        # rank r < G is alone in group r: S(M) = mean_{r<M} sigmoid(a - s_r)
        s0 = cos[:, 0, : max(small)].double() / tau
        per = torch.cumsum(torch.sigmoid(a[:, None] - s0), 1)
        small_out = [per[:, m - 1] / m for m in small]
        top_small, lse = torch.cummax(s0, 1).values, torch.logcumsumexp(s0, 1)
        small_pen = [torch.exp(top_small[:, m - 1] - torch.logaddexp(a, lse[:, m - 1])) for m in small]
    cmax = cos.reshape(n, -1).amax(1)
    if len(segments) == 1 and segments[0][:2] == (0, rows_needed) and not segments[0][2]:
        seg_max = [cmax]  # one segment of every row: its maximum is the one just taken
    else:
        seg_max = [_segment_max(cos, r0, r1, partial) for r0, r1, partial in segments]  # before exp_ overwrites cos
    e = cos.view(n, -1).sub_(cmax[:, None]).mul_(1.0 / tau).exp_().view(n, rows_needed, g)
    shift = cmax.double()[:, None] / tau
    acc = torch.zeros((n, g), dtype=torch.float64, device=v.device)
    flag = torch.zeros(n, dtype=torch.bool, device=v.device)
    big, big_pen = [], []
    top: torch.Tensor | None = None
    for (r0, r1, partial), m in zip(segments, seg_max, strict=True):
        if r1 > r0:
            acc += e[:, r0:r1].sum(1).double()
        for r, mask in partial:
            acc += (e[:, r] * mask).double()
        flag |= (acc < 1e-30).any(1)  # the total below 1e-30 too: such images are recomputed
        big.append(torch.sigmoid(a[:, None] - (torch.log(acc) + shift)).mean(1))
        top = m if top is None else torch.maximum(top, m)
        big_pen.append(torch.exp(top.double() / tau - torch.logaddexp(a, torch.log(acc.sum(1)) + shift[:, 0])))
    stack = lambda xs: torch.stack(xs, 1) if xs else a.new_zeros((n, 0))  # noqa: E731
    return stack(big), stack(small_out), flag, stack(big_pen), stack(small_pen)


def _segment_max(x: torch.Tensor, r0: int, r1: int, partial: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    """Per image, the largest entry of ``x`` [n, rows, G] in rows r0..r1 and the masked partial rows."""
    parts = [x[:, r0:r1].amax((1, 2))] if r1 > r0 else []
    parts += [x[:, r].masked_fill(mask == 0, float("-inf")).amax(1) for r, mask in partial]
    return torch.stack(parts).amax(0)


def _neglabel_chunk_exact(
    v: torch.Tensor,
    t: torch.Tensor,
    lay: torch.Tensor,
    g: int,
    segments: list[Segment],
    tau: float,
    rows_needed: int,
    pad: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same scores and penalties of big sizes with a float64 log-sum-exp per group (slower;
    for extreme logit ranges)."""
    n = v.shape[0]
    a = torch.logsumexp((v @ t.T).double() / tau, -1)
    s = ((v @ lay[: rows_needed * g].T).double() / tau).view(n, rows_needed, g)
    if pad is not None and rows_needed * g == lay.shape[0]:
        s[:, -1, pad] = float("-inf")
    b = torch.full((n, g), float("-inf"), dtype=torch.float64, device=v.device)
    big, big_pen = [], []
    top = None
    for r0, r1, partial in segments:
        parts = [b, torch.logsumexp(s[:, r0:r1], 1)] if r1 > r0 else [b]
        for r, mask in partial:
            parts.append(s[:, r] + torch.log(mask.double()))
        b = torch.logsumexp(torch.stack(parts), 0)
        big.append(torch.sigmoid(a[:, None] - b).mean(1))
        m = _segment_max(s, r0, r1, partial)
        top = m if top is None else torch.maximum(top, m)
        big_pen.append(torch.exp(top - torch.logaddexp(a, torch.logsumexp(b, 1))))
    return torch.stack(big, 1), torch.stack(big_pen, 1)


def _neglabel_sizes(
    v: torch.Tensor, t: torch.Tensor, neg: torch.Tensor, sizes: Sequence[int], **kw: Any
) -> dict[int, np.ndarray]:
    """NegLabel scores for every prefix size in ``sizes`` of the ranked negatives (one pass)."""
    return neglabel_pass(v, t, neg, sizes, **kw)[0]


def neglabel_pass(
    v: torch.Tensor,
    t: torch.Tensor,
    neg: torch.Tensor,
    sizes: Sequence[int],
    *,
    tau: float,
    groups: int,
    grouping: Grouping,
    seed: int,
    chunk_size: int | None,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """NegLabel scores and EOE's penalty (temperature ``tau``) for every prefix size in ``sizes``
    of the ranked negatives, in one pass (see :func:`_neglabel_chunk`)."""
    lay, g, segments, small, pad = _neglabel_setup(neg, sizes, groups, grouping, seed)
    big = sorted(s for s in set(sizes) if s >= g)
    rows_needed = min(-(-max(big) // g), lay.shape[0] // g) if big else 1  # neglabel: dropped labels have no row
    step = chunk_rows(len(v), t.shape[0] + rows_needed * g, v.element_size(), chunk_size)
    outs: list[list[torch.Tensor]] = [[], [], [], []]  # scores big, small; penalties big, small
    n_exact = 0
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sb, ss, flag, pb, ps = _neglabel_chunk(vc, t, lay, g, segments, small, tau, rows_needed, pad)
        if bool(flag.any()) and segments:
            sb[flag], pb[flag] = _neglabel_chunk_exact(vc[flag], t, lay, g, segments, tau, rows_needed, pad)
            n_exact += int(flag.sum())
        for out, x in zip(outs, (sb, ss, pb, ps), strict=True):
            out.append(x.to("cpu", torch.float64))
    if n_exact:
        logger.info("neglabel: %d images needed the float64 log-sum-exp path (extreme logit range)", n_exact)
    res = [torch.cat(out).numpy() for out in outs]
    scores = {m: res[0][:, k].copy() for k, m in enumerate(big)} | {m: res[1][:, k].copy() for k, m in enumerate(small)}
    penalties = {m: res[2][:, k].copy() for k, m in enumerate(big)} | {
        m: res[3][:, k].copy() for k, m in enumerate(small)
    }
    return scores, penalties


def neglabel(
    image_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""NegLabel score (Jiang et al., "Negative label guided OOD detection with pretrained
    vision-language models", ICLR 2024), grouped, exactly as docs/methods.md#scores.

    With logits :math:`s_i = \cos(v, t_i)/\tau` over ID labels and :math:`\tilde s_j` over the
    negatives of group g,

    .. math:: S_g(v) = \frac{\sum_i e^{s_i}}{\sum_i e^{s_i} + \sum_{j \in g} e^{\tilde s_j}},
              \qquad S(v) = \frac{1}{G} \sum_g S_g(v),

    evaluated as ``mean_g sigmoid(logsumexp(s) - logsumexp(s~_g))``. ``G = 1`` is the ungrouped
    formula. Groups: see :func:`neglabel_groups` (no negative is dropped; ``G > M`` is clamped to M).

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); neg_emb : (M, d)
        L2-normalised embeddings; ``neg_emb`` in vocabulary (ranking) order.
    tau : float, default 0.01
        Temperature on cosine similarities.
    groups : int, default 100
        Number of groups G.
    grouping : {"stratified", "random", "neglabel"}, default "stratified"
        ``"neglabel"``: NegLabel's released code exactly (drops the last ``M mod G`` negatives; see
        :func:`neglabel_groups`).
    seed : int, default 0
        Seed of the random and neglabel groupings' permutation.

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores in (0, 1); higher means more ID.
    """
    tau = positive(tau, "tau")
    v, t, n = prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="neglabel")
    assert n is not None
    m = n.shape[0]
    return _neglabel_sizes(v, t, n, [m], tau=tau, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size)[m]


def neglabel_prefixes(
    image_emb: Embeddings,
    id_emb: Embeddings,
    ranked_neg_emb: Embeddings,
    sizes: Sequence[int],
    *,
    tau: float = 0.01,
    groups: int = 100,
    device: Device = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """Stratified :func:`neglabel` scores for every prefix size M in ``sizes``, in one pass.

    With stratified grouping (rank r -> group r mod G) the first M ranked negatives are, in every
    group, a prefix of that group, so each group's log-mass is accumulated segment by segment along
    the ranking and read off at each M. Costs about one :func:`neglabel` run at ``max(sizes)``.

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); ranked_neg_emb : (M_max, d)
        L2-normalised embeddings; negatives in ranking (farthest-first) order.
    sizes : sequence of int
        Prefix sizes, each in [1, M_max].

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: neglabel(image_emb, id_emb, ranked_neg_emb[:M], tau=tau, groups=groups)}``.
    """
    tau = positive(tau, "tau")
    v, t, n = prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="neglabel")
    assert n is not None
    wanted = prefix_sizes(sizes, n.shape[0], "neglabel")
    return _neglabel_sizes(
        v, t, n, wanted, tau=tau, groups=groups, grouping="stratified", seed=0, chunk_size=chunk_size
    )
