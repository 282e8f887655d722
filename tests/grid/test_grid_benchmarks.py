"""Grids name benchmarks in [ood] (a benchmark given as data here): its sets expand with their groups, and
the grid's tables get near-ood / far-ood / mean rows as `negvocab score` gives them (checked by hand)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.grid.config import parse_config
from negvocab.grid.run import write_grid
from negvocab.grid.tidy import GridResult, load_rows
from tests.data.test_benchmark_registry import TOY_TOML, _images
from tests.grid.conftest import TINY


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY_TOML)
    [bench] = negvocab.load_benchmarks(path)
    root = tmp_path / "toy"
    _images(root / "val", [f"v{i}.png" for i in range(6)])
    _images(root / "near_one", ["a/n0.png", "a/n1.png", "b/n2.png"], seed=1)
    _images(root / "images", ["far/f0.png", "far/f1.png"], seed=2)
    (root / "lists").mkdir()
    (root / "lists" / "far_one.txt").write_text("far/f0.png 0\nfar/f1.png 0\n")
    _images(root / "odd", ["o0.png", "o1.png"], seed=3)
    _images(tmp_path / "mine", ["m0.png", "m1.png"], seed=4)
    (tmp_path / "Tiny.json").write_text(json.dumps(TINY))
    (tmp_path / "classes.txt").write_text("goldfish\ntench\nrooster\n")
    yield root
    negvocab.unregister_benchmark(bench.name)


def _doc(ood, **grid):
    return {
        "grid": {"templates": "single", "id_classes": "classes.txt", "n_boot": 0, "device": "cpu", **grid},
        "models": [{"name": "Tiny", "model_config": "Tiny.json", "random_weights": True}],
        "id": {"path": "toy/val"},
        "ood": ood,
        "methods": ["mcm"],
    }


def test_ood_names_a_benchmark_and_its_sets_expand_with_their_groups(toy, tmp_path):
    for ood in (
        {"toy-bench": "toy", "textures": "mine"},
        {"b": {"benchmark": "toy-bench", "root": "toy"}, "textures": "mine"},
    ):
        cfg = parse_config(_doc(ood), base=str(tmp_path))
        got = {s.name: (s.group, s.benchmark) for s in cfg.ood_sets}
        assert got == {
            "near-one": ("near", "toy-bench"),
            "far-one": ("far", "toy-bench"),
            "odd-one": ("other", "toy-bench"),
            "textures": (None, None),  # the user's own set: no group, whatever its name
        }
    with pytest.raises(InputError, match=r"ood.b.benchmark: unknown benchmark 'nope'"):
        parse_config(_doc({"b": {"benchmark": "nope", "root": "toy"}}), base=str(tmp_path))
    with pytest.raises(
        InputError, match="ood.fi-imagenet-1k: fi-imagenet-1k carves the ID set from its folder; give it in \\[id\\]"
    ):
        parse_config(_doc({"fi-imagenet-1k": "toy/val"}), base=str(tmp_path))
    for name in ("near-ood", "far-ood", "mean"):
        with pytest.raises(InputError, match=f"ood.{name}: an OOD set may not be named '{name}'"):
            parse_config(_doc({name: "mine"}), base=str(tmp_path))
    with pytest.raises(InputError, match="two OOD sets are named 'near-one'"):
        parse_config(_doc({"toy-bench": "toy", "near-one": "mine"}), base=str(tmp_path))


def test_a_grid_over_a_benchmark_has_group_rows_equal_to_a_hand_mean(toy, tmp_path):
    toml = tmp_path / "grid.toml"
    toml.write_text(
        '[grid]\ntemplates = "single"\nid_classes = "classes.txt"\nn_boot '
        '= 0\ndevice = "cpu"\nconventions = ["paper", "openood"]\n'
        '[[models]]\nname = "Tiny"\nmodel_config = "Tiny.json"\nrandom_weights = true\n'
        '[id]\npath = "toy/val"\n[ood]\ntextures = "mine"\ntoy-bench = "toy"\n[[methods]]\nname = "mcm"\n'
    )
    res = negvocab.run_grid(toml, tmp_path / "out")
    table = res.table()
    for conv in ("paper", "openood"):
        rows = {r["ood_set"]: r for r in table if r["convention"] == conv}
        assert list(rows) == ["textures", "near-one", "far-one", "odd-one", "near-ood", "far-ood", "mean"]
        for metric in ("fpr", "auroc", "aupr_in", "aupr_out"):
            assert rows["near-ood"][metric] == rows["near-one"][metric]  # its one near set
            assert rows["far-ood"][metric] == rows["far-one"][metric]
            hand = sum(rows[s][metric] for s in ("textures", "near-one", "far-one", "odd-one")) / 4
            assert rows["mean"][metric] == pytest.approx(hand, abs=1e-12)
        assert rows["near-ood"]["n_ood"] == 3 and rows["far-ood"]["n_ood"] == 2 and rows["mean"]["n_ood"] == 9
    # read back from the folder without the grid file: grid.json keeps the groups, the rows are the same
    write_grid(res, tmp_path / "out", overwrite=True)  # what `negvocab grid run` does after the cells
    stored = json.loads((tmp_path / "out" / "grid.json").read_text())
    assert stored["ood_groups"]["near-one"] == "near"
    # and the ID label space, as `negvocab score` names it (published figures are matched on it)
    assert stored["id_classes"] == negvocab.read_id_classes(tmp_path / "classes.txt").dataset == "custom:classes.txt"
    # and where each set came from, and the ID split ("": a folder of the user's, no benchmark's split)
    toy_sets = [s.name for s in negvocab.get_benchmark("toy-bench").sets]
    assert stored["set_benchmarks"] == {"textures": "", **dict.fromkeys(toy_sets, "toy-bench")}
    assert stored["id_split"] == ""
    back, _, _ = load_rows([tmp_path / "out"])
    assert {r["id_classes"] for r in back} == {"custom:classes.txt"}
    assert {r["id_split"] for r in back} == {""} and back[0]["set_benchmarks"] == stored["set_benchmarks"]

    def groups_of(rs):
        return {(r["convention"], r["ood_set"]): r["fpr"] for r in rs if r["ood_set"] in ("near-ood", "far-ood")}

    assert len(groups_of(back)) == 4 and groups_of(back) == groups_of(table)
    assert "near-ood" in (tmp_path / "out" / "pivots.md").read_text()


def test_group_rows_of_grid_tables_by_hand():
    """Two near sets, one far set, one set in no group: near-ood averages the two near cells, far-ood the
    far one, mean all four, per (model, vocabulary, method, convention); no groups: the mean alone."""
    rng = np.random.default_rng(3)
    groups = {"s1": "near", "s2": "near", "s3": "far", "s4": None}
    rows = []
    for model in ("A", "B"):
        for conv in ("paper", "openood"):
            for name in groups:
                metrics = {k: float(rng.uniform()) for k in ("fpr", "auroc", "aupr_in", "aupr_out")}
                rows.append({"model": model, "vocabulary": "v", "method": "neglabel", "convention": conv,
                             "ood_set": name,
                             "n_id": 24, "n_ood": int(rng.integers(1, 9)), "cell": f"{model}{conv}{name}", "tpr": 0.95,
                             **metrics})  # fmt: skip
    table = GridResult(rows, groups=groups).table()
    summary = [r for r in table if r["ood_set"] in ("near-ood", "far-ood", "mean")]
    assert [r["ood_set"] for r in summary] == ["near-ood", "far-ood", "mean"] * 4
    for r in summary:
        members = {"near-ood": ("s1", "s2"), "far-ood": ("s3",), "mean": tuple(groups)}[r["ood_set"]]
        cells = [
            x
            for x in rows
            if x["model"] == r["model"] and x["convention"] == r["convention"] and x["ood_set"] in members
        ]
        for metric in ("fpr", "auroc", "aupr_in", "aupr_out"):
            hand = 0.0
            for c in cells:
                hand += c[metric]
            assert r[metric] == pytest.approx(hand / len(members), abs=1e-12)
        assert r["n_ood"] == sum(c["n_ood"] for c in cells) and r["fpr_ci_low"] is None  # no stored interval
        assert r["n_ood_sets"] == len(members) and r["ood_sets"] == (None if r["ood_set"] == "mean" else list(members))
    assert [r["ood_set"] for r in GridResult(rows).table()[len(rows) :]] == ["mean"] * 4
    only_near = GridResult(rows, groups={"s1": "near", "s2": "near"}).table()[len(rows) :]
    assert [r["ood_set"] for r in only_near] == ["mean"] * 4  # one group alone: no group rows, as in score


def test_group_rows_of_a_bootstrapped_grid_have_intervals_of_their_own_sets(toy, tmp_path):
    """With n_boot, near-ood and far-ood get intervals of the mean over their own sets (NaN before): a
    group of one set has exactly that set's interval (the same draws); read back from the folder alike."""
    toml = tmp_path / "grid.toml"
    toml.write_text(
        '[grid]\ntemplates = "single"\nid_classes = "classes.txt"\nn_boot = 50\ndevice = "cpu"\n'
        '[[models]]\nname = "Tiny"\nmodel_config = "Tiny.json"\nrandom_weights = true\n'
        '[id]\npath = "toy/val"\n[ood]\ntextures = "mine"\ntoy-bench = "toy"\n[[methods]]\nname = "mcm"\n'
    )
    res = negvocab.run_grid(toml, tmp_path / "out")
    rows = {r["ood_set"]: r for r in res.table()}
    keys = [f"{m}_ci_{e}" for m in ("fpr", "auroc", "aupr_in", "aupr_out") for e in ("low", "high")]
    for group, only in (("near-ood", "near-one"), ("far-ood", "far-one")):
        assert [rows[group][k] for k in keys] == [rows[only][k] for k in keys]
    mean = [rows["mean"][k] for k in keys]
    assert not any(np.isnan(mean)) and mean != [rows["near-one"][k] for k in keys]
    assert rows["mean"]["fpr_ci_low"] <= rows["mean"]["fpr"] <= rows["mean"]["fpr_ci_high"]
    write_grid(res, tmp_path / "out", overwrite=True)
    back, _, _ = load_rows([tmp_path / "out"])
    summary = {r["ood_set"]: [r[k] for k in keys] for r in back if r["ood_set"] in ("near-ood", "far-ood", "mean")}
    assert summary == {k: [rows[k][c] for c in keys] for k in ("near-ood", "far-ood", "mean")}


