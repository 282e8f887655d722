"""A test-time method's summary rows come from the batch path's code: near-ood / far-ood where the sets
span both groups, then mean, each over its sets' own streams (ID scores differ from one stream to the next)."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.data.benchmarks import OpenedSets
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.scoring import metrics as M
from tests.evaluation.test_stream import toy  # noqa: F401  (the registered toy_stream)

pytestmark = pytest.mark.usefixtures("toy")
GROUPS = {"n1": "near", "f1": "far", "n2": "near"}


@pytest.fixture
def sets():
    rng = np.random.default_rng(4)
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    ids = unit(rng.normal(size=(4, 6)))
    id_x = unit(ids[rng.integers(0, 4, 12)] + 0.5 * rng.normal(size=(12, 6)))
    oods = {
        n: unit(rng.normal(size=(k, 6)) + 0.6 * ids[rng.integers(0, 4, k)])
        for n, k in zip(GROUPS, (7, 9, 5), strict=True)
    }
    return id_x, oods, ids


def _mean_interval(ev, names, metric, level=0.95, **kw):
    """The interval of the mean over ``names`` by hand: each set's draws against its own stream's ID scores."""
    draws = [M.bootstrap_values(metric, ev.scores[n]["id"], ev.scores[n]["ood"], **kw) for n in names]
    return list(np.quantile(np.mean(np.stack(draws), axis=0), [(1 - level) / 2, 1 - (1 - level) / 2]))


def test_near_and_far_rows_average_their_sets_each_against_its_own_stream(sets):
    id_x, oods, ids = sets
    ev = evaluate_stream("toy_stream", id_x, oods, ids, stream_batch=4, stream_seed=2, n_boot=30, seed=1, groups=GROUPS)
    by = {r["ood_set"]: r for r in ev.rows}
    assert list(by) == ["n1", "f1", "n2", "near-ood", "far-ood", "mean"]
    for name, members in (("near-ood", ["n1", "n2"]), ("far-ood", ["f1"]), ("mean", list(GROUPS))):
        row = by[name]
        for key in ("fpr", "auroc", "aupr_in", "aupr_out"):
            assert row[key] == float(np.mean(np.array([by[m][key] for m in members], dtype=np.float64)))
        assert row["n_ood"] == sum(len(oods[m]) for m in members) and row["n_ood_sets"] == len(members)
        assert row["test_time"] is True and row["stream_seed"] == 2 and row["stream_batch_size"] == 4
        boot = {"n_boot": 30, "seed": 1}
        fpr_ci = _mean_interval(ev, members, "fpr", tpr=0.95, convention="paper", **boot)
        assert [row["fpr_ci_low"], row["fpr_ci_high"]] == fpr_ci
        assert [row["auroc_ci_low"], row["auroc_ci_high"]] == _mean_interval(ev, members, "auroc", **boot)
    assert by["near-ood"]["ood_sets"] == ["n1", "n2"] and by["mean"].get("ood_sets") is None
    # the sets' ID scores differ: one set's ID scores for all would be another interval
    shared = [
        M.bootstrap_values("auroc", ev.scores["n1"]["id"], ev.scores[n]["ood"], n_boot=30, seed=1) for n in GROUPS
    ]
    mean_ci = [by["mean"]["auroc_ci_low"], by["mean"]["auroc_ci_high"]]
    assert mean_ci != list(np.quantile(np.mean(shared, axis=0), [0.025, 0.975]))


def test_groups_default_to_those_of_the_benchmark_and_a_users_sets_have_none(sets):
    id_x, oods, ids = sets
    opened = OpenedSets(dict(oods), groups=dict(GROUPS))
    kw = {"stream_batch": 4, "stream_seed": 0, "n_boot": 0}
    names = [r["ood_set"] for r in evaluate_stream("toy_stream", id_x, opened, ids, **kw).rows]
    assert names == ["n1", "f1", "n2", "near-ood", "far-ood", "mean"]
    plain = [r["ood_set"] for r in evaluate_stream("toy_stream", id_x, oods, ids, **kw).rows]
    assert plain == ["n1", "f1", "n2", "mean"]


def test_several_stream_seeds_give_the_spread_of_the_group_rows_too(sets):
    id_x, oods, ids = sets
    ev = evaluate_stream("toy_stream", id_x, oods, ids, stream_batch=3, stream_seed=[0, 4, 9], n_boot=10, groups=GROUPS)
    near = next(r for r in ev.rows if r["ood_set"] == "near-ood")
    per_seed = np.array([next(r["fpr"] for r in e.rows if r["ood_set"] == "near-ood") for e in ev.by_seed.values()])
    assert near["fpr"] == float(per_seed.mean()) and near["fpr_std"] == float(per_seed.std(ddof=1))
    assert near["stream_seeds"] == [0, 4, 9] and near.get("fpr_ci_low") is None
