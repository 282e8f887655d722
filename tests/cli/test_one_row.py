"""One row on disk: ``negvocab score`` and a grid over the same images write rows with the same columns in
the same order (results.json, results.csv and the grid's cells and table.csv) and the same numbers."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.evaluation.row import INTERVAL_METRICS, ROW_COLUMNS

GRID = """
[grid]
templates = "single"
id_classes = "{root}/classes.txt"
conventions = ["paper"]
n_boot = 30
device = "cpu"
cache_dir = "{root}/cache"

[[models]]
name = "ViT-B-32"
random_weights = true

[id]
path = "{root}/id"

[ood]
ood = "{root}/ood"

[vocabularies]
negA = "{root}/negA.txt"

[[methods]]
name = "neglabel"
params = {{ groups = 4 }}
"""


def test_score_and_a_grid_write_the_same_row(tiny, model_args, tmp_path):
    args = ["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--vocab", str(tiny / "negA.txt")]
    args += ["--method", "neglabel", "--groups", "4", "--n-boot", "30", "-o", str(tmp_path / "s"), *model_args]
    r = CliRunner().invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (tmp_path / "grid.toml").write_text(GRID.format(root=tiny))
    negvocab.run_grid(tmp_path / "grid.toml", tmp_path / "g").write(tmp_path / "g")

    (score,) = json.loads((tmp_path / "s" / "results.json").read_text())["rows"]
    (cell,) = [json.loads(p.read_text())["row"] for p in (tmp_path / "g" / "cells").glob("*.json")]
    with (tmp_path / "s" / "results.csv").open() as f:
        score_csv = list(csv.DictReader(f))
    with (tmp_path / "g" / "table.csv").open() as f:
        grid_csv = list(csv.DictReader(f))
    # the same keys in the same order, in every file of both
    assert list(score) == list(cell) == list(ROW_COLUMNS)
    assert list(score_csv[0]) == list(grid_csv[0]) == list(ROW_COLUMNS)
    # and the same numbers: one bootstrap (seed 0), every interval, AUPR's too
    for m in INTERVAL_METRICS:
        assert score[m] == cell[m] and score[f"{m}_ci_low"] is not None
        assert (score[f"{m}_ci_low"], score[f"{m}_ci_high"]) == (cell[f"{m}_ci_low"], cell[f"{m}_ci_high"])
        assert float(score_csv[0][f"{m}_ci_high"]) == pytest.approx(float(grid_csv[0][f"{m}_ci_high"]), abs=0)
    same = ("model", "vocabulary", "vocab_hash", "vocab_size", "deployable", "caveats", "ood_set", "positive")
    assert {k: score[k] for k in same} == {k: cell[k] for k in same}
    assert (score["n_boot"], score["ci_level"], score["ci_resample"]) == (cell["n_boot"], cell["ci_level"], "ood")
    assert score["cell"] is None and cell["cell"] and score["params"]["groups"] == cell["params"]["groups"] == 4
