"""NegLabel: the streaming grouped-softmax kernel, exact for every prefix of a ranked vocabulary
in one pass (see negvocab.scoring.scores for the conventions): per image chunk one matmul over ID
and negatives and one softmax in place, then the group sums of its probabilities."""

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


def _joint_probs(
    v: torch.Tensor, t: torch.Tensor, lay: torch.Tensor, tau: float, masked: torch.Tensor | None
) -> torch.Tensor:
    """``softmax(cos / tau)`` of each image over the K ID labels and the layout's negatives, [n, K + rows*G].

    The arithmetic of one matmul + softmax: both products are written into column blocks of one
    buffer (no copy of the labels; the images are scaled by 1/tau first), the ``masked`` columns
    (the padding of the layout's last row) set to -inf, and the softmax runs in place (on the CPU).
    """
    n, k = v.shape[0], t.shape[0]
    out = torch.empty((n, k + lay.shape[0]), dtype=v.dtype, device=v.device)
    vs = v * (1.0 / tau)
    torch.mm(vs, t.T, out=out[:, :k])
    torch.mm(vs, lay.T, out=out[:, k:])
    if masked is not None:
        out[:, masked] = float("-inf")
    if out.device.type != "cpu":  # in place only where verified: the CPU kernel reads a row before writing it
        return torch.softmax(out, 1)
    return torch.softmax(out, 1, out=out)


def _small_sizes(
    v: torch.Tensor, t: torch.Tensor, lay: torch.Tensor, small: list[int], tau: float
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Scores and penalties of the sizes M below G, from float64 logits: rank r < G is alone in
    group r, so S(M) = mean_{r<M} sigmoid(a - s_r), a the ID log-mass."""
    a = torch.logsumexp((v @ t.T).double() / tau, -1)
    s0 = (v @ lay[: max(small)].T).double() / tau
    per = torch.cumsum(torch.sigmoid(a[:, None] - s0), 1)
    top, lse = torch.cummax(s0, 1).values, torch.logcumsumexp(s0, 1)
    return [per[:, m - 1] / m for m in small], [
        torch.exp(top[:, m - 1] - torch.logaddexp(a, lse[:, m - 1])) for m in small
    ]


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
    penalties: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """NegLabel for one image chunk at each size, and EOE's penalty at each size.

    One softmax of cos/tau over ID ∪ the layout's negatives (:func:`_joint_probs`) gives every mass
    the scores need as a share of one normaliser: the ID share P and each group's share P_g,
    summed per group (accumulated across segments in float64), so S_g = P / (P + P_g) and the
    normaliser cancels, at every prefix size. Returns (scores [n, n_big], scores of small sizes
    [n, n_small], a flag [n] for images whose ID share or smallest group share fell below 1e-30
    (underflow possible: recomputed by :func:`_neglabel_chunk_exact`), and the penalties [n, n_big],
    [n, n_small]: the top negative's probability in one softmax of cos/tau over ID ∪ the first M
    negatives; with ``penalties=False`` none of them, [n, 0]).
    """
    n, k = v.shape[0], t.shape[0]
    cols = rows_needed * g
    masked = k + cols - g + pad if pad is not None and cols == lay.shape[0] else None
    small_out, small_pen = _small_sizes(v, t, lay, small, tau) if small else ([], [])
    p = _joint_probs(v, t, lay[:cols], tau, masked)
    pid = p[:, :k].sum(1).double()[:, None]
    e = p[:, k:].view(n, rows_needed, g)
    acc = torch.zeros((n, g), dtype=torch.float64, device=v.device)
    flag = pid[:, 0] < 1e-30
    big, big_pen = [], []
    top: torch.Tensor | None = None
    for r0, r1, partial in segments:
        if penalties:  # before the segment's masses join acc: its largest probability
            m = _segment_max(e, r0, r1, partial)
            top = m if top is None else torch.maximum(top, m)
        if r1 > r0:
            acc += e[:, r0:r1].sum(1).double()
        for r, mask in partial:
            acc += (e[:, r] * mask).double()
        flag |= (acc < 1e-30).any(1)  # the total below 1e-30 too: such images are recomputed
        big.append((pid / (pid + acc)).mean(1))
        if top is not None:
            big_pen.append(top.double() / (pid[:, 0] + acc.sum(1)))
    stack = lambda xs: torch.stack(xs, 1) if xs else pid.new_zeros((n, 0))  # noqa: E731
    return stack(big), stack(small_out), flag, stack(big_pen), stack(small_pen if penalties else [])


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
    return neglabel_pass(v, t, neg, sizes, penalties=False, **kw)[0]


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
    penalties: bool = True,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """NegLabel scores and EOE's penalty (temperature ``tau``) for every prefix size in ``sizes``
    of the ranked negatives, in one pass (see :func:`_neglabel_chunk`); ``penalties=False``: the
    scores alone (the penalties' dict empty, their maxima not taken)."""
    lay, g, segments, small, pad = _neglabel_setup(neg, sizes, groups, grouping, seed)
    big = sorted(s for s in set(sizes) if s >= g)
    rows_needed = min(-(-max(big) // g), lay.shape[0] // g) if big else 1  # neglabel: dropped labels have no row
    step = chunk_rows(len(v), t.shape[0] + rows_needed * g, v.element_size(), chunk_size)
    outs: list[list[torch.Tensor]] = [[], [], [], []]  # scores big, small; penalties big, small
    n_exact = 0
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sb, ss, flag, pb, ps = _neglabel_chunk(vc, t, lay, g, segments, small, tau, rows_needed, pad, penalties)
        if bool(flag.any()) and segments:
            exact, exact_pen = _neglabel_chunk_exact(vc[flag], t, lay, g, segments, tau, rows_needed, pad)
            sb[flag] = exact
            if penalties:
                pb[flag] = exact_pen
            n_exact += int(flag.sum())
        for out, x in zip(outs, (sb, ss, pb, ps), strict=True):
            out.append(x.to("cpu", torch.float64))
    if n_exact:
        logger.info("neglabel: %d images needed the float64 log-sum-exp path (extreme logit range)", n_exact)
    res = [torch.cat(out).numpy() for out in outs]
    scores = {m: res[0][:, k].copy() for k, m in enumerate(big)} | {m: res[1][:, k].copy() for k, m in enumerate(small)}
    if not penalties:
        return scores, {}
    pens = {m: res[2][:, k].copy() for k, m in enumerate(big)} | {m: res[3][:, k].copy() for k, m in enumerate(small)}
    return scores, pens


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

    evaluated from one softmax over ID ∪ all negatives, whose normaliser cancels: with ``P`` the ID
    labels' share and ``P_g`` group g's, ``S_g = P / (P + P_g)`` (a float64 log-sum-exp per group
    where a share falls below 1e-30). ``G = 1`` is the ungrouped
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
