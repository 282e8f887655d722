"""Metrics against sklearn and against direct implementations of each FPR convention."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import metrics as M


# -- independent implementations -------------------------------------------------------------------
def hendrycks_fpr(id_scores, ood_scores, recall_level=0.95):
    """Hendrycks et al.'s fpr_and_fdr_at_recall (outlier-exposure / MCM / NegLabel code), ported line by
    line: positives = ID, examples = concat(pos, neg)."""
    y_score = np.concatenate([id_scores, ood_scores]).astype(np.float64)
    y_true = np.concatenate([np.ones(len(id_scores)), np.zeros(len(ood_scores))]) == 1.0
    desc_score_indices = np.argsort(y_score, kind="mergesort")[::-1]
    y_score = y_score[desc_score_indices]
    y_true = y_true[desc_score_indices]
    distinct_value_indices = np.where(np.diff(y_score))[0]
    threshold_idxs = np.r_[distinct_value_indices, y_true.size - 1]
    tps = np.cumsum(y_true, dtype=np.float64)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    thresholds = y_score[threshold_idxs]
    recall = tps / tps[-1]
    last_ind = tps.searchsorted(tps[-1])
    sl = slice(last_ind, None, -1)
    recall, fps, tps, thresholds = np.r_[recall[sl], 1], np.r_[fps[sl], 0], np.r_[tps[sl], 0], thresholds[sl]
    cutoff = np.argmin(np.abs(recall - recall_level))
    return fps[cutoff] / (np.sum(np.logical_not(y_true)))


def openood_fpr(id_scores, ood_scores, tpr=0.95, drop_intermediate=False):
    """OpenOOD v1.5 auc_and_fpr_recall: OOD positive, roc_curve on -conf, first point with tpr >= th."""
    conf = np.concatenate([id_scores, ood_scores])
    ood_indicator = np.r_[np.zeros(len(id_scores)), np.ones(len(ood_scores))]
    fpr_list, tpr_list, _ = roc_curve(ood_indicator, -conf, drop_intermediate=drop_intermediate)
    return fpr_list[np.argmax(tpr_list >= tpr)]


def paper_fpr(id_scores, ood_scores, tpr=0.95):
    """docs/methods.md#metrics with the quantile written out (numpy's linear interpolation, 'type 7')."""
    srt = np.sort(np.asarray(id_scores, dtype=np.float64))
    h = (len(srt) - 1) * (1 - Fraction(str(tpr)))  # exact: 1 - 0.95 is 1/20, not 0.050000000000000044
    lo = int(math.floor(h))
    hi = min(lo + 1, len(srt) - 1)
    t = srt[lo] + float(h - lo) * (srt[hi] - srt[lo])
    return sum(1 for o in ood_scores if o >= t) / len(ood_scores)


def test_paper_threshold_is_the_decimal_quantile():
    """An OOD score on the interpolated 5th percentile counts; 1 - 0.95 in floats would miss it."""
    ids, ood = np.r_[0.0, 1.0, [2.0] * 9], [0.5]
    assert np.quantile(ids, 0.05) == 0.5 and paper_fpr(ids, ood) == 1.0
    assert M.fpr_at_tpr(ids, ood) == 1.0
    ci = M.bootstrap_ci(M.fpr_at_tpr, ids, np.r_[ood, ood], n_boot=20)
    assert ci.low == ci.high == 1.0
    # a float32 tpr means the decimal it prints as, not 0.949999988...
    x = np.arange(21.0)
    assert M.fpr_at_tpr(x, x, np.float32(0.95)) == M.fpr_at_tpr(x, x, 0.95) == paper_fpr(x, x)
    assert M.bootstrap_ci("fpr", x, x, n_boot=5, level=np.float32(0.9)) == M.bootstrap_ci(
        "fpr", x, x, n_boot=5, level=0.9
    )


def _cases():
    rng = np.random.default_rng(0)
    yield "untied", rng.normal(1, 1, 400), rng.normal(0, 1, 150)
    yield "heavily tied", rng.integers(0, 6, 400).astype(float), rng.integers(0, 4, 150).astype(float)
    yield "binary", rng.integers(0, 2, 100).astype(float), rng.integers(0, 2, 60).astype(float)
    yield "separable", rng.uniform(2, 3, 50), rng.uniform(0, 1, 20)
    yield "reversed", rng.uniform(0, 1, 50), rng.uniform(2, 3, 20)
    yield "one each", np.array([0.3]), np.array([0.3])
    yield "all equal", np.zeros(40), np.zeros(13)


CASES = list(_cases())
IDS = [c[0] for c in CASES]


