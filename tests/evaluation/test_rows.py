"""Results rows: one per OOD set, the near-OOD / far-OOD means when the sets span both groups, and the mean of all."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from negvocab.core.errors import InputError
from negvocab.evaluation.records import named_ood_sets, ood_rows
from negvocab.scoring import metrics as M


def _paper_fpr(ids, oods, tpr=0.95):
    """The paper's convention written out: threshold at the (1 - tpr) quantile of the ID scores."""
    return float(np.mean(oods >= np.quantile(ids, 1 - tpr)))


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    ids = rng.normal(1.0, 1.0, 300)
    sets = {
        "ssb-hard": rng.normal(0.8, 1, 50),
        "ninco": rng.normal(0.5, 1, 40),
        "textures": rng.normal(-1, 1, 30),
        "openimage-o": rng.normal(-0.5, 1, 20),
        "mine": rng.normal(0, 1, 10),
    }
    return ids, sets


def test_group_means_and_the_mean_of_all(scores):
    ids, sets = scores
    rows = ood_rows({"method": "x"}, ids, sets, tpr=0.95, convention="paper", n_boot=0, seed=0)
    by = {r["ood_set"]: r for r in rows}
    assert [r["ood_set"] for r in rows] == [*sets, "near-ood", "far-ood", "mean"]
    fpr = {n: _paper_fpr(ids, s) for n, s in sets.items()}
    auroc = {n: roc_auc_score(np.r_[np.ones(len(ids)), np.zeros(len(s))], np.r_[ids, s]) for n, s in sets.items()}
    assert by["near-ood"]["fpr"] == pytest.approx((fpr["ssb-hard"] + fpr["ninco"]) / 2)
    assert by["far-ood"]["auroc"] == pytest.approx((auroc["textures"] + auroc["openimage-o"]) / 2)
    assert by["mean"]["fpr"] == pytest.approx(np.mean(list(fpr.values())))  # every set, "mine" (no group) too
    assert (
        by["near-ood"]["ood_sets"] == ["ssb-hard", "ninco"]
        and by["far-ood"]["n_ood"] == 50
        and by["far-ood"]["n_ood_sets"] == 2
    )
    assert by["mean"]["ood_sets"] is None and by["mean"]["positive"] is None  # the mean row: every set


def test_no_group_rows_unless_both_groups_are_there(scores):
    ids, sets = scores
    only_near = {k: sets[k] for k in ("ssb-hard", "ninco", "mine")}
    rows = ood_rows({}, ids, only_near, tpr=0.95, convention="paper", n_boot=0, seed=0)
    assert [r["ood_set"] for r in rows] == ["ssb-hard", "ninco", "mine", "mean"]


def test_group_rows_have_bootstrap_intervals_of_their_own_mean(scores):
    ids, sets = scores
    rows = ood_rows({}, ids, sets, tpr=0.95, convention="paper", n_boot=200, seed=3)
    by = {r["ood_set"]: r for r in rows}
    for name in ("near-ood", "far-ood", "mean"):
        low, high = by[name]["fpr_ci_low"], by[name]["fpr_ci_high"]
        assert low <= by[name]["fpr"] <= high and by[name]["n_boot"] == 200
    assert by["near-ood"]["fpr_ci_low"] != by["far-ood"]["fpr_ci_low"]


def test_summary_rows_have_aupr_intervals_of_their_own_mean(scores):
    ids, sets = scores
    rows = ood_rows({}, ids, sets, tpr=0.95, convention="openood", n_boot=50, seed=3)
    by = {r["ood_set"]: r for r in rows}
    near = ("ssb-hard", "ninco")
    for metric in ("aupr_in", "aupr_out"):  # each set's draws (seed 3, trapezoid AUPR), averaged draw by draw
        draws = [M.bootstrap_values(metric, ids, sets[n], n_boot=50, seed=3, method="trapezoid") for n in near]
        want = np.quantile(np.mean(draws, axis=0), [0.025, 0.975])
        assert (by["near-ood"][f"{metric}_ci_low"], by["near-ood"][f"{metric}_ci_high"]) == pytest.approx(want)
        one = M.bootstrap_ci(metric, ids, sets["ninco"], n_boot=50, seed=3, method="trapezoid")
        assert (by["ninco"][f"{metric}_ci_low"], by["ninco"][f"{metric}_ci_high"]) == (one.low, one.high)


@pytest.mark.parametrize("name", ["mean", "near-ood", "far-ood"])
def test_summary_names_are_refused_for_a_set(name):
    with pytest.raises(InputError, match=f"OOD set name '{name}' is not allowed"):
        named_ood_sets({name: object()})


class Named:
    def __init__(self, name):
        self.name = name


def test_keys_that_print_alike_are_refused_not_merged():
    with pytest.raises(InputError, match="two OOD sets share the name '1'"):
        named_ood_sets({1: Named("a"), "1": Named("b")})  # before: one of them was silently dropped
    with pytest.raises(InputError, match="two OOD sets share the name 'x'"):
        named_ood_sets([Named("x"), Named("x")])
    got = named_ood_sets({"a": Named("a"), "b": Named("b")})
    assert list(got) == ["a", "b"]
    for bad in ("", "  ", "mean"):
        with pytest.raises(InputError, match="is not allowed"):
            named_ood_sets({bad: Named("a")})


def test_opened_sets_keep_their_groups_through_naming():
    """Sets opened from a benchmark (or given as embeddings in an OpenedSets) keep their near/far groups:
    the near-ood / far-ood rows come from them, not from the sets' names."""
    import numpy as np

    from negvocab.data.benchmarks import OpenedSets, set_groups
    from negvocab.evaluation.records import named_ood_sets, ood_records

    rng = np.random.default_rng(0)
    sets = {n: rng.normal(size=(6, 4)) for n in ("mine1", "mine2", "mine3")}
    opened = OpenedSets(sets, groups={"mine1": "near", "mine2": "far", "mine3": "far"})
    named = named_ood_sets(opened)
    assert set_groups(named) == {"mine1": "near", "mine2": "far", "mine3": "far"}
    s_id = rng.normal(size=8)
    s_ood = {n: rng.normal(size=5) for n in named}
    rows = ood_records(
        s_id, s_ood, tpr=0.95, convention="paper", n_boot=0, seed=0, groups=set_groups(named), method="m"
    )
    by = {r.ood_set: r for r in rows}
    assert list(by) == ["mine1", "mine2", "mine3", "near-ood", "far-ood", "mean"]
    assert by["far-ood"].auroc == pytest.approx((by["mine2"].auroc + by["mine3"].auroc) / 2)
    assert by["near-ood"].auroc == pytest.approx(by["mine1"].auroc)
    # the same names as a plain mapping: no groups, so no group rows (a user's own sets)
    plain = ood_records(s_id, s_ood, tpr=0.95, convention="paper", n_boot=0, seed=0, method="m")
    assert [r.ood_set for r in plain] == ["mine1", "mine2", "mine3", "mean"]
