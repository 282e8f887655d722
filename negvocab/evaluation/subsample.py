"""OOD-subsampling analysis: how much FPR@95 moves when only n OOD images are drawn.

The Fi-ImageNet-1k paper's Appendix C: R draws without replacement of n of the N OOD images; at each
n the mean and SD of FPR over the draws, their difference to the full-set value, the
finite-population-corrected analytical SD ``sqrt(p (1 - p) / n * (N - n) / (N - 1))`` (the ID
threshold fixed, p the full-set FPR), and, for several detectors, the Spearman rank stability of
the detectors' order across draws (Rozumnyi et al., arXiv:2609.01027, Appendix C).

Each OOD set is analysed on its own (``ood_sets=``: the set of every OOD image); pooling the sets
is asked for with ``pooled=True`` and labelled ``ood_set="pooled"``.

Bounded memory, O(draws x n): draw r is one ordered sample without replacement of n_max = max(sizes)
of the N images (``rng.choice(N, n_max, replace=False)``, the r-th call of one generator seeded with
``seed``), and its draw of size n is the first n (a uniform sample without replacement for every n).
Draws are processed in chunks of at most ``_CHUNK`` indices; no draws x N array is ever made. Under
"paper" (and "hendrycks") the ID threshold does not depend on the OOD images, so FPR of a draw is a
prefix mean of fixed per-image indicators (one cumulative sum); under "openood" the threshold is the
draw's own ``tpr`` quantile of its OOD scores, one partition per draw and size.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import ArrayLike
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import MAX_DRAWS

#: one detector's scores, or {detector: scores} for several compared on the same images
Scores = ArrayLike | Mapping[str, ArrayLike]

__all__ = ["POOLED", "auto_sizes", "check_draws", "draw_chunks", "subsample"]

POOLED = "pooled"  # the ood_set of an analysis over every OOD set together
_CHUNK = 1 << 16  # indices held at once (512 KiB of int64), whatever draws and N are
_AUTO = (10, 25, 50, 100, 200, 400, 655, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


def _score_sets(s_id: Scores, s_ood: Scores) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{detector: (id scores, ood scores)} from arrays or matching mappings of arrays."""
    if isinstance(s_id, Mapping) != isinstance(s_ood, Mapping):
        raise InputError("s_id and s_ood must both be arrays or both mappings detector -> scores")
    if not isinstance(s_id, Mapping) or not isinstance(s_ood, Mapping):
        s_id, s_ood = {"scores": s_id}, {"scores": s_ood}  # type: ignore[dict-item]
    if set(s_id) != set(s_ood):
        raise InputError(f"s_id and s_ood name different detectors: {sorted(set(s_id) ^ set(s_ood))}")
    if not s_id:
        raise InputError("no score sets given")
    out = {}
    n_ood = None
    for name in s_id:
        ids, oods = M._scores(s_id[name], f"s_id[{name!r}]"), M._scores(s_ood[name], f"s_ood[{name!r}]")
        if ids.size == 0 or oods.size == 0:
            raise InputError(f"{name}: empty ID or OOD scores")
        if n_ood is not None and oods.size != n_ood:
            raise InputError(f"{name}: {oods.size} OOD scores, the others have {n_ood}; subsample the same OOD images")
        n_ood = oods.size
        out[str(name)] = (ids, oods)
    return out


def auto_sizes(n: int) -> list[int]:
    """The default sizes for a set of ``n`` images: the usual ladder below n, and n itself."""
    return [s for s in _AUTO if s < n] + [n]


def _sizes(sizes: Sequence[int] | int | None, n: int, where: str = "") -> list[int]:
    if sizes is None:
        return auto_sizes(n)
    items = [sizes] if isinstance(sizes, (int, np.integer)) else list(sizes)
    out = []
    for s in items:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 1 <= s <= n:
            raise InputError(f"subsample sizes must be integers in [1, {n}] (the OOD images{where}), got {s!r}")
        out.append(int(s))
    if not out:
        raise InputError("no subsample sizes given")
    return sorted(set(out))


