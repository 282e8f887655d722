"""The logit baselines MSP, MaxLogit, Energy and GEN: against float64 formulas and against pytorch-ood's
own detectors on the same logits (the anchor; pytorch-ood returns outlier scores, the negative of ours)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import logits as L
from tests.scoring import reference as ref


@pytest.fixture
def emb():
    rng = np.random.default_rng(3)
    return ref.unit(rng, 40, 16), ref.unit(rng, 7, 16)


@pytest.mark.parametrize("method", ["msp", "maxlogit", "energy", "gen"])
@pytest.mark.parametrize("scale", [100.0, 12.5])
def test_baselines_match_float64_formulas(emb, method, scale):
    img, idt = emb
    got = negvocab.score(method, img, idt, logit_scale=scale)
    assert got.dtype == np.float64 and got.shape == (40,)
    np.testing.assert_allclose(got, getattr(ref, method)(img, idt, scale), rtol=2e-5, atol=1e-6)


def test_the_default_is_clips_logit_scale_and_chunks_change_nothing(emb):
    img, idt = emb
    for m in ("msp", "maxlogit", "energy", "gen"):
        np.testing.assert_array_equal(negvocab.score(m, img, idt), negvocab.score(m, img, idt, logit_scale=100.0))
        np.testing.assert_allclose(negvocab.score(m, img, idt, chunk_size=3), negvocab.score(m, img, idt), rtol=1e-6)


def test_gen_top_classes_and_gamma(emb):
    img, idt = emb
    np.testing.assert_allclose(
        negvocab.score("gen", img, idt, gamma=0.5, top_classes=3),
        ref.gen(img, idt, 100.0, 0.5, 3),
        rtol=2e-5,
        atol=1e-7,
    )
    # more classes than there are: all K
    np.testing.assert_array_equal(
        negvocab.score("gen", img, idt, top_classes=1000), negvocab.score("gen", img, idt, top_classes=7)
    )


def test_msp_at_scale_one_over_t_is_mcm_at_t(emb):
    img, idt = emb
    np.testing.assert_allclose(
        negvocab.score("msp", img, idt, logit_scale=2.0), negvocab.score("mcm", img, idt, T=0.5), rtol=1e-6
    )


@pytest.mark.parametrize(("params", "message"), [
    ({"logit_scale": 0.0}, "logit_scale must be a positive number, got 0.0"),
    ({"gamma": -1.0}, "gamma must be a positive number, got -1.0"),
    ({"top_classes": 0}, "top_classes must be >= 1, got 0"),
    ({"T": 1.0}, "gen: unexpected parameter(s) T"),
])  # fmt: skip
def test_bad_parameters_are_refused_at_the_boundary(emb, params, message):
    img, idt = emb
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        negvocab.score("gen", img, idt, **params)


def test_the_kernels_check_their_own_limits(emb):
    img, idt = emb
    with pytest.raises(InputError, match="top_classes must be an integer >= 1, got 2.5"):
        L.gen(img, idt, top_classes=2.5)


def _logits64(img, idt, scale):
    return torch.from_numpy(scale * (img.astype(np.float64) @ idt.astype(np.float64).T))


def test_pytorch_ood_anchor_on_the_same_logits(emb):
    """pytorch-ood 0.4.0's MaxSoftmax, MaxLogit and EnergyBased on the logits s x cosine, negated."""
    det = pytest.importorskip("pytorch_ood.detector")
    img, idt = emb
    for scale in (100.0, 7.0):
        z = _logits64(img, idt, scale)
        np.testing.assert_allclose(
            negvocab.score("msp", img, idt, logit_scale=scale),
            -det.MaxSoftmax(None).predict_logits(z).numpy(),
            rtol=1e-5,
            atol=1e-7,
        )
        np.testing.assert_allclose(
            negvocab.score("maxlogit", img, idt, logit_scale=scale),
            -det.MaxLogit(None).predict_logits(z).numpy(),
            rtol=1e-5,
        )
        np.testing.assert_allclose(
            negvocab.score("energy", img, idt, logit_scale=scale),
            -det.EnergyBased(None).predict_logits(z).numpy(),
            rtol=1e-5,
        )
    # a temperature t on the logits (pytorch-ood's MaxSoftmax(t)) is our logit scale 100 / t
    z = _logits64(img, idt, 100.0)
    np.testing.assert_allclose(
        negvocab.score("msp", img, idt, logit_scale=100.0 / 4),
        -det.MaxSoftmax(None, t=4.0).predict_logits(z).numpy(),
        rtol=1e-5,
        atol=1e-7,
    )


def test_pytorch_ood_gen_anchor_up_to_its_mean_and_clamp(emb):
    """pytorch-ood's GEN averages over the M terms (ours sums, as the paper and OpenOOD) and clamps p
    to [1e-7, 1 - 1e-7]: on logits where no probability reaches the clamp, ours = -M x theirs."""
    det = pytest.importorskip("pytorch_ood.detector")
    img, idt = emb
    scale, m = 4.0, 5  # |logit differences| <= 8: every p > e^-8 / 7 > 1e-7
    z = _logits64(img, idt, scale)
    assert float(z.softmax(1).min()) > 1e-7 and float(z.softmax(1).max()) < 1 - 1e-7
    theirs = det.GEN(None, gamma=0.1, M=m).predict_logits(z).numpy()
    np.testing.assert_allclose(
        negvocab.score("gen", img, idt, logit_scale=scale, top_classes=m), -m * theirs, rtol=1e-5
    )


def test_msp_does_not_saturate_where_the_float64_formula_orders_the_images():
    """Issue 34: at logit scale 100, 44 of 300 images scored exactly 1.0 (a float32 softmax)."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal(32)  # ID prompts close to one another, as CLIP's are
    idt = base / np.linalg.norm(base) + 0.5 * rng.standard_normal((10, 32)) / np.sqrt(32)
    idt /= np.linalg.norm(idt, axis=1, keepdims=True)
    img = idt[rng.integers(0, 10, 300)] + 0.3 * rng.standard_normal((300, 32)) / np.sqrt(32)
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    img, idt = img.astype(np.float32), idt.astype(np.float32)
    z = 100.0 * (img.astype(np.float64) @ idt.astype(np.float64).T)
    want = np.exp(z.max(1) - (z.max(1) + np.log(np.exp(z - z.max(1, keepdims=True)).sum(1))))
    got = negvocab.score("msp", img, idt, logit_scale=100.0)
    assert len(np.unique(want)) == 300 and (want > 1 - 1e-6).sum() > 40  # many near 1, all distinct (float32: 34)
    assert len(np.unique(got)) == 300
    np.testing.assert_array_equal(np.argsort(got), np.argsort(want))
    np.testing.assert_allclose(got, want, rtol=1e-6)
