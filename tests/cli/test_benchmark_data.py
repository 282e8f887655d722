"""CLI: a benchmark given as data (registered from a TOML file) scores with `negvocab score --ood NAME=ROOT`
and no --id (its own ID set), with its near-/far-OOD rows; a user's `--ood textures=PATH` is in no group."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from tests.data.test_benchmark_registry import TOY_TOML, _images

runner = CliRunner()


def invoke(args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY_TOML)
    [bench] = negvocab.load_benchmarks(path)
    root = tmp_path / "toy"
    _images(root / "val", [f"v{i}.png" for i in range(5)])
    _images(root / "near_one", ["a/n0.png", "a/n1.png", "b/n2.png"], seed=1)
    _images(root / "images", ["far/f0.png", "far/f1.png"], seed=2)
    (root / "lists").mkdir()
    (root / "lists" / "far_one.txt").write_text("far/f0.png 0\nfar/f1.png 0\n")
    _images(root / "odd", ["o0.png"], seed=3)
    yield root
    negvocab.unregister_benchmark(bench.name)


def _rows(out):
    return {t["ood_set"]: t for t in csv.DictReader((out / "results.csv").open())}


def test_score_a_benchmark_given_as_data_without_id(toy, model_args, tmp_path):
    out = tmp_path / "res"
    user = tmp_path / "textures"
    _images(user, ["t0.png", "t1.png"], seed=4)
    args = ["score", "--method", "msp", "--logit-scale", "50", "--n-boot", "0", "--no-report", *model_args]
    r = invoke([*args, "--ood", f"toy-bench={toy}", "--ood", f"textures={user}", "-o", out])
    assert r.exit_code == 0, r.output
    rows = _rows(out)
    assert list(rows) == ["textures", "near-one", "far-one", "odd-one", "near-ood", "far-ood", "mean"]
    assert int(rows["near-one"]["n_id"]) == 5  # the benchmark's own ID set (val/, 5 images)
    npz = np.load(out / "scores.npz")
    s_id, s_ood, sets = npz["id/msp"].astype(np.float64), npz["ood/msp"].astype(np.float64), npz["ood_sets"]
    threshold = np.quantile(s_id, 0.05)  # the paper convention: ID-anchored, FPR = share of OOD scores >= it
    fpr = {n: np.mean(s_ood[sets == n] >= threshold) for n in ("textures", "near-one", "far-one", "odd-one")}
    assert float(rows["near-ood"]["fpr"]) == pytest.approx(fpr["near-one"])  # 'other' and the user's set: no group
    assert float(rows["far-ood"]["fpr"]) == pytest.approx(fpr["far-one"])
    assert float(rows["mean"]["fpr"]) == pytest.approx(np.mean(list(fpr.values())))
    # the user's textures alone beside a near set: no group rows (it is not 'far', whatever its name)
    alone = tmp_path / "alone"
    r = invoke([*args, "--id", toy / "val", "--ood", f"textures={user}", "--ood", f"ninco={toy / 'odd'}", "-o", alone])
    assert r.exit_code == 0, r.output
    assert list(_rows(alone)) == ["textures", "ninco", "mean"]


def test_score_help_says_id_may_be_left_out():
    r = runner.invoke(app, ["score", "--help"], terminal_width=200)
    text = " ".join(r.stdout.replace("│", " ").split())
    assert r.exit_code == 0 and "May be left out with --ood BENCHMARK=ROOT: the benchmark's own ID set is used" in text


def test_no_id_and_no_benchmark_id_is_one_line(model_args, tmp_path, tiny):
    r = invoke(["score", "--ood", tiny / "ood", "--method", "msp", "-o", tmp_path / "o", *model_args])
    assert r.exit_code == 2 and r.stderr.strip().splitlines() == [
        "error: no ID images: pass --id FOLDER (or --ood BENCHMARK=ROOT of a benchmark with an ID set)"
    ]
