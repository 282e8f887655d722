"""OODD equals its authors' code (tests/reference/oodd.py, a line-by-line re-implementation of
zxk1212/OODD's MCM and NegLabel loops) on one stream of random features whose raw norms vary by
+-20% (their code normalises them; negvocab takes them unit-norm, as its encoders give them): same
order, same batches, every score. The NegLabel base saturates at 1 on some ID images here, so equal
scores leave the dictionary: their heap's order is checked too."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring.stream import make_stream, run_stream
from tests.reference import oodd as ref

K, M, D = 12, 90, 16
ATOL = 1e-5


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _raw(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """``x`` with each row's norm scaled by a factor in [0.8, 1.2]: raw CLIP features vary so."""
    return x * rng.uniform(0.8, 1.2, size=(len(x), 1))


@pytest.fixture(scope="module")
def world():
    """Raw ID prompts, negatives, ID images (near the prompts) and OOD images (near some negatives)."""
    rng = np.random.default_rng(5)
    ids, negs = rng.normal(size=(K, D)), rng.normal(size=(M, D))
    id_img = _unit(ids[rng.integers(0, K, 80)]) + 0.5 * rng.normal(size=(80, D)) / np.sqrt(D)
    ood_img = _unit(negs[rng.integers(0, 30, 70)]) + 0.5 * rng.normal(size=(70, D)) / np.sqrt(D)
    return {k: _raw(rng, v) for k, v in {"ids": ids, "negs": negs, "id": id_img, "ood": ood_img}.items()}


def _ours(world, base, perm, batch, **params):
    method = make_stream("oodd", oodd_base=base, **params)
    method.setup(_unit(world["ids"]), _unit(world["negs"]))
    x = _unit(np.concatenate([world["id"], world["ood"]]))
    method.reset()
    return np.concatenate([method.score_batch(x[perm[i : i + batch]]) for i in range(0, len(perm), batch)])


CASES = [  # queue size, k, stream batch
    (2048, 5, 64),  # their settings: the queue never fills on this stream
    (40, 5, 16),  # a queue that fills and evicts
    (25, 3, 13),  # ragged batches, another k
]


@pytest.mark.parametrize(("queue", "k", "batch"), CASES)
def test_mcm_variant_equals_their_code(world, queue, k, batch):
    perm = np.random.default_rng(110).permutation(150)
    id_score, id_feat = ref.mcm_scores_and_features(world["id"], world["ids"])
    out_score, out_feat = ref.mcm_scores_and_features(world["ood"], world["ids"])
    want = ref.oodd_loop(id_feat, out_feat, id_score, out_score, perm, batch, queue, k, negate=True)
    got = _ours(world, "mcm", perm, batch, oodd_queue=queue, oodd_k=k, T=1.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


@pytest.mark.parametrize(("queue", "k", "batch"), CASES)
def test_neglabel_variant_equals_their_code(world, queue, k, batch):
    perm = np.random.default_rng(3).permutation(150)
    groups = 4
    id_score, id_feat = ref.neglabel_scores_and_features(world["id"], world["ids"], world["negs"], groups)
    out_score, out_feat = ref.neglabel_scores_and_features(world["ood"], world["ids"], world["negs"], groups)
    assert len(np.unique(id_score)) < len(id_score)  # saturated ID scores tie: the heap's order must be theirs
    want = ref.oodd_loop(id_feat, out_feat, id_score, out_score, perm, batch, queue, k)
    got = _ours(
        world, "neglabel", perm, batch, oodd_queue=queue, oodd_k=k, tau=0.01, groups=groups, grouping="neglabel", seed=0
    )
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)


def test_the_dictionary_changes_the_base_score(world):
    """A plausible wrong OODD (the base score alone, or the dictionary never filled) fails: the
    dictionary's term moves every score, and more for OOD images (they resemble the dictionary)."""
    perm = np.random.default_rng(0).permutation(150)
    got = _ours(world, "mcm", perm, 16, oodd_queue=40, oodd_k=5)
    x = _unit(np.concatenate([world["id"], world["ood"]]))[perm]
    base = negvocab.score("mcm", x, _unit(world["ids"]), T=1.0)
    shift = base - got
    is_ood = perm >= 80
    assert shift[is_ood].mean() > shift[~is_ood].mean()


def test_queue_keeps_the_lowest_scores(world):
    """After a stream the queue holds the ``oodd_queue`` lowest base scores seen (a by-hand sort)."""
    x = _unit(np.concatenate([world["id"], world["ood"]]))
    method = make_stream("oodd", oodd_base="mcm", oodd_queue=30).setup(_unit(world["ids"]))
    run_stream(method, x, stream_batch=20, order="given")
    base = negvocab.score("mcm", x, _unit(world["ids"]))
    np.testing.assert_allclose(np.sort(method.queue_scores), np.sort(base)[:30], rtol=0, atol=1e-12)
    assert method.state_dict()["queue"] == 30


def test_a_first_batch_smaller_than_k_uses_the_smallest_cosine(world):
    """Their torch.kthvalue stops there; negvocab takes the queue's smallest cosine."""
    x = _unit(world["id"][:3])
    method = make_stream("oodd", oodd_base="mcm", oodd_k=5).setup(_unit(world["ids"]))
    got = method.score_batch(x)
    want = negvocab.score("mcm", x, _unit(world["ids"])) - (x @ x.T).min(axis=1)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_registered_as_a_stream_method_with_defaults():
    m = negvocab.get_method("oodd")
    assert m.kind == "stream" and m.needs_negatives
    assert {"oodd_queue", "oodd_k", "oodd_base"} <= set(m.params)
    method = make_stream("oodd")
    assert (method.params["oodd_queue"], method.params["oodd_k"], method.params["oodd_base"]) == (2048, 5, "neglabel")


def test_user_errors_name_the_parameter(world):
    with pytest.raises(InputError, match="oodd_base"):
        make_stream("oodd", oodd_base="energy")
    with pytest.raises(InputError, match="oodd_k"):
        make_stream("oodd", oodd_k=0)
    with pytest.raises(InputError, match="neg_emb"):
        make_stream("oodd").setup(_unit(world["ids"]))