@pytest.mark.parametrize(("name", "ids", "oods"), CASES, ids=IDS)
def test_auroc_equals_sklearn(name, ids, oods):
    y = np.r_[np.ones(len(ids)), np.zeros(len(oods))]
    assert negvocab.metrics.auroc(ids, oods) == pytest.approx(roc_auc_score(y, np.r_[ids, oods]), abs=1e-12)


@pytest.mark.parametrize(("name", "ids", "oods"), CASES, ids=IDS)
def test_aupr_equals_sklearn_average_precision(name, ids, oods):
    y = np.r_[np.ones(len(ids)), np.zeros(len(oods))]
    s = np.r_[ids, oods]
    assert M.aupr_in(ids, oods) == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert M.aupr_out(ids, oods) == pytest.approx(average_precision_score(1 - y, -s), abs=1e-12)


def openood_aupr(id_scores, ood_scores):
    """OpenOOD v1.5 auc_and_fpr_recall's AUPRs: metrics.auc over precision_recall_curve (ID label 1 - ood)."""
    from sklearn import metrics

    conf = np.concatenate([id_scores, ood_scores])
    ood_indicator = np.r_[np.zeros(len(id_scores)), np.ones(len(ood_scores))]
    precision_in, recall_in, _ = metrics.precision_recall_curve(1 - ood_indicator, conf)
    precision_out, recall_out, _ = metrics.precision_recall_curve(ood_indicator, -conf)
    return metrics.auc(recall_in, precision_in), metrics.auc(recall_out, precision_out)


@pytest.mark.parametrize(("name", "ids", "oods"), CASES, ids=IDS)
def test_aupr_trapezoid_equals_openood(name, ids, oods):
    want_in, want_out = openood_aupr(ids, oods)
    assert M.aupr_in(ids, oods, method="trapezoid") == pytest.approx(want_in, abs=1e-12)
    assert M.aupr_out(ids, oods, method="trapezoid") == pytest.approx(want_out, abs=1e-12)
    rep = M.evaluate(ids, oods, convention="openood", n_boot=0)
    assert rep["aupr_method"] == "trapezoid"
    assert rep["aupr_in"] == pytest.approx(want_in, abs=1e-12) and rep["aupr_out"] == pytest.approx(want_out, abs=1e-12)
    paper = M.evaluate(ids, oods, convention="paper", n_boot=0)
    assert paper["aupr_method"] == "average_precision" and paper["aupr_in"] == M.aupr_in(ids, oods)


def test_aupr_methods_differ_on_ties_and_bad_method_is_refused():
    ids, oods = np.array([1.0, 1.0, 0.0, 0.5]), np.array([1.0, 0.0])
    assert M.aupr_in(ids, oods) != M.aupr_in(ids, oods, method="trapezoid")
    with pytest.raises(InputError, match="unknown AUPR method"):
        M.aupr_in(ids, oods, method="simpson")


@pytest.mark.parametrize("tpr", [0.95, 0.8, 0.5, 1.0])
@pytest.mark.parametrize(("name", "ids", "oods"), CASES, ids=IDS)
def test_each_convention_equals_its_direct_implementation(name, ids, oods, tpr):
    assert negvocab.metrics.fpr_at_tpr(ids, oods, tpr) == pytest.approx(paper_fpr(ids, oods, tpr), abs=1e-12)
    assert M.fpr_at_tpr(ids, oods, tpr, convention="hendrycks") == pytest.approx(
        hendrycks_fpr(ids, oods, tpr), abs=1e-12
    )
    assert M.fpr_at_tpr(ids, oods, tpr, convention="openood") == pytest.approx(openood_fpr(ids, oods, tpr), abs=1e-12)


def test_openood_matches_its_literal_code_on_untied_scores():
    ids, oods = CASES[0][1], CASES[0][2]
    assert M.fpr_at_tpr(ids, oods, convention="openood") == pytest.approx(
        openood_fpr(ids, oods, drop_intermediate=True)
    )


def test_conventions_differ_on_tied_scores():
    # 6% of ID share a score with 30% of OOD: the conventions disagree
    ids = np.r_[np.full(94, 2.0), np.full(6, 1.0)]
    oods = np.r_[np.full(30, 1.0), np.zeros(70)]
    vals = {c: M.fpr_at_tpr(ids, oods, convention=c) for c in M.CONVENTIONS}
    assert vals["paper"] == pytest.approx(0.30)  # threshold = 1.0 (5th percentile), 30 OOD >= 1
    assert vals["hendrycks"] == pytest.approx(0.0)  # recall 0.94 (at 2.0) is closest to 0.95: no OOD there
    assert vals["openood"] == pytest.approx(0.06)  # catching 95% of OOD flags the 6 ID images at 1.0


