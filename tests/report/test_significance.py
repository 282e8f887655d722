"""Bold from the paired test: the example grid's faults (a bold the paired test rejects, a bold
100.00% FPR), an independent loop of paired tests, per-row bold, oracle never bold, no scores no bold."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.evaluation.compare import metric_value, paired_bootstrap
from negvocab.report.tables import build_table

N_BOOT, SEED = 200, 3


def _rows_and_getter(scores, *, ci=0.01, caveats=None):
    """Rows whose metrics are computed from ``scores`` ((model, vocab) -> (ID, OOD)) on one OOD set
    ``ssb``, with a deliberately narrow unpaired interval (+-``ci``), and a getter of the scores."""
    rows = []
    for (model, vocab), (s_id, s_ood) in scores.items():
        fpr = metric_value("fpr", s_id, s_ood, tpr=0.95, convention="paper")
        auroc = metric_value("auroc", s_id, s_ood, tpr=0.95, convention="paper")
        rows.append(
            {
                "model": model, "vocabulary": vocab, "method": "neglabel" if vocab else "mcm", "ood_set": "ssb",
                "convention": "paper", "tpr": 0.95, "fpr": fpr, "fpr_ci_low": fpr - ci, "fpr_ci_high": fpr + ci,
                "auroc": auroc, "aupr_in": 0.5, "aupr_out": 0.5, "n_id": len(s_id), "n_ood": len(s_ood),
                "deployable": not (caveats or {}).get(vocab), "caveats": (caveats or {}).get(vocab, ""),
            }
        )  # fmt: skip

    def get(model, vocab, method):
        got = scores.get((model, vocab))
        return None if got is None else (got[0], {"ssb": got[1]})

    return rows, get


def test_the_example_grid_handpicked_stripes_bold_is_gone():
    """handpicked FPR 1/6 vs wordnet 1/3 on 12 OOD images (the other's images above the threshold a
    superset): the unpaired interval of the best (+-1 point) excludes the other's value, but the paired
    interval reaches 0, so the paired test says not distinguishable and nothing is bold."""
    s_id = np.linspace(0.0, 1.0, 12)
    base = np.full(12, -1.0)
    hand, wordnet = base.copy(), base.copy()
    hand[:2] = 2.0
    wordnet[:4] = 2.0
    rows, get = _rows_and_getter({("m", "handpicked"): (s_id, hand), ("m", "wordnet"): (s_id, wordnet)})
    t = build_table(rows, rows_by="vocabulary", cols_by="ood_set", scores=get, n_boot=N_BOOT, seed=SEED)
    res = paired_bootstrap(s_id, hand, s_id, wordnet, n_boot=N_BOOT, seed=SEED)
    assert res.verdict == "not significant" and res.high == 0  # what --compare prints
    assert t.values[0, 0, 0] < t.high[1, 0, 0] and t.values[1, 0, 0] > t.high[0, 0, 0]  # the old rule's bold
    assert not t.bold.any()
    cap = t.full_caption()
    assert "paired bootstrap over the same ID and OOD images (200 draws, 95% two-sided interval)" in cap


def _models(rng, n_models=3, n_id=60, n_ood=50, gaps=(2.5, 0.3, 0.0)):
    """Per model, scores on the same images: an image effect shared by every model plus model noise."""
    img_id, img_ood = rng.normal(1, 1, n_id), rng.normal(0, 1, n_ood)
    return {
        (f"m{k}", "v"): (img_id + gaps[k] + rng.normal(0, 0.3, n_id), img_ood + rng.normal(0, 0.3, n_ood))
        for k in range(n_models)
    }


@pytest.mark.parametrize("metric", ["fpr", "auroc"])
def test_bold_equals_an_independent_loop_of_paired_tests(metric):
    rng = np.random.default_rng(0)
    for trial in range(3):
        scores = _models(rng, gaps=[(2.5, 0.3, 0.0), (0.2, 0.1, 0.0), (1.0, 1.0, 0.0)][trial])
        rows, get = _rows_and_getter(scores)
        t = build_table(rows, metric=metric, rows_by="model", cols_by="ood_set", scores=get, n_boot=N_BOOT, seed=SEED)
        vals = {m: r[metric] for r in rows for m in [r["model"]]}
        higher = metric == "auroc"
        best = (max if higher else min)(vals, key=vals.get)
        tied = sum(abs(v - vals[best]) <= 1e-12 for v in vals.values()) > 1
        wins = [
            paired_bootstrap(*scores[(best, "v")], *scores[(m, "v")], metric=metric, n_boot=N_BOOT, seed=SEED).verdict
            == "a"
            for m in vals
            if m != best
        ]
        want = [m == best and all(wins) and not tied for m in t.index]
        assert t.bold[:, 0, 0].tolist() == want, (trial, metric)


def test_bold_by_rows_ties_all_and_oracle_never_bold():
    rng = np.random.default_rng(1)
    img_id, img_ood = rng.normal(1, 1, 80), rng.normal(0, 1, 60)
    noise = lambda n: rng.normal(0, 0.2, n)  # noqa: E731
    scores = {}
    for model in ("m0", "m1"):
        scores[(model, "good")] = (img_id + 2.0 + noise(80), img_ood + noise(60))
        scores[(model, "bad")] = (img_id + noise(80), img_ood + noise(60))
        scores[(model, "oracle")] = (img_id + 6.0 + noise(80), img_ood + noise(60))  # best by far, but a bound
    rows, get = _rows_and_getter(scores, caveats={"oracle": "oracle: the OOD labels"})
    t = build_table(rows, rows_by="model", cols_by="vocabulary", bold_by="rows", scores=get, n_boot=N_BOOT, seed=SEED)
    assert t.columns == ["good", "bad", "oracle (NOT deployable)"]
    assert t.values[0, 2, 0] < t.values[0, 0, 0]  # the oracle has the lowest FPR ...
    assert t.bold[:, :, 0].tolist() == [[True, False, False], [True, False, False]]  # ... and is never bold
    assert "best model of each row" not in t.full_caption() and "best vocabulary of each row" in t.full_caption()
    same = {("m0", "v"): scores[("m0", "good")], ("m1", "v"): scores[("m0", "good")]}
    rows2, get2 = _rows_and_getter(same)
    none = build_table(rows2, rows_by="model", cols_by="ood_set", scores=get2, n_boot=N_BOOT, seed=SEED)
    both = build_table(rows2, rows_by="model", cols_by="ood_set", scores=get2, n_boot=N_BOOT, seed=SEED, ties="all")
    assert not none.bold.any() and both.bold[:, 0, 0].tolist() == [True, True]
    assert "cannot distinguish from it" in both.full_caption()


def test_no_scores_no_bold_and_old_rules_warn():
    rows, _ = _rows_and_getter(_models(np.random.default_rng(2)))
    t = build_table(rows, rows_by="model", cols_by="ood_set")
    assert not t.bold.any() and "no bold where per-image scores not stored" in t.full_caption()
    with pytest.warns(DeprecationWarning, match="bold='paired'"):
        old = build_table(rows, rows_by="model", cols_by="ood_set", bold="point")
    assert not old.bold.any()  # the untested point rule is gone: nothing tested, nothing bold
