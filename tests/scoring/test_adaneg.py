"""AdaNeg equals its authors' code (tests/reference/adaneg.py, their postprocess run here) on one stream.

The same features, the same order, the same batches: negvocab's ``AdaNeg`` through ``run_stream`` and
their ``TTAPromptPostprocessor_noadagap.postprocess`` fed the batches of ``run_stream``'s order. In
float64 every score agrees to 1e-10 and the memories hold the same rows; in float32 (their dtype)
to 2e-5. The stream is built so that both gates fire and full slots are replaced.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from negvocab.core.errors import InputError
from negvocab.scoring.stream import make_stream, run_stream, stream_order
from tests.reference.adaneg import TTAPromptPostprocessor_noadagap

K, M, D = 6, 37, 12  # 37 negatives in 5 groups: their code drops the last 2


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    ids, negs = _unit(rng.normal(size=(K, D))), _unit(rng.normal(size=(M, D)))
    noise = np.repeat([[0.35], [0.9]], 20, axis=0)  # near one-hot and spread ID softmaxes (entropy ~0 and > 0)
    id_imgs = ids[rng.integers(0, K, 40)] + noise * rng.normal(size=(40, D))
    ood_imgs = negs[rng.integers(0, 6, 30)] + 0.6 * rng.normal(size=(30, D))  # a few negatives: their slots fill
    mixed = rng.normal(size=(10, D))  # between the gates
    return ids, negs, _unit(np.concatenate([id_imgs, ood_imgs, mixed]))


def _theirs(ids, negs, imgs, perm, batch_size, dtype, scale=100.0, **kw):
    """Their postprocess over the stream ``imgs[perm]`` in batches; scores back in row order, and the processor."""
    pp = TTAPromptPostprocessor_noadagap(K, **kw)
    text = torch.as_tensor(np.concatenate([ids, negs]), dtype=dtype)
    x = torch.as_tensor(imgs[perm], dtype=dtype)
    with torch.random.fork_rng():  # their code seeds torch's global generator per batch
        conf = torch.cat([pp.postprocess(x[i : i + batch_size], text, scale)[1] for i in range(0, len(x), batch_size)])
    out = np.empty(len(perm))
    out[perm] = conf.double().numpy()
    return out, pp


CASES = [  # (negvocab's params, theirs)
    ({}, {"memleng": 3}),
    ({"adaneg_proxies": "sample"}, {"memleng": 3, "samada": True}),
    ({"adaneg_score": "adaptive", "adaneg_beta": 2.0}, {"memleng": 3, "in_score": "adaonly", "beta": 2}),
    ({"adaneg_score": "vanilla"}, {"memleng": 3, "in_score": "vanillaonly"}),
    ({"adaneg_score": "multiply", "adaneg_proxies": "sample"}, {"memleng": 3, "in_score": "multiply", "samada": True}),
    ({"adaneg_threshold": 0.4, "adaneg_gap": 0.3, "adaneg_lambda": 0.7, "adaneg_groups": 3},
     {"memleng": 3, "thres": 0.4, "gap": 0.3, "lambdaval": 0.7, "group_num": 3}),
    ({"tau": 0.1, "adaneg_proxies": "sample"}, {"memleng": 3, "samada": True, "scale": 10.0}),  # spread softmaxes
]  # fmt: skip


@pytest.mark.parametrize(("ours", "theirs"), CASES)
def test_every_score_equals_their_code_in_float64(data, ours, theirs):
    ids, negs, imgs = data
    m = make_stream("adaneg", adaneg_memory=3, **ours).setup(ids, negs)
    res = run_stream(m, imgs, stream_batch=7, order="shuffled", seed=5)
    expected, pp = _theirs(ids, negs, imgs, stream_order(len(imgs), seed=5), 7, torch.float64, **theirs)
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-10)
    # the same memory: the same rows in the same slots, the same entropies
    np.testing.assert_allclose(m.by_class(m.memory).numpy(), pp.feat_memory.numpy(), rtol=0, atol=0)
    np.testing.assert_array_equal(m.by_class(m.entropy), pp.entropy_memory.numpy())
    np.testing.assert_array_equal(m.by_class(m.filled), pp.indice_memory.numpy().astype(np.int64))


def test_the_stream_exercises_both_gates_and_replacement(data):
    ids, negs, imgs = data
    for tau in (0.01, 0.1):
        m = make_stream("adaneg", adaneg_memory=3, tau=tau).setup(ids, negs)
        st = run_stream(m, imgs, stream_batch=7, seed=5).state
        assert st["written"]["id"] > 0 and st["written"]["ood"] > 0 and st["replaced"]["id"] > 0
        assert st["replaced"]["ood"] > 0 or tau == 0.1
    entropy = m.by_class(m.entropy)
    assert (entropy[:K] > 1e-3).any() and (entropy[K:] > 1e-3).any()  # at tau 0.1 real entropies are compared
    # their last slot is never filled: 2 images per class at most with memleng 3
    assert st["memory_id_images"] <= 2 * K and st["memory_ood_images"] <= 2 * M


def test_plausible_wrong_orders_give_other_scores(data):
    """Scoring a batch before writing it into the memory, or another stream order, changes the scores."""
    ids, negs, imgs = data
    perm = stream_order(len(imgs), seed=5)
    m = make_stream("adaneg", adaneg_memory=3).setup(ids, negs)
    right = run_stream(m, imgs, stream_batch=7, seed=5).scores

    class ScoreFirst(type(m)):
        def step(self, x):
            import torch as t

            x = t.as_tensor(x)
            logits = 100.0 * x @ self.text.T
            vanilla = self._grouped(logits)
            out = self._grouped(100.0 * self._proxy_cosines(x)) + 0.1 * vanilla
            self._update(x, logits, vanilla)
            return out

    wrong = run_stream(ScoreFirst(**m.params).setup(ids, negs), imgs, stream_batch=7, seed=5).scores
    assert np.abs(wrong - right).max() > 1e-3
    other = run_stream(m, imgs, stream_batch=7, seed=6).scores
    assert np.abs(other - right).max() > 1e-3
    expected, _ = _theirs(ids, negs, imgs, perm, 7, torch.float64, memleng=3)
    np.testing.assert_allclose(right, expected, rtol=0, atol=1e-10)


def test_float32_features_follow_their_float32_run(data):
    ids, negs, imgs = data
    ids32, negs32, imgs32 = (a.astype(np.float32) for a in (ids, negs, imgs))
    for ours, theirs in CASES[:2]:
        m = make_stream("adaneg", adaneg_memory=3, **ours).setup(ids32, negs32)
        res = run_stream(m, imgs32, stream_batch=7, seed=5)
        expected, pp = _theirs(ids32, negs32, imgs32, stream_order(len(imgs), seed=5), 7, torch.float32, **theirs)
        np.testing.assert_allclose(res.scores, expected, rtol=0, atol=2e-5)
        np.testing.assert_array_equal(m.by_class(m.filled), pp.indice_memory.numpy().astype(np.int64))


def test_defaults_are_their_imagenet_script_and_bad_values_are_one_line():
    m = make_stream("adaneg")
    p = m.params
    assert (p["adaneg_groups"], p["adaneg_memory"], p["adaneg_threshold"], p["adaneg_gap"]) == (5, 10, 0.5, 0.5)
    assert (p["adaneg_lambda"], p["adaneg_beta"], p["adaneg_proxies"], p["adaneg_score"]) == (
        0.1,
        5.0,
        "task",
        "combine",
    )
    assert (p["tau"], p["seed"]) == (0.01, 0)
    with pytest.raises(InputError, match="adaneg_proxies"):
        make_stream("adaneg", adaneg_proxies="both")
    with pytest.raises(InputError, match="neg_emb"):
        make_stream("adaneg").setup(np.eye(3))


def test_a_reset_after_a_stream_is_a_fresh_memory(data):
    """A reset restores only the classes a stream wrote: the next stream scores as on a new instance."""
    ids, negs, imgs = data
    for proxies in ("task", "sample"):
        m = make_stream("adaneg", adaneg_memory=3, adaneg_proxies=proxies).setup(ids, negs)
        run_stream(m, imgs, stream_batch=7, seed=6)
        assert (m.filled > 1).any()  # the first stream wrote
        again = run_stream(m, imgs, stream_batch=7, seed=5).scores
        fresh = make_stream("adaneg", adaneg_memory=3, adaneg_proxies=proxies).setup(ids, negs)
        np.testing.assert_array_equal(again, run_stream(fresh, imgs, stream_batch=7, seed=5).scores)
        np.testing.assert_array_equal(m.memory.numpy(), fresh.memory.numpy())
