"""The paired bootstrap against a direct numpy/sklearn computation, and what the sentences say."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from negvocab.core.errors import InputError
from negvocab.evaluation.compare import comparison_sentence, paired_bootstrap


def _fpr_paper(s_id: np.ndarray, s_ood: np.ndarray) -> float:
    """FPR@95, paper convention, written out: threshold = 5% quantile of ID (linear), FPR = share of OOD >= it."""
    return float(np.mean(s_ood >= np.quantile(s_id, 0.05)))


def _scores(seed: int = 0, n_id: int = 40, n_ood: int = 25, gap: float = 1.0):
    rng = np.random.default_rng(seed)
    s_id = rng.normal(1.0, 1.0, n_id)
    a_ood = rng.normal(1.0 - gap, 1.0, n_ood)
    b_ood = a_ood + rng.normal(0.3, 0.4, n_ood)  # B: the same images, OOD scores pushed up (worse)
    b_id = s_id + rng.normal(0.0, 0.1, n_id)
    return s_id, a_ood, b_id, b_ood


def test_paired_bootstrap_equals_a_direct_numpy_loop():
    a_id, a_ood, b_id, b_ood = _scores()
    res = paired_bootstrap(a_id, a_ood, b_id, b_ood, metric="fpr", n_boot=300, seed=7)
    rng = np.random.default_rng(7)
    want = []
    for _ in range(300):
        i, o = rng.integers(0, a_id.size, a_id.size), rng.integers(0, a_ood.size, a_ood.size)
        want.append(_fpr_paper(a_id[i], a_ood[o]) - _fpr_paper(b_id[i], b_ood[o]))
    np.testing.assert_allclose(res.draws, want, rtol=0, atol=1e-12)
    lo, hi = np.quantile(want, [0.025, 0.975])
    assert (res.low, res.high) == pytest.approx((lo, hi), abs=1e-12)
    assert res.diff == pytest.approx(_fpr_paper(a_id, a_ood) - _fpr_paper(b_id, b_ood), abs=1e-12)
    assert res.n_id == 40 and res.n_ood == {"ood": 25} and not res.higher_is_better


def test_auroc_over_two_sets_is_the_mean_of_sklearn_per_set():
    a_id, a1, b_id, b1 = _scores(1)
    _, a2, _, b2 = _scores(2, n_ood=15)
    res = paired_bootstrap(a_id, {"s1": a1, "s2": a2}, b_id, {"s1": b1, "s2": b2}, metric="auroc", n_boot=100, seed=3)

    def auc(i, o):
        return roc_auc_score(np.r_[np.ones(i.size), np.zeros(o.size)], np.r_[i, o])

    rng = np.random.default_rng(3)
    want = []
    for _ in range(100):
        i = rng.integers(0, a_id.size, a_id.size)
        j1, j2 = rng.integers(0, a1.size, a1.size), rng.integers(0, a2.size, a2.size)
        da = (auc(a_id[i], a1[j1]) + auc(a_id[i], a2[j2])) / 2
        db = (auc(b_id[i], b1[j1]) + auc(b_id[i], b2[j2])) / 2
        want.append(da - db)
    np.testing.assert_allclose(res.draws, want, atol=1e-12)
    assert res.n_ood == {"s1": 25, "s2": 15}


def test_verdicts_tie_significant_and_not():
    a_id, a_ood, b_id, b_ood = _scores(gap=2.0, n_id=300, n_ood=300)
    clear = paired_bootstrap(a_id, a_ood, b_id, b_ood, metric="auroc", n_boot=200)
    assert clear.verdict == "a" and clear.low > 0 and clear.better("A", "B") == "A" and clear.p < 0.05
    same = paired_bootstrap(a_id, a_ood, a_id.copy(), a_ood.copy(), n_boot=50)
    assert same.verdict == "tie" and same.diff == 0 and same.better("A", "B") is None
    rng = np.random.default_rng(5)
    noisy = paired_bootstrap(
        a_id[:12], a_ood[:7], a_id[:12] + rng.normal(0, 0.5, 12), a_ood[:7] + rng.normal(0, 0.5, 7), n_boot=300
    )
    assert noisy.verdict in ("not significant", "tie") and noisy.low <= 0 <= noisy.high


def test_a_tie_sentence_says_not_distinguishable_and_no_winner():
    a_id, a_ood, _, _ = _scores()
    tie = paired_bootstrap(a_id, a_ood, a_id, a_ood, n_boot=20)
    s = comparison_sentence("wordnet@100", "wordnet@200", [("m1", tie), ("m2", tie)], context="FPR@95 on mean")
    assert s.startswith(
        "wordnet@100 and wordnet@200 not distinguishable at the 95% level (FPR@95 on mean) for all 2 models "
        "(the same FPR on every resample)"
    )
    assert "beats" not in s and " tie" not in s
    assert "m1: +0.00 [+0.00, +0.00] identical on every resample, n 40 ID / 25 OOD" in s and s.endswith(
        "the bootstrap interval understates the uncertainty"
    )


def test_beats_only_where_the_interval_says_so():
    a_id, a_ood, b_id, b_ood = _scores(gap=2.0, n_id=300, n_ood=300)
    win = paired_bootstrap(a_id, a_ood, b_id, b_ood, metric="auroc", n_boot=200)
    c_id, c_ood, _, _ = _scores(gap=0.5)
    rng = np.random.default_rng(0)  # 12 ID and 7 OOD images, B = A + noise: nothing can be told apart
    ns = paired_bootstrap(
        c_id[:12],
        c_ood[:7],
        c_id[:12] + rng.normal(0, 0.3, 12),
        c_ood[:7] + rng.normal(0, 0.3, 7),
        metric="auroc",
        n_boot=200,
    )
    assert ns.verdict == "not significant" and ns.low < 0 < ns.high
    s = comparison_sentence("gpt", "wordnet", [("m1", win), ("m2", ns)])
    assert s.startswith("gpt beats wordnet for 1 of 2 models (not distinguishable for 1)")
    assert "Small sample (under 30" in s
    assert "Small sample" not in comparison_sentence("gpt", "wordnet", [("m1", win)])  # 300 ID and 300 OOD images
    none = comparison_sentence("gpt", "wordnet", [("m2", ns)])
    assert (
        none.startswith("gpt and wordnet not distinguishable at the 95% level for any of 1 models")
        and "beats" not in none
    )


def test_equal_points_are_no_tie_when_the_interval_is_wide():
    """The example grid's "wordnet@100 and wordnet@400 tie ... +0.00 [-100.00, +0.00]": equal FPRs on
    all images, but the resamples disagree, so the interval (not the point) decides: not distinguishable."""
    s_id = np.linspace(0.0, 1.0, 40)
    hi, lo = np.full(5, 2.0), np.full(5, -1.0)  # above / below every ID threshold
    a_ood, b_ood = np.concatenate([hi, lo]), np.concatenate([lo, hi])  # FPR 0.5 each, on different images
    res = paired_bootstrap(s_id, a_ood, s_id, b_ood, n_boot=200, seed=1)
    assert res.diff == 0 and res.low < 0 < res.high
    assert res.verdict == "not significant"
    s = comparison_sentence("wordnet@100", "wordnet@400", [("m", res)])
    assert s.startswith("wordnet@100 and wordnet@400 not distinguishable at the 95% level") and "tie" not in s
    at99 = paired_bootstrap(s_id, a_ood, s_id, b_ood, n_boot=200, seed=1, level=0.99)
    assert "at the 99% level" in comparison_sentence("a", "b", [("m", at99)])


def test_refuses_unpaired_scores_and_bad_settings():
    a_id, a_ood, b_id, b_ood = _scores()
    with pytest.raises(InputError, match="same ID images"):
        paired_bootstrap(a_id, a_ood, b_id[:-1], b_ood)
    with pytest.raises(InputError, match="same OOD images"):
        paired_bootstrap(a_id, {"x": a_ood}, b_id, {"y": b_ood})
    with pytest.raises(InputError, match="n_boot"):
        paired_bootstrap(a_id, a_ood, b_id, b_ood, n_boot=0)
    with pytest.raises(InputError, match="unknown metric"):
        paired_bootstrap(a_id, a_ood, b_id, b_ood, metric="acc")


@pytest.mark.parametrize(
    ("metric", "convention"), [("auroc", "paper"), ("fpr", "paper"), ("fpr", "openood"), ("aupr_in", "paper")]
)
def test_vectorised_draws_equal_the_loop_in_any_chunking_and_per_detector(monkeypatch, metric, convention):
    """Tied (integer) scores, three OOD sets, chunks of one draw or of all: the draws equal a plain
    loop over draws with sklearn / numpy per set; a detector's own draws subtract into the paired test."""
    from sklearn.metrics import average_precision_score

    import negvocab.evaluation.compare as C
    from negvocab.scoring import metrics as M

    rng = np.random.default_rng(11)
    a_id, b_id = rng.integers(0, 6, 30).astype(float), rng.integers(0, 6, 30).astype(float)
    a_sets = {k: rng.integers(0, 6, n).astype(float) for k, n in (("x", 9), ("y", 14), ("z", 5))}
    b_sets = {k: v + rng.integers(-1, 2, v.size) for k, v in a_sets.items()}

    def one(i, o):
        if metric == "auroc":
            return roc_auc_score(np.r_[np.ones(i.size), np.zeros(o.size)], np.r_[i, o])
        if metric == "aupr_in":
            return average_precision_score(np.r_[np.ones(i.size), np.zeros(o.size)], np.r_[i, o])
        if convention == "paper":
            return _fpr_paper(i, o)
        return M.fpr_at_tpr(i, o, 0.95, convention="openood")  # the library's openood rule, per draw

    rng = np.random.default_rng(5)
    want = []
    for _ in range(40):
        i = rng.integers(0, 30, 30)
        js = [rng.integers(0, v.size, v.size) for v in a_sets.values()]
        da = np.mean([one(a_id[i], v[j]) for v, j in zip(a_sets.values(), js, strict=True)])
        db = np.mean([one(b_id[i], v[j]) for v, j in zip(b_sets.values(), js, strict=True)])
        want.append(da - db)
    for chunk in (1, 10**9):
        monkeypatch.setattr(C, "_CHUNK_ELEMENTS", chunk)
        res = paired_bootstrap(a_id, a_sets, b_id, b_sets, metric=metric, convention=convention, n_boot=40, seed=5)
        np.testing.assert_allclose(res.draws, want, rtol=0, atol=1e-12)
    both = C.bootstrap_draws(
        {"a": (a_id, a_sets), "b": (b_id, b_sets), "small": (a_id[:9], a_sets)},
        metric=metric,
        convention=convention,
        n_boot=40,
        seed=5,
    )
    again = C.paired_from_draws(
        both["a"], both["b"], metric=metric, n_id=30, n_ood={k: v.size for k, v in a_sets.items()}
    )
    alone = C.bootstrap_draws({"small": (a_id[:9], a_sets)}, metric=metric, convention=convention, n_boot=40, seed=5)[
        "small"
    ]
    assert np.array_equal(both["small"][1], alone[1])  # other image counts: their own resamples, as if alone
    assert (again.diff, again.low, again.high, again.verdict) == (res.diff, res.low, res.high, res.verdict)
