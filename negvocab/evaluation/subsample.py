"""OOD-subsampling analysis: how much FPR@95 moves when only n OOD images are drawn.

The Fi-ImageNet-1k paper's Appendix C: R draws without replacement of n of the N OOD images; at each
n the mean and SD of FPR over the draws, their difference to the full-set value, the
finite-population-corrected analytical SD ``sqrt(p (1 - p) / n * (N - n) / (N - 1))`` (the ID
threshold fixed, p the full-set FPR), and, for several detectors, the Spearman rank stability of
the detectors' order across draws (Rozumnyi et al., arXiv:2609.01027, Appendix C).

Vectorised: every draw is one random permutation of the N OOD images and the draw of size n is its
first n (a uniform sample without replacement for every n); FPR at every n comes from one cumulative
sum of per-image indicators over the permuted images. Under "paper" (and "hendrycks") the ID
threshold does not depend on the OOD images, so FPR of a draw is the mean of fixed per-image
indicators; under "openood" the threshold is the draw's own ``tpr`` quantile of its OOD scores,
taken per draw with one partition.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.atomic import atomic_path
from negvocab.errors import InputError
from negvocab.scoring import metrics as M

__all__ = ["plot_subsample", "subsample"]


def _score_sets(s_id: Any, s_ood: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{detector: (id scores, ood scores)} from arrays or matching mappings of arrays."""
    if isinstance(s_id, Mapping) != isinstance(s_ood, Mapping):
        raise InputError("s_id and s_ood must both be arrays or both mappings detector -> scores")
    if not isinstance(s_id, Mapping):
        s_id, s_ood = {"scores": s_id}, {"scores": s_ood}
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


def _sizes(sizes: Sequence[int] | int, n: int) -> list[int]:
    items = [sizes] if isinstance(sizes, (int, np.integer)) else list(sizes)
    out = []
    for s in items:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or not 1 <= s <= n:
            raise InputError(f"subsample sizes must be integers in [1, {n}] (the OOD images), got {s!r}")
        out.append(int(s))
    if not out:
        raise InputError("no subsample sizes given")
    return sorted(set(out))


def _fpr_draws(
    ids: np.ndarray, oods: np.ndarray, perm: np.ndarray, sizes: list[int], convention: str, tpr: float
) -> np.ndarray:
    """FPR of every draw at every size: [draws, len(sizes)] (draw r of size n = perm[r, :n])."""
    idx = np.asarray(sizes) - 1
    if convention == "openood":
        srt = np.sort(ids)
        out = np.empty((perm.shape[0], len(sizes)))
        for j, n in enumerate(sizes):
            k = max(1, math.ceil(round(tpr * n, 9)))  # the first k with k / n >= tpr
            u = np.partition(oods[perm[:, :n]], k - 1, axis=1)[:, k - 1]
            out[:, j] = np.searchsorted(srt, u, side="right") / ids.size
        return out
    terms = M._hendrycks_terms(ids, oods, tpr) if convention == "hendrycks" else oods >= M._paper_threshold(ids, tpr)
    if terms is None:  # a hendrycks corner case (OOD above every ID score): per draw
        return np.array([[M.fpr_at_tpr(ids, oods[p[:n]], tpr, convention="hendrycks") for n in sizes] for p in perm])
    csum = np.cumsum(terms.astype(np.int32)[perm], axis=1)
    return csum[:, idx] / np.asarray(sizes)


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


