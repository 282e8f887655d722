"""``negvocab table``: a grid folder as the paper's Table 2, in Markdown, LaTeX and CSV, with paired comparisons."""

from __future__ import annotations

import csv

import numpy as np
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.grid.tidy import load_rows
from negvocab.report.tables import build_table
from tests.grid.test_grid_tables import _write_grid


def test_table_command_writes_what_build_table_makes(tmp_path):
    _write_grid(tmp_path / "g", np.random.default_rng(3))
    args = [
        "table",
        str(tmp_path / "g"),
        "--rows",
        "model",
        "--cols",
        "vocabulary",
        "--where",
        "ood_set=mean",
        "--where",
        "method=neglabel",
        "--mean-rows",
    ]
    res = CliRunner().invoke(app, [*args, "--intervals", "--compare", "--n-boot", "40"])
    assert res.exit_code == 0, res.output
    rows, scores, failed = load_rows([tmp_path / "g"])
    want = build_table(
        rows,
        rows_by="model",
        cols_by="vocabulary",
        where={"ood_set": "mean", "method": "neglabel"},
        mean_rows=True,
        intervals=True,
        failed=failed,
        scores=scores,
        n_boot=40,
    )
    assert want.to_markdown() in res.stdout and "| mean |" in res.stdout and "Broken: cells failed" in res.stdout
    assert "paired-bootstrap interval" in res.output and "(40 draws)" in res.output
    tex = tmp_path / "t2.tex"
    assert CliRunner().invoke(app, [*args, "-o", str(tex), "--label", "tab:t2", "--siunitx"]).exit_code == 0
    assert "\\label{tab:t2}" in tex.read_text() and "S[table-format=3.2]" in tex.read_text()
    again = CliRunner().invoke(app, [*args, "-o", str(tex)])
    assert again.exit_code == 2 and "exists; give --overwrite" in again.output
    out = tmp_path / "t2.csv"
    assert CliRunner().invoke(app, [*args, "--metric", "fpr,auroc", "-o", str(out)]).exit_code == 0
    got = list(csv.DictReader(out.open()))
    assert [r["row"] for r in got] == ["TinyA", "TinyB", "mean"] and "A:auroc:ci_low" in got[0]


def test_bad_options_are_one_line(tmp_path):
    _write_grid(tmp_path / "g", np.random.default_rng(3))
    for extra, msg in (
        (["--rows", "dataset"], "unknown axis 'dataset'"),
        (["--where", "ood_set"], "--where 'ood_set': expected NAME=VALUE"),
        (["--bold", "maybe"], "unknown bold rule 'maybe'"),
        (["--rows", "vocabulary"], "several model values (TinyA, TinyB)"),
    ):
        res = CliRunner().invoke(app, ["table", str(tmp_path / "g"), *extra])
        assert res.exit_code == 2 and msg in res.output and "Traceback" not in res.output, res.output
    res = CliRunner().invoke(app, ["table", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not a folder" in res.output