def check_draws(draws: Any, seed: Any) -> int:
    """``draws`` as an int, refused (one line) before anything is allocated; ``seed`` likewise."""
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or not 1 <= draws <= MAX_DRAWS:
        raise InputError(f"draws must be an integer in [1, {MAX_DRAWS:,}], got {draws!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    return int(draws)


def draw_chunks(seed: int, draws: int, n_max: int, big_n: int) -> Iterator[np.ndarray]:
    """The draws as [chunk, n_max] index arrays, the same for every detector: draw r is the r-th
    ``rng.choice(big_n, n_max, replace=False)`` of ``rng = np.random.default_rng(seed)`` (an ordered
    uniform sample without replacement, O(n_max) per draw, not O(big_n)). At most :data:`_CHUNK`
    indices (or one draw) are held at once, in one buffer refilled for each chunk (copy a chunk to keep
    it): a fresh array per chunk cost page faults that doubled the time at n_max = 100,000."""
    rng = np.random.default_rng(seed)
    per = max(1, _CHUNK // max(1, n_max))
    if per == 1:  # a draw a chunk: the draw itself, not a copy of it
        for _ in range(draws):
            yield rng.choice(big_n, n_max, replace=False)[None, :]
        return
    buf = np.empty((min(per, draws), n_max), dtype=np.intp)
    for start in range(0, draws, per):
        chunk = buf[: min(per, draws - start)]
        for row in chunk:
            row[:] = rng.choice(big_n, n_max, replace=False)
        yield chunk


def _fpr_chunk(
    ids: np.ndarray,
    oods: np.ndarray,
    terms: np.ndarray | None,
    idx: np.ndarray,
    sizes: list[int],
    convention: str,
    tpr: float,
) -> np.ndarray:
    """FPR of each draw in ``idx`` [c, n_max] at every size: [c, len(sizes)]."""
    if convention == "openood":
        srt = np.sort(ids)
        out = np.empty((idx.shape[0], len(sizes)))
        for j, n in enumerate(sizes):
            k = max(1, math.ceil(round(tpr * n, 9)))  # the first k with k / n >= tpr
            u = np.partition(oods[idx[:, :n]], k - 1, axis=1)[:, k - 1]
            out[:, j] = np.searchsorted(srt, u, side="right") / ids.size
        return out
    if terms is None:  # a hendrycks corner case (OOD above every ID score): per draw
        return np.array([[M.fpr_at_tpr(ids, oods[p[:n]], tpr, convention="hendrycks") for n in sizes] for p in idx])
    starts = np.asarray([0, *sizes[:-1]])  # the segments between consecutive sizes
    counts = np.cumsum(np.add.reduceat(terms[idx], starts, axis=1, dtype=np.int64), axis=1)
    return counts / np.asarray(sizes)


def _terms(ids: np.ndarray, oods: np.ndarray, convention: str, tpr: float) -> np.ndarray | None:
    if convention == "openood":
        return None
    t = M._hendrycks_terms(ids, oods, tpr) if convention == "hendrycks" else oods >= M._paper_threshold(ids, tpr)
    return None if t is None else t.astype(np.int8)


def _spearman_rows(fprs: np.ndarray, full: np.ndarray) -> np.ndarray:
    """Spearman rho between each draw's detector FPRs [draws, D] and the full-set ones [D] (NaN when
    a ranking is all ties)."""
    from scipy.stats import rankdata

    rd = rankdata(fprs, axis=1)
    rf = rankdata(full)
    rd = rd - rd.mean(1, keepdims=True)
    rf = rf - rf.mean()
    den = np.sqrt((rd**2).sum(1) * (rf**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rd @ rf) / np.where(den > 0, den, 1), np.nan)


def _stability(fprs: np.ndarray, full: np.ndarray) -> dict[str, Any]:
    """Rank stability of the detectors at one size: fprs [D, R]."""
    rho = _spearman_rows(fprs.T, full)
    ok = np.isfinite(rho)
    best = np.argmin(fprs, axis=0)
    return {
        "spearman_mean": float(rho[ok].mean()) if ok.any() else math.nan,
        "spearman_q05": float(np.quantile(rho[ok], 0.05)) if ok.any() else math.nan,
        "same_best": float(np.mean(full[best] == full.min())),
        "dropped_tied": int((~ok).sum()),  # draws whose detectors all tie (or a tied full order): no rho
    }


def _analyse(
    sets: dict[str, tuple[np.ndarray, np.ndarray]],
    sizes: list[int],
    draws: int,
    convention: str,
    seed: int,
    tpr: float,
    ood_set: str,
) -> list[dict[str, Any]]:
    """The rows of one OOD set (or the pooled sets)."""
    big_n = next(iter(sets.values()))[1].size
    names = list(sets)
    full = np.array([M.fpr_at_tpr(i, o, tpr, convention=convention) for i, o in sets.values()])  # type: ignore[arg-type]
    terms = [_terms(i, o, convention, tpr) for i, o in sets.values()]
    fprs = np.empty((len(names), draws, len(sizes)))
    at = 0
    for idx in draw_chunks(seed, draws, sizes[-1], big_n):
        for d, (ids, oods) in enumerate(sets.values()):
            fprs[d, at : at + idx.shape[0]] = _fpr_chunk(ids, oods, terms[d], idx, sizes, convention, tpr)
        at += idx.shape[0]
    rows = []
    for j, n in enumerate(sizes):
        extra = _stability(fprs[:, :, j], full) if len(names) > 1 else {}
        fpc = (big_n - n) / (big_n - 1) if big_n > 1 else 0.0
        for d, name in enumerate(names):
            x = fprs[d, :, j]
            p = float(full[d])
            rows.append(
                {
                    "detector": name,
                    "ood_set": ood_set,
                    "n": n,
                    "N": big_n,
                    "draws": draws,
                    "convention": convention,
                    "tpr": tpr,
                    "full": p,
                    "mean": float(x.mean()),
                    "sd": float(x.std(ddof=1)) if draws > 1 else math.nan,
                    "diff": float(x.mean() - p),
                    "q025": float(np.quantile(x, 0.025)),
                    "q975": float(np.quantile(x, 0.975)),
                    "sd_analytic": math.sqrt(p * (1 - p) / n * fpc),
                    **extra,
                }
            )
    return sorted(rows, key=lambda r: (names.index(r["detector"]), r["n"]))


def subsample(
    s_id: Scores,
    s_ood: Scores,
    sizes: Sequence[int] | int | None = (655,),
    draws: int = 1000,
    convention: str = "paper",
    seed: int = 0,
    *,
    tpr: float = 0.95,
    ood_sets: Sequence[str] | None = None,
    pooled: bool = False,
) -> list[dict[str, Any]]:
    """FPR@tpr over ``draws`` random subsets of ``n`` OOD images, for each n in ``sizes``.

    Parameters
    ----------
    s_id, s_ood : array-like, or mappings detector name -> array-like (the same OOD images for all)
        Per-image scores (high = ID), e.g. a results folder's ``scores.npz``.
    sizes : int, sequence of int, or None
        Subset sizes n, each in [1, N] (N of each set); None: a ladder up to each set's N.
    draws : int
        Draws R per size (without replacement within a draw), at most ``MAX_DRAWS``.
    convention : {"paper", "hendrycks", "openood"}
        FPR convention (see :mod:`negvocab.metrics`).
    seed : int
        Seed (>= 0) of the draws; every detector sees the same draws.
    ood_sets : sequence of str, optional
        The OOD set of every OOD image (``scores.npz``'s ``ood_sets``): one analysis per set.
    pooled : bool
        Also (or, without ``ood_sets``, only) the analysis of all OOD images together, ``ood_set="pooled"``.

    Returns
    -------
    list of dict, one per (OOD set, detector, size), sizes ascending:
        ``detector``, ``ood_set``, ``n``, ``N``, ``draws``, ``convention``, ``full`` (FPR on all N),
        ``mean``, ``sd`` (over draws, ddof=1), ``diff`` (mean - full), ``q025``/``q975``,
        ``sd_analytic`` (FPC binomial SD at p = full, ID threshold fixed; exact for paper/hendrycks,
        an approximation for openood), and with two or more detectors ``spearman_mean``,
        ``spearman_q05`` (Spearman rho of each draw's detector order against the full-set order),
        ``same_best`` (fraction of draws whose lowest-FPR detector is the full set's) and
        ``dropped_tied`` (draws left out of the Spearman figures because a ranking was all ties).
    """
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    draws = check_draws(draws, seed)
    sets = _score_sets(s_id, s_ood)
    big_n = next(iter(sets.values()))[1].size
    if ood_sets is None:
        return _analyse(sets, _sizes(sizes, big_n), draws, convention, int(seed), tpr, POOLED if pooled else "ood")
    labels = np.asarray([str(s) for s in ood_sets])
    if labels.size != big_n:
        raise InputError(f"ood_sets names {labels.size} images, the OOD scores have {big_n}")
    names = list(dict.fromkeys(labels.tolist()))
    parts = {name: labels == name for name in names}
    wanted = {name: _sizes(sizes, int(mask.sum()), f" of OOD set {name!r}") for name, mask in parts.items()}
    if pooled:
        wanted[POOLED] = _sizes(sizes, big_n, " of all OOD sets pooled")
    rows = []
    for name, want in wanted.items():
        mask = parts.get(name)
        one = sets if mask is None else {k: (i, o[mask]) for k, (i, o) in sets.items()}
        rows += _analyse(one, want, draws, convention, int(seed), tpr, name)
    return rows
