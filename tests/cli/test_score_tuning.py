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
        (["--tune-criterion", "fpr,fpr"], "--tune-criterion must be one of auroc"),
        (["--tune-ood", "x=/no", "--tune-grid", "T=1,-2"], "--tune-grid: T must be a positive number, got -2.0"),
        (["--tune-ood", "x=/no", "--tune-grid", "adaneg_gap=0.1"], "--tune-grid: no method tuned here takes 'adan"),
        (["--tune-grid", "T=1,2"], "tuning on the test sets is refused unless asked for by name (--tune-on test)"),
        (["--tune-on", "test", "--tune-ood", "x=/no"], "--tune-on test tunes on the test sets: drop --tune-id"),
        (["--tune-on", "tests"], "--tune-on must be validation or test, got 'tests'"),
    ],
)
def test_tuning_option_errors_come_before_loading_a_model(tiny, tmp_path, extra, message):
    args = ["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--method", "mcm", "-o", str(tmp_path / "r")]
    r = runner.invoke(app, [*args, *extra], catch_exceptions=False)
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


#: a larger validation split than the data tests' (12 ID, 10 OOD): enough images for AdaNeg's knobs to matter
BIG_VAL_LISTS = {
    "benchmark_imglist/cifar10/val_cifar10.txt": [f"cifar10/val/c{i % 10}/{2000 + i}.png {i % 10}" for i in range(12)],
    "benchmark_imglist/cifar10/val_tin.txt": [f"tin/val/n0{i}/val_{i}.JPEG -1" for i in range(10)],
}


def test_a_test_time_method_tunes_on_a_benchmarks_validation_lists(tmp_path):
    """``score --ood openood-cifar10=ROOT --tune-ood openood-cifar10=ROOT`` with AdaNeg's knobs: the choice
    is the argmin of (FPR@95, -AUROC) over the grid, each point scored here directly on the validation
    lists; the test rows equal scoring that choice directly; the rows and results.json record the tuning."""
    from negvocab import VLM, Vocabulary
    from negvocab.data.benchmarks import open_benchmark
    from negvocab.data.validation import open_validation
    from negvocab.evaluation.evaluate import evaluate_vocabularies

    root, cache, out = tmp_path / "root", tmp_path / "cache", tmp_path / "out"
    write_lists(root, {**CIFAR10_LISTS, **BIG_VAL_LISTS}, "images_classic")
    words = tmp_path / "negs.txt"
    words.write_text("\n".join(["stone", "cloud", "river", "bread", "chair", "violin", "glacier", "lamp"]) + "\n")
    grid = {"tau": [0.05, 1.0], "adaneg_score": ["combine", "vanilla"]}  # knobs that move a random model's scores
    stream = {"stream_batch": 4, "order": "shuffled", "stream_seed": [0]}
    args = [
        "score", "--ood", f"openood-cifar10={root}", "--tune-ood", f"openood-cifar10={root}", "--method", "adaneg",
        "--vocab", str(words), "--stream-batch", "4", "--tune-criterion", "fpr,auroc",
        *(x for k, v in grid.items() for x in ("--tune-grid", f"{k}={','.join(map(str, v))}")),
        "--n-boot", "0", "--explain", "0", "--no-report", "-o", str(out), "--cache-dir", str(cache), *RANDOM_VIT,
    ]  # fmt: skip
    r = runner.invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    # by hand: every grid point scored directly on the validation lists, the argmin of (FPR, -AUROC)
    vlm = VLM("ViT-B-32", random_weights=True, device="cpu", cache_dir=cache)
    vocab, run = {"negs": Vocabulary.load(words)}, {"templates": "single", "n_boot": 0, "stream": stream}
    val_id, val_ood = open_validation("openood-cifar10", root)
    combos = [{"tau": t, "adaneg_score": a} for t in grid["tau"] for a in grid["adaneg_score"]]
    points = []
    for c in combos:
        ev = evaluate_vocabularies(vlm, val_id, val_ood, vocab, ["adaneg"], params=c, **run)
        points.append((ev.rows[0]["fpr"], -ev.rows[0]["auroc"]))
    assert len(set(points)) > 1, points  # the knobs matter on this split
    best = combos[min(range(len(combos)), key=lambda i: (*points[i], i))]
    tuning = doc["tuning"]["adaneg@negs"]
    assert {k: tuning["params"][k] for k in grid} == best and tuning["criterion"] == "fpr,auroc"
    assert [(t["fpr"], -t["auroc"]) for t in tuning["trials"]] == points
    assert tuning["split"]["ood"] == {"tin-val": 10} and tuning["on_test"] is False
    # the test sets scored once with the choice: the same rows as that setting given directly
    test = open_benchmark("openood-cifar10", root)
    direct = evaluate_vocabularies(vlm, test.id, test, vocab, ["adaneg"], params=best, **run)
    got = {row["ood_set"]: row for row in doc["rows"]}
    for row in direct.rows:
        assert (got[row["ood_set"]]["fpr"], got[row["ood_set"]]["auroc"]) == (row["fpr"], row["auroc"])
    assert all(
        row["tuned"] is True and row["tuned_on_test"] is False and row["tuning_criterion"] == "fpr,auroc"
        and row["tuning_space"] == "tau=0.05,1.0; adaneg_score=combine,vanilla"
        and row["tuned_on"].startswith("CIFAR-10 (OpenOOD val) (12) vs tin-val (10)")
        for row in doc["rows"]
    )  # fmt: skip
    table = list(csv.DictReader((out / "results.csv").open()))
    assert {t["tuning_space"] for t in table} == {"tau=0.05,1.0; adaneg_score=combine,vanilla"}
    assert "tuned adaneg@negs: tau=" in r.stdout and "never the test sets" in r.stdout


def test_tuning_on_the_test_sets_is_named_recorded_and_marked(tiny, model_args, tmp_path):
    """``--tune-on test``: the only way to tune on the test sets; the rows say so and the table marks them."""
    r = _score(tiny, model_args, tmp_path / "tt", "--method", "mcm", "--tune-on", "test")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "tt" / "results.json").read_text())
    assert doc["tuning"]["mcm"]["on_test"] is True and doc["tuning"]["mcm"]["grid"] == {"T": [0.5, 1.0, 2.0]}
    (row,) = doc["rows"]
    assert row["tuned_on_test"] is True and row["tuned_on"].startswith("the test sets: ")
    assert row["auroc"] == doc["tuning"]["mcm"]["value"]  # the choice's value is its test result: flattered
    assert "mcm [tuned on test]" in r.stdout and "ON THE TEST SETS" in r.stdout
    assert "[tuned on test] parameters tuned on the test sets themselves" in r.stdout
