"""grouping="neglabel" against a direct transcription of NegLabel's released grouping code
(XueJiang16/NegLabel, mmcls/models/ood/clip_ood.py, ScalableClassifier.grouping)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.scoring import scores as S
from tests.scoring import reference as ref

ATOL = 1e-6


def released_grouping(
    pos: torch.Tensor, neg: torch.Tensor, ngroup: int, t: float = 1.0, device: str = "cpu"
) -> torch.Tensor:
    """NegLabel's ``grouping(pos, neg, num=None, ngroup, random_permute=True)``, line by line; pos/neg
    are ``100 * cos`` logits (their CLIP logit scale) and ``t`` their temperature."""
    group = ngroup
    drop = neg.shape[1] % ngroup
    if drop > 0:
        neg = neg[:, :-drop]
    with torch.random.fork_rng(devices=[] if device == "cpu" else [torch.device(device)]):
        torch.manual_seed(0)
        idx = torch.randperm(neg.shape[1], device=device)
    neg = neg.T
    negs = neg[idx].T.reshape(pos.shape[0], group, -1).contiguous()
    scores = []
    for i in range(group):
        full_sim = torch.cat([pos, negs[:, i, :]], dim=-1) / t
        full_sim = full_sim.softmax(dim=-1)
        scores.append(full_sim[:, : pos.shape[1]].sum(dim=-1).unsqueeze(-1))
    return torch.cat(scores, dim=-1).mean(dim=-1)


@pytest.fixture(scope="module")
def emb():
    rng = np.random.default_rng(4)
    return {"img": ref.unit(rng, 30, 24), "id": ref.unit(rng, 12, 24), "neg": ref.unit(rng, 230, 24)}


def _logits(emb, m):
    img, idt, neg = (torch.from_numpy(x).double() for x in ref.f64(emb["img"], emb["id"], emb["neg"][:m]))
    return 100 * img @ idt.T, 100 * img @ neg.T


@pytest.mark.parametrize(("m", "groups"), [(200, 10), (200, 8), (230, 10), (230, 7), (97, 97), (5, 1)])
def test_matches_released_code(emb, m, groups):
    """M divisible by G (nothing dropped) and not (the last M mod G labels dropped)."""
    pos, neg = _logits(emb, m)
    want = released_grouping(pos, neg, groups).numpy()
    got = negvocab.score(
        "neglabel", emb["img"], emb["id"], emb["neg"][:m], groups=groups, grouping="neglabel", device="cpu"
    )
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)


def test_dropped_labels_do_not_count(emb):
    """With 230 labels and G = 7 the last 230 % 7 = 6 labels are dropped: changing them changes nothing."""
    neg = emb["neg"].copy()
    a = negvocab.score("neglabel", emb["img"], emb["id"], neg, groups=7, grouping="neglabel")
    neg[-6:] = neg[:6]
    b = negvocab.score("neglabel", emb["img"], emb["id"], neg, groups=7, grouping="neglabel")
    np.testing.assert_array_equal(a, b)
    neg[-7] = neg[0]  # the last kept label does count
    c = negvocab.score("neglabel", emb["img"], emb["id"], neg, groups=7, grouping="neglabel")
    assert not np.allclose(a, c, atol=1e-9)


def test_groups_are_the_seeded_torch_permutation():
    groups = S.neglabel_groups(23, 5, "neglabel", seed=0)
    assert [len(g) for g in groups] == [4] * 5
    gen = torch.Generator().manual_seed(0)
    np.testing.assert_array_equal(np.concatenate(groups), torch.randperm(20, generator=gen).numpy())
    other = S.neglabel_groups(23, 5, "neglabel", seed=1)
    assert not np.array_equal(np.concatenate(groups), np.concatenate(other))


def test_scoring_leaves_torch_global_rng_alone(emb):
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="neglabel")
    np.testing.assert_array_equal(torch.rand(3).numpy(), before.numpy())


def test_sweep_scores_each_size_as_score(emb):
    got = negvocab.sweep(emb["img"], emb["id"], emb["neg"], [40, 101, 230], groups=7, grouping="neglabel")
    for m, s in got.items():
        pos, neg = _logits(emb, m)
        np.testing.assert_allclose(s, released_grouping(pos, neg, 7).numpy(), atol=ATOL, rtol=0)


def test_neglabel_eoe_penalty_sees_every_negative(emb):
    """NegLabel+EOE: the grouped term as released, the EOE penalty over all M (dropped ones too)."""
    got = negvocab.score("neglabel_eoe", emb["img"], emb["id"], emb["neg"], groups=7, grouping="neglabel", beta=0.5)
    pos, neg = _logits(emb, 230)
    p = torch.cat([pos, neg], 1).softmax(-1)[:, pos.shape[1] :].amax(1)
    want = released_grouping(pos, neg, 7) - 0.5 * p
    np.testing.assert_allclose(got, want.numpy(), atol=1e-5, rtol=0)  # the penalty runs in float32


def test_topk_with_every_kept_negative_is_exact(emb):
    res = negvocab.score(
        "neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="neglabel", topk=224, return_bounds=True
    )
    exact = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="neglabel")
    np.testing.assert_allclose(res.scores, exact, atol=ATOL, rtol=0)
    np.testing.assert_allclose(res.lower, exact, atol=ATOL, rtol=0)


@pytest.mark.gpu
def test_cuda_permutation_matches_released_code_on_cuda(emb):
    """On a GPU the permutation comes from the CUDA generator, as in NegLabel's runs."""
    pos, neg = (x.cuda() for x in _logits(emb, 230))
    want = released_grouping(pos, neg, 7, device="cuda").cpu().numpy()
    got = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="neglabel", device="cuda")
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)
