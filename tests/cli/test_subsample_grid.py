"""`negvocab subsample GRID`: one analysis per model of a grid folder, over each entry's stored scores,
equal to the library's analysis of those scores; a grid folder without its scores index is refused."""

from __future__ import annotations

import csv
import json

import numpy as np
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from tests.grid.test_grid_tables import MODELS, SETS, _write_grid


def test_subsample_takes_a_grid_folder_one_analysis_per_model(tmp_path):
    scores = _write_grid(tmp_path / "g", np.random.default_rng(0))
    res = CliRunner().invoke(
        app, ["subsample", str(tmp_path / "g"), "-o", str(tmp_path / "s"), "--sizes", "3,6", "--draws", "40"]
    )
    assert res.exit_code == 0, res.output
    got = list(csv.DictReader((tmp_path / "s" / "subsample.csv").open()))
    assert {r["model"] for r in got} == set(MODELS)
    for model in MODELS:  # the same analysis on the model's own scores, through the public API
        keys = {
            "neglabel@A": f"{model} | A | neglabel",
            "neglabel@B": f"{model} | B | neglabel",
            "mcm": f"{model} |  | mcm",
        }
        s_id = {k: scores[v][0] for k, v in keys.items()}
        s_ood = {k: np.concatenate([scores[v][1][s] for s in SETS]) for k, v in keys.items()}
        sets = [s for s, n in SETS.items() for _ in range(n)]
        want = negvocab.subsample(s_id, s_ood, sizes=[3, 6], draws=40, ood_sets=sets)
        mine = [r for r in got if r["model"] == model]
        assert [(r["detector"], r["ood_set"], int(r["n"])) for r in mine] == [
            (w["detector"], w["ood_set"], w["n"]) for w in want
        ]
        np.testing.assert_allclose([float(r["sd"]) for r in mine], [w["sd"] for w in want], rtol=0, atol=1e-15)
    doc = json.loads((tmp_path / "s" / "subsample.json").read_text())
    assert doc["random_weights"] is True and doc["ood_sets"] == list(SETS)
    (tmp_path / "g" / "scores_index.json").unlink()
    again = CliRunner().invoke(app, ["subsample", str(tmp_path / "g"), "-o", str(tmp_path / "s2")])
    assert again.exit_code != 0 and "no scores_index.json" in again.output
