"""CLI: a benchmark of the data catalog scored with no --id and no --id-classes (its own ID set and class
list), with its near-/far-OOD groups in the table; `negvocab benchmarks --root` checks its ID set too."""

from __future__ import annotations

import csv
import json

from typer.testing import CliRunner

from negvocab.cli import app
from tests.scoring.conftest import RANDOM_VIT

runner = CliRunner()


def test_benchmarks_checks_the_id_set_and_names_the_class_list(cifar10_root):
    r = runner.invoke(app, ["benchmarks", "--root", str(cifar10_root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    block = r.stdout.split("openood-cifar10:")[1].split("\n\n")[0]
    assert "ID: ROOT/benchmark_imglist/cifar10/test_cifar10.txt (paths from images_classic/)  [found]" in block
    assert "ID classes: cifar10 (CIFAR-10 (Krizhevsky" in block
    assert "benchmark_imglist/cifar10/test_places365.txt (paths from images_classic/)  [found]" in block
    fs = r.stdout.split("openood-fs:")[1].split("\n\n")[0]
    assert "ID (covariate-shifted) imagenet-v2: benchmark_imglist/imagenet/test_imagenet_v2.txt" in fs
    assert "[MISSING]" in fs


def test_score_a_catalog_benchmark_without_id_or_id_classes(cifar10_root, tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(
        app,
        [
            "score",
            "--ood",
            f"openood-cifar10={cifar10_root}",
            "--method",
            "mcm",
            "--n-boot",
            "0",
            "--no-report",
            "-o",
            str(out),
            *RANDOM_VIT,
            "--cache-dir",
            str(tmp_path / "cache"),
        ],  # fmt: skip
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    rows = [row["ood_set"] for row in csv.DictReader((out / "results.csv").open())]
    assert rows == ["cifar100", "tin", "mnist", "svhn", "textures", "places365", "near-ood", "far-ood", "mean"]
    meta = json.loads((out / "results.json").read_text())
    found = _find(meta, "id_class_list")
    assert found is not None and found["n"] == 10 and found["names"][:3] == ["airplane", "automobile", "bird"]


def _find(doc, key):
    """The first value of ``key`` anywhere in a JSON document."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        doc = list(doc.values())
    if isinstance(doc, list):
        for v in doc:
            if (got := _find(v, key)) is not None:
                return got
    return None
