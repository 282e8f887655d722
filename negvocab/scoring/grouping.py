"""NegLabel groups: which negatives share a group (stratified, random, or NegLabel's released
grouping) and the padded rank-major layout the streaming kernels read (see negvocab.scoring.scores)."""

from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import torch

from negvocab.core.errors import InputError
from negvocab.core.types import Device
from negvocab.scoring.methods import GROUPINGS

__all__ = ["Grouping", "PERMUTED", "effective_groups", "layout", "layout_embeddings", "neglabel_groups"]

logger = logging.getLogger("negvocab.scoring.scores")  # records keep the name of the entry point

Grouping = Literal["stratified", "random", "neglabel"]
#: groupings that draw a permutation (each vocabulary size M is scored from a layout of its own)
PERMUTED = ("random", "neglabel")


def effective_groups(groups: int, m: int) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise InputError(f"groups must be an integer >= 1, got {groups!r}")
    if groups > m:
        logger.info("groups=%d > %d negatives: clamped to %d (one negative per group)", groups, m, m)
        return m
    return int(groups)


def neglabel_groups(
    m: int, groups: int = 100, grouping: Grouping = "stratified", seed: int = 0, *, device: Device = "cpu"
) -> list[np.ndarray]:
    """The NegLabel groups of ``m`` ranked negatives: a list of index arrays (ranks into the vocabulary).

    ``"stratified"``: rank ``r`` goes to group ``r mod G`` (each group spans near and far labels, and
    the first M ranks of each group are a prefix of that group, which makes sweeps cheap).
    ``"random"``: ``numpy.random.default_rng(seed).permutation(m)`` split into ``G`` contiguous groups of
    near-equal size (NegLabel's scheme, without dropping the last ``m mod G`` negatives).
    ``"neglabel"``: NegLabel's released code (``ScalableClassifier.grouping``): the last ``m mod G``
    negatives are dropped, the remaining ``m'`` are permuted by ``torch.randperm(m')`` after
    ``torch.manual_seed(seed)`` on ``device`` and cut into ``G`` contiguous groups of ``m' / G``.
    torch's CPU and CUDA generators give different permutations: NegLabel drew theirs on the GPU
    it scored on, so its published numbers are matched by scoring on a CUDA device (docs/howto/scorers.md,
    "Reproducing published numbers"). ``G`` is clamped to ``m``. Every kept rank is in exactly one
    group.
    """
    if m < 1:
        raise InputError(f"need at least one negative label, got {m}")
    g = effective_groups(groups, m)
    if grouping == "stratified":
        return [np.arange(j, m, g) for j in range(g)]
    if grouping == "random":
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputError(f"seed must be an integer >= 0 (random grouping), got {seed!r}")
        perm = np.random.default_rng(seed).permutation(m)
        return list(np.array_split(perm, g))
    if grouping == "neglabel":
        kept = m - m % g
        dev = device if isinstance(device, torch.device) else torch.device(device or "cpu")
        gen = torch.Generator(device=dev).manual_seed(int(seed))  # = torch.manual_seed(seed) on that device
        idx = torch.randperm(kept, generator=gen, device=dev).cpu().numpy()
        return list(idx.reshape(g, kept // g))
    raise InputError(f"unknown grouping {grouping!r}; choose one of {', '.join(GROUPINGS)}")


def layout(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rank-major padded layout: ``index[l, g]`` = rank of the l-th member of group g, or -1."""
    g = len(groups)
    length = max(len(x) for x in groups)
    index = np.full((length, g), -1, dtype=np.int64)
    for j, members in enumerate(groups):
        index[: len(members), j] = members
    return index, index >= 0


def layout_embeddings(neg: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """Negative embeddings in layout order ``[L*G, d]``; padding rows are zero (masked later)."""
    flat_np = index.reshape(-1)
    m = int((flat_np >= 0).sum())
    if np.array_equal(flat_np[:m], np.arange(m)) and (flat_np[m:] < 0).all():
        # ranks already in layout order (stratified): the first m negatives, zero rows appended;
        # no copy when none are (the returned tensor may be ``neg`` itself: read it only)
        lay = neg[:m] if len(flat_np) == m else torch.cat([neg[:m], neg.new_zeros((len(flat_np) - m, neg.shape[1]))])
        return lay.contiguous()
    flat = torch.as_tensor(flat_np, device=neg.device)
    out = neg[flat.clamp(min=0)]
    out[flat < 0] = 0
    return out
