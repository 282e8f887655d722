"""OOD detection metrics over ID and OOD score arrays (ID is the positive class; high score = ID).

Pure functions in the style of ``sklearn.metrics._ranking``: arrays in, floats out, keyword-only
options, validation at the boundary, NaN plus an :class:`UndefinedMetricWarning` when a metric is
undefined (an empty score set). Every FPR names its convention (docs/methods.md#metrics):

``"paper"`` (default; also NINCO's)
    threshold ``t`` = the ``1 - tpr`` quantile of the ID scores (numpy linear interpolation);
    FPR = fraction of OOD scores ``>= t``. The threshold depends on the ID set only.
``"hendrycks"``
    ``fpr_and_fdr_at_recall`` of Hendrycks et al. (used by the MCM, GL-MCM, NegLabel and EOE code):
    over the ROC curve with ID positive, the point whose recall is closest to ``tpr`` (ties: the
    higher recall); FPR = its false positives / number of OOD.
``"openood"``
    OpenOOD v1.5: OOD is the positive class; FPR = the fraction of ID images flagged as OOD at the
    first ROC point that catches at least ``tpr`` of the OOD images. (OpenOOD's code reads that point
    off ``sklearn.metrics.roc_curve`` with its default ``drop_intermediate=True``, which can skip a
    point lying exactly on a straight run of tied scores; negvocab keeps every point.)

They differ by several points on tied scores. AUPR follows the convention too: average precision
(sklearn ``average_precision_score``, a step sum) under "paper" and "hendrycks", and OpenOOD's
trapezoid over the precision-recall curve (``sklearn.metrics.auc(recall, precision)`` of
``precision_recall_curve``) under "openood"; reports name it in ``aupr_method``. Reference: Rozumnyi
et al., "Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k Validation Set",
arXiv:2609.01027.

>>> import numpy as np
>>> id_s, ood_s = np.array([0.9, 0.8, 0.7, 0.6]), np.array([0.65, 0.3])
>>> auroc(id_s, ood_s)
0.875
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from negvocab.core.errors import InputError

Convention = Literal["paper", "hendrycks", "openood"]
CONVENTIONS: tuple[str, ...] = ("paper", "hendrycks", "openood")

__all__ = [
    "CONVENTIONS",
    "ConfidenceInterval",
    "OperatingPoint",
    "UndefinedMetricWarning",
    "AUPR_METHODS",
    "aupr_in",
    "aupr_method_for",
    "aupr_out",
    "auroc",
    "bootstrap_ci",
    "bootstrap_values",
    "CCR_FPRS",
    "ccr_at_fpr",
    "ccr_column",
    "check_convention",
    "evaluate",
    "fpr_at_tpr",
    "operating_point",
]


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for the given scores (e.g. an empty ID or OOD set); NaN is returned."""


