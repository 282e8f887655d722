"""ANTS equals its authors' code (tests/reference/ants.py, ZhuWenjie98/ANTS transcribed, MIT) on one
stream of random features whose raw norms vary by +-20% (their net normalises them; negvocab takes them
unit-norm, as its encoders give them), with both sides fed the same recorded model answers (captions of
stream images, labels like ID classes) and the same raw text encoder: every score, in every mode."""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.scoring.ants import ANTSProvider, ants_labels
from negvocab.scoring.stream import make_stream
from tests.reference import ants as ref

K, M, D = 10, 300, 16
N_ID, N_OOD = 400, 500
ATOL = 1e-5


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _raw(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """``x`` with each row's norm scaled by a factor in [0.8, 1.2]: raw CLIP features vary so."""
    return x * rng.uniform(0.8, 1.2, size=(len(x), 1))


@cache
def encoder(text: str) -> np.ndarray:
    """A raw text feature per exact string (its norm in [0.8, 1.2] of a unit vector), as a CLIP call."""
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    v = rng.normal(size=D)
    return v / np.linalg.norm(v) * rng.uniform(0.8, 1.2)


def _variant(rng: np.random.Generator, phrase: str) -> str:
    """A caption as a model writes it: a final period, doubled spaces or another case, at random."""
    choice = int(rng.integers(4))
    return [phrase, phrase + ".", phrase.replace(" ", "  "), phrase.upper()][choice]


@pytest.fixture(scope="module")
def world():
    """Raw ID prompts, negatives, ID images (near the prompts), OOD images (near some negatives), a
    caption per stream position and five labels per ID class (from a shared pool: they repeat)."""
    rng = np.random.default_rng(7)
    ids, negs = rng.normal(size=(K, D)), rng.normal(size=(M, D))
    id_img = _unit(ids[rng.integers(0, K, N_ID)]) + 0.6 * rng.normal(size=(N_ID, D)) / np.sqrt(D)
    ood_img = _unit(negs[rng.integers(0, 40, N_OOD)]) + 0.6 * rng.normal(size=(N_OOD, D)) / np.sqrt(D)
    pool = [f"a photo of thing {i} in scene {i % 7}" for i in range(160)]
    captions = [_variant(rng, pool[int(rng.integers(len(pool)))]) for _ in range(N_ID + N_OOD)]
    near_pool = [f"lookalike {j}" for j in range(30)]
    similar = {f"class {c}": [_variant(rng, near_pool[int(j)]) for j in rng.integers(0, 30, 5)] for c in range(K)}
    raw = {k: _raw(rng, v) for k, v in {"ids": ids, "negs": negs, "id": id_img, "ood": ood_img}.items()}
    return {**raw, "captions": captions, "similar": similar}


class Recorded:
    """Recorded answers, as both sides take them: negvocab's provider and their MLLM backend."""

    def __init__(self, world) -> None:
        self.captions, self.similar_answers = world["captions"], world["similar"]
        self.calls: list[tuple[str, int]] = []

    # negvocab's ANTSProvider
    def describe(self, positions, predicted):
        self.calls.append(("describe", len(positions)))
        return [self.captions[p] for p in positions]

    def similar(self, classes):
        self.calls.append(("similar", len(classes)))
        return [list(self.similar_answers[f"class {c}"]) for c in classes]

    def encode(self, labels, template):
        return _unit(np.stack([encoder(template.format(t) if template else t) for t in labels]))

    # their backend
    def describe_images(self, images, id_classes):
        return [self.captions[int(p)] for p in images]

    def suggest_similar_classes(self, class_names):
        return [list(self.similar_answers[n]) for n in class_names]


THEIRS = {  # negvocab's parameters -> theirs
    "ants_score": ("in_score", {"far": "far_only", "near": "near_only", "ada": "ada"}),
    "ants_groups": ("group_num", None),
    "ants_far_updates": ("ens_stop_step", None),
    "ants_far_init": ("neglabel_init_flag", {"none": False, "negatives": True}),
    "ants_far_score": ("activation_aware_ens", {"grouped": False, "activation": True}),
    "ants_active": ("activation_negative_count", None),
    "ants_near_start": ("near_label_start_batch", None),
    "ants_near_every": ("near_label_interval", None),
}


def _theirs(world, perm, batch, params):
    kw = {}
    for ours, value in params.items():
        name, mapping = THEIRS[ours]
        kw[name] = mapping[value] if mapping else value
    post = ref.ANTSPostprocessor(Recorded(world), encoder, [f"class {c}" for c in range(K)], **kw)
    post.setup(np.concatenate([world["ids"], world["negs"]]), K)
    return ref.run(post, np.concatenate([world["id"], world["ood"]]), perm, batch)


def _ours(world, perm, batch, params, provider=None):
    method = make_stream("ants", **params)
    provider = provider or Recorded(world)
    method.setup(_unit(world["ids"]), _unit(world["negs"]), ants_provider=provider)
    x = _unit(np.concatenate([world["id"], world["ood"]]))
    out = np.empty(len(perm))
    for i in range(0, len(perm), batch):
        out[perm[i : i + batch]] = method.score_batch(x[perm[i : i + batch]])
    return out, method


CASES = [
    {"ants_score": "far", "ants_groups": 100},  # ants.yml's defaults: 100 negatives a group, far only
    {"ants_score": "far", "ants_groups": 200, "ants_far_score": "activation", "ants_active": 40},
    {"ants_score": "near", "ants_groups": 400, "ants_near_start": 2, "ants_near_every": 4},
    {"ants_score": "ada", "ants_groups": 100, "ants_near_start": 3, "ants_near_every": 5},
    {"ants_score": "ada", "ants_groups": 250, "ants_far_init": "negatives", "ants_far_updates": 1,
     "ants_far_score": "activation", "ants_active": 500, "ants_near_start": 1, "ants_near_every": 7},
]  # fmt: skip


@pytest.mark.parametrize("params", CASES)
def test_equals_their_code(world, params):
    perm = np.random.default_rng(11).permutation(N_ID + N_OOD)
    want = _theirs(world, perm, 50, params)
    got, method = _ours(world, perm, 50, params)
    np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
    state = method.summary()
    assert state["far_updates"] >= 1  # the far queue was filled from captions in every case
    if params["ants_score"] != "far":
        assert state["near_negatives"] > 0


def test_the_answers_change_the_scores(world):
    """A plausible wrong ANTS (the base NegLabel score alone: no far or near negatives ever used) fails."""
    perm = np.random.default_rng(11).permutation(N_ID + N_OOD)
    got, _ = _ours(world, perm, 50, {"ants_score": "ada", "ants_near_start": 3, "ants_near_every": 5})
    base, _ = _ours(world, perm, 50, {"ants_score": "far", "ants_far_updates": 0})
    assert np.abs(got - base).max() > 1e-2


def test_updates_call_the_provider_when_due(world):
    """Far updates when more than 200 images are cached, near ones at batches 3, 8, 13, 18."""
    perm = np.random.default_rng(11).permutation(N_ID + N_OOD)
    provider = Recorded(world)
    _ours(world, perm, 50, {"ants_score": "ada", "ants_near_start": 3, "ants_near_every": 5}, provider)
    near = [n for kind, n in provider.calls if kind == "similar"]
    far = [n for kind, n in provider.calls if kind == "describe"]
    assert len(near) == 4 and near[0] > 0
    assert far and all(n > 200 for n in far)


def test_labels_cleaned_as_theirs():
    raw = [" a  Red car.", "A red car", None, "", "dog..", "Dog"]
    assert ants_labels(raw) == ref.normalize_labels(raw) == ["a Red car", "dog"]


def test_user_errors_are_one_line(world):
    with pytest.raises(InputError, match="ants_eta"):
        make_stream("ants", ants_eta=1.5)
    method = make_stream("ants")
    with pytest.raises(InputError, match="ants_provider"):
        method.setup(_unit(world["ids"]), _unit(world["negs"]), ants_provider=object())
    with pytest.raises(InputError, match="needs the set-up input"):
        method.setup(_unit(world["ids"]), _unit(world["negs"]))
    assert isinstance(Recorded(world), ANTSProvider)
