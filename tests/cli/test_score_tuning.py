"""``negvocab score --tune-id/--tune-ood`` (part "ccr" of issue 31): methods with knobs choose their parameters
on the tuning split, the test rows use and record them (equal to scoring with those values given by hand);
a tuning split sharing an image with the test sets, and malformed tuning options, are one-line refusals."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from negvocab.cli import app
from tests.data.conftest import CIFAR10_LISTS, write_lists
from tests.data.test_validation import CIFAR10_VAL_LISTS
from tests.scoring.conftest import RANDOM_VIT

runner = CliRunner()


@pytest.fixture
def tune_ood(tmp_path):
    rng = np.random.default_rng(7)
    for i in range(5):
        folder = tmp_path / "tune_ood"
        folder.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"t{i}.png")
    return tmp_path / "tune_ood"


def _score(tiny, model_args, out, *extra):
    args = [
        "score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--vocab", str(tiny / "negA.txt"),
        "--n-boot", "0", "--explain", "0", "--no-report", "-o", str(out), *model_args, *extra,
    ]  # fmt: skip
    return runner.invoke(app, args, catch_exceptions=False)


def test_tuned_rows_use_and_record_the_choice(tiny, model_args, tmp_path, tune_ood):
    tune = [
        "--tune-id", str(tiny / "val"), "--tune-ood", f"val_ood={tune_ood}",
        "--tune-grid", "tau=0.005,0.05", "--tune-grid", "groups=2", "--tune-grid", "grouping=stratified",
    ]  # fmt: skip
    r = _score(tiny, model_args, tmp_path / "tuned", "--method", "neglabel", "--method", "mcm", *tune)
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "tuned" / "results.json").read_text())
    tuning = doc["tuning"]
    assert sorted(tuning) == ["mcm", "neglabel@negA"]
    neg = tuning["neglabel@negA"]
    assert neg["grid"] == {"tau": [0.005, 0.05], "groups": [2], "grouping": ["stratified"]} and len(neg["trials"]) == 2
    assert neg["split"]["n_id"] == 8 and neg["split"]["ood"] == {"val_ood": 5}
    assert tuning["mcm"]["grid"] == {"T": [0.5, 1.0, 2.0]}  # mcm's own search grid
    rows = {r["method"]: r for r in doc["rows"]}
    assert (
        rows["neglabel"]["params"]["tau"] == neg["params"]["tau"]
        and rows["mcm"]["params"]["T"] == tuning["mcm"]["params"]["T"]
    )
    assert all(r["tuned"] is True and r["tuned_on"].startswith("val (8) vs val_ood (5)") for r in rows.values())
    table = list(csv.DictReader((tmp_path / "tuned" / "results.csv").open()))
    assert [t["tuning_criterion"] for t in table] == ["auroc", "auroc"]
    assert "tuned neglabel@negA: tau=" in r.stdout and "never the test sets" in r.stdout
    # the same rows as scoring with the chosen values given by hand
    by_hand = _score(
        tiny, model_args, tmp_path / "plain", "--method", "neglabel", "--groups", "2", "--grouping", "stratified",
        "--tau", str(neg["params"]["tau"]),
    )  # fmt: skip
    assert by_hand.exit_code == 0, by_hand.output
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())["rows"][0]
    assert (plain["auroc"], plain["fpr"]) == (rows["neglabel"]["auroc"], rows["neglabel"]["fpr"])


def test_a_tuning_split_sharing_test_images_is_refused(tiny, model_args, tmp_path, tune_ood):
    r = _score(tiny, model_args, tmp_path / "r", "--method", "mcm", "--tune-id", str(tiny / "id"),
               "--tune-ood", f"x={tune_ood}")  # fmt: skip
    assert r.exit_code == 2 and "6 test image(s) are also in the tuning split (e.g." in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "r" / "results.json").exists()


def test_a_benchmark_tunes_on_its_validation_lists(tmp_path):
    """``--ood openood-cifar10=ROOT --tune-ood openood-cifar10=ROOT``: tested on the test lists, tuned on the
    validation lists (OpenOOD v1.5's val_cifar10.txt against val_tin.txt), no --id or --tune-id needed."""
    root = tmp_path / "root"
    write_lists(root, {**CIFAR10_LISTS, **CIFAR10_VAL_LISTS}, "images_classic")
    out = tmp_path / "out"
    args = [
        "score", "--ood", f"openood-cifar10={root}", "--tune-ood", f"openood-cifar10={root}", "--method", "mcm",
        "--n-boot", "0", "--explain", "0", "--no-report", "-o", str(out), "--cache-dir", str(tmp_path / "cache"),
        *RANDOM_VIT,
    ]  # fmt: skip
    r = runner.invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    split = doc["tuning"]["mcm"]["split"]
    assert split["id"] == "CIFAR-10 (OpenOOD val)" and split["n_id"] == 3 and split["ood"] == {"tin-val": 2}
    assert {row["ood_set"] for row in doc["rows"]} >= {"cifar100", "tin", "mnist"} and all(
        row["tuned"] for row in doc["rows"]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tune-id", "x"], "a tuning split needs --tune-ood"),
        (["--tune-ood", "x"], "--tune-ood without --tune-id takes one BENCHMARK=ROOT of a benchmark with a valid"),
        (["--tune-ood", "mos=/data"], "(openood, openood-cifar10, openood-cifar100, openood-far, openood-fs, "),
        (["--tune-grid", "tau"], "--tune-grid takes NAME=V1,V2"),
        (["--tune-grid", "tau=a,b"], "--tune-grid tau: values must be of type float"),
        (["--tune-criterion", "acc"], "--tune-criterion must be one of auroc"),
    ],
)
def test_tuning_option_errors_come_before_loading_a_model(tiny, tmp_path, extra, message):
    args = ["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--method", "mcm", "-o", str(tmp_path / "r")]
    r = runner.invoke(app, [*args, *extra], catch_exceptions=False)
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
