"""Paired comparisons: is detector A better than detector B on the same images, beyond chance?

:func:`paired_bootstrap` resamples the ID images and each OOD set's images together (the same
indices for A and B, since both scored the same images) and recomputes the metric difference A - B
per draw; the difference's percentile interval says whether A is better, B is better, or neither
can be told apart on these images. :func:`comparison_sentence` states the verdict over several
models: "A beats B" only where the interval excludes zero, with n, the count of models where it
holds, and ties and not-significant results said as such ([docs/methods.md](docs/methods.md#paired-comparisons)).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import check_evaluation

__all__ = [
    "METRIC_NAMES", "SCORE_METRICS", "PairedComparison", "bootstrap_draws", "comparison_sentence", "metric_label",
    "metric_value",
    "paired_bootstrap",
    "paired_from_draws",
]  # fmt: skip

#: display name and direction (higher is better?) of each metric
METRIC_NAMES: dict[str, tuple[str, bool]] = {
    "fpr": ("FPR@{tpr}", False),
    "auroc": ("AUROC", True),
    "aupr_in": ("AUPR-In", True),
    "aupr_out": ("AUPR-Out", True),
    # CCR: table metrics of the rows that carry them; not functions of the scores alone
    # (they need each ID image's classification), so no paired test or bold (SCORE_METRICS)
    "id_accuracy": ("ID acc.", True),
    **{M.ccr_column(f): (M.ccr_column(f).upper(), True) for f in M.CCR_FPRS},
}
#: the metrics computed from the stored per-image scores alone: those a paired test compares
SCORE_METRICS: tuple[str, ...] = ("fpr", "auroc", "aupr_in", "aupr_out")
SMALL_N = 30  # fewer images than this: a percentile bootstrap interval is too narrow to trust
TIE_ATOL = 1e-12  # a point difference below this is a tie: the two detectors give the same value


def metric_label(metric: str, tpr: float = 0.95) -> str:
    """``FPR@95``, ``AUROC``, ...; one line naming the allowed metrics for anything else."""
    if metric not in METRIC_NAMES:
        raise InputError(f"unknown metric {metric!r}; choose one of {', '.join(METRIC_NAMES)}")
    return METRIC_NAMES[metric][0].format(tpr=int(round(100 * tpr)))


def metric_value(metric: str, s_id: np.ndarray, s_ood: np.ndarray, *, tpr: float, convention: str) -> float:
    """One metric of ID vs OOD scores under ``convention`` (the library's own metric functions)."""
    if metric == "fpr":
        return M.fpr_at_tpr(s_id, s_ood, tpr, convention=convention)  # type: ignore[arg-type]
    if metric == "auroc":
        return M.auroc(s_id, s_ood)
    if metric in ("aupr_in", "aupr_out"):
        fn = M.aupr_in if metric == "aupr_in" else M.aupr_out
        return fn(s_id, s_ood, method=M.aupr_method_for(convention))  # type: ignore[arg-type]
    raise InputError(f"metric {metric!r} is not a function of the scores; choose one of {', '.join(SCORE_METRICS)}")


@dataclass(frozen=True)
class PairedComparison:
    """A - B on the same images: the difference (in [0, 1] units), its interval, the verdict.

    ``verdict`` is ``"a"`` (A better beyond the interval), ``"b"``, ``"tie"`` (the interval itself is
    [0, 0]: the same value on every resample, not merely equal points) or ``"not significant"`` (the
    interval contains 0: not distinguishable at ``level``). ``p`` is the two-sided bootstrap
    p-value ``2 min(P(d <= 0), P(d >= 0))`` with the +1 correction. ``draws`` are the per-draw
    differences.

    Parameters
    ----------
    metric : str
        The metric compared.
    diff : float
        metric(A) - metric(B).
    low, high : float
        The interval of the difference.
    level : float
        The interval's level.
    p : float
        The two-sided bootstrap p-value.
    n_id : int
        ID images.
    n_ood : dict name -> int
        OOD images per set.
    n_boot : int
        Bootstrap draws.
    higher_is_better : bool
        Whether a higher metric is better.
    verdict : str
        ``"a"``, ``"b"``, ``"tie"`` or ``"not significant"``.
    draws : ndarray
        The per-draw differences.
    """

    metric: str
    diff: float
    low: float
    high: float
    level: float
    p: float
    n_id: int
    n_ood: dict[str, int]
    n_boot: int
    higher_is_better: bool
    verdict: str
    draws: np.ndarray = field(repr=False, compare=False)

    def better(self, a: str, b: str) -> str | None:
        """The name of the better detector, or None for a tie or a non-significant difference."""
        return {"a": a, "b": b}.get(self.verdict)


def _as_sets(ood: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    if isinstance(ood, Mapping):
        return {str(k): np.asarray(v, dtype=np.float64) for k, v in ood.items()}
    return {"ood": np.asarray(ood, dtype=np.float64)}


#: index elements per chunk of draws (ID + every OOD set): bounds the memory of the resamples
_CHUNK_ELEMENTS = 1 << 19


def _resamples(
    n_id: int, sizes: Sequence[int], n_boot: int, seed: int
) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """The draws' indices in chunks of rows: per draw the ID indices, then each set's, with
    replacement, from ``default_rng(seed)`` in exactly that order (a draw at a time, so the draws do
    not depend on the chunking)."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _CHUNK_ELEMENTS // (n_id + sum(sizes)))
    for start in range(0, n_boot, per_chunk):
        rows = min(per_chunk, n_boot - start)
        idx_id = np.empty((rows, n_id), dtype=np.int64)
        idx = [np.empty((rows, m), dtype=np.int64) for m in sizes]
        for r in range(rows):
            idx_id[r] = rng.integers(0, n_id, n_id)
            for j, m in enumerate(sizes):
                idx[j][r] = rng.integers(0, m, m)
        yield idx_id, idx


def _row_counts(ranks: np.ndarray, size: int) -> np.ndarray:
    """Per row of ``ranks`` (rows x k, values < size) the cumulative count of ranks below each
    position 0..size: rows x (size + 1), from one flat bincount."""
    rows = ranks.shape[0]
    flat = (ranks + size * np.arange(rows)[:, None]).ravel()
    counts = np.bincount(flat, minlength=rows * size).reshape(rows, size)
    out = np.zeros((rows, size + 1), dtype=np.int64)
    np.cumsum(counts, axis=1, out=out[:, 1:])
    return out


def _chunk_values(
    ids: np.ndarray,
    sets: Sequence[np.ndarray],
    idx_id: np.ndarray,
    idx: Sequence[np.ndarray],
    metric: str,
    tpr: float,
    convention: str,
) -> np.ndarray:
    """The metric (mean over the sets) of each draw of a chunk, vectorised over the draws for FPR
    (paper convention) and AUROC; the other conventions and AUPR go draw by draw through the library's
    metric functions (the same values either way)."""
    if metric == "fpr" and convention == "paper":
        thr = np.quantile(ids[idx_id], round(1.0 - tpr, 12), axis=1)  # as metrics._paper_threshold, per draw
        per_set = [np.mean(s[i] >= thr[:, None], axis=1) for s, i in zip(sets, idx, strict=True)]
    elif metric == "auroc":
        order = np.argsort(ids, kind="stable")
        rank = np.empty(ids.size, dtype=np.int64)
        rank[order] = np.arange(ids.size)
        below = _row_counts(rank[idx_id], ids.size)  # sampled ID scores below each sorted position
        srt = ids[order]
        per_set = []
        for s, i in zip(sets, idx, strict=True):
            lo, hi = np.searchsorted(srt, s, side="left"), np.searchsorted(srt, s, side="right")
            le, lt = below[:, hi], below[:, lo]  # rows x OOD originals: sampled ID <= o, < o
            terms = (ids.size - le + 0.5 * (le - lt)) / ids.size
            per_set.append(np.mean(np.take_along_axis(terms, i, axis=1), axis=1))
    else:
        per_set = [
            np.array(
                [
                    metric_value(metric, ids[idx_id[r]], s[i[r]], tpr=tpr, convention=convention)
                    for r in range(idx_id.shape[0])
                ]
            )
            for s, i in zip(sets, idx, strict=True)
        ]
    return np.mean(np.stack(per_set), axis=0)


def _draws(
    detectors: Sequence[tuple[np.ndarray, Mapping[str, np.ndarray]]],
    metric: str,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
) -> list[tuple[float, np.ndarray]]:
    """(metric on all images, per-draw values) of each detector, all on the same resamples."""
    ids0, sets0 = detectors[0]
    out = [np.empty(n_boot) for _ in detectors]
    at = 0
    for idx_id, idx in _resamples(ids0.size, [s.size for s in sets0.values()], n_boot, seed):
        for k, (ids, sets) in enumerate(detectors):
            out[k][at : at + idx_id.shape[0]] = _chunk_values(
                ids, list(sets.values()), idx_id, idx, metric, tpr, convention
            )
        at += idx_id.shape[0]
    points = [
        float(np.mean([metric_value(metric, ids, s, tpr=tpr, convention=convention) for s in sets.values()]))
        for ids, sets in detectors
    ]
    return list(zip(points, out, strict=True))


def bootstrap_draws(
    detectors: Mapping[str, tuple[np.ndarray, np.ndarray | Mapping[str, np.ndarray]]],
    *,
    metric: str = "fpr",
    tpr: float = 0.95,
    convention: str = "paper",
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, tuple[float, np.ndarray]]:
    """``metric`` of each detector (name -> (ID scores, OOD scores or sets)) on all images and on
    each bootstrap draw (the mean over the OOD sets where there are several). The draws depend only
    on the seed and the number of images, so detectors scored on the same images get the same
    resamples, drawn once for all of them: their draws subtract into the paired differences
    (:func:`paired_from_draws`). A table comparing many vocabularies computes each one's draws
    once, not twice per pair."""
    check_evaluation(n_boot=n_boot, seed=seed, convention=convention, tpr=tpr)
    label = metric_label(metric, tpr)
    groups: dict[tuple[Any, ...], dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]] = {}
    for name, (s_id, s_ood) in detectors.items():
        ids, sets = np.asarray(s_id, dtype=np.float64), _as_sets(s_ood)
        if ids.ndim != 1 or ids.size == 0 or any(s.size == 0 for s in sets.values()):
            raise InputError(
                f"{label}: {name}: a bootstrap needs ID and OOD scores (got "
                f"{ids.size} ID, sets {[s.size for s in sets.values()]})"
            )
        groups.setdefault((ids.size, *((k, v.size) for k, v in sets.items())), {})[name] = (ids, sets)
    out: dict[str, tuple[float, np.ndarray]] = {}
    for members in groups.values():  # the same images: the same resamples, drawn once
        out.update(
            zip(members, _draws(list(members.values()), metric, tpr, convention, int(n_boot), seed), strict=True)
        )
    return {name: out[name] for name in detectors}


def paired_from_draws(
    a: tuple[float, np.ndarray],
    b: tuple[float, np.ndarray],
    *,
    metric: str,
    n_id: int,
    n_ood: Mapping[str, int],
    level: float = 0.95,
) -> PairedComparison:
    """A - B from each one's (point, draws) on the same resamples (:func:`bootstrap_draws` with the
    same seed on the same images): the percentile interval, the p-value and the verdict."""
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level!r}")
    higher = METRIC_NAMES[metric][1]
    diff, draws = a[0] - b[0], a[1] - b[1]
    n_boot = draws.size
    low, high = (float(x) for x in np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]))
    p = min(1.0, 2 * min((1 + np.sum(draws <= 0)) / (n_boot + 1), (1 + np.sum(draws >= 0)) / (n_boot + 1)))
    if abs(diff) <= TIE_ATOL and abs(low) <= TIE_ATOL and abs(high) <= TIE_ATOL:
        verdict = "tie"  # the interval says so: equal on every resample, not only in the point
    elif low > 0 or high < 0:
        verdict = "a" if (diff > 0) == higher else "b"
    else:
        verdict = "not significant"
    return PairedComparison(
        metric, diff, low, high, level, float(p), int(n_id), dict(n_ood), int(n_boot), higher, verdict, draws
    )


def paired_bootstrap(
    a_id: np.ndarray,
    a_ood: np.ndarray | Mapping[str, np.ndarray],
    b_id: np.ndarray,
    b_ood: np.ndarray | Mapping[str, np.ndarray],
    *,
    metric: str = "fpr",
    tpr: float = 0.95,
    convention: str = "paper",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedComparison:
    """Paired bootstrap of ``metric(A) - metric(B)`` over ID and OOD images together.

    ``a_ood``/``b_ood``: one OOD score array, or OOD sets by name (then the metric is the mean over
    the sets, as the tables' ``mean`` column). Each draw takes ``n_id`` ID indices with replacement
    (``rng.integers(0, n_id, n_id)``), then, set by set in order, that set's indices the same way,
    from ``numpy.random.default_rng(seed)``; A and B are scored on the same indices. The interval is
    the percentile ``[(1 - level)/2, (1 + level)/2]`` range of the differences. The draws are
    computed in chunks, vectorised over the draws (``benchmarks/bench_compare.py``).

    Parameters
    ----------
    a_id, b_id : ndarray, shape (n_id,)
        A's and B's scores of the same ID images.
    a_ood, b_ood : ndarray or mapping name -> ndarray
        A's and B's scores of the same OOD images: one array, or OOD sets by name.
    metric : str, default "fpr"
        The metric compared (see :mod:`negvocab.scoring.metrics`).
    tpr : float, default 0.95
        The true-positive rate at which FPR is read.
    convention : str, default "paper"
        The metrics' convention.
    n_boot : int, default 1000
        Bootstrap draws (>= 1).
    seed : int, default 0
        Seed of the draws.
    level : float, default 0.95
        The interval's level, in (0, 1).
    """
    check_evaluation(n_boot=n_boot, seed=seed, convention=convention, tpr=tpr)
    if n_boot < 1:
        raise InputError(f"a paired test needs n_boot >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level!r}")
    label = metric_label(metric, tpr)
    ai, bi = np.asarray(a_id, dtype=np.float64), np.asarray(b_id, dtype=np.float64)
    ao, bo = _as_sets(a_ood), _as_sets(b_ood)
    if ai.shape != bi.shape or ai.ndim != 1 or ai.size == 0:
        raise InputError(
            f"{label}: a paired test needs the same ID images for A and B (got {ai.shape} and {bi.shape} scores)"
        )
    if list(ao) != list(bo) or any(ao[k].shape != bo[k].shape or ao[k].size == 0 for k in ao):
        raise InputError(
            f"{label}: a paired test needs the same OOD images for A and B (sets {list(ao)} vs {list(bo)})"
        )
    a, b = _draws([(ai, ao), (bi, bo)], metric, tpr, convention, int(n_boot), seed)
    return paired_from_draws(a, b, metric=metric, n_id=ai.size, n_ood={k: v.size for k, v in ao.items()}, level=level)


def _level(level: float) -> str:
    """95 for 0.95, 99.9 for 0.999: the level as a caption or a sentence states it."""
    return f"{100 * level:.10g}"


def _pts(x: float) -> str:
    return f"{100 * x:+.2f}"


def comparison_sentence(
    a: str, b: str, results: Sequence[tuple[str, PairedComparison]], *, context: str = "", unit: str = "models"
) -> str:
    """One sentence on A vs B over models: ``results`` is (model, comparison) per model (``unit``
    names what the results are over: "models", or "entries" when A and B are models).

    "A beats B" only where every significant model goes A's way; a split is said as such, and
    everything else as "not distinguishable at the X% level" (a tie only where the paired interval is
    [0, 0]: the same value on every resample; equal points alone are no tie). Each model's difference
    A - B (points) comes with its interval and n; the mean difference is named as the mean of the per-model differences.
    """
    if not results:
        raise InputError(f"no model has both {a} and {b} to compare")
    first = results[0][1]
    n = len(results)
    wins_a = sum(r.verdict == "a" for _, r in results)
    wins_b = sum(r.verdict == "b" for _, r in results)
    ties = sum(r.verdict == "tie" for _, r in results)
    ns = n - wins_a - wins_b - ties
    what = metric_label(first.metric).split("@")[0] if first.metric != "fpr" else "FPR"
    level = _level(first.level)
    ctx = f" ({context})" if context else ""
    if wins_a and not wins_b:
        head = f"{a} beats {b}{ctx} for {wins_a} of {n} {unit}"
    elif wins_b and not wins_a:
        head = f"{b} beats {a}{ctx} for {wins_b} of {n} {unit}"
    elif wins_a and wins_b:
        head = f"{a} and {b} split{ctx}: {a} better for {wins_a}, {b} better for {wins_b} of {n} {unit}"
    elif ties == n:
        head = (
            f"{a} and {b} not distinguishable at the {level}% level{ctx} for all {n} {unit} "
            f"(the same {what} on every resample)"
        )
    else:
        head = f"{a} and {b} not distinguishable at the {level}% level{ctx} for any of {n} {unit}"
    rest = []
    if ns and (wins_a or wins_b):
        rest.append(f"not distinguishable for {ns}")
    if ties and ties < n:
        rest.append(f"the same on every resample for {ties}")
    per = "; ".join(
        f"{m}: {_pts(r.diff)} [{_pts(r.low)}, {_pts(r.high)}]"
        + (" identical on every resample" if r.verdict == "tie" else "")
        + f", n {r.n_id} ID / {sum(r.n_ood.values())} OOD"
        for m, r in results
    )
    mean = float(np.mean([r.diff for _, r in results]))
    direction = "lower is better" if not first.higher_is_better else "higher is better"
    tail = (
        f"{a} - {b} in points ({direction}), {level}% paired-bootstrap interval over the same ID and OOD images "
        f"({first.n_boot} draws): {per}; mean of the differences {_pts(mean) if not math.isnan(mean) else '-'}"
    )
    small = any(r.n_id < SMALL_N or sum(r.n_ood.values()) < SMALL_N for _, r in results)
    warn = (
        f". Small sample (under {SMALL_N} ID or OOD images): the bootstrap interval understates the uncertainty"
        if small
        else ""
    )
    return head + (" (" + ", ".join(rest) + ")" if rest else "") + ". " + tail + warn