def test_evaluate_names_the_convention_and_matches_the_parts():
    ids, oods = CASES[1][1], CASES[1][2]
    rep = M.evaluate(ids, oods, convention="hendrycks", n_boot=200, seed=1)
    assert rep["convention"] == "hendrycks" and rep["positive"] == "ID" and rep["tpr"] == 0.95
    assert rep["fpr"] == M.fpr_at_tpr(ids, oods, convention="hendrycks")
    assert rep["auroc"] == M.auroc(ids, oods)
    assert (rep["n_id"], rep["n_ood"]) == (400, 150)
    assert rep["auroc_ci"][0] <= rep["auroc"] <= rep["auroc_ci"][1]
    assert M.evaluate(ids, oods, convention="openood", n_boot=0)["positive"] == "OOD"


def test_bootstrap_fast_path_equals_the_loop():
    rng = np.random.default_rng(2)
    ids, oods = rng.normal(1, 1, 300), rng.normal(0, 1, 80)
    for metric, kw in [("auroc", {}), ("fpr", {"convention": "paper", "tpr": 0.9})]:
        fast = M.bootstrap_ci(metric, ids, oods, n_boot=300, seed=4, **kw)
        fn = M.auroc if metric == "auroc" else M.fpr_at_tpr
        slow = M.bootstrap_ci(lambda a, b: fn(a, b, **kw), ids, oods, n_boot=300, seed=4)  # noqa: B023
        assert (fast.low, fast.high) == pytest.approx((slow.low, slow.high), abs=1e-12)


def test_bootstrap_interval_covers_and_narrows():
    rng = np.random.default_rng(3)
    ids, oods = rng.normal(1, 1, 2000), rng.normal(0, 1, 2000)
    small = M.bootstrap_ci("fpr", ids, oods[:100], n_boot=400)
    big = M.bootstrap_ci("fpr", ids, oods, n_boot=400)
    assert small.low <= M.fpr_at_tpr(ids, oods[:100]) <= small.high
    assert (big.high - big.low) < (small.high - small.low)
    both = M.bootstrap_ci("aupr_out", ids[:200], oods[:50], n_boot=50, resample="both")
    assert 0 <= both.low <= both.high <= 1 and both.level == 0.95


@pytest.mark.parametrize("fn", [M.auroc, M.aupr_in, M.aupr_out, M.fpr_at_tpr])
def test_empty_set_gives_nan_and_a_warning(fn):
    with pytest.warns(M.UndefinedMetricWarning, match="no OOD"):
        assert np.isnan(fn([0.1, 0.2], []))
    with pytest.warns(M.UndefinedMetricWarning, match="no ID"):
        assert np.isnan(fn([], [0.1]))


def test_defined_metrics_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = M.evaluate([0.2, 0.3, 0.9], [0.1, 0.5], n_boot=20)
    assert rep["auroc"] == pytest.approx(roc_auc_score([1, 1, 1, 0, 0], [0.2, 0.3, 0.9, 0.1, 0.5]))
    assert rep["fpr"] == 0.5 and not any(np.isnan(rep["fpr_ci"]))  # 0.5 >= the 5% ID quantile (0.21), 0.1 not


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: M.fpr_at_tpr([1, 2], [1], tpr=0), "tpr"),
        (lambda: M.fpr_at_tpr([1, 2], [1], tpr=1.5), "tpr"),
        (lambda: M.fpr_at_tpr([1, 2], [1], convention="sklearn"), "convention"),
        (lambda: M.auroc([1, np.nan], [1]), "NaN"),
        (lambda: M.auroc(np.ones((2, 2)), [1]), "1-D"),
        (lambda: M.auroc(["a"], [1]), "numbers"),
        (lambda: M.bootstrap_ci("f1", [1], [1]), "unknown metric"),
        (lambda: M.bootstrap_ci("auroc", [1], [1], n_boot=0), "n_boot"),
        (lambda: M.bootstrap_ci("auroc", [1], [1], level=1.5), "level"),
        (lambda: M.bootstrap_ci("auroc", [1], [1], resample="all"), "resample"),
    ],
)
def test_validation_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


@pytest.mark.parametrize("convention", ["paper", "hendrycks", "openood"])
def test_fast_fpr_bootstrap_equals_the_resampling_loop(convention):
    # every convention's FPR bootstrap over OOD images skips the per-draw sort; its values equal
    # the plain loop's (a callable metric takes the loop) on the same draws, ties and edge levels
    rng = np.random.default_rng(7)
    fast_paths = 0
    for _ in range(60):
        ids = np.round(rng.normal(size=int(rng.integers(1, 30))), int(rng.integers(0, 2)))
        oods = np.round(rng.normal(size=int(rng.integers(1, 25))) - rng.uniform(0, 2), int(rng.integers(0, 2)))
        for tpr in (0.95, 0.8, 0.5, 0.01, 1.0):
            fast = M.bootstrap_ci("fpr", ids, oods, n_boot=40, seed=3, tpr=tpr, convention=convention)
            loop = M.bootstrap_ci(
                lambda i, o, t=tpr: M.fpr_at_tpr(i, o, t, convention=convention), ids, oods, n_boot=40, seed=3
            )
            assert (fast.low, fast.high) == (loop.low, loop.high), (ids, oods, tpr)
            kw = {"tpr": tpr, "convention": convention}
            fast_paths += M._fast_ood_bootstrap(M.fpr_at_tpr, ids, oods, np.random.default_rng(0), 2, kw) is not None
    # all but (hendrycks) tpr=0.01 on these small sets, where a 0-recall point could be picked
    assert fast_paths >= 240


