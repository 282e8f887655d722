"""ID accuracy: the ID labels read as wnids, OpenOOD's class indices or class names, and zero-shot top-1
against a hand loop (tests/adapters/test_openood_evaluator.py checks it against OpenOOD's ACC)."""

from __future__ import annotations

import numpy as np

from negvocab.data.images import ImageSet
from negvocab.evaluation.accuracy import class_indices, id_accuracy, zero_shot_top1
from negvocab.labels.imagenet import IdClasses, imagenet1k


def test_labels_are_read_as_wnids_indices_or_names():
    sub = imagenet1k().subset(["n01440764", "n01443537", "n01484850"])
    idx, how = class_indices(["n01443537", "n01440764"], sub)
    assert how == "wnid" and idx.tolist() == [1, 0]
    idx, how = class_indices(["2", "0", "1"], sub)
    assert how == "index" and idx.tolist() == [2, 0, 1]
    assert class_indices(["3"], sub) is None and class_indices(["-1"], sub) is None  # out of range; OOD's -1
    custom = IdClasses.from_names(["aquarium fish", "Sweet Pepper"])
    idx, how = class_indices(["sweet_pepper", "aquarium_fish"], custom)
    assert how == "name" and idx.tolist() == [1, 0]
    assert class_indices(["sofa"], custom) is None and class_indices([], custom) is None


def test_top1_against_a_hand_loop():
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(40, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    cls = rng.normal(size=(5, 8))
    cls /= np.linalg.norm(cls, axis=1, keepdims=True)
    targets = rng.integers(0, 5, 40)
    hits = 0
    for e, t in zip(emb, targets, strict=True):
        sims = [float(np.dot(e, c)) for c in cls]
        hits += int(max(range(5), key=sims.__getitem__) == t)
    assert zero_shot_top1(emb, cls, targets) == hits / 40


def test_id_accuracy_follows_the_encoded_rows_and_needs_labels():
    classes = IdClasses.from_names(["cat", "dog"])
    cls = np.eye(2, 3)
    images = ImageSet("id", ["a.png", "b.png", "c.png"], ["a", "b", "c"], ["dog", "cat", "dog"])
    emb = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])  # "a" failed to load: rows are b and c, both nearest "dog"
    got = id_accuracy(images, [("b", "b.png"), ("c", "c.png")], emb, cls, classes)
    assert got == {"top1": 0.5, "n": 2, "labels": "name"}
    assert id_accuracy(ImageSet("id", ["a.png"], ["a"]), [("a", "a.png")], emb[:1], cls, classes) is None
    wrong = ImageSet("id", ["a.png"], ["a"], ["penguin"])
    assert id_accuracy(wrong, [("a", "a.png")], emb[:1], cls, classes) is None