def subsample(
    s_id: Any,
    s_ood: Any,
    sizes: Sequence[int] | int = (655,),
    draws: int = 1000,
    convention: str = "paper",
    seed: int = 0,
    *,
    tpr: float = 0.95,
) -> list[dict[str, Any]]:
    """FPR@tpr over ``draws`` random subsets of ``n`` OOD images, for each n in ``sizes``.

    Parameters
    ----------
    s_id, s_ood : array-like, or mappings detector name -> array-like (the same OOD images for all)
        Per-image scores (high = ID), e.g. a results folder's ``scores.npz``.
    sizes : int or sequence of int
        Subset sizes n, each in [1, N].
    draws : int
        Draws R per size (without replacement within a draw).
    convention : {"paper", "hendrycks", "openood"}
        FPR convention (see :mod:`negvocab.metrics`).
    seed : int
        Seed of the draws; every detector sees the same draws.

    Returns
    -------
    list of dict, one per (detector, size), sizes ascending:
        ``detector``, ``n``, ``N``, ``draws``, ``convention``, ``full`` (FPR on all N), ``mean``, ``sd``
        (over draws, ddof=1), ``diff`` (mean - full), ``q025``/``q975``, ``sd_analytic`` (FPC binomial SD
        at p = full, ID threshold fixed; exact for paper/hendrycks, an approximation for openood),
        and with two or more detectors ``spearman_mean``, ``spearman_q05`` (Spearman rho of each
        draw's detector order against the full-set order) and ``same_best`` (fraction of draws whose
        lowest-FPR detector is the full set's).
    """
    # long: one analysis: draws, FPRs, Spearman and the rows share the sampled arrays
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise InputError(f"draws must be an integer >= 1, got {draws!r}")
    sets = _score_sets(s_id, s_ood)
    big_n = next(iter(sets.values()))[1].size
    wanted = _sizes(sizes, big_n)
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((int(draws), big_n)), axis=1)  # one permutation per draw
    names = list(sets)
    full = np.array([M.fpr_at_tpr(i, o, tpr, convention=convention) for i, o in sets.values()])  # type: ignore[arg-type]
    fprs = np.stack([_fpr_draws(i, o, perm, wanted, convention, tpr) for i, o in sets.values()])  # [D, R, S]
    rows = []
    for j, n in enumerate(wanted):
        extra: dict[str, Any] = {}
        if len(names) > 1:
            rho = _spearman_rows(fprs[:, :, j].T, full)
            best = np.argmin(fprs[:, :, j], axis=0)
            extra = {
                "spearman_mean": float(np.nanmean(rho)) if np.isfinite(rho).any() else math.nan,
                "spearman_q05": float(np.nanquantile(rho, 0.05)) if np.isfinite(rho).any() else math.nan,
                "same_best": float(np.mean(full[best] == full.min())),
            }
        for d, name in enumerate(names):
            x = fprs[d, :, j]
            p = float(full[d])
            fpc = (big_n - n) / (big_n - 1) if big_n > 1 else 0.0
            rows.append(
                {
                    "detector": name,
                    "n": n,
                    "N": big_n,
                    "draws": int(draws),
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


def plot_subsample(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """SD of FPR against n per detector (points), its analytical FPC SD (dashed) and the
    ``sqrt(p (1 - p) / n)`` curve (dotted, the 1/sqrt(n) law without the correction); log-log axes.
    The format follows the suffix (.pdf, .svg, .png); written atomically."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    if not rows:
        raise InputError("nothing to plot: no subsample rows")
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    if fmt not in ("pdf", "svg", "png"):
        raise InputError(f"{path}: plot format .{fmt} is not supported; use .pdf, .svg or .png")
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.subplots()
    names = list(dict.fromkeys(r["detector"] for r in rows))
    for i, name in enumerate(names):
        mine = [r for r in rows if r["detector"] == name]
        ns = np.array([r["n"] for r in mine], dtype=float)
        p = mine[0]["full"]
        ax.plot(ns, [100 * r["sd"] for r in mine], "o", color=f"C{i}", label=f"{name} (draws)")
        ax.plot(ns, [100 * r["sd_analytic"] for r in mine], "--", color=f"C{i}", alpha=0.8, label=f"{name} (analytic, FPC)")
        grid = np.geomspace(ns.min(), ns.max(), 50)
        ax.plot(grid, 100 * np.sqrt(p * (1 - p) / grid), ":", color=f"C{i}", alpha=0.6, label=f"{name}: sqrt(p(1-p)/n)")
    conv = rows[0]["convention"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("OOD images drawn, n")
    ax.set_ylabel(f"SD of FPR@{int(round(100 * rows[0]['tpr']))} (points), {conv} convention")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(title or f"OOD subsampling: {rows[0]['draws']} draws without replacement of n of N={rows[0]['N']}")
    with atomic_path(path, suffix=f".{fmt}") as tmp:
        fig.savefig(tmp, format=fmt)
    return Path(path)