@pytest.mark.parametrize(("name", "ids", "oods"), CASES[:4], ids=IDS[:4])
@pytest.mark.parametrize("method", ["average_precision", "trapezoid"])
def test_aupr_bootstrap_fast_path_equals_the_loop(name, ids, oods, method):
    for metric in (M.aupr_in, M.aupr_out):
        fast = M.bootstrap_ci(metric.__name__, ids, oods, n_boot=40, seed=2, method=method)
        slow = M.bootstrap_ci(lambda a, b, f=metric: f(a, b, method=method), ids, oods, n_boot=40, seed=2)
        assert (fast.low, fast.high) == pytest.approx((slow.low, slow.high), abs=1e-12)


@pytest.mark.parametrize("metric", ["fpr", "auroc"])
def test_bootstrap_bounds_equal_a_draw_by_hand_computation(metric):
    """The interval's bounds against the bootstrap written out by hand (independent float64 formulas,
    numpy's quantiles at 2.5% and 97.5%): a 90% interval, or other draws, would fail it (issue 34)."""

    rng = np.random.default_rng(11)
    ids, oods = rng.normal(1, 1, 300), rng.normal(0, 1, 80)

    def by_hand(o):
        if metric == "fpr":
            return float(np.mean(o >= np.quantile(ids, 0.05)))
        return float(roc_auc_score(np.r_[np.ones(ids.size), np.zeros(o.size)], np.r_[ids, o]))

    draws = np.random.default_rng(7)
    values = [by_hand(oods[draws.integers(0, oods.size, oods.size)]) for _ in range(400)]
    low, high = np.quantile(values, [0.025, 0.975])
    ci = M.bootstrap_ci(metric, ids, oods, n_boot=400, seed=7)
    assert ci.level == 0.95
    assert ci.low == pytest.approx(low, abs=1e-12) and ci.high == pytest.approx(high, abs=1e-12)
    narrow = np.quantile(values, [0.05, 0.95])
    assert ci.high - ci.low > narrow[1] - narrow[0]  # not the 90% interval


@pytest.mark.parametrize("convention", ["paper", "hendrycks", "openood"])
def test_operating_point_masks_are_the_fpr_and_the_flagged_id_images(convention):
    """Tied integer scores put images on the threshold: each side's comparison (< or <=) is checked
    by hand, with the default TPR of 0.95 (mutation check survivors, issue 34)."""
    rng = np.random.default_rng(5)
    ids, oods = rng.integers(0, 40, 400).astype(float), rng.integers(-10, 25, 120).astype(float)
    op = M.operating_point(ids, oods, convention=convention)
    fpr = M.fpr_at_tpr(ids, oods, convention=convention)
    # the FPR is the OOD images passing (ID positive) or, under openood (OOD positive), the ID images flagged
    assert op.tpr == 0.95 and (op.id_flagged if convention == "openood" else op.ood_passing).mean() == fpr
    t = op.threshold
    if convention == "openood":  # OOD is called at score <= t: ID images at t are flagged too
        assert (op.ood_passing == (oods > t)).all() and (op.id_flagged == (ids <= t)).all()
        assert (ids == t).any()  # the test has ties on the threshold
    else:
        assert (op.ood_passing == (oods >= t)).all() and (op.id_flagged == (ids < t)).all()
    if convention == "hendrycks":  # the ROC point whose TPR is nearest 0.95, by hand
        tprs = {s: np.mean(ids >= s) for s in np.unique(np.r_[ids, oods])}
        nearest = min(abs(v - 0.95) for v in tprs.values())
        assert abs(tprs[t] - 0.95) == nearest


def test_a_column_of_scores_is_read_as_one_score_per_image():
    ids, oods = np.linspace(0, 1, 30), np.linspace(-0.5, 0.6, 20)
    assert M.auroc(ids[:, None], oods[None, :]) == M.auroc(ids, oods)
    with pytest.raises(InputError, match="must be 1-D"):
        M.auroc(np.ones((3, 2)), oods)
