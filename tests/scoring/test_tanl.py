"""TANL equals its authors' code (tests/reference/tanl.py, a trimmed copy of YBZh/OpenOOD-VLM's
activated_neg_postprocessor.py) on one stream of random features: same order, same batches; every
score, every threshold and every batch's chosen negatives. A corpus of 300 random label embeddings
stands in for the ~70k WordNet words."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import tanl as T
from negvocab.scoring.stream import make_stream, run_stream
from tests.reference import tanl as ref

K, N, D = 20, 300, 16
ATOL = 1e-10  # float64 both sides; the kernel sums softmaxes in log space, theirs directly


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def world():
    """ID prompts, a corpus, noise features, and a stream of ID images (near the prompts) and OOD
    images (near some corpus labels), float64 and unit norm."""
    rng = np.random.default_rng(7)
    ids = _unit(rng.normal(size=(K, D)))
    corpus = _unit(rng.normal(size=(N, D)))
    noise = _unit(rng.normal(size=(15, D)) + 2.0 * rng.normal(size=(1, D)))  # noise images look alike
    id_img = _unit(ids[rng.integers(0, K, 70)] + 0.6 * rng.normal(size=(70, D)))
    ood_img = _unit(corpus[rng.integers(0, 40, 60)] + 0.6 * rng.normal(size=(60, D)))
    return {"ids": ids, "corpus": corpus, "noise": noise, "x": np.concatenate([id_img, ood_img])}


def _theirs(world, order, batch_size, *, beta, gamma, alpha, memleng, gap, seed, score_queue_len=20000):
    """Their postprocessor fed the same batches; returns scores (in stream order), thresholds, selections."""
    t = {k: torch.from_numpy(v) for k, v in world.items()}
    net = ref.Net(K, torch.cat([t["ids"], t["corpus"][:100]]).T, torch.cat([t["ids"], t["corpus"]]).T, t["noise"])
    pp = ref.ActivatedNegPostprocessor(
        {"beta": beta, "gamma": gamma, "alpha": alpha, "memleng": memleng, "gap": gap, "thres": 0.5,
         "in_score": "sum", "cossim": False}
    )  # fmt: skip
    pp.score_queue_len = score_queue_len
    x = t["x"][torch.from_numpy(order)]
    scores, thresholds, chosen = [], [], []
    torch.manual_seed(seed)  # their set-up draws its two permutations from torch's global generator
    for i in range(0, len(x), batch_size):
        scores.append(pp.postprocess(net, x[i : i + batch_size])[1])
        thresholds.append(pp.last_thres)
        chosen.append(pp.last_selected.numpy())
    return torch.cat(scores).numpy(), thresholds, chosen


CASES = [
    # beta, gamma, alpha, memleng, gap, batch
    (50, 1, 0.0, 12, 0.5, 16),  # their official.sh (alpha 0, gap 0.5), a queue shorter than K
    (50, 0, 0.0, 300, 0.5, 16),  # one softmax over the chosen negatives
    (47, 7, 0.3, 25, 0.2, 13),  # a step that does not divide beta; memory and batch mixed; ragged batches
    (300, 2, 1.0, 1000, 0.0, 32),  # the whole corpus chosen; the queues' mean alone (their tanl.yml's alpha)
]


@pytest.mark.parametrize(("beta", "gamma", "alpha", "memleng", "gap", "batch"), CASES)
def test_every_score_threshold_and_choice_equals_their_code(world, beta, gamma, alpha, memleng, gap, batch):
    seed = 3
    method = make_stream(
        "tanl", active_size=beta, prefix_step=gamma, memory_weight=alpha, queue_length=memleng,
        confidence_gap=gap, seed=seed,
    )  # fmt: skip
    method.setup(world["ids"], world["corpus"], noise_images=world["noise"])
    order = np.random.default_rng(11).permutation(len(world["x"]))
    want, thresholds, chosen = _theirs(
        world, order, batch, beta=beta, gamma=gamma, alpha=alpha, memleng=memleng, gap=gap, seed=seed
    )
    method.reset()
    got, got_thr = [], []
    for i in range(0, len(order), batch):
        x = world["x"][order[i : i + batch]]
        got.append(method.score_batch(x))
        got_thr.append(method.threshold)
    np.testing.assert_allclose(np.concatenate(got), want, atol=ATOL, rtol=0)
    assert got_thr == thresholds  # the same grid value, batch by batch
    assert len(set(thresholds)) > 1 or batch == 32  # the threshold adapts (a plausible constant would fail)
    assert len({tuple(c[:10]) for c in chosen}) > 1  # their choice of negatives moves with the stream


def test_the_chosen_negatives_are_theirs(world, monkeypatch):
    """The negatives of each batch's final score: recorded on both sides."""
    picked = []
    real = T.TANL._rank

    def spy(self, activation):
        out = real(self, activation)
        picked.append(out.numpy())
        return out

    monkeypatch.setattr(T.TANL, "_rank", spy)
    method = make_stream("tanl", active_size=40, queue_length=12, seed=5)
    method.setup(world["ids"], world["corpus"], noise_images=world["noise"])
    picked.clear()
    order = np.arange(len(world["x"]))
    res = run_stream(method, world["x"], stream_batch=16, order="given")
    _, _, chosen = _theirs(world, order, 16, beta=40, gamma=1, alpha=0.0, memleng=12, gap=0.5, seed=5)
    final = picked[1::2]  # the set-up ranked (reset reuses it); each batch ranks twice, the second for its score
    assert len(final) == len(chosen) == res.provenance["n_batches"]
    for a, b in zip(final, chosen, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_short_score_queue_is_cut_as_theirs(world, monkeypatch):
    monkeypatch.setattr(T, "SCORE_QUEUE_LENGTH", 40)
    method = make_stream("tanl", active_size=30, queue_length=12, seed=1)
    method.setup(world["ids"], world["corpus"], noise_images=world["noise"])
    order = np.random.default_rng(2).permutation(len(world["x"]))
    res = run_stream(method, world["x"][order], stream_batch=10, order="given")
    want, _, _ = _theirs(world, order, 10, beta=30, gamma=1, alpha=0.0, memleng=12, gap=0.5, seed=1, score_queue_len=40)
    np.testing.assert_allclose(res.scores, want, atol=ATOL, rtol=0)
    assert len(method.score_queue) == 40


def test_the_stream_order_matters_and_is_recorded(world):
    method = make_stream("tanl", active_size=40, queue_length=12)
    method.setup(world["ids"], world["corpus"], noise_images=world["noise"])
    a = run_stream(method, world["x"], stream_batch=16, order="shuffled", seed=0)
    b = run_stream(method, world["x"], stream_batch=16, order="shuffled", seed=1)
    again = run_stream(method, world["x"], stream_batch=16, order="shuffled", seed=0)
    np.testing.assert_array_equal(a.scores, again.scores)  # a fresh state each stream
    assert not np.allclose(a.scores, b.scores)
    assert a.provenance["order"] == "shuffled" and a.state["id_queue"] <= 12


@pytest.mark.parametrize("seed", [0, 1])
def test_best_threshold_equals_theirs(seed):
    rng = np.random.default_rng(seed)
    for scores in (
        np.concatenate([rng.beta(8, 2, 200), rng.beta(2, 8, 90)]),
        rng.uniform(0.3, 0.7, 50),
        np.array([0.42] * 5),  # every split empty on one side: all infinite, the middle of the grid
        np.array([0.1, 0.1, 0.9]),
    ):
        want = ref.find_best_threshold(torch.from_numpy(scores))
        assert T.best_threshold(scores) == want


@pytest.mark.parametrize(("m", "step"), [(30, 0), (30, 1), (30, 4), (30, 30), (30, 45), (1, 1)])
def test_activation_aware_equals_theirs(m, step):
    g = torch.Generator().manual_seed(m + step)
    z = 100 * (torch.rand(6, K + m, generator=g, dtype=torch.float64) * 2 - 1) * 0.3
    want = ref.activation_aware_score(z, K, m, step)
    got = T.activation_aware(z[:, :K], z[:, K:], step)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12, rtol=0)


