"""CCR columns of a full-spectrum run (part "ccr" of issue 31): each OOD set's row holds CCR at OpenOOD's FPR
levels from its own scores and the run's zero-shot predictions (recomputed here by a hand loop), summary rows
the mean over their sets, results.csv and the terminal table carry them; a plain ID set gets none."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import negvocab
from negvocab.data.benchmarks import open_benchmark
from negvocab.data.images import ImageSet
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.evaluation.stored import read_results
from negvocab.report.results import format_table, write_results
from negvocab.scoring.metrics import CCR_FPRS, ccr_at_fpr, ccr_column
from tests.data.conftest import write_lists
from tests.data.test_benchmark_catalog import FS_LISTS
from tests.evaluation.test_evaluate import FakeVLM, _vec

COLUMNS = [ccr_column(f) for f in CCR_FPRS]


def _run(csid: bool, classes):
    names = list(classes.names)
    labels = [names[i % len(names)] for i in range(40)]
    info = {"csid": {"imagenet-r": 10}} if csid else {}
    id_set = ImageSet("id", [f"/id/{i}.png" for i in range(40)], [f"i{i}" for i in range(40)], labels, info)
    oods = {
        "ninco": ImageSet("ninco", [f"/n/{i}.png" for i in range(25)], [f"n{i}" for i in range(25)]),
        "textures": ImageSet("textures", [f"/t/{i}.png" for i in range(30)], [f"t{i}" for i in range(30)]),
    }
    vocab = negvocab.Vocabulary.from_labels([f"neg{i}" for i in range(12)], source="file")
    ev = evaluate_vocabularies(
        FakeVLM(), id_set, oods, {"v": vocab}, ["neglabel", "mcm"], id_classes=classes, templates="single", n_boot=0
    )
    return ev, id_set, labels


@pytest.fixture
def classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:3]))


def test_full_spectrum_rows_carry_ccr_from_the_same_predictions(classes, tmp_path):
    ev, id_set, labels = _run(True, classes)
    # the zero-shot top-1 by hand: the nearest class prompt of each ID image (FakeVLM's embeddings)
    cls = [FakeVLM().encode_text([n], "single")[0] for n in classes.names]
    correct = []
    for path, label in zip(id_set.paths, labels, strict=True):
        sims = [float(np.dot(_vec(path).astype(np.float64), c)) for c in cls]
        correct.append(classes.names[int(np.argmax(sims))] == label)
    correct = np.array(correct)
    assert 0 < correct.mean() < 1  # a case where CCR is neither trivial bound
    for r in ev.rows:
        key = f"{r['method']}@{r['vocabulary']}" if r["vocabulary"] else r["method"]
        s = ev.scores[key]
        per_set = {
            n: {c: ccr_at_fpr(s["id"], part, correct, f) for c, f in zip(COLUMNS, CCR_FPRS, strict=True)}
            for n, part in zip(ev.ood_sets, np.split(s["ood"], [ev.ood_sets["ninco"]]), strict=True)
        }
        for c in COLUMNS:
            want = per_set[r["ood_set"]][c] if r["ood_set"] in per_set else np.mean([v[c] for v in per_set.values()])
            assert r[c] == pytest.approx(want, abs=0), (r["method"], r["ood_set"], c)
        assert r["id_accuracy"] == correct.mean()
    assert len({r["ccr@1e-1"] for r in ev.rows}) > 1  # the values differ by method and set
    # results.csv holds the columns, the terminal table shows them
    write_results(ev, tmp_path / "out")
    with open(tmp_path / "out" / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert all(c in table[0] for c in COLUMNS)
    assert [float(t["ccr@1e-2"]) for t in table] == [r["ccr@1e-2"] for r in ev.rows]
    text = format_table(ev.rows, ev.meta)
    assert "CCR@1E-4" in text.splitlines()[0] and f"{100 * ev.rows[0]['ccr@1e-1']:.2f}" in text.splitlines()[1]


def test_a_plain_id_set_gets_no_ccr_columns(classes, tmp_path):
    ev, _, _ = _run(False, classes)
    assert all("id_accuracy" in r and not any(c in r for c in COLUMNS) for r in ev.rows)
    write_results(ev, tmp_path / "out")
    assert "ccr@" not in (tmp_path / "out" / "results.csv").read_text()
    assert "CCR" not in format_table(ev.rows, ev.meta)


def test_the_openood_full_spectrum_benchmark_gets_ccr_and_reads_back(tmp_path):
    """``openood-fs`` opened from a root in OpenOOD's list format (the csid lists joined to the ID set):
    its rows carry CCR, other benchmarks' rows do not, and the results folder reads back with the columns."""
    write_lists(tmp_path / "root", FS_LISTS, "images_largescale")
    vocab = negvocab.Vocabulary.from_labels([f"neg{i}" for i in range(12)], source="file")
    runs = {}
    for name in ("openood-fs", "openood"):
        sets = open_benchmark(name, tmp_path / "root")
        runs[name] = evaluate_vocabularies(FakeVLM(), sets.id, sets, {"v": vocab}, ["neglabel"], n_boot=0, explain_k=0)
    fs = runs["openood-fs"]
    assert fs.meta["id_accuracy"]["n"] == 7  # 2 ID + 5 covariate-shifted ID images, labels as class indices
    assert all(c in r for r in fs.rows for c in COLUMNS)
    assert {r["ood_set"] for r in fs.rows} >= {"near-ood", "far-ood", "mean"}
    assert not any(c in r for r in runs["openood"].rows for c in COLUMNS)  # the ID test list alone: no CCR
    write_results(fs, tmp_path / "out")
    back = read_results(tmp_path / "out")
    assert [row.extra["ccr@1e-1"] for row in back] == [r["ccr@1e-1"] for r in fs.rows]
