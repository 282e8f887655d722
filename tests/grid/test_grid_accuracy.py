"""ID accuracy and CCR in grids (issue 31): on a labelled, full-spectrum ID set (a toy benchmark with a
covariate-shifted ID set, tests/plugins/toy_fs_benchmark.py) every cell row carries the zero-shot top-1 (a
hand argmax over cosine logits in float64) and CCR (``ccr_at_fpr`` on the stored scores, by hand), the
summary rows the mean over their cells; table.csv, pivots and ``negvocab table`` show them; a grid killed
and resumed equals a clean run file for file; a folder of an older version (cells without them) still
reads back, '-' where missing, and resumed by this version ends as a clean run."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.data.benchmarks import open_benchmark
from negvocab.evaluation.stored import read_grid_cells
from negvocab.grid.run import write_grid
from negvocab.grid.store import _checked, _save_scores, load_score_file
from negvocab.grid.tidy import COLUMNS, GridResult, load_rows
from negvocab.grid.work import load_model, open_sets, plan_cells
from negvocab.report.html import write_report
from negvocab.report.tables import build_table
from negvocab.scoring.metrics import CCR_FPRS, ccr_at_fpr, ccr_column
from tests.data.test_benchmark_registry import _images
from tests.grid.conftest import ID_NAMES, TINY, VOCAB_A
from tests.grid.test_grid_resume import SMALL, _files, _killed_at
from tests.plugins import toy_fs_benchmark

CCR = [ccr_column(f) for f in CCR_FPRS]
#: the resume tests' one-model grid (TinyA, paper, A@4 and A@8, NegLabel) over the toy full-spectrum benchmark
GRID = 'plugins = ["tests.plugins.toy_fs_benchmark"]\n' + SMALL.replace(
    '[id]\npath = "id"', '[id]\nbenchmark = "toy-fs"\nroot = "toy"'
).replace("{vocab}", "")


@pytest.fixture
def fs_grid(tmp_path):
    toy_fs_benchmark.register()  # a child process registers it from the grid file's plugins
    root = tmp_path / "toy"
    _images(root / "images", [f"id/{i}.png" for i in range(18)] + [f"sh/{i}.png" for i in range(8)], seed=5)
    (root / "lists").mkdir()
    (root / "lists" / "id.txt").write_text("".join(f"id/{i}.png {i % 8}\n" for i in range(18)))
    (root / "lists" / "shifted.txt").write_text("".join(f"sh/{i}.png {(i + 3) % 8}\n" for i in range(8)))
    _images(root / "near", [f"n{i}.png" for i in range(11)], seed=6)
    _images(root / "far", [f"f{i}.png" for i in range(13)], seed=7)
    (tmp_path / "TinyA.json").write_text(json.dumps(TINY))
    (tmp_path / "classes.txt").write_text("\n".join(ID_NAMES) + "\n")
    (tmp_path / "vocabA.txt").write_text("\n".join(VOCAB_A) + "\n")
    toml = tmp_path / "grid.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache", ood='toy-fs = "toy"'))
    yield toml
    negvocab.unregister_benchmark(toy_fs_benchmark.NAME)


def _hand_correct(toml) -> np.ndarray:
    """Each ID image's zero-shot top-1 hit: the argmax of the cosine logits in float64, by hand."""
    predicted, labels = _hand_top1(toml)
    return np.array([p == int(label) for p, label in zip(predicted, labels, strict=True)])


def _hand_top1(toml) -> tuple[list[int], list[str]]:
    """Each ID image's zero-shot top-1 class (the argmax of the cosine logits in float64, by hand) and label."""
    cfg = negvocab.load_grid(toml)
    vlm = load_model(cfg, cfg.models[0])
    id_set = open_benchmark("toy-fs", toml.parent / "toy").id
    assert id_set is not None and id_set.info["csid"] == {"shifted": 8}
    emb = np.asarray(vlm.encode_images(id_set).embeddings, dtype=np.float64)
    cls = np.asarray(vlm.encode_text(ID_NAMES, "single", pos="n"), dtype=np.float64)
    return [int(np.argmax([float(np.dot(row, c)) for c in cls])) for row in emb], list(id_set.labels)


