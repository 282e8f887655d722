"""One detector protocol: a batch method's detector equals negvocab.score batch after batch (a float64
sum over the same matrices), a test-time method's detector is its StreamMethod, and the input registry
makes, refuses and declares inputs in one line."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring.detector import BatchDetector, make_detector
from negvocab.scoring.methods import list_methods
from negvocab.scoring.providers import (
    INPUT_PROVIDERS,
    InputContext,
    get_input,
    image_inputs,
    list_inputs,
    register_input,
    setup_inputs,
)
from negvocab.scoring.stream import StreamMethod, run_stream

RNG = np.random.default_rng(3)


def unit(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)  # float64: batching changes no more than the last bits


Z, T, N = (unit(RNG.normal(size=(k, 16))) for k in (9, 4, 30))
LOCAL = unit(RNG.normal(size=(9, 5, 16)))


@pytest.mark.parametrize("method", [m for m in list_methods(kind="batch") if m != "negrefine"])
def test_a_batch_methods_detector_scores_each_batch_as_score_does(method):
    local = {"local": LOCAL} if image_inputs(negvocab.get_method(method).inputs) else {}
    det = make_detector(method).setup(T, N)
    assert not det.stateful and isinstance(det, StreamMethod)
    cuts = [(0, 4), (4, 5), (5, 9)]
    got = np.concatenate([det.score_batch(Z[a:b], **{k: v[a:b] for k, v in local.items()}) for a, b in cuts])
    want = negvocab.score(method, Z, T, N, **local)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    det.reset()  # nothing to forget: the same batch scores the same again
    again = det.score_batch(Z[:4], **{k: v[:4] for k, v in local.items()})
    np.testing.assert_array_equal(again, got[:4])


def test_a_batch_detector_takes_the_methods_parameters_and_refuses_others():
    det = make_detector("neglabel", {"groups": 3}, tau=0.5).setup(T, N)
    np.testing.assert_allclose(det.score_batch(Z), negvocab.score("neglabel", Z, T, N, groups=3, tau=0.5), atol=1e-12)
    assert not np.allclose(det.score_batch(Z), negvocab.score("neglabel", Z, T, N))  # the parameters count
    with pytest.raises(InputError, match="unexpected parameter.*beta"):
        make_detector("neglabel", beta=1.0)
    with pytest.raises(InputError, match="glmcm needs the per-image input.*local"):
        make_detector("glmcm").setup(T).score_batch(Z)
    with pytest.raises(InputError, match="adaneg is a stream method"):
        BatchDetector("adaneg")


def test_a_top_k_detector_keeps_the_certified_bounds_of_its_last_batch():
    det = make_detector("neglabel", topk=6).setup(T, N)
    assert det.bounds is None
    got = det.score_batch(Z)
    want = negvocab.score("neglabel", Z, T, N, topk=6, return_bounds=True)
    np.testing.assert_array_equal(got, want.scores)
    np.testing.assert_array_equal(det.bounds.lower, want.lower)
    assert not np.array_equal(got, negvocab.score("neglabel", Z, T, N))  # 6 of 30 negatives: an estimate
    det.score_batch(Z[:2])
    assert det.bounds.lower.shape == (2,)  # the last batch's


def test_a_test_time_methods_detector_is_its_stream_method():
    det = make_detector("adaneg", adaneg_memory=3).setup(T, N)
    assert det.stateful and det.name == "adaneg" and det.params["adaneg_memory"] == 3
    ref = negvocab.make_stream("adaneg", adaneg_memory=3).setup(T, N)
    want = run_stream(ref, Z, stream_batch=3, order="given").scores
    det.reset()
    got = np.concatenate([det.score_batch(Z[i : i + 3]) for i in range(0, 9, 3)])
    np.testing.assert_array_equal(got, want)


def test_the_input_registry_declares_makes_and_refuses():
    assert get_input("local").per_image and not get_input("noise_images").per_image
    assert image_inputs(["pair_texts", "local"]) == ["local"]
    made = []
    register_input("toy_prior", "a toy set-up input", make=lambda ctx: made.append(ctx.params) or np.ones((2, 3)))
    register_input("toy_given", "a toy input the caller passes")
    try:
        ctx = InputContext(vlm=None, params={"seed": 4})
        out = setup_inputs(["toy_prior", "local"], ctx)
        assert list(out) == ["toy_prior"] and made == [{"seed": 4}]  # per-image inputs are not made at set-up
        assert setup_inputs(["toy_prior"], ctx, {"toy_prior": "mine"}) == {"toy_prior": "mine"}  # given wins
        assert setup_inputs(["toy_prior"], None) == {}  # no model: nothing made
        with pytest.raises(InputError, match="m needs the set-up input.*toy_given.*pass them"):
            setup_inputs(["toy_given"], ctx, method="m")
        with pytest.raises(InputError, match="per-image input comes with the images"):
            register_input("toy_bad", "x", per_image=True, make=lambda ctx: None)
        with pytest.raises(InputError, match="must be written 'package.module:name'"):
            register_input("toy_bad", "x", make="nomodule")
        with pytest.raises(InputError, match="toy_bad.*does not import"):
            register_input("toy_bad", "x", make="no_such_module_here:fn")
        assert "toy_bad" not in list_inputs()  # a refused declaration leaves nothing behind
        with pytest.raises(InputError, match="unknown method input 'nope'"):
            get_input("nope")
    finally:
        INPUT_PROVIDERS.unregister("toy_prior")
        INPUT_PROVIDERS.unregister("toy_given")
