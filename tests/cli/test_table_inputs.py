"""``negvocab table`` reads results through the validators ``report`` and ``subsample`` use (issue 34):
each damaged or foreign file is one line naming it, never a traceback, and never a wrong table
(an FPR of 7.5 printed as 750%; a comparison on 2 of 9 OOD images)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.grid.config import spec_digest
from tests.grid.test_grid_tables import _write_grid
from tests.report.test_tables import _score_folder


def _table(*args):
    return CliRunner().invoke(app, ["table", *map(str, args)])


def _one_line(result, *says):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    for s in says:
        assert s in result.output, result.output


@pytest.fixture
def run(tmp_path):
    folder, _s_id, _s_ood = _score_folder(tmp_path, np.random.default_rng(1))
    return folder


def _edit_rows(folder, edit):
    doc = json.loads((folder / "results.json").read_text())
    edit(doc["rows"])
    (folder / "results.json").write_text(json.dumps(doc))


def test_a_clean_score_folder_still_tables_and_compares(run):
    args = ["--rows", "vocabulary", "--where", "method=neglabel", "--compare", "--compare-set", "ssb"]
    result = _table(run, *args, "--n-boot", "20")
    assert result.exit_code == 0, result.output
    assert "wordnet" in result.output and "paired-bootstrap" in result.output


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda rows: rows.__setitem__(0, [1, 2]), "rows[0] must be an object"),
        (lambda rows: rows[0].__setitem__("fpr_ci", 5), "rows[0]['fpr_ci'] must be [low, high]"),
        (lambda rows: rows[0].__setitem__("fpr", "high"), "rows[0]['fpr'] must be a number"),
        (lambda rows: rows[1].__setitem__("fpr", 7.5), "rows[1]['fpr']: 7.5 is out of range [0, 1]"),
        (lambda rows: rows[0].__setitem__("auroc", -0.1), "rows[0]['auroc']: -0.1 is out of range [0, 1]"),
        (lambda rows: rows[0].__setitem__("fpr_ci", [0.1, 1.5]), "rows[0]['fpr_ci']: 1.5 is out of range [0, 1]"),
        (lambda rows: rows[0].__setitem__("method", None), "rows[0]['method'] must be a string"),
    ],
)
def test_a_bad_results_row_is_one_line(run, edit, says):
    _edit_rows(run, edit)
    _one_line(_table(run, "--rows", "vocabulary", "--where", "method=neglabel"), "results.json", says)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda f: f.write_bytes(b"garbage, not a zip"), "not a readable scores.npz"),
        (lambda f: f.write_bytes(f.read_bytes()[:300]), "not a readable scores.npz"),
        (lambda f: np.savez(f, **{"id/mcm": np.array([object()] * 3, dtype=object)}), "not a readable scores.npz"),
    ],
)
def test_a_damaged_scores_file_is_one_line_with_compare(run, damage, says):
    damage(run / "scores.npz")
    args = [run, "--rows", "vocabulary", "--where", "method=neglabel"]
    _one_line(_table(*args, "--compare", "--compare-set", "ssb", "--n-boot", "20"), "scores.npz", says)
    _one_line(_table(*args), "scores.npz", says)  # the paired bold reads them too
    assert _table(*args, "--bold", "none").exit_code == 0  # nothing bold, nothing compared: not read


def test_a_scores_file_that_disagrees_with_the_rows_is_refused_for_compare(run):
    """Cut to 2 of the 20 'ssb' images: the rows say 20 (their table shows the 20-image numbers)."""
    with np.load(run / "scores.npz") as z:
        arrays = {k: z[k] for k in z.files}
    keep = np.zeros(35, bool)
    keep[[0, 1, 20, 21, 22]] = True  # 2 'ssb' images, 3 'ninco'
    for k in list(arrays):
        if k.startswith("ood/") or k == "ood_sets":
            arrays[k] = arrays[k][keep]
    np.savez(run / "scores.npz", **arrays)
    args = [run, "--rows", "vocabulary", "--where", "method=neglabel", "--compare", "--compare-set", "ssb"]
    _one_line(_table(*args, "--n-boot", "20"), "scores.npz", "2 OOD images of 'ssb'", "20")


def test_sweep_rows_without_m_are_one_line(tmp_path):
    row = {"method": "neglabel", "vocabulary": "wordnet", "ood_set": "ssb", "fpr": 0.5, "auroc": 0.8}
    (tmp_path / "sweep.json").write_text(json.dumps({"model": "m", "rows": [row], "references": []}))
    _one_line(_table(tmp_path), "sweep.json", "rows[0]['M'] must be a size")
    (tmp_path / "sweep.json").write_text(json.dumps({"model": "m", "rows": [{**row, "M": 10}], "references": [3]}))
    _one_line(_table(tmp_path), "sweep.json", "references")


@pytest.mark.parametrize("text", ["not json {", "[1, 2]", '{"fpr_ci_low": "x"}'])
def test_a_garbage_grid_means_file_is_one_line(tmp_path, text):
    _write_grid(tmp_path / "g", np.random.default_rng(3), failed_model=None)
    cells = [json.loads(p.read_text()) for p in (tmp_path / "g" / "cells").glob("*.json")]
    first = cells[0]["row"]
    group = (first["model"], first["vocabulary"], first["method"], first["convention"])
    digests = sorted(
        c["digest"] for c in cells if (c["row"]["model"], c["row"]["vocabulary"], c["row"]["method"], "paper") == group
    )
    (tmp_path / "g" / "means").mkdir()
    (tmp_path / "g" / "means" / f"{spec_digest(digests)}.json").write_text(text)
    _one_line(_table(tmp_path / "g", "--where", "method=neglabel", "--where", "vocabulary=A"), "means", ".json")


def test_a_grid_cell_row_out_of_range_is_one_line(tmp_path):
    _write_grid(tmp_path / "g", np.random.default_rng(3), failed_model=None)
    cell = sorted((tmp_path / "g" / "cells").glob("*.json"))[0]
    doc = json.loads(cell.read_text())
    doc["row"]["fpr"] = 7.5
    cell.write_text(json.dumps(doc))
    _one_line(_table(tmp_path / "g", "--where", "method=neglabel", "--where", "vocabulary=A"), cell.name, "7.5 is out")