def test_grid_cells_carry_id_accuracy_and_ccr_from_the_stored_scores(fs_grid, tmp_path):
    res = negvocab.run_grid(fs_grid, tmp_path / "out")
    correct = _hand_correct(fs_grid)
    assert len(correct) == 26 and 0 < correct.mean() < 1
    get = res.score_getter()
    assert get is not None
    table = res.table()
    assert {r["ood_set"] for r in table} == {"near-one", "far-one", "near-ood", "far-ood", "mean"}
    for r in table:
        assert r["id_accuracy"] == float(np.mean(correct)), r["ood_set"]
        s_id, s_sets = get(r["model"], r["vocabulary"], r["method"])
        per = {n: {c: ccr_at_fpr(s_id, s, correct, f) for c, f in zip(CCR, CCR_FPRS, strict=True)}
               for n, s in s_sets.items()}  # fmt: skip
        members = {"near-ood": ["near-one"], "far-ood": ["far-one"], "mean": list(per)}.get(r["ood_set"])
        for c in CCR:
            want = per[r["ood_set"]][c] if members is None else float(np.mean([per[n][c] for n in members]))
            assert r[c] == pytest.approx(want, abs=1e-12), (r["method"], r["ood_set"], c)
    assert len({r["ccr@1e-1"] for r in table}) > 1
    write_grid(res, tmp_path / "out", overwrite=True)
    with open(tmp_path / "out" / "table.csv", newline="") as f:
        got = list(csv.DictReader(f))
    assert list(got[0]) == [*COLUMNS, "id_accuracy", *CCR]  # the old columns first, as they were
    assert [float(x["ccr@1e-2"]) for x in got] == [r["ccr@1e-2"] for r in table]
    report = write_report(tmp_path / "out").read_text().replace("<wbr>", "")  # the model's results table
    assert '<th class="num">CCR@1E-1 %</th>' in report and all(f">{100 * r['ccr@1e-1']:.2f}<" in report for r in table)
    assert f"<dt>ID acc. %</dt><dd>{100 * correct.mean():.2f}</dd>" in report  # one value: said above the table
    pivot = res.pivot("ccr@1e-1", vocabulary="A@8")
    assert pivot.values[0, -1] == next(
        r["ccr@1e-1"] for r in table if r["ood_set"] == "mean" and r["vocabulary"] == "A@8"
    )
    assert "CCR@1E-1 (%)" in pivot.to_markdown()
    back, _, _ = load_rows([tmp_path / "out"])  # negvocab table DIR --metric ccr@1e-1,id_accuracy
    t = build_table(back, metric=["ccr@1e-1", "id_accuracy"], rows_by="vocabulary", cols_by="ood_set")
    assert "CCR@1E-1" in t.to_markdown() and np.isfinite(t.values).all()


def test_a_killed_and_resumed_grid_equals_a_clean_run_and_an_old_folder_reads_back(fs_grid, tmp_path, monkeypatch):
    from negvocab.vlm.cache import Checkpoints

    clean, real, seen = tmp_path / "clean", os.replace, []
    with monkeypatch.context() as m:  # a clean run, the target of each commit noted, checkpoints as in the child
        m.setitem(Checkpoints.__init__.__kwdefaults__, "every_s", 0.0)
        m.setattr(os, "replace", lambda a, b, **k: (seen.append(str(b)), real(a, b, **k)))
        assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(clean)]).exit_code == 0
    want = _files(clean)
    assert all("ccr@1e-1" in json.loads(v)["row"] for k, v in want.items() if k.startswith("cells/"))
    # killed just after its first cell (every score file written, the other cells not), then again at the
    # resumed run's first commit (its next cell): the last run finishes the cells from the ID score files
    first_cell = next(i for i, dst in enumerate(seen) if f"{os.sep}cells{os.sep}" in dst) + 1
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    out = tmp_path / "resumed"
    for at in (first_cell, 1):
        assert _killed_at(fs_grid, out, at, "after") == -signal.SIGKILL, at
    n_cells = sum(1 for k in want if k.startswith("cells/"))
    assert 0 < len(list((out / "cells").glob("*.json"))) < n_cells  # some cells left to the last run
    assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(out)]).exit_code == 0
    got = _files(out)
    assert sorted(got) == sorted(want) and [k for k in want if got[k] != want[k]] == []
    # a folder of an older version: cells without the columns, ID score files without the hits
    old = tmp_path / "old"
    shutil.copytree(clean, old)
    for path in (old / "cells").glob("*.json"):
        row = {k: v for k, v in json.loads(path.read_text())["row"].items() if k != "id_accuracy" and "ccr@" not in k}
        path.write_text(json.dumps({"row": row, "digest": path.stem, "sha256": _checked(row)}))
    for path in (old / "scores").glob("*.npz"):
        scores, facts = load_score_file(path)
        _save_scores(path, scores, {k: v for k, v in facts.items() if k not in ("id_correct", "full_spectrum")})
    # read back, the tables show '-' where the columns are missing
    rows, _, _ = load_rows([old])
    assert rows and not any("id_accuracy" in r or "ccr@1e-1" in r for r in rows)
    t = build_table(rows, metric=["ccr@1e-1", "fpr"], rows_by="vocabulary", cols_by="ood_set")
    assert np.isnan(t.values[..., 0]).all() and "-" in t.to_markdown()
    cells, _, _ = read_grid_cells(old)
    res = GridResult(cells, groups={"near-one": "near", "far-one": "far"})
    assert "| - |" in res.pivot("id_accuracy", vocabulary="A@4").to_markdown()
    write_grid(res, tmp_path / "again", overwrite=True)
    with open(tmp_path / "again" / "table.csv", newline="") as f:
        assert list(next(csv.DictReader(f))) == COLUMNS
    # resumed by this version: its cells are made again from new ID score files, as a clean run's
    assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(old)]).exit_code == 0
    got = _files(old)
    assert sorted(got) == sorted(want) and [k for k in want if got[k] != want[k]] == []


