"""CLI: `negvocab benchmarks` lists the named benchmarks and checks a data root; `--ood BENCHMARK=ROOT` scores
every set of one, with the near-/far-OOD mean rows, and the logit baselines by --method."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.scoring.methods import list_methods

runner = CliRunner()


def invoke(args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_benchmarks_lists_every_set_and_checks_a_root(openood_root, tmp_path):
    r = invoke(["benchmarks", "--root", openood_root])
    assert r.exit_code == 0, r.output
    for expected in (
        "--ood openood-near=ROOT",
        "benchmark_imglist/imagenet/test_ninco.txt (paths from images_largescale/)  [found]",
        "dtd/images/<class>/*  [MISSING]",
        "fi-imagenet-1k",
        "--fi-ood",
        "imagenet-o/<class>/*",
    ):
        assert expected in r.stdout, expected
    bad = invoke(["benchmarks", "--root", tmp_path / "none"])
    assert bad.exit_code == 2 and bad.stderr.strip().splitlines() == [
        f"error: --root {tmp_path / 'none'}: no such folder"
    ]


def test_score_a_named_benchmark_with_the_baselines(openood_root, model_args, tmp_path):
    out = tmp_path / "res"
    r = invoke([
        "score", "--id", openood_root / "benchmark_imglist/imagenet/test_imagenet.txt",
        "--image-root", openood_root / "images_largescale",
        "--ood", f"openood={openood_root}", "--method", "msp", "--method", "energy", "--logit-scale", "50",
        "--n-boot", "0", "--no-report", "-o", out, *model_args,
    ])  # fmt: skip
    assert r.exit_code == 0, r.output
    table = list(csv.DictReader((out / "results.csv").open()))
    sets = ["ssb-hard", "ninco", "inaturalist", "textures", "openimage-o", "near-ood", "far-ood", "mean"]
    assert [t["ood_set"] for t in table] == sets * 2 and [t["method"] for t in table] == ["msp"] * 8 + ["energy"] * 8
    npz = np.load(out / "scores.npz")
    by = {t["ood_set"]: float(t["auroc"]) for t in table[8:]}
    assert by["near-ood"] == pytest.approx((by["ssb-hard"] + by["ninco"]) / 2)
    assert by["far-ood"] == pytest.approx((by["inaturalist"] + by["textures"] + by["openimage-o"]) / 3)
    assert by["mean"] == pytest.approx(np.mean([by[s] for s in sets[:5]]))
    assert len(npz["ood/energy"]) == 12 and len(npz["id/energy"]) == 3


def test_a_bad_benchmark_root_is_one_line(tmp_path, model_args, tiny):
    r = invoke(
        [
            "score",
            "--id",
            tiny / "id",
            "--ood",
            f"mos={tmp_path}",
            "--method",
            "maxlogit",
            "-o",
            tmp_path / "o",
            *model_args,
        ]
    )
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        f"error: inaturalist: no folder {tmp_path / 'iNaturalist'} "
        f"(expected under the data root {tmp_path}: iNaturalist/**/*)"
    ]


def test_the_baselines_are_methods_of_the_cli():
    r = invoke(["score", "--help"])
    assert all(m in r.stdout for m in ("msp", "maxlogit", "energy", "gen", "--logit-scale", "--gamma", "--top-classes"))
    assert {"msp", "maxlogit", "energy", "gen"} <= set(list_methods())
