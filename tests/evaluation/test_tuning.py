"""The tuning split (part "ccr" of issue 31), as OpenOOD's automatic parameter search: every grid combination
scored on the tuning sets (checked against the kernels and sklearn's AUROC, computed here), the best kept
(first on a tie), its provenance recorded in the rows; test images in a tuning split are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import negvocab
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.evaluation.tuning import Tuning, tune_params
from negvocab.scoring import scores as S
from tests.evaluation.test_evaluate import FakeVLM


def _set(name: str, n: int) -> ImageSet:
    return ImageSet(name, [f"/{name}/{i}.png" for i in range(n)], [f"{name}{i}" for i in range(n)])


@pytest.fixture
def classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:5]))


@pytest.fixture
def vocab():
    return negvocab.Vocabulary.from_labels([f"neg{i}" for i in range(40)], source="file")


def _auroc_by_hand(method, params, classes, vocab, id_set, oods):
    """The criterion without the pipeline: the kernel's scores and sklearn's AUROC, averaged over OOD sets."""
    vlm = FakeVLM()
    cls = vlm.encode_text(list(classes.names), "single")
    neg = vlm.encode_text(list(vocab.labels), "single")
    emb = {n: vlm.encode_images(s).embeddings for n, s in {"id": id_set, **oods}.items()}
    s_id = S.score(method, emb["id"], cls, neg, **params)
    values = []
    for n in oods:
        s_ood = S.score(method, emb[n], cls, neg, **params)
        y = np.r_[np.ones(len(s_id)), np.zeros(len(s_ood))]
        values.append(roc_auc_score(y, np.r_[s_id, s_ood]))
    return float(np.mean(values))


def test_every_combination_is_scored_on_the_tuning_split_and_the_best_kept(classes, vocab):
    id_val, oods = _set("val_id", 30), {"val_a": _set("val_a", 20), "val_b": _set("val_b", 15)}
    grid = {"tau": [0.005, 0.01, 0.05], "grouping": ["neglabel", "stratified"], "groups": [1, 4]}
    t = tune_params(FakeVLM(), id_val, oods, vocab, "neglabel", grid=grid, id_classes=classes, templates="single")
    assert [tuple(tr["params"].values()) for tr in t.trials] == [
        (tau, g, n) for tau in grid["tau"] for g in grid["grouping"] for n in grid["groups"]
    ]
    by_hand = [_auroc_by_hand("neglabel", tr["params"], classes, vocab, id_val, oods) for tr in t.trials]
    assert [tr["auroc"] for tr in t.trials] == pytest.approx(by_hand, abs=1e-12)
    assert len(set(by_hand)) > 2  # the grid matters here
    best = int(np.argmax(by_hand))  # the first of the highest, as OpenOOD's strict > keeps it
    assert t.value == by_hand[best] and {k: t.params[k] for k in grid} == t.trials[best]["params"]
    assert t.split["n_id"] == 30 and t.split["ood"] == {"val_a": 20, "val_b": 15} and len(t.split["sha256"]) == 64
    assert t.key == f"neglabel@file-{vocab.short_hash}" and t.criterion == "auroc"
    rec = t.record()
    assert json.loads(json.dumps(rec)) == rec and rec["grid"]["tau"] == grid["tau"]


def test_fpr_is_minimised_and_a_tie_keeps_the_first(classes, vocab):
    id_val, ood = _set("val_id", 30), _set("val_o", 25)
    t = tune_params(FakeVLM(), id_val, ood, None, "mcm", criterion="fpr", id_classes=classes, templates="single")
    assert list(t.grid) == ["T"] and t.grid["T"] == (0.5, 1.0, 2.0)  # the method's search grid by default
    fprs = [tr["fpr"] for tr in t.trials]
    assert t.value == min(fprs) and t.params["T"] == t.grid["T"][fprs.index(min(fprs))]
    # a grid whose values all score the same: the first is kept
    same = tune_params(
        FakeVLM(), id_val, ood, vocab, "neglabel", grid={"seed": [3, 1, 2]}, id_classes=classes, templates="single",
        params={"grouping": "stratified", "groups": 1},
    )  # fmt: skip
    assert len({tr["auroc"] for tr in same.trials}) == 1 and same.params["seed"] == 3


def test_tuned_rows_use_the_chosen_parameters_and_say_where_they_were_tuned(classes, vocab):
    id_val, ood_val = _set("val_id", 30), _set("val_o", 25)
    t = tune_params(
        FakeVLM(), id_val, ood_val, vocab, "neglabel", grid={"tau": [0.005, 0.05]}, vocabulary_name="v",
        id_classes=classes, templates="single",
    )  # fmt: skip
    test_id, test_ood = _set("test_id", 20), {"a": _set("a", 10), "b": _set("b", 12)}
    kw = {"id_classes": classes, "templates": "single", "n_boot": 0}
    ev = evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["neglabel", "mcm"], tuned=[t], **kw)
    plain = evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["neglabel"], params=t.params, **kw)
    tuned_rows = [r for r in ev.rows if r["method"] == "neglabel"]
    assert [r["auroc"] for r in tuned_rows] == [r["auroc"] for r in plain.rows]
    assert all(r["params"]["tau"] == t.params["tau"] and r["tuned"] is True for r in tuned_rows)
    assert all(r["tuned_on"].startswith("val_id (30) vs val_o (25)") and r["tuning_criterion"] == "auroc"
               for r in tuned_rows)  # fmt: skip
    assert not any("tuned" in r for r in ev.rows if r["method"] == "mcm")
    assert ev.meta["tuning"]["neglabel@v"]["split"] == dict(t.split)
    # the test sets never tune: a tuning split that shares an image with them is refused before scoring
    with pytest.raises(InputError, match=r"1 test image\(s\) are also in the tuning split of neglabel@v"):
        evaluate_vocabularies(FakeVLM(), test_id, {"a": ImageSet("a", ["/val_o/3.png"], ["x"])}, {"v": vocab},
                              ["neglabel"], tuned=[t], **kw)  # fmt: skip
    with pytest.raises(InputError, match="neglabel@v is not scored in this run"):
        evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["mcm"], tuned=[t], **kw)


def test_the_choice_depends_on_the_tuning_split_only(classes, vocab):
    """Tuning sees no test set: the same split gives the same choice whatever is scored after."""
    args = (_set("val_id", 30), _set("val_o", 25), vocab, "neglabel")
    kw = {"grid": {"tau": [0.005, 0.05]}, "id_classes": classes, "templates": "single"}
    a, b = tune_params(FakeVLM(), *args, **kw), tune_params(FakeVLM(), *args, **kw)
    assert (a.params, a.trials) == (b.params, b.trials)


def test_refusals(classes, vocab):
    args = (FakeVLM(), _set("val_id", 4), _set("val_o", 4))
    with pytest.raises(InputError, match="grid: no method tuned here takes 'T'; their parameters: neglabel: tau, "):
        tune_params(*args, vocab, "neglabel", grid={"T": [1.0]}, id_classes=classes)
    with pytest.raises(InputError, match="grid: tau must be a non-empty list"):
        tune_params(*args, vocab, "neglabel", grid={"tau": []}, id_classes=classes)
    with pytest.raises(InputError, match="criterion must be one of auroc"):
        tune_params(*args, vocab, "neglabel", criterion="acc", id_classes=classes)
    with pytest.raises(InputError, match="needs a negative vocabulary"):
        tune_params(*args, None, "neglabel", id_classes=classes)
    with pytest.raises(InputError, match="tau"):
        tune_params(*args, vocab, "neglabel", grid={"tau": [-1.0]}, id_classes=classes)
    assert isinstance(negvocab.tune_params, type(tune_params)) and negvocab.Tuning is Tuning


def test_tune_methods_tunes_each_scored_pair_over_its_grid_with_the_given_values(classes, vocab):
    from negvocab.evaluation.tuning import tune_methods

    class Counting(FakeVLM):
        encoded = 0

        def encode_images(self, image_set, **kw):
            Counting.encoded += 1
            return super().encode_images(image_set, **kw)

    other = negvocab.Vocabulary.from_labels([f"other{i}" for i in range(30)], source="file")
    vlm, id_val, ood_val = Counting(), _set("val_id", 20), _set("val_o", 20)
    got = tune_methods(
        vlm, id_val, ood_val, {"a": vocab, "b": other}, ["neglabel", "mcm", "msp"],
        grid={"tau": [0.01, 0.02]}, params={"groups": 1, "grouping": "stratified", "T": 2.0},
        id_classes=classes, templates="single",
    )  # fmt: skip
    assert [t.key for t in got] == ["neglabel@a", "neglabel@b", "mcm"]  # msp has no knobs: not tuned
    assert Counting.encoded == 2  # the split is encoded once for every method and combination
    neglabel = got[0].grid
    assert neglabel["tau"] == (0.01, 0.02) and neglabel["groups"] == (1, 2)  # the given value's neighbours
    assert got[2].grid == {"T": (1.0, 2.0, 4.0)}  # mcm's search grid around the given T
    with pytest.raises(InputError, match="grid: no method tuned here takes 'lam'"):
        tune_methods(vlm, id_val, ood_val, {"a": vocab}, ["neglabel"], grid={"lam": [1.0]}, id_classes=classes)