# ----------------------------------------------------------------------------------------------
# validation and shared core
# ----------------------------------------------------------------------------------------------
def _scores(x: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be an array of numbers") from e
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise InputError(f"{name} must be 1-D (one score per image), got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or infinite scores")
    return arr


def _check(id_scores: Any, ood_scores: Any, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Validated arrays, or None (after a warning) when the metric is undefined."""
    a, b = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    if a.size == 0 or b.size == 0:
        empty = "ID" if a.size == 0 else "OOD"
        warnings.warn(
            f"{metric} is undefined with no {empty} scores; returning NaN", UndefinedMetricWarning, stacklevel=3
        )
        return None
    return a, b


def _as_decimal(value: float) -> float:
    """A float32/float16 value as the decimal it prints as (np.float32(0.95) -> 0.95, not 0.949999988)."""
    return float(str(value)) if isinstance(value, np.floating) else float(value)


def _interval_level(level: float, alpha: float | None) -> float:
    """The coverage ``level`` of an interval, in (0, 1); ``alpha`` (= 1 - level) is its deprecated spelling."""
    if alpha is not None:
        warnings.warn("alpha is renamed level (= 1 - alpha); alpha works until the next release", DeprecationWarning, 3)
        if isinstance(alpha, bool) or not (isinstance(alpha, (int, float, np.floating)) and 0 < alpha < 1):
            raise InputError(f"alpha must be in (0, 1), got {alpha!r}", param="alpha")
        return float(f"{1.0 - _as_decimal(alpha):.12g}")
    if isinstance(level, bool) or not (isinstance(level, (int, float, np.floating)) and 0 < level < 1):
        raise InputError(f"level must be in (0, 1), got {level!r}", param="level")
    return _as_decimal(level)


def _check_tpr(tpr: float) -> float:
    if isinstance(tpr, bool) or not isinstance(tpr, (int, float, np.floating)) or not 0 < tpr <= 1:
        raise InputError(f"tpr must be in (0, 1], got {tpr!r}")
    return _as_decimal(tpr)


def check_convention(convention: str) -> str:
    """``convention`` if it is one of :data:`CONVENTIONS`, else a one-line InputError listing them."""
    if convention not in CONVENTIONS:
        raise InputError(f"unknown FPR convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")
    return convention


def _binary_clf_curve(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulative true/false positives at each distinct threshold, scores descending.

    Returns (fps, tps, thresholds): at threshold ``thresholds[k]`` the images with score >= it are
    called positive; ``tps[k]``/``fps[k]`` count positives/negatives among them.
    """
    score = np.concatenate([pos, neg])
    truth = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    order = np.argsort(score, kind="mergesort")[::-1]
    score, truth = score[order], truth[order]
    last = np.r_[np.flatnonzero(np.diff(score)), score.size - 1]
    tps = np.cumsum(truth)[last]
    fps = (last + 1) - tps
    return fps, tps, score[last]


AuprMethod = Literal["average_precision", "trapezoid"]
AUPR_METHODS: tuple[str, ...] = ("average_precision", "trapezoid")


def aupr_method_for(convention: str) -> str:
    """How AUPR is computed under ``convention``: OpenOOD's trapezoid for "openood", else average precision."""
    return "trapezoid" if check_convention(convention) == "openood" else "average_precision"


def _average_precision(pos: np.ndarray, neg: np.ndarray, method: str = "average_precision") -> float:
    """Area under the precision-recall curve over distinct thresholds.

    ``"average_precision"``: sum_k (R_k - R_{k-1}) P_k (sklearn ``average_precision_score``).
    ``"trapezoid"``: the trapezoid rule through (0, 1) and every (R_k, P_k), as OpenOOD's
    ``metrics.auc(recall, precision)`` over ``precision_recall_curve`` (which ends at (0, 1)).
    """
    if method not in AUPR_METHODS:
        raise InputError(f"unknown AUPR method {method!r}; choose one of {', '.join(AUPR_METHODS)}")
    fps, tps, _ = _binary_clf_curve(pos, neg)
    return float(_pr_area(tps, fps, pos.size, method))


def _pr_area(tps: np.ndarray, fps: np.ndarray, n_pos: float, method: str) -> np.ndarray:
    """PR area over the last axis of cumulative counts at descending thresholds (a level with no
    image yet, tps = fps = 0, sits at (0, 1): no area)."""
    tot = tps + fps
    precision = np.where(tot > 0, tps / np.where(tot > 0, tot, 1), 1.0)
    lead = np.zeros(tps.shape[:-1] + (1,))
    dr = np.diff(np.concatenate([lead, tps / n_pos], -1), axis=-1)
    if method == "trapezoid":
        p = np.concatenate([lead + 1.0, precision], -1)
        return np.sum(dr * (p[..., 1:] + p[..., :-1]) / 2, -1)
    return np.sum(dr * precision, -1)


# ----------------------------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------------------------
def fpr_at_tpr(id_scores: Any, ood_scores: Any, tpr: float = 0.95, *, convention: Convention = "paper") -> float:
    """False positive rate at a true positive rate (FPR@95 by default) under a named convention.

    Parameters
    ----------
    id_scores : array-like, shape (n_id,)
        Scores of ID images (high = ID).
    ood_scores : array-like, shape (n_ood,)
        Scores of OOD images.
    tpr : float in (0, 1], default 0.95
        The true positive rate (``"openood"``: the fraction of OOD caught).
    convention : {"paper", "hendrycks", "openood"}, default "paper"
        See the module docstring.

    Returns
    -------
    float in [0, 1] (NaN with an :class:`UndefinedMetricWarning` if a set is empty)

    Examples
    --------
    >>> fpr_at_tpr([1, 2, 3, 4, 5], [0, 4.5, 6], tpr=0.8)
    0.6666666666666666
    """
    tpr = _check_tpr(tpr)
    check_convention(convention)
    arrays = _check(id_scores, ood_scores, "fpr_at_tpr")
    if arrays is None:
        return math.nan
    ids, oods = arrays
    if convention == "paper":
        return float(np.mean(oods >= _paper_threshold(ids, tpr)))
    if convention == "hendrycks":
        fps, tps, _ = _binary_clf_curve(ids, oods)
        stop = int(np.searchsorted(tps, tps[-1]))  # first point with full recall
        recall = tps[: stop + 1] / tps[-1]
        # closest recall; on a tie the later point (higher recall), as Hendrycks' reversed argmin
        dist = np.abs(recall - tpr)[::-1]
        k = stop - int(np.argmin(dist))
        return float(fps[k] / oods.size)
    # openood: OOD positive with score -s; first ROC point whose OOD recall >= tpr
    fps, tps, _ = _binary_clf_curve(-oods, -ids)
    tpr_curve = tps / oods.size
    k = int(np.argmax(tpr_curve >= tpr))
    return float(fps[k] / ids.size)


@dataclass(frozen=True)
class OperatingPoint:
    """Which images are misjudged at the FPR@tpr threshold of a convention.

    ``ood_passing``: OOD images taken as ID; ``id_flagged``: ID images flagged as OOD (boolean masks
    aligned with the scores); ``threshold``: an image with score ``>= threshold`` is called ID
    (``"openood"``: ``> threshold``). The FPR of ``"paper"`` and ``"hendrycks"`` is the mean of
    ``ood_passing``, that of ``"openood"`` the mean of ``id_flagged``.
    """

    threshold: float
    ood_passing: np.ndarray
    id_flagged: np.ndarray
    convention: str
    tpr: float


def operating_point(
    id_scores: Any, ood_scores: Any, tpr: float = 0.95, *, convention: Convention = "paper"
) -> OperatingPoint:
    """The threshold :func:`fpr_at_tpr` uses and the images on the wrong side of it (for reports)."""
    tpr = _check_tpr(tpr)
    check_convention(convention)
    ids, oods = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    if ids.size == 0 or oods.size == 0:
        raise InputError("an operating point needs ID and OOD scores")
    if convention == "paper":
        t = _paper_threshold(ids, tpr)
        return OperatingPoint(t, oods >= t, ids < t, convention, tpr)
    if convention == "hendrycks":
        fps, tps, thr = _binary_clf_curve(ids, oods)
        stop = int(np.searchsorted(tps, tps[-1]))
        dist = np.abs(tps[: stop + 1] / tps[-1] - tpr)[::-1]
        t = float(thr[stop - int(np.argmin(dist))])
        return OperatingPoint(t, oods >= t, ids < t, convention, tpr)
    fps, tps, thr = _binary_clf_curve(-oods, -ids)
    t = float(-thr[int(np.argmax(tps / oods.size >= tpr))])  # OOD is called at score <= t
    return OperatingPoint(t, oods > t, ids <= t, convention, tpr)


def auroc(id_scores: Any, ood_scores: Any) -> float:
    """Area under the ROC curve with ID positive (sklearn ``roc_auc_score``; ties count 1/2).

    Equals P(s_id > s_ood) + P(s_id = s_ood) / 2, computed from mid-ranks (Mann-Whitney U).

    Parameters
    ----------
    id_scores : array-like, shape (n_id,)
    ood_scores : array-like, shape (n_ood,)

    Returns
    -------
    float in [0, 1] (NaN with a warning if a set is empty)
    """
    arrays = _check(id_scores, ood_scores, "auroc")
    if arrays is None:
        return math.nan
    ids, oods = arrays
    return float(np.mean(_auroc_terms(ids, oods)))


def _auroc_terms(ids: np.ndarray, oods: np.ndarray) -> np.ndarray:
    """Per-OOD-image AUROC terms: (#{ID > o} + #{ID = o}/2) / n_id; their mean is the AUROC."""
    srt = np.sort(ids)
    below_or_eq = np.searchsorted(srt, oods, side="right")
    below = np.searchsorted(srt, oods, side="left")
    greater = ids.size - below_or_eq
    ties = below_or_eq - below
    return (greater + 0.5 * ties) / ids.size


def aupr_in(id_scores: Any, ood_scores: Any, *, method: AuprMethod = "average_precision") -> float:
    """AUPR with ID as the positive class: average precision (sklearn ``average_precision_score``)
    or, with ``method="trapezoid"``, OpenOOD's trapezoid over the precision-recall curve."""
    arrays = _check(id_scores, ood_scores, "aupr_in")
    if arrays is None:
        return math.nan
    return _average_precision(arrays[0], arrays[1], method)


def aupr_out(id_scores: Any, ood_scores: Any, *, method: AuprMethod = "average_precision") -> float:
    """AUPR with OOD as the positive class (score negated); ``method`` as in :func:`aupr_in`."""
    arrays = _check(id_scores, ood_scores, "aupr_out")
    if arrays is None:
        return math.nan
    return _average_precision(-arrays[1], -arrays[0], method)


# ----------------------------------------------------------------------------------------------
# CCR
# ----------------------------------------------------------------------------------------------
#: the FPR levels of the CCR columns, as OpenOOD v1.0 reported them (``ccr_4`` ... ``ccr_1``)
CCR_FPRS: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1)


def ccr_column(fpr: float) -> str:
    """The column name of CCR at ``fpr``: ``ccr@1e-4`` (the FPR in exponent form, as OpenOOD's tables name it)."""
    return "ccr@" + f"{fpr:.0e}".replace("e-0", "e-").replace("e+0", "e")


def ccr_at_fpr(id_scores: Any, ood_scores: Any, id_correct: Any, fpr: float) -> float:
    """Correct classification rate at a false positive rate (Dhamija et al., NeurIPS 2018), as OpenOOD's
    ``ccr_fpr`` computes it: the share of ID images that are both accepted and correctly classified.

    The threshold is the ``k``-th largest OOD score, ``k = ceil(fpr * n_ood)``; an ID image is accepted
    when its score is strictly above it. (So at most ``k - 1`` OOD images pass: with few OOD images
    every small ``fpr`` gives ``k = 1``, the largest OOD score, and the same CCR.)

    Parameters
    ----------
    id_scores : array-like, shape (n_id,)
        Scores of ID images (high = ID).
    ood_scores : array-like, shape (n_ood,)
        Scores of OOD images.
    id_correct : array-like of bool, shape (n_id,)
        Whether each ID image's predicted class is its class (zero-shot top-1).
    fpr : float in (0, 1]

    Returns
    -------
    float in [0, 1] (NaN with an :class:`UndefinedMetricWarning` if a set is empty)

    Examples
    --------
    >>> ccr_at_fpr([0.9, 0.8, 0.4], [0.5, 0.1], [True, False, True], fpr=0.5)
    0.3333333333333333
    """
    if isinstance(fpr, bool) or not isinstance(fpr, (int, float, np.floating)) or not 0 < fpr <= 1:
        raise InputError(f"fpr must be in (0, 1], got {fpr!r}", param="fpr")
    correct = np.asarray(id_correct)
    arrays = _check(id_scores, ood_scores, "ccr_at_fpr")
    if correct.ndim != 1 or correct.dtype != np.bool_:
        raise InputError(f"id_correct must be a 1-D boolean array, got {correct.dtype} of shape {correct.shape}")
    if arrays is None:
        return math.nan
    ids, oods = arrays
    if correct.size != ids.size:
        raise InputError(f"id_correct holds {correct.size} values for {ids.size} ID scores", param="id_correct")
    k = int(np.ceil(float(fpr) * oods.size))
    threshold = np.sort(oods)[-k]
    return float(np.sum((ids > threshold) & correct) / ids.size)


# ----------------------------------------------------------------------------------------------
# bootstrap
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConfidenceInterval:
    """A percentile bootstrap interval: ``[low, high]`` at ``level`` from ``n_boot`` resamples."""

    low: float
    high: float
    level: float
    n_boot: int
    resample: str
    seed: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_METRICS: dict[str, Callable[..., float]] = {
    "fpr": fpr_at_tpr,
    "fpr_at_tpr": fpr_at_tpr,
    "auroc": auroc,
    "aupr_in": aupr_in,
    "aupr_out": aupr_out,
}


def bootstrap_ci(
    metric: str | Callable[[np.ndarray, np.ndarray], float],
    id_scores: Any,
    ood_scores: Any,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    resample: Literal["ood", "id", "both"] = "ood",
    alpha: float | None = None,
    **metric_kwargs: Any,
) -> ConfidenceInterval:
    """Percentile bootstrap confidence interval of a metric, resampling OOD images by default.

    The OOD set is the small one (655 images in Fi-ImageNet-1k), so it dominates the uncertainty;
    ``resample="both"`` also resamples ID images. With ``resample="ood"``, FPR (any convention) and
    AUROC need no sort per resample: each costs O(n_ood) (openood: O(n_id + n_ood)).

    Parameters
    ----------
    metric : {"fpr", "auroc", "aupr_in", "aupr_out"} or callable(id_scores, ood_scores) -> float
    id_scores, ood_scores : array-like, shape (n_id,), (n_ood,)
    n_boot : int, default 1000
    seed : int, default 0
    level : float, default 0.95
        The interval's coverage: the [(1 - level)/2, (1 + level)/2] percentile range.
    resample : {"ood", "id", "both"}, default "ood"
    alpha : float, optional
        Deprecated (one release): ``1 - level``.
    **metric_kwargs
        Passed to the metric (e.g. ``tpr``, ``convention`` for "fpr").

    Returns
    -------
    ConfidenceInterval (NaN bounds with a warning if a set is empty)
    """
    level = _interval_level(level, alpha)
    alpha = float(f"{1.0 - level:.12g}")  # 0.05, not 0.050000000000000044: the same quantiles as before
    values = bootstrap_values(
        metric, id_scores, ood_scores, n_boot=n_boot, seed=seed, resample=resample, **metric_kwargs
    )
    if values is None:
        return ConfidenceInterval(math.nan, math.nan, level, int(n_boot), resample, seed)
    low, high = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(float(low), float(high), level, int(n_boot), resample, seed)


def bootstrap_values(
    metric: str | Callable[[np.ndarray, np.ndarray], float],
    id_scores: Any,
    ood_scores: Any,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    resample: Literal["ood", "id", "both"] = "ood",
    **metric_kwargs: Any,
) -> np.ndarray | None:
    """The ``n_boot`` resampled values of a metric behind :func:`bootstrap_ci` (same draws for the
    same seed), for intervals of derived quantities such as the mean over several OOD sets; None
    (with a warning) if a set is empty."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise InputError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    if resample not in ("ood", "id", "both"):
        raise InputError(f"resample must be 'ood', 'id' or 'both', got {resample!r}")
    if isinstance(metric, str):
        if metric not in _METRICS:
            raise InputError(f"unknown metric {metric!r}; choose one of {', '.join(_METRICS)} or pass a callable")
        fn = _METRICS[metric]
    else:
        fn = metric
    arrays = _check(id_scores, ood_scores, "bootstrap_ci")
    if arrays is None:
        return None
    ids, oods = arrays
    rng = np.random.default_rng(seed)
    values = _fast_ood_bootstrap(fn, ids, oods, rng, int(n_boot), metric_kwargs) if resample == "ood" else None
    if values is None:
        values = np.empty(int(n_boot))
        for b in range(int(n_boot)):
            bi = ids[rng.integers(0, ids.size, ids.size)] if resample in ("id", "both") else ids
            bo = oods[rng.integers(0, oods.size, oods.size)] if resample in ("ood", "both") else oods
            values[b] = fn(bi, bo, **metric_kwargs)
    return values


def _paper_threshold(ids: np.ndarray, tpr: float) -> float:
    """The (1 - tpr) quantile of the ID scores, linear interpolation.

    ``1 - 0.95`` is 0.050000000000000044 in floating point, which moves the interpolated threshold
    by a hair and flips OOD scores tied with it; rounding gives the decimal level the user meant.
    """
    return float(np.quantile(ids, round(1.0 - tpr, 12)))


def _fast_ood_bootstrap(
    fn: Callable[..., float], ids: np.ndarray, oods: np.ndarray, rng: np.random.Generator, n_boot: int, kw: dict
) -> np.ndarray | None:
    """The bootstrap values of the loop, from the same draws, for metrics whose OOD resamples need
    no re-sort: None for the others.

    AUROC and the paper and hendrycks FPRs are means of per-OOD-image terms (the ROC point the
    hendrycks rule picks depends on the ID scores only), so each draw averages resampled terms;
    the openood FPR sorts once and counts each draw's OOD images per sorted position."""
    if fn in (aupr_in, aupr_out) and set(kw) <= {"method"}:
        return _aupr_draws(ids, oods, fn is aupr_in, kw.get("method", "average_precision"), rng, n_boot)
    terms: np.ndarray | None
    if fn is auroc and not kw:
        terms = _auroc_terms(ids, oods)
    elif fn is fpr_at_tpr and set(kw) <= {"tpr", "convention"}:
        tpr, convention = _check_tpr(kw.get("tpr", 0.95)), check_convention(kw.get("convention", "paper"))
        if convention == "openood":
            return _openood_draws(ids, oods, tpr, rng, n_boot)
        terms = _hendrycks_terms(ids, oods, tpr) if convention == "hendrycks" else (oods >= _paper_threshold(ids, tpr))
        if terms is None:
            return None
        terms = terms.astype(np.float64)
    else:
        return None
    return np.array([terms[rng.integers(0, oods.size, oods.size)].mean() for _ in range(n_boot)])


def _hendrycks_terms(ids: np.ndarray, oods: np.ndarray, tpr: float) -> np.ndarray | None:
    """Per-OOD-image indicators whose mean is the hendrycks FPR for any resample of ``oods``.

    The ROC points reach the recall levels of the distinct ID scores; the rule picks the level
    closest to ``tpr`` (ties: higher) and, within its plateau, the last point, whose false positives
    are the OOD scores above the next lower ID score (at full recall: >= the lowest ID score).
    None when a 0-recall point (OOD above every ID score) could be picked instead.
    """
    levels = np.unique(ids)[::-1]
    recall = np.cumsum(np.unique(ids, return_counts=True)[1][::-1]) / ids.size
    dist = np.abs(recall - tpr)
    if tpr < dist.min():
        return None
    j = len(dist) - 1 - int(np.argmin(dist[::-1]))
    return oods >= levels[-1] if j == len(levels) - 1 else oods > levels[j + 1]


def _aupr_draws(
    ids: np.ndarray, oods: np.ndarray, id_positive: bool, method: str, rng: np.random.Generator, n_boot: int
) -> np.ndarray:
    """AUPR of each OOD resample without a sort per resample: the images are sorted once, and a
    resample only changes how many times each OOD image counts at its threshold level."""
    if method not in AUPR_METHODS:
        raise InputError(f"unknown AUPR method {method!r}; choose one of {', '.join(AUPR_METHODS)}")
    score = np.concatenate([ids, oods]) * (1 if id_positive else -1)
    order = np.argsort(-score, kind="mergesort")
    level = np.empty(score.size, dtype=np.int64)
    level[order] = np.r_[0, np.cumsum(np.diff(score[order]) != 0)]  # distinct threshold levels, descending
    k = int(level.max()) + 1
    id_cum = np.cumsum(np.bincount(level[: ids.size], minlength=k)).astype(np.float64)
    ood_level = level[ids.size :]
    out = np.empty(n_boot)
    for b in range(n_boot):
        w = np.bincount(rng.integers(0, oods.size, oods.size), minlength=oods.size)
        ood_cum = np.cumsum(np.bincount(ood_level, weights=w, minlength=k))
        tps, fps, n_pos = (id_cum, ood_cum, ids.size) if id_positive else (ood_cum, id_cum, oods.size)
        out[b] = _pr_area(tps, fps, n_pos, method)
    return out


def _openood_draws(ids: np.ndarray, oods: np.ndarray, tpr: float, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """openood FPR of each OOD resample: with OOD positive at scores <= u (u ascending over the
    distinct scores), the first u whose OOD recall reaches ``tpr`` and the ID fraction there."""
    u = np.unique(np.concatenate([ids, oods]))
    id_cum = np.cumsum(np.bincount(np.searchsorted(u, ids), minlength=u.size))
    pos = np.searchsorted(u, oods)
    out = np.empty(n_boot)
    for b in range(n_boot):
        tps = np.cumsum(np.bincount(pos[rng.integers(0, oods.size, oods.size)], minlength=u.size))
        out[b] = id_cum[int(np.argmax(tps / oods.size >= tpr))] / ids.size
    return out


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------
def evaluate(
    id_scores: Any,
    ood_scores: Any,
    *,
    tpr: float = 0.95,
    convention: Convention = "paper",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float | None = None,
) -> dict[str, Any]:
    """All metrics in one report dict that names its convention (``alpha``: deprecated, ``1 - level``).

    Returns
    -------
    dict
        Keys ``convention``, ``tpr``, ``fpr`` (at ``tpr``), ``auroc``, ``aupr_in``, ``aupr_out``,
        ``aupr_method`` (``"trapezoid"`` under openood, else ``"average_precision"``), ``n_id``,
        ``n_ood``, ``fpr_ci``, ``auroc_ci`` ([low, high] bootstrap intervals over OOD images; omitted
        when ``n_boot=0``), ``ci_level``, ``n_boot``.
    """
    tpr = _check_tpr(tpr)
    level = _interval_level(level, alpha)
    check_convention(convention)
    ids, oods = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    report: dict[str, Any] = {
        "convention": convention,
        "positive": "OOD" if convention == "openood" else "ID",
        "tpr": tpr,
        "fpr": fpr_at_tpr(ids, oods, tpr, convention=convention),
        "auroc": auroc(ids, oods),
        "aupr_in": aupr_in(ids, oods, method=aupr_method_for(convention)),  # type: ignore[arg-type]
        "aupr_out": aupr_out(ids, oods, method=aupr_method_for(convention)),  # type: ignore[arg-type]
        "aupr_method": aupr_method_for(convention),
        "n_id": int(ids.size),
        "n_ood": int(oods.size),
    }
    if n_boot:
        fci = bootstrap_ci("fpr", ids, oods, n_boot=n_boot, seed=seed, level=level, tpr=tpr, convention=convention)
        aci = bootstrap_ci("auroc", ids, oods, n_boot=n_boot, seed=seed, level=level)
        report.update(
            fpr_ci=[fci.low, fci.high],
            auroc_ci=[aci.low, aci.high],
            ci_level=fci.level,
            n_boot=int(n_boot),
            ci_resample="ood",
        )
    return report