def test_noise_pixels_are_their_noise_images():
    torch.manual_seed(9)
    want = ref.noise_images()
    state = torch.get_rng_state()
    got = T.noise_pixels(9)
    assert torch.equal(got, want) and got.shape == (15, 3, 224, 224)
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is left alone


def test_registered_as_a_stream_method_with_defaults():
    m = negvocab.get_method("tanl")
    assert m.kind == "stream" and m.needs_negatives
    method = make_stream("tanl")
    assert method.params == {
        "active_size": 1000, "prefix_step": 1, "memory_weight": 0.0, "queue_length": 300,
        "confidence_gap": 0.5, "tau": 0.01, "seed": 0,
    }  # fmt: skip


def test_user_errors_name_the_parameter(world):
    with pytest.raises(InputError, match="memory_weight"):
        make_stream("tanl", memory_weight=1.5)
    with pytest.raises(InputError, match="active_size"):
        make_stream("tanl", active_size=0)
    with pytest.raises(InputError, match="noise_images"):
        make_stream("tanl").setup(world["ids"], world["corpus"])
    with pytest.raises(InputError, match="batch method|stream"):
        negvocab.score("tanl", world["x"], world["ids"], world["corpus"])


@pytest.mark.parametrize("length", [1, 7, 30])
def test_the_activation_queue_holds_the_last_rows_and_their_mean(length):
    """The ring buffer against the plain queue ``torch.cat([q, rows])[-length:]`` over pushes of every
    size (none, fewer than free, more than the queue holds), its running mean against that queue's mean."""
    gen = torch.Generator().manual_seed(length)
    plain = torch.rand(3, 5, dtype=torch.float64, generator=gen)
    queue = T.ActivationQueue(plain, length)
    plain = plain[-length:]
    for r in [0, 2, 5, 1, 40, 3, 0, 9, 12, 2, 31, 4] * 3:
        rows = torch.rand(r, 5, dtype=torch.float64, generator=gen)
        queue.push(rows, rows.sum(0) if r % 2 else None)
        plain = torch.cat([plain, rows])[-length:]
        assert len(queue) == len(plain)
        held = queue.rows[: len(queue)]
        assert sorted(map(tuple, held.tolist())) == sorted(map(tuple, plain.tolist()))
        torch.testing.assert_close(queue.mean(), plain.mean(0), rtol=0, atol=1e-14)


def test_best_threshold_equals_theirs_on_queues_with_ties():
    """Scores on the grid and repeated values (splits of equal criterion: the tie rule decides)."""
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 60, 333):
        for scores in (np.round(rng.random(n), 2), np.round(rng.beta(2, 5, n), 1), rng.random(n)):
            assert T.best_threshold(scores) == ref.find_best_threshold(torch.from_numpy(scores))
