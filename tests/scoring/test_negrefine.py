"""NegRefine's score (negvocab.scoring.negrefine) equals NegRefine's own ``detection_score`` on identical
random embeddings, every image, with their code run in float64 (tests/reference/negrefine.py)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring.methods import get_method
from negvocab.scoring.negrefine import multi_matching
from negvocab.vlm.templates import resolve_templates
from tests.reference import negrefine as ref

D, C, M, N = 16, 8, 230, 7  # M >= 100: their grouping cuts 100 groups (and drops M mod 100 = 30)


def _unit(a):
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _text_vector(text: str) -> np.ndarray:
    """A fixed random unit vector per text: the stand-in for the text encoder, the same for both codes."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return _unit(np.random.default_rng(seed).normal(size=D))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    id_names = [f"class {i}" for i in range(C)]
    neg_labels = [f"negative {j}" for j in range(M)]
    id_emb = _unit(rng.normal(size=(C, D)))
    neg_emb = _unit(rng.normal(size=(M, D)))
    # images near an ID class, near a negative, or near a pair text: every branch of the max is taken
    img = rng.normal(size=(N, D))
    img[:2] += 3 * id_emb[:2]
    img[2:4] += 3 * neg_emb[:2]
    img[4] += 4 * _text_vector("class 1 and negative 5")
    return id_names, neg_labels, id_emb, neg_emb, _unit(img)


def _pair_texts(id_names, neg_labels):
    return lambda ids, negs: np.stack(
        [_text_vector(f"{id_names[i]} and {neg_labels[j]}") for i, j in zip(ids, negs, strict=True)]
    )


def _theirs(id_names, neg_labels, id_emb, neg_emb, img, k_pos=5, k_neg=5):
    embed = lambda texts: torch.from_numpy(np.stack([_text_vector(t) for t in texts]))  # noqa: E731
    model = ref.CLIPood(torch.from_numpy(id_emb), torch.from_numpy(neg_emb), id_names, neg_labels, embed)
    model.k_pos, model.k_neg = min(k_pos, len(id_names)), k_neg
    return np.array([model.detection_score(torch.from_numpy(img[i : i + 1])) for i in range(len(img))])


def test_negrefine_equals_their_detection_score_every_image(data):
    id_names, neg_labels, id_emb, neg_emb, img = data
    theirs = _theirs(*data)
    ours = negvocab.score(
        "negrefine", img, id_emb, neg_emb, pair_texts=_pair_texts(id_names, neg_labels), grouping="neglabel"
    )
    assert ours.dtype == np.float64 and ours.shape == (N,)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    # the multi-matching term moves the score: without it, it is NegLabel's (a plausible wrong answer fails)
    base = negvocab.score("neglabel", img, id_emb, neg_emb, grouping="neglabel")
    assert (np.abs(theirs - base) > 1e-2).sum() >= 2  # the pair-text image and another
    np.testing.assert_allclose(
        negvocab.score("negrefine", img, id_emb, neg_emb, pair_texts=_pair_texts(id_names, neg_labels),
                       grouping="neglabel", mm_weight=0.0),
        base, rtol=0, atol=1e-12,
    )  # fmt: skip


def test_other_k_and_chunks_equal_theirs(data):
    id_names, neg_labels, id_emb, neg_emb, img = data
    theirs = _theirs(*data, k_pos=3, k_neg=2)
    ours = negvocab.score(
        "negrefine", img, id_emb, neg_emb, pair_texts=_pair_texts(id_names, neg_labels),
        grouping="neglabel", mm_k_id=3, mm_k_neg=2, chunk_size=2,
    )  # fmt: skip
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


def test_each_distinct_pair_is_embedded_once_per_chunk(data):
    id_names, neg_labels, id_emb, neg_emb, img = data
    asked = []
    embed = _pair_texts(id_names, neg_labels)

    def counting(ids, negs):
        asked.append(list(zip(ids.tolist(), negs.tolist(), strict=True)))
        return embed(ids, negs)

    both = np.concatenate([img[:1], img[:1]])  # the same image twice: its 25 pairs once
    mm = multi_matching(both, id_emb, neg_emb, pair_texts=counting)
    assert len(asked) == 1 and len(asked[0]) == len(set(asked[0])) == 25
    assert mm[0] == mm[1] and 0 < mm[0] < 1


def test_registry_entry_and_refusals(data):
    _, _, id_emb, neg_emb, img = data
    m = get_method("negrefine")
    assert m.needs_negatives and m.inputs == ("pair_texts",) and m.one_pass_kernel is None
    assert {"mm_weight", "mm_k_id", "mm_k_neg", "tau", "grouping"} <= set(m.params)
    with pytest.raises(InputError, match="pair_texts"):
        negvocab.score("negrefine", img, id_emb, neg_emb)
    with pytest.raises(InputError, match="mm_k_id"):
        negvocab.score("negrefine", img, id_emb, neg_emb, pair_texts=lambda a, b: None, mm_k_id=0)


def test_negrefine_with_csps_templates_equals_theirs_under_raw_norms():
    """NegRefine's ``_embed_text_labels`` averages the RAW template features (``.view(-1, K, D).mean(dim=1)``,
    then ``/= norm``), for the ID names, the negatives and the pair texts: negvocab's ``csp`` templates
    (reduce raw_mean) through its own encoder path (PairTexts) give their embeddings within 1e-6 and their
    scores within 1e-5, with raw norms varying by +-20%."""
    from negvocab.vlm.pairs import PairTexts
    from negvocab.vlm.templates import CSP
    from tests.builders.test_csp import DIM, PromptVLM, _vec

    def embed_text_labels(labels):  # theirs, with noun_prompt_templates; _vec stands for encode_text
        features = torch.from_numpy(np.stack([_vec(t.format(w)) for w in labels for t in CSP["n"]]))
        features = features.view(-1, len(CSP["n"]), features.shape[-1]).mean(dim=1)
        return features / features.norm(dim=-1, keepdim=True)

    id_names, neg_labels = [f"class {i}" for i in range(C)], [f"negative {j}" for j in range(M)]
    pos_features, neg_features = embed_text_labels(id_names), embed_text_labels(neg_labels)
    vlm = PromptVLM()
    id_emb, neg_emb = vlm.encode_text(id_names, "csp", pos="n"), vlm.encode_text(neg_labels, "csp", pos="n")
    np.testing.assert_allclose(id_emb, pos_features.numpy(), atol=1e-6)
    np.testing.assert_allclose(neg_emb, neg_features.numpy(), atol=1e-6)
    rng = np.random.default_rng(2)
    img = rng.normal(size=(N, DIM))
    img[:3] += 3 * id_emb[:3]
    img[3] += 4 * embed_text_labels(["class 1 and negative 5"])[0].numpy()
    img = _unit(img)
    model = ref.CLIPood(pos_features, neg_features, id_names, neg_labels, embed_text_labels)
    theirs = np.array([model.detection_score(torch.from_numpy(img[i : i + 1])) for i in range(N)])
    pairs = PairTexts(vlm, "csp", id_names, neg_labels)
    ours = negvocab.score("negrefine", img, id_emb, neg_emb, pair_texts=pairs, grouping="neglabel")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    unit = PairTexts(vlm, resolve_templates("csp").with_reduce("unit_mean"), id_names, neg_labels)
    assert np.abs(pairs(np.array([1]), np.array([5])) - unit(np.array([1]), np.array([5]))).max() > 1e-4
