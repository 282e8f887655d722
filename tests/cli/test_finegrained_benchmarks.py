"""CLI: the fine-grained benchmarks (MCM's CUB-200, Stanford Cars, Food-101, Oxford-IIIT Pet) and Waterbirds'
spurious OOD listed by `negvocab benchmarks`, checked on a root with `--root`, and scored with no --id and no
--id-classes from a tiny root in the datasets' real list formats (tests/data/conftest.py), groups in the table."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.data.benchmarks import get_benchmark, id_split_name
from negvocab.data.published import row_benchmark
from negvocab.report.result_folders import folder_rows
from tests.cli.test_benchmark_catalog import _find
from tests.data.conftest import make_finegrained_root
from tests.scoring.conftest import RANDOM_VIT

runner = CliRunner()
BENCHES = {
    "finegrained-cub200": ("CUB_200_2011/images.txt", 200, "Black footed Albatross"),
    "finegrained-stanford-cars": ("stanford_cars/cars_test_annos_withlabels.mat", 196, "AM General Hummer SUV 2000"),
    "finegrained-food101": ("food-101/meta/test.txt", 101, "apple pie"),
    "finegrained-oxford-pets": ("oxford-iiit-pet/annotations/test.txt", 37, "Abyssinian"),
    "waterbirds-spurious": ("waterbird_complete95_forest2water2/metadata.csv", 2, "landbird"),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return make_finegrained_root(tmp_path_factory.mktemp("mcm_root"))


def test_benchmarks_lists_them_and_checks_a_root(root, tmp_path):
    listed = runner.invoke(app, ["benchmarks"], catch_exceptions=False)
    assert listed.exit_code == 0 and all(f"{b}:" in listed.stdout for b in BENCHES)
    r = runner.invoke(app, ["benchmarks", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    for bench, (table, _, _) in BENCHES.items():
        block = r.stdout.split(f"{bench}:")[1].split("\n\n")[0]
        assert f"ID: ROOT/{table}" in block and "[MISSING]" not in block, block
    assert "ImageNet_OOD_dataset/dtd/images/<class>/*  [found]" in r.stdout
    empty = runner.invoke(app, ["benchmarks", "--root", str(tmp_path)], catch_exceptions=False)
    block = empty.stdout.split("finegrained-food101:")[1].split("\n\n")[0]
    assert "ID: ROOT/food-101/meta/test.txt (paths from food-101/images/)  [MISSING]" in block
    # a table found without the tables it joins: those are named
    _ = make_finegrained_root(tmp_path / "partial")
    (tmp_path / "partial" / "CUB_200_2011" / "train_test_split.txt").unlink()
    partial = runner.invoke(app, ["benchmarks", "--root", str(tmp_path / "partial")], catch_exceptions=False)
    block = partial.stdout.split("finegrained-cub200:")[1].split("\n\n")[0]
    assert "images.txt (paths from CUB_200_2011/images/)  [found; MISSING CUB_200_2011/train_test_split.txt]" in block


@pytest.mark.parametrize("bench", list(BENCHES))
def test_score_a_finegrained_benchmark_without_id_or_id_classes(root, tmp_path, bench):
    out = tmp_path / "res"
    r = runner.invoke(
        app,
        ["score", "--ood", f"{bench}={root}", "--method", "mcm", "--n-boot", "0", "--no-report", "-o", str(out),
         *RANDOM_VIT, "--cache-dir", str(tmp_path / "cache")],
        catch_exceptions=False,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    table = list(csv.DictReader((out / "results.csv").open()))
    rows = [row["ood_set"] for row in table]
    if bench == "waterbirds-spurious":
        assert rows == ["placesbg"]  # one set (group other): no mean row
    else:
        assert rows == ["inaturalist", "sun", "places", "textures", "mean"]  # one group (far): no far-ood row
        assert "far-ood" not in r.stdout and "inaturalist" in r.stdout
    # the ID labels index the shipped class list, so the zero-shot ID accuracy is computed (not left out)
    assert {0.0 <= float(row["id_accuracy"]) <= 1.0 for row in table} == {True}
    _, n, first = BENCHES[bench]
    meta = json.loads((out / "results.json").read_text())
    groups = {name: s["ood_group"] for name, s in meta["ood_sets"].items()}
    assert groups == ({"placesbg": "other"} if bench == "waterbirds-spurious" else dict.fromkeys(rows[:4], "far"))
    # where each set came from and the ID split's name: what published figures are matched on, read back
    assert {s["benchmark"] for s in meta["ood_sets"].values()} == {bench}
    assert meta["id_set"]["name"] == id_split_name(get_benchmark(bench)) and meta["id_set"]["benchmark"] == bench
    read, _ = folder_rows(out)
    assert {r["id_split"] for r in read} == {meta["id_set"]["name"]}
    assert {row_benchmark(r) for r in read} == {bench}  # the mean too: all its sets are the benchmark's
    found = _find(meta, "id_class_list")
    assert found is not None and found["n"] == n and found["names"][0] == first


def test_sweep_of_a_labelled_benchmark_gives_id_accuracy_in_rows_and_says_it(root, tmp_path):
    """A sweep whose ID labels index the class list: each row of sweep.csv holds the run's ID accuracy, and the
    printed table says it under the sizes, as `score` does (issue 31)."""
    from negvocab.vocab import Vocabulary

    ranked = tmp_path / "ranked.json"
    Vocabulary.from_labels([f"neg{i}" for i in range(6)], source="wordnet").save(ranked)
    out = tmp_path / "sw"
    r = runner.invoke(
        app,
        ["sweep", "--vocab", str(ranked), "--sizes", "3,6", "--ood", f"waterbirds-spurious={root}", "--n-boot", "0",
         "-o", str(out), *RANDOM_VIT, "--cache-dir", str(tmp_path / "cache")],
        catch_exceptions=False,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    acc = json.loads((out / "sweep.json").read_text())["id_accuracy"]
    assert acc["n"] > 0 and acc["labels"] in ("index", "name", "wnid")
    table = list(csv.DictReader((out / "sweep.csv").open()))
    assert [int(row["M"]) for row in table] == [3, 6] and {float(row["id_accuracy"]) for row in table} == {acc["top1"]}
    line = f"ID accuracy (zero-shot top-1 with the ID prompts): {100 * acc['top1']:.1f}% of {acc['n']} ID images"
    assert line in r.stdout.splitlines()
    assert "ccr@1e-1" not in table[0]  # not a full-spectrum ID set