def test_id_names_a_benchmark_its_id_set_class_list_and_ood_sets(cifar10_root, tmp_path):
    """[id] = {benchmark, root}: the benchmark's ID set (OpenOOD's test_cifar10.txt), its shipped class list
    as id_classes, and with no [ood] its OOD sets in their groups; MCM's cells equal the public API on them."""
    from negvocab.data.benchmarks import open_benchmark
    from negvocab.grid.work import load_model

    (tmp_path / "Tiny.json").write_text(json.dumps(TINY))
    toml = tmp_path / "grid.toml"
    toml.write_text(
        '[grid]\ntemplates = "single"\nn_boot = 0\ndevice = "cpu"\n'
        '[[models]]\nname = "Tiny"\nmodel_config = "Tiny.json"\nrandom_weights = true\n'
        f'[id]\nbenchmark = "openood-cifar10"\nroot = "{cifar10_root}"\n[[methods]]\nname = "mcm"\n'
    )
    cfg = negvocab.load_grid(toml)
    assert cfg.id_set.benchmark == "openood-cifar10" and cfg.id_set.benchmark_id
    assert [(s.name, s.group) for s in cfg.ood_sets] == [
        ("cifar100", "near"), ("tin", "near"), ("mnist", "far"), ("svhn", "far"), ("textures", "far"),
        ("places365", "far"),
    ]  # fmt: skip
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    assert len(classes.names) == 10 and list(classes.names[:3]) == ["airplane", "automobile", "bird"]
    res = negvocab.run_grid(toml, tmp_path / "out")
    rows = {r["ood_set"]: r for r in res.table()}
    assert list(rows)[-3:] == ["near-ood", "far-ood", "mean"]
    opened = open_benchmark("openood-cifar10", cifar10_root)
    vlm = load_model(cfg, cfg.models[0])
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    s_id = negvocab.score("mcm", vlm.encode_images(opened.id).embeddings, cls)
    assert rows["mnist"]["n_id"] == len(opened.id) == 3
    for name in ("cifar100", "mnist", "places365"):
        s_ood = negvocab.score("mcm", vlm.encode_images(opened[name]).embeddings, cls)
        assert rows[name]["auroc"] == pytest.approx(negvocab.metrics.auroc(s_id, s_ood), abs=1e-12)
    # [grid] id_classes given: it wins over the benchmark's list
    (tmp_path / "mine.txt").write_text("cat\ndog\n")
    toml.write_text(toml.read_text().replace("n_boot = 0\n", 'n_boot = 0\nid_classes = "mine.txt"\n'))
    assert negvocab.load_grid(toml).id_classes == "mine.txt"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('benchmark = "nope"\nroot = "r"', r"id.benchmark: unknown benchmark 'nope'"),
        ('benchmark = "fi-imagenet-1k"\nroot = "r"', r"id.benchmark = 'fi-imagenet-1k': it carves the ID set"),
        ('benchmark = "openood-cifar10"', r"id.root is missing"),
    ],
)
def test_a_bad_id_benchmark_is_one_line(tmp_path, table, message):
    toml = tmp_path / "grid.toml"
    toml.write_text(
        '[grid]\ntemplates = "single"\nn_boot = 0\ndevice = "cpu"\n[[models]]\nname = "ViT-B-32"\n'
        f'random_weights = true\n[id]\n{table}\n[[methods]]\nname = "mcm"\n'
    )
    with pytest.raises(InputError, match=message):
        negvocab.load_grid(toml)
