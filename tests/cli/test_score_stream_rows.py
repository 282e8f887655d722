"""``negvocab score`` with a test-time method gives the rows batch methods give (near-ood / far-ood on a
grouped benchmark), and its printed table keeps bootstrap intervals and spreads over seeds apart."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from negvocab.cli import app
from tests.scoring.conftest import RANDOM_VIT

runner = CliRunner()
NEAR, FAR = ["cifar100", "tin"], ["mnist", "svhn", "textures", "places365"]


def _score(cifar10_root, tmp_path, *extra):
    vocab = tmp_path / "neg.txt"
    vocab.write_text("apple\ncastle\nriver\ntable\n", encoding="utf-8")
    out = tmp_path / "res"
    args = ["score", "--ood", f"openood-cifar10={cifar10_root}", "--vocab", str(vocab), "--stream-batch", "4"]
    args += ["--no-report", "-o", str(out), *RANDOM_VIT, "--cache-dir", str(tmp_path / "cache"), *extra]
    r = runner.invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output, json.loads((out / "results.json").read_text())["rows"]


def test_test_time_methods_get_the_near_and_far_rows_of_a_grouped_benchmark(cifar10_root, tmp_path):
    _, rows = _score(cifar10_root, tmp_path, "--method", "adaneg", "--method", "tanl", "--n-boot", "0")
    for method in ("adaneg", "tanl"):
        by = {r["ood_set"]: r for r in rows if r["method"] == method}
        assert list(by) == [*NEAR, *FAR, "near-ood", "far-ood", "mean"]
        for name, members in (("near-ood", NEAR), ("far-ood", FAR)):
            assert by[name]["fpr"] == float(np.mean(np.array([by[m]["fpr"] for m in members], dtype=np.float64)))
            assert by[name]["ood_sets"] == members and by[name]["test_time"] is True
