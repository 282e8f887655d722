"""negvocab.sweep equals separate negvocab.score runs for every size, both groupings."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import eoe as eoe_mod
from negvocab.scoring.prefix_scores import parse_sizes
from tests.scoring import reference as ref


@pytest.fixture(scope="module")
def emb():
    rng = np.random.default_rng(5)
    return ref.unit(rng, 30, 24), ref.unit(rng, 20, 24), ref.unit(rng, 503, 24)


SIZES = [1, 3, 7, 8, 50, 99, 100, 101, 250, 503]


@pytest.mark.parametrize("groups", [1, 8, 100])
def test_stratified_sweep_equals_separate_runs(emb, groups):
    img, idt, neg = emb
    got = negvocab.sweep(img, idt, neg, SIZES, groups=groups, chunk_size=7)
    assert list(got) == SIZES
    img64, idt64, neg64 = ref.f64(img, idt, neg)
    got64 = negvocab.sweep(img64, idt64, neg64, SIZES, groups=groups, chunk_size=7)
    for m in SIZES:
        # float64 inputs: the one-pass sweep is exactly the separate run (to float64 rounding)
        sep64 = negvocab.score("neglabel", img64, idt64, neg64[:m], groups=groups)
        np.testing.assert_allclose(got64[m], sep64, atol=1e-12, rtol=0, err_msg=f"M={m}")
        # float32 inputs: equal up to the float32 rounding of the products (BLAS picks other kernels
        # for other shapes: ~1e-7 in a cosine, /tau in a logit); the exponent sums are float64
        sep = negvocab.score("neglabel", img, idt, neg[:m], groups=groups)
        np.testing.assert_allclose(got[m], sep, atol=2e-6, rtol=0, err_msg=f"M={m}")
        np.testing.assert_allclose(got[m], ref.neglabel(img, idt, neg[:m], groups=groups), atol=1e-5, rtol=0)


def test_random_sweep_equals_separate_runs(emb):
    img, idt, neg = emb
    got = negvocab.sweep(img, idt, neg, [50, 200, 503], groups=16, grouping="random", seed=2)
    for m in (50, 200, 503):
        sep = negvocab.score("neglabel", img, idt, neg[:m], groups=16, grouping="random", seed=2)
        np.testing.assert_array_equal(got[m], sep)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("eoe", {"beta": 0.5}),
        ("eoe", {"T": 0.05}),
        ("neglabel_eoe", {"groups": 4}),
        ("neglabel_eoe", {"groups": 8, "penalty_T": 0.5}),
    ],
)
def test_eoe_sweeps_are_one_pass_and_equal_separate_runs(emb, method, params, monkeypatch):
    # one pass: separate runs are not called; each M equals its own run and the float64 formula
    from negvocab.scoring import scores as S

    img, idt, neg = emb
    reference = getattr(ref, method)
    monkeypatch.setattr(S, "score", lambda *a, **k: pytest.fail("a one-pass sweep ran a separate run"))
    got = negvocab.sweep(img, idt, neg, SIZES, method=method, chunk_size=7, **params)
    monkeypatch.undo()
    assert list(got) == SIZES
    for m in SIZES:
        np.testing.assert_allclose(
            got[m], negvocab.score(method, img, idt, neg[:m], **params), atol=2e-6, rtol=0, err_msg=f"M={m}"
        )
        np.testing.assert_allclose(got[m], reference(img, idt, neg[:m], **params), atol=1e-5, rtol=0, err_msg=f"M={m}")
    got64 = negvocab.sweep(*ref.f64(img, idt, neg), [7, 250], method=method, **params)
    for m in (7, 250):
        np.testing.assert_allclose(got64[m], reference(img, idt, neg[:m], **params), atol=1e-12, rtol=0)


def test_random_grouping_neglabel_eoe_sweeps_per_size(emb):
    img, idt, neg = emb
    got = negvocab.sweep(img, idt, neg, "10,300", method="neglabel_eoe", groups=4, grouping="random", seed=1)
    for m in (10, 300):
        want = negvocab.score("neglabel_eoe", img, idt, neg[:m], groups=4, grouping="random", seed=1)
        np.testing.assert_array_equal(got[m], want)
    with pytest.raises(InputError, match="eoe: unexpected parameter"):
        negvocab.sweep(img, idt, neg, "10", method="eoe", groups=4)


def test_parse_sizes():
    assert parse_sizes("1000, 2k,500,1000") == [500, 1000, 2000]
    assert parse_sizes([3, 1]) == [1, 3]
    with pytest.raises(InputError, match="exceeds"):
        parse_sizes("10,20", m=15)
    assert parse_sizes("1.5k") == [1500] and parse_sizes("1.001k,2.003k") == [1001, 2003]
    for bad in ("10,abc", "10.5", "nan", "inf"):
        with pytest.raises(InputError, match="not an integer"):
            parse_sizes(bad)
    with pytest.raises(InputError, match=">= 1"):
        parse_sizes([0])
    with pytest.raises(InputError, match="no vocabulary sizes"):
        parse_sizes("")


def test_sweep_rejects_methods_without_negatives(emb):
    with pytest.raises(InputError, match="does not use negative"):
        negvocab.sweep(*emb, [5], method="mcm")


def test_neglabel_prefixes_equals_the_float64_formula(emb):
    from negvocab.scoring.scores import neglabel_prefixes

    img, idt, neg = ref.f64(*emb)
    got = neglabel_prefixes(img, idt, neg, [5, 120, 503], tau=0.02, groups=10, chunk_size=9)
    for m in (5, 120, 503):
        np.testing.assert_allclose(got[m], ref.neglabel(img, idt, neg[:m], tau=0.02, groups=10), atol=1e-12, rtol=0)
    from negvocab.scoring.scores import eoe_prefixes

    for bad in ([], [0], [504], [2.5], ["7"], [True]):
        for prefixes in (neglabel_prefixes, eoe_prefixes):
            with pytest.raises(InputError, match="prefix sizes must be integers"):
                prefixes(img, idt, neg, bad)
    assert list(eoe_prefixes(img, idt, neg, [np.int64(7)])) == [7]


def test_neglabel_eoe_sweep_at_extreme_logits_takes_the_exact_path_for_both_terms(emb, caplog, monkeypatch):
    import logging

    img, idt, neg = ref.f64(*emb)
    monkeypatch.setattr(eoe_mod, "_joint_max_probs", lambda *a, **k: pytest.fail("a second pass for the penalty"))
    with caplog.at_level(logging.INFO):
        got = negvocab.sweep(img, idt, neg, SIZES, method="neglabel_eoe", groups=8, tau=0.002, chunk_size=11)
    assert "float64 log-sum-exp path" in caplog.text
    for m in SIZES:
        want = ref.neglabel_eoe(img, idt, neg[:m], groups=8, tau=0.002)
        np.testing.assert_allclose(got[m], want, atol=1e-12, rtol=0, err_msg=f"M={m}")
