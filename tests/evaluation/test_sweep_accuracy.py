"""ID accuracy and CCR in pool-size sweeps (issue 31): every row of a labelled ID set carries the zero-shot
top-1 (recomputed here by a hand argmax over cosine logits in float64, the unreadable ID image left out), the
same for every M and reference; on a full-spectrum ID set each row carries CCR from its own M's scores
(recomputed with ``ccr_at_fpr`` on scores made by the kernel for the vocabulary's head), summary rows the mean
over their sets; sweep.csv and sweep.json hold them; an unlabelled ID set's sweep is as before."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import negvocab
from negvocab.data.images import ImageSet
from negvocab.evaluation import sweeps
from negvocab.report.results import SWEEP_COLUMNS, write_sweep
from negvocab.scoring.metrics import CCR_FPRS, ccr_at_fpr, ccr_column
from tests.evaluation.test_evaluate import FakeVLM, _vec

COLUMNS = [ccr_column(f) for f in CCR_FPRS]
SIZES = [4, 12, 30]


@pytest.fixture
def classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:3]))


def _id_set(classes, csid: bool, labelled: bool = True) -> ImageSet:
    paths = [f"/id/{i}.png" for i in range(40)] + ["/id/broken.png"]
    labels = [classes.names[i % 3] for i in range(41)] if labelled else None
    info = {"csid": {"imagenet-r": 10}} if csid else {}
    return ImageSet("id", paths, [f"i{i}" for i in range(41)], labels, info)


def _oods():
    return {
        "ninco": ImageSet("ninco", [f"/n/{i}.png" for i in range(25)], [f"n{i}" for i in range(25)]),
        "textures": ImageSet("textures", [f"/t/{i}.png" for i in range(30)], [f"t{i}" for i in range(30)]),
    }


def _sweep(classes, id_set):
    vocab = negvocab.Vocabulary.from_labels([f"w{j}" for j in range(30)], source="wordnet")
    ref = negvocab.Vocabulary.from_labels([f"r{j}" for j in range(7)], source="file")
    return sweeps.sweep_vocabulary(
        FakeVLM(), id_set, _oods(), vocab, SIZES, references={"ref": ref}, id_classes=classes,
        templates="single", params={"groups": 2}, n_boot=0,
    ), vocab, ref  # fmt: skip


def _hand_correct(id_set, classes) -> np.ndarray:
    cls = [np.asarray(_vec(f"single:{n}"), dtype=np.float64) for n in classes.names]
    out = []
    for path, label in zip(id_set.paths, id_set.labels, strict=True):
        if "broken" in path:
            continue  # FakeVLM cannot read it: the sweep scores the other 40
        sims = [float(np.dot(np.asarray(_vec(path), dtype=np.float64), c)) for c in cls]
        out.append(classes.names[int(np.argmax(sims))] == label)
    return np.array(out)


def test_a_full_spectrum_sweep_carries_id_accuracy_and_ccr_per_m(classes, tmp_path):
    id_set = _id_set(classes, csid=True)
    res, vocab, ref = _sweep(classes, id_set)
    correct = _hand_correct(id_set, classes)
    assert 0 < correct.mean() < 1  # neither trivial bound
    images = np.stack([_vec(p) for p in id_set.paths if "broken" not in p] + [
        _vec(p) for s in _oods().values() for p in s.paths])  # fmt: skip
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    n_id = len(correct)
    for rows, labels_of in ((res.rows, lambda r: vocab.labels[: r["M"]]), (res.references, lambda r: ref.labels)):
        for r in rows:
            assert r["id_accuracy"] == pytest.approx(float(np.mean(correct)), abs=0)
            neg = np.stack([_vec(f"single:{x}") for x in labels_of(r)])
            s = np.asarray(negvocab.score("neglabel", images, cls, neg, groups=2), dtype=np.float64)
            s_id, parts = s[:n_id], dict(zip(("ninco", "textures"), np.split(s[n_id:], [25]), strict=True))
            per = {n: {c: ccr_at_fpr(s_id, p, correct, f) for c, f in zip(COLUMNS, CCR_FPRS, strict=True)}
                   for n, p in parts.items()}  # fmt: skip
            for c in COLUMNS:
                want = per[r["ood_set"]][c] if r["ood_set"] in per else np.mean([v[c] for v in per.values()])
                assert r[c] == pytest.approx(want, abs=1e-12), (r.get("M"), r["ood_set"], c)
    assert len({r["ccr@1e-1"] for r in res.rows}) > 1  # CCR follows the scores of each M
    assert res.meta["id_accuracy"] == {"top1": float(np.mean(correct)), "n": 40, "labels": "name"}
    write_sweep(res, tmp_path / "out")
    with open(tmp_path / "out" / "sweep.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0])[: len(SWEEP_COLUMNS)] == SWEEP_COLUMNS  # the old columns first, as they were
    assert list(table[0])[len(SWEEP_COLUMNS) :] == ["id_accuracy", *COLUMNS]
    every = [*res.rows, *res.references]
    assert [float(t["ccr@1e-2"]) for t in table] == [r["ccr@1e-2"] for r in every]
    doc = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert [r["ccr@1e-1"] for r in doc["rows"]] == [r["ccr@1e-1"] for r in res.rows]


def test_a_plain_labelled_id_set_gets_id_accuracy_only_and_an_unlabelled_one_neither(classes, tmp_path):
    plain, _, _ = _sweep(classes, _id_set(classes, csid=False))
    assert all("id_accuracy" in r and not any(c in r for c in COLUMNS) for r in [*plain.rows, *plain.references])
    bare, _, _ = _sweep(classes, _id_set(classes, csid=False, labelled=False))
    assert not any("id_accuracy" in r or "ccr@1e-1" in r for r in [*bare.rows, *bare.references])
    assert "id_accuracy" not in bare.meta
    # the other columns are those of the sweep without labels, value for value
    strip = lambda rows: [{k: v for k, v in r.items() if k != "id_accuracy"} for r in rows]  # noqa: E731
    assert strip(plain.rows) == bare.rows and strip(plain.references) == bare.references
    write_sweep(bare, tmp_path / "bare")
    with open(tmp_path / "bare" / "sweep.csv", newline="") as f:
        assert list(next(csv.DictReader(f))) == SWEEP_COLUMNS
