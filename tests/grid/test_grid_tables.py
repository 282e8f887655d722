"""Grid tables from a grid's output folder: cells, stored scores, failed cells, pivots and paired comparisons.

The folder is laid out as negvocab.grid.run writes it (``cells/<digest>.json`` = {"row", "digest"},
``cells/<digest>.failed.json`` = {"cell", "error"}, ``scores/<digest>.npz`` with one ``scores`` array,
``scores_index.json`` as GridResult.write leaves it), with scores drawn here so that tests stay fast.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.compare import paired_bootstrap
from negvocab.grid.tidy import GridResult, load_rows
from negvocab.scoring import metrics as M

MODELS = ["TinyA", "TinyB"]
ENTRIES = [("neglabel", "A"), ("neglabel", "B"), ("mcm", "")]
SETS = {"oodA": 10, "oodB": 7}


def _write_grid(out, rng, *, failed_model: str | None = "Broken", entries=ENTRIES):
    (out / "cells").mkdir(parents=True)
    (out / "scores").mkdir()
    index, scores = {}, {}
    for m in MODELS:
        for meth, vocab in entries:
            key = " | ".join((m, vocab, meth))
            s_id = rng.normal(1, 1, 24)
            d_id = f"{abs(hash(key + 'id')):x}"
            np.savez(out / "scores" / f"{d_id}.npz", scores=s_id)
            entry = {"id": d_id, "ood": {}}
            sets = {}
            for name, n in SETS.items():
                s = rng.normal(0.3, 1, n)
                d = f"{abs(hash(key + name)):x}"
                np.savez(out / "scores" / f"{d}.npz", scores=s)
                entry["ood"][name], sets[name] = d, s
                rep = M.evaluate(s_id, s, n_boot=20)
                row = {
                    "model": m, "pretrained": None, "random_weights": True, "vocabulary": vocab,
                    "deployable": vocab != "B", "caveats": "",
                    "ood_set": name, "method": meth, "convention": "paper", "tpr": 0.95, "fpr": rep["fpr"],
                    "auroc": rep["auroc"],
                    "fpr_ci_low": rep["fpr_ci"][0], "fpr_ci_high": rep["fpr_ci"][1], "auroc_ci_low": rep["auroc_ci"][0],
                    "auroc_ci_high": rep["auroc_ci"][1], "aupr_in": rep["aupr_in"], "aupr_out": rep["aupr_out"],
                    "aupr_method": rep["aupr_method"], "n_id": 24, "n_ood": n, "templates": "single",
                    "cell": f"{m}{vocab}{meth}{name}",
                }  # fmt: skip
                (out / "cells" / f"{m}{vocab}{meth}{name}.json").write_text(
                    json.dumps({"row": row, "digest": f"{m}{vocab}{meth}{name}"})
                )
            index[key], scores[key] = entry, (s_id, sets)
    if failed_model:
        cell = [failed_model, "A", "oodA", "neglabel", "paper"]
        (out / "cells" / "zz.failed.json").write_text(
            json.dumps({"cell": cell, "error": "unknown open_clip model 'Broken'"})
        )
    (out / "scores_index.json").write_text(json.dumps(index))
    return scores


@pytest.fixture
def grid_dir(tmp_path):
    scores = _write_grid(tmp_path / "g", np.random.default_rng(0))
    return tmp_path / "g", scores


def test_a_grid_folder_reads_back_with_means_digests_and_failures(grid_dir):
    folder, _ = grid_dir
    rows, get, failed = load_rows([folder])
    means = [r for r in rows if r["ood_set"] == "mean"]
    assert len(means) == len(MODELS) * len(ENTRIES) and all(len(r["cell"]) == 16 for r in means)
    assert len({r["cell"] for r in means}) == len(means)  # each mean row has the digest of its own cells
    assert failed == {"Broken": "1 cells: unknown open_clip model 'Broken'"} and get is not None
    res = GridResult(
        [r for r in rows if r["ood_set"] != "mean"],
        out_dir=folder,
        status={"failed": [{"cell": ["Broken"], "error": "x"}]},
    )
    t = res.paper_table(
        "fpr", rows="model", cols="vocabulary", where={"ood_set": "oodA", "method": "neglabel"}, mean_rows=True
    )
    assert t.index == [*MODELS, "mean"] and t.columns == ["A", "B (NOT deployable)", "mcm (no vocabulary)"]
    assert "Broken: cells failed (1 cells: x); not in the table, nor in its means." in t.full_caption()
    shown = {"": "mcm (no vocabulary)", "B": "B (NOT deployable)"}
    by = {(r["model"], shown.get(r["vocabulary"], r["vocabulary"])): r["fpr"] for r in rows if r["ood_set"] == "oodA"}
    np.testing.assert_allclose(
        t.values[-1, :, 0], [np.mean([by[(m, c)] for m in MODELS]) for c in t.columns], atol=1e-15
    )


def test_pivot_keeps_the_baseline_and_says_what_is_fixed(grid_dir):
    folder, _ = grid_dir
    rows, _, _ = load_rows([folder])
    res = GridResult([r for r in rows if r["ood_set"] != "mean"], out_dir=folder)
    p = res.pivot("fpr", rows="method", vocabulary="A", convention="paper", model="TinyA")
    assert p.index == ["neglabel", "mcm"]  # MCM has no vocabulary: it sits beside neglabel@A, not dropped
    mcm = res.pivot("fpr", vocabulary="", method="mcm", convention="paper")
    assert "(vocabulary=none, method=mcm)" in mcm.to_markdown() and "vocabulary=," not in mcm.to_markdown()
    with pytest.raises(InputError, match=r"several vocabulary values \(A, B\); make vocabulary an axis") as e:
        res.pivot("fpr", method="neglabel", convention="paper")
    assert '""' not in str(e.value)
    tex = res.to_latex("auroc", caption="AUROC", vocabulary="A", method="neglabel", convention="paper")
    assert (
        "AUROC AUROC" not in tex
        and "\\caption{AUROC (\\%), paper convention" in tex
        and "\\label{tab:auroc-model}" in tex
    )


def test_comparisons_are_paired_tests_on_the_stored_scores(grid_dir):
    folder, scores = grid_dir
    rows, _, _ = load_rows([folder])
    res = GridResult(
        [r for r in rows if r["ood_set"] != "mean"],
        out_dir=folder,
        status={"failed": [{"cell": ["Broken"], "error": "x"}]},
    )
    said = res.comparisons("fpr", "mean", n_boot=60, seed=4)
    assert said[-1] == "Broken: cells failed (1 cells: x); left out of these comparisons"
    s = next(x for x in said if "A" in x and "neglabel, paper" in x)
    for m in MODELS:
        a, b = scores[f"{m} | A | neglabel"], scores[f"{m} | B | neglabel"]
        want = paired_bootstrap(a[0], a[1], b[0], b[1], n_boot=60, seed=4)
        assert f"{m}: {100 * want.diff:+.2f} [{100 * want.low:+.2f}, {100 * want.high:+.2f}]" in s
    assert "B (NOT deployable)" in s and "n 24 ID / 17 OOD" in s and said[-2].startswith("RANDOM WEIGHTS")
    verdicts = [
        paired_bootstrap(*scores[f"{m} | A | neglabel"], *scores[f"{m} | B | neglabel"], n_boot=60, seed=4).verdict
        for m in MODELS
    ]
    assert ("beats" in s) == any(v in ("a", "b") for v in verdicts)


def test_write_leaves_a_scores_index_and_labelled_latex(grid_dir, tmp_path):
    folder, _ = grid_dir
    rows, _, _ = load_rows([folder])
    res = GridResult([r for r in rows if r["ood_set"] != "mean"], out_dir=folder)
    out = res.write(tmp_path / "w")
    assert json.loads((out / "scores_index.json").read_text()) == json.loads((folder / "scores_index.json").read_text())
    tex = (out / "pivots.tex").read_text()
    assert "\\label{tab:fpr-A-neglabel-paper}" in tex and "\\label{tab:fpr-none-mcm-paper}" in tex
    assert "paired-bootstrap interval" in (out / "comparisons.md").read_text()
    t2 = (out / "tables.md").read_text()
    assert (
        "### neglabel / paper / mean" in t2
        and "| model | A FPR@95 | A AUROC | B (NOT deployable) FPR@95 |" in t2
        and "mcm (no vocabulary) AUROC" in t2
    )
    assert (
        "| mean |" in t2
        and "Brackets: 95% bootstrap intervals" in t2
        and "\\label{tab:neglabel-paper-oodA}" in (out / "tables.tex").read_text()
    )


def test_reading_a_grid_for_tables_never_removes_its_score_files(grid_dir, tmp_path):
    """The comparisons read score files as a grid run writes them (with the vocabulary facts and
    ``made_by`` under ``meta``) and of the older format (``scores`` only) alike; a torn file leaves that
    model untested, and nothing is deleted (the resuming grid's loader removes what it cannot use)."""
    folder, scores = grid_dir
    index = json.loads((folder / "scores_index.json").read_text())
    entry = index["TinyA | A | neglabel"]
    meta = np.array(json.dumps({"vocab": {"name": "A"}, "made_by": {"engine": "local"}}))
    np.savez(
        folder / "scores" / f"{entry['id']}.npz", scores=scores["TinyA | A | neglabel"][0], meta=meta
    )  # the current format
    torn = folder / "scores" / f"{index['TinyB | A | neglabel']['ood']['oodB']}.npz"
    torn.write_bytes(torn.read_bytes()[:40])
    before = sorted(p.name for p in (folder / "scores").iterdir())
    rows, _, _ = load_rows([folder])
    said = GridResult([r for r in rows if r["ood_set"] != "mean"], out_dir=folder).comparisons(
        "fpr", "mean", n_boot=30, seed=1
    )
    assert sorted(p.name for p in (folder / "scores").iterdir()) == before and torn.stat().st_size == 40
    tested, untested = (x for x in said if x.startswith(("A and B (NOT", "A vs B (NOT")) and "neglabel, paper" in x)
    a, b = scores["TinyA | A | neglabel"], scores["TinyA | B | neglabel"]
    want = paired_bootstrap(a[0], a[1], b[0], b[1], n_boot=30, seed=1)
    assert (
        f"TinyA: {100 * want.diff:+.2f} [{100 * want.low:+.2f}, {100 * want.high:+.2f}]" in tested
        and "TinyB" not in tested
    )
    assert "NOT tested (no per-image scores) for 1 of 2 models" in untested and "TinyB" in untested


def test_a_folder_reads_back_in_a_readers_order_and_the_mean_caption_counts_its_images(tmp_path):
    """Cell files come in digest (here: name) order, w@1000 before w@200; the table puts the sizes in
    number order and the baseline last, and the mean column's caption counts the images of all sets."""
    _write_grid(
        tmp_path / "g",
        np.random.default_rng(5),
        failed_model=None,
        entries=[("mcm", ""), ("neglabel", "w@1000"), ("neglabel", "w@200"), ("neglabel", "w@30")],
    )
    rows, _, _ = load_rows([tmp_path / "g"])
    res = GridResult([r for r in rows if r["ood_set"] != "mean"], out_dir=tmp_path / "g")
    t = res.paper_table(
        "fpr", rows="model", cols="vocabulary", where={"ood_set": "mean", "method": "neglabel"}, mean_rows=True
    )
    assert t.columns == ["w@30", "w@200", "w@1000", "mcm (no vocabulary)"] and t.index == [*MODELS, "mean"]
    assert f"n OOD in all the sets of the mean {sum(SETS.values())}." in t.full_caption()
    one = res.paper_table("fpr", rows="model", cols="vocabulary", where={"ood_set": "oodB", "method": "neglabel"})
    assert f"n OOD oodB {SETS['oodB']}." in one.full_caption()
