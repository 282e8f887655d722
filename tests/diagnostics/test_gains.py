"""Marginal gains and repair curves against full rescores (negvocab.score on the extended vocabulary)."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab import metrics as M
from negvocab.core.errors import InputError
from tests.scoring.reference import unit

CASES = [
    ("neglabel", {"groups": 1}),
    ("neglabel", {"groups": 4}),
    ("neglabel", {"groups": 5, "grouping": "random", "seed": 3}),
    ("neglabel", {"groups": 30}),  # more groups than negatives: the candidate gets a group of its own
    ("eoe", {"beta": 0.5, "T": 0.05}),
    ("neglabel_eoe", {"groups": 4}),
    ("neglabel_eoe", {"groups": 3, "penalty_T": 0.05, "grouping": "random", "seed": 1}),
]


def _data(seed=0, d=16, n_id=60, n_ood=25, k=5, m=17, c=9):
    rng = np.random.default_rng(seed)
    f = lambda n: unit(rng, n, d, "float64")  # noqa: E731
    # OOD images pulled towards some candidates so that adding them matters
    cand = f(c)
    ood = f(n_ood) + 0.8 * cand[rng.integers(0, c, n_ood)]
    ood /= np.linalg.norm(ood, axis=1, keepdims=True)
    return f(n_id), ood, f(k), f(m), cand


def _rescore(id_img, ood_img, idt, neg, cand, method, convention, params, tau_default=0.05):
    fpr, auc = [], []
    images = np.concatenate([id_img, ood_img])
    for j in range(len(cand)):
        s = negvocab.score(method, images, idt, np.concatenate([neg, cand[j : j + 1]]), **params)
        fpr.append(M.fpr_at_tpr(s[: len(id_img)], s[len(id_img) :], 0.95, convention=convention))
        auc.append(M.auroc(s[: len(id_img)], s[len(id_img) :]))
    return np.array(fpr), np.array(auc)


@pytest.mark.parametrize(("method", "params"), CASES)
@pytest.mark.parametrize("convention", ["paper", "hendrycks", "openood"])
def test_marginal_gains_equal_a_full_rescore(method, params, convention):
    id_img, ood_img, idt, neg, cand = _data()
    params = {"tau": 0.05, **params} if method != "eoe" else params
    g = negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method=method, convention=convention, **params)
    fpr, auc = _rescore(id_img, ood_img, idt, neg, cand, method, convention, params)
    assert g.fpr.shape == auc.shape == (len(cand),)
    np.testing.assert_allclose(g.fpr, fpr, atol=1e-6, rtol=0)
    np.testing.assert_allclose(g.auroc, auc, atol=1e-6, rtol=0)
    base = negvocab.score(method, np.concatenate([id_img, ood_img]), idt, neg, **params)
    assert g.base_fpr == pytest.approx(M.fpr_at_tpr(base[:60], base[60:], convention=convention), abs=1e-12)
    assert g.base_auroc == pytest.approx(M.auroc(base[:60], base[60:]), abs=1e-12)
    assert len(set(np.round(g.fpr, 9))) > 1 or len(set(np.round(g.auroc, 9))) > 1  # the case discriminates


def test_marginal_gains_on_the_scores_themselves():
    """Beyond the metrics: the per-candidate scores equal a rescore to 1e-12 (float64 inputs)."""
    from negvocab.diagnostics.gains import _setup

    id_img, ood_img, idt, neg, cand = _data(seed=5)
    for method, params in CASES:
        params = {"tau": 0.05, **params} if method != "eoe" else params
        sc, c, _ = _setup(id_img, ood_img, idt, neg, cand, method, params)
        got = sc.scores(*sc.logits(c)).numpy()
        images = np.concatenate([id_img, ood_img])
        for j in range(len(cand)):
            want = negvocab.score(method, images, idt, np.concatenate([neg, cand[j : j + 1]]), **params)
            np.testing.assert_allclose(got[:, j], want, atol=1e-12, rtol=0, err_msg=f"{method} {params} candidate {j}")
        np.testing.assert_allclose(
            sc.base_scores(), negvocab.score(method, images, idt, neg, **params), atol=1e-12, rtol=0
        )


def test_float32_inputs_and_torch_tensors_agree_with_float64():
    import torch

    id_img, ood_img, idt, neg, cand = _data(seed=2)
    ref = negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, tau=0.05, groups=3)
    got = negvocab.marginal_gains(
        *(torch.as_tensor(x, dtype=torch.float32) for x in (id_img, ood_img, idt, neg, cand)), tau=0.05, groups=3
    )
    np.testing.assert_allclose(got.auroc, ref.auroc, atol=1e-4)


@pytest.mark.parametrize(("method", "params"), [c for c in CASES if c[1].get("groups") != 30])
def test_repair_curve_is_greedy_and_each_step_is_a_rescore(method, params):
    id_img, ood_img, idt, neg, cand = _data(seed=1, m=12, c=6)
    params = {"tau": 0.05, **params} if method != "eoe" else params
    labels = [f"c{i}" for i in range(len(cand))]
    curve = negvocab.repair_curve(
        id_img, ood_img, idt, neg, cand, 4, labels=labels, method=method, stop_when_no_gain=False, **params
    )
    assert [r["step"] for r in curve.rows] == list(range(len(curve.rows)))
    assert len(curve.rows) == 5
    chosen: list[int] = []
    current = neg
    for row in curve.rows[1:]:
        left = [i for i in range(len(cand)) if i not in chosen]
        fpr, auc = _rescore(id_img, ood_img, idt, current, cand[left], method, "paper", params)
        best = left[int(np.lexsort((np.arange(len(left)), -auc, fpr))[0])]
        assert row["label"] == labels[best]
        assert row["fpr"] == pytest.approx(fpr.min(), abs=1e-9)
        chosen.append(best)
        current = np.concatenate([current, cand[best : best + 1]])


def test_repair_curve_stops_when_nothing_helps_and_never_rises():
    id_img, ood_img, idt, neg, cand = _data(seed=4, m=8, c=8)
    curve = negvocab.repair_curve(id_img, ood_img, idt, neg, cand, 8, tau=0.05, groups=2)
    fpr = curve.fpr
    assert np.all(np.diff(fpr) <= 1e-12)
    assert 1 <= len(curve.rows) <= 9
    if len(curve.rows) < 9:  # it stopped: no remaining candidate improves
        left_idx = [i for i in range(len(cand)) if f"candidate {i}" not in curve.labels]
        cur = np.concatenate([neg, *[cand[int(x.split()[1]) : int(x.split()[1]) + 1] for x in curve.labels]])
        g = negvocab.marginal_gains(id_img, ood_img, idt, cur, cand[left_idx], tau=0.05, groups=2)
        last = curve.rows[-1]
        assert all((f, -a) >= (last["fpr"], -last["auroc"]) for f, a in zip(g.fpr, g.auroc, strict=True))


def test_bad_inputs_are_one_line_errors():
    id_img, ood_img, idt, neg, cand = _data()
    with pytest.raises(InputError, match="uses negatives|need a method"):
        negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method="mcm")
    with pytest.raises(InputError, match="unexpected parameter"):
        negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, topk=3)
    with pytest.raises(InputError, match="cand_emb"):
        negvocab.marginal_gains(id_img, ood_img, idt, neg, cand * 2)
    with pytest.raises(InputError, match="dimension"):
        negvocab.marginal_gains(id_img, ood_img, idt, neg, cand[:, :8])


@pytest.mark.parametrize("convention", ["paper", "hendrycks", "openood"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_operating_point_masks_give_the_fpr(convention, seed):
    rng = np.random.default_rng(seed)
    ids = np.round(rng.normal(1, 1, 200), 1)  # ties, as scores of real runs have
    oods = np.round(rng.normal(0, 1, 70), 1)
    op = M.operating_point(ids, oods, 0.95, convention=convention)
    fpr = M.fpr_at_tpr(ids, oods, 0.95, convention=convention)
    if convention == "openood":
        assert op.id_flagged.mean() == pytest.approx(fpr)
        assert (~op.ood_passing).mean() >= 0.95  # at least tpr of the OOD images caught
    else:
        assert op.ood_passing.mean() == pytest.approx(fpr)
        assert (~op.id_flagged).mean() >= 0.95 - 1 / 200 or convention == "hendrycks"
    assert op.ood_passing.dtype == bool and op.ood_passing.shape == oods.shape and op.id_flagged.shape == ids.shape


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_extreme_logit_ranges_take_the_exact_path(dtype):
    """tau = 0.002: logits span 1000, group masses underflow after the per-image shift."""
    from negvocab.diagnostics.gains import _setup

    id_img, ood_img, idt, neg, cand = _data(seed=7, d=4, m=9)
    args = [x.astype(dtype) for x in (id_img, ood_img, idt, neg, cand)]
    params = {"tau": 0.002, "groups": 3}
    sc, c, _ = _setup(*args, "neglabel", params)
    got = sc.scores(*sc.logits(c)).numpy()
    images = np.concatenate(args[:2])
    for j in range(len(cand)):
        want = negvocab.score("neglabel", images, args[2], np.concatenate([args[3], args[4][j : j + 1]]), **params)
        np.testing.assert_allclose(
            got[:, j], want, atol=1e-5 if dtype == "float32" else 1e-12, rtol=0
        )  # float32 cosines x 500


def test_a_grouping_that_drops_the_tail_drops_the_candidate(monkeypatch):
    """NegLabel's released grouping drops the last M mod G ranks: a candidate appended there changes
    the grouping of the others but adds nothing. Emulated by a dropping random grouping; the
    reference is the explicit float64 formula over the same groups."""
    from negvocab.scoring import incremental as S  # the gains forms draw their groups there

    def dropping(m, groups=100, grouping="stratified", seed=0, **kw):
        g = min(groups, m)
        kept = m - m % g
        return list(np.random.default_rng(seed).permutation(kept).reshape(g, kept // g))

    def reference(images, idt, neg, tau, groups, seed):
        a = np.log(np.exp(images @ idt.T / tau).sum(1))
        grp = dropping(len(neg), groups, seed=seed)
        return np.mean([1 / (1 + np.exp(np.log(np.exp(images @ neg[x].T / tau).sum(1)) - a)) for x in grp], 0)

    monkeypatch.setattr(S, "neglabel_groups", dropping)
    id_img, ood_img, idt, neg, cand = _data(seed=3, m=17, c=5)
    images = np.concatenate([id_img, ood_img])

    def penalty(images, idt, neg, tau):  # NegLabel+EOE's penalty sees every negative, dropped or not
        p = np.exp(np.concatenate([images @ idt.T, images @ neg.T], 1) / tau)
        return p[:, len(idt) :].max(1) / p.sum(1)

    for m, groups, beta in ((17, 4, 0.0), (15, 4, 0.0), (17, 4, 0.5), (14, 4, 0.5)):  # 18 % 4: the candidate is dropped
        method = "neglabel_eoe" if beta else "neglabel"
        extra = {"beta": beta} if beta else {}
        g = negvocab.marginal_gains(
            id_img,
            ood_img,
            idt,
            neg[:m],
            cand,
            method=method,
            tau=0.05,
            groups=groups,
            grouping="random",
            seed=2,
            **extra,
        )
        for j in range(len(cand)):
            full = np.concatenate([neg[:m], cand[j : j + 1]])
            s = reference(images, idt, full, 0.05, groups, 2) - beta * penalty(images, idt, full, 0.05)
            assert g.fpr[j] == pytest.approx(M.fpr_at_tpr(s[:60], s[60:]), abs=1e-9)
            assert g.auroc[j] == pytest.approx(M.auroc(s[:60], s[60:]), abs=1e-9)
        assert (len(set(g.auroc)) == 1) == (m == 17 and not beta)