def test_a_grid_resumed_after_its_id_labels_were_edited_equals_a_clean_run(fs_grid, tmp_path):
    """The cell digests cover the ID images, not their labels: a resumed grid remakes the ID score files
    whose hits are of other labels (and the cells' rows), so it ends as a clean run with the new labels."""
    out, clean = tmp_path / "out", tmp_path / "clean"
    assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(out)]).exit_code == 0
    before = {r["id_accuracy"] for r in load_rows([out])[0]}
    top1, labels = _hand_top1(fs_grid)
    assert labels[:18] == [str(i % 8) for i in range(18)]  # the list's images come first, then the shifted ones
    (tmp_path / "toy" / "lists" / "id.txt").write_text("".join(f"id/{i}.png {top1[i]}\n" for i in range(18)))
    assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(out)]).exit_code == 0
    assert CliRunner().invoke(app, ["grid", "run", str(fs_grid), "-o", str(clean)]).exit_code == 0
    got, want = _files(out), _files(clean)
    assert sorted(got) == sorted(want) and [k for k in want if got[k] != want[k]] == []
    after = {r["id_accuracy"] for r in load_rows([out])[0]}
    assert len(before) == len(after) == 1 and after == {float(np.mean(_hand_correct(fs_grid)))}
    assert after.pop() >= 18 / 26 > before.pop()  # every listed image now labelled as its top-1 class


def test_scored_with_the_model_or_from_the_cache_the_cells_are_the_same(fs_grid, tmp_path, monkeypatch):
    """The two ways a score unit stores the ID hits (from the cache's rows, or with the model when the cache
    lacks them: ``score_model``) give the same files; only the ID score files hold the hits."""
    from negvocab.grid import units

    negvocab.run_grid(fs_grid, tmp_path / "cached")
    missed = []

    def miss(*a, **k):
        missed.append(1)
        raise units.CacheMiss("no rows (the test)")

    monkeypatch.setattr(units, "_score", miss)
    negvocab.run_grid(fs_grid, tmp_path / "model")
    assert missed  # the score unit went to the model
    cached, model = _files(tmp_path / "cached"), _files(tmp_path / "model")
    stored = sorted(k for k in cached if k.startswith(("cells/", "scores/")))
    assert stored == sorted(k for k in model if k.startswith(("cells/", "scores/")))
    assert [k for k in stored if cached[k] != model[k]] == []
    cfg = negvocab.load_grid(fs_grid)
    ids = {f"scores/{c.id_scores}.npz" for c in plan_cells(cfg, open_sets(cfg))}
    for k in (k for k in stored if k.endswith(".npz")):
        assert ("id_correct" in load_score_file(tmp_path / "model" / k)[1]) == (k in ids), k
