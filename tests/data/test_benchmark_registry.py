"""Benchmarks as data: one given as a TOML file (tiny image folders made here) opens from the public API
with its ID set and its groups; a user's own set named like a benchmark's has no group; bad data is one line."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import negvocab
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import RESERVED_SET_NAMES, benchmark_from_dict, ood_group

TOY_TOML = """
name = "toy-bench"
title = "A toy benchmark given as data"
source = "tests"
id = { layout = "folder", path = "val" }

[ood.near-one]
group = "near"
layout = "classes"
path = "near_one"

[ood.far-one]
group = "far"
layout = "list"
path = "lists/far_one.txt"
image_root = "images"

[ood.odd-one]
group = "other"
layout = "folder"
path = "odd"
"""


def _images(folder, names, seed=0):
    rng = np.random.default_rng(seed)
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(path)


@pytest.fixture
def toy_root(tmp_path):
    return make_toy_root(tmp_path / "toy")


def make_toy_root(root):
    """A data root laid out as TOY_TOML says: val/, near_one/<class>/, lists/far_one.txt over images/, odd/."""
    _images(root / "val", [f"v{i}.png" for i in range(5)])
    _images(root / "near_one", ["a/n0.png", "a/n1.png", "b/n2.png"], seed=1)
    _images(root / "images", ["far/f0.png", "far/f1.png"], seed=2)
    (root / "lists").mkdir()
    (root / "lists" / "far_one.txt").write_text("far/f0.png 0\nfar/f1.png 0\n")
    _images(root / "odd", ["o0.png"], seed=3)
    return root


@pytest.fixture
def toy_bench(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY_TOML)
    [bench] = negvocab.load_benchmarks(path)
    yield bench
    negvocab.unregister_benchmark(bench.name)


def test_a_benchmark_given_as_data_opens_with_its_id_set_and_groups(toy_bench, toy_root, tmp_path):
    assert "toy-bench" in negvocab.list_benchmarks() and negvocab.get_benchmark("TOY-BENCH") is toy_bench
    user = tmp_path / "textures"
    _images(user, ["t0.png", "t1.png"], seed=4)
    sets = negvocab.open_ood_sets(["toy-bench=" + str(toy_root), f"textures={user}"])
    assert list(sets) == ["textures", "near-one", "far-one", "odd-one"]
    assert sets.groups == {"textures": None, "near-one": "near", "far-one": "far", "odd-one": "other"}
    assert sets.benchmarks == {"textures": "", "near-one": "toy-bench", "far-one": "toy-bench", "odd-one": "toy-bench"}
    assert ood_group("textures") == "far"  # the catalogue knows a 'textures' set, yet the user's has no group
    assert sets["near-one"].labels == ["a", "a", "b"] and len(sets["far-one"]) == 2
    assert sets["far-one"].paths == [str(toy_root / "images/far/f0.png"), str(toy_root / "images/far/f1.png")]
    assert sets.id is not None and sorted(sets.id.ids) == [f"v{i}" for i in range(5)]
    assert negvocab.set_groups(dict(sets)) == sets.groups  # the groups travel with the sets (their info)
    alone = negvocab.open_benchmark("toy-bench", toy_root)
    assert alone.id is not None and alone.groups == {"near-one": "near", "far-one": "far", "odd-one": "other"}
    given_id = negvocab.open_ood_sets([f"toy-bench={toy_root}"], id_path=toy_root / "odd")
    assert given_id.id is not None and given_id.id.ids == ["o0"]  # an id_path wins over the benchmark's


def test_same_data_as_a_dict_and_the_carve_kind(toy_root, tmp_path):
    import tomllib

    doc = {**tomllib.loads(TOY_TOML), "name": "toy-dict"}
    negvocab.register_benchmark(doc)
    try:
        with pytest.raises(InputError, match="'toy-dict' is registered already"):
            negvocab.register_benchmark(doc)
        sets = negvocab.open_ood_sets({"toy-dict": toy_root})
        assert sets.groups["near-one"] == "near" and len(sets) == 3
    finally:
        negvocab.unregister_benchmark("toy-dict")
    carve = {
        "name": "toy-carve",
        "kind": "carve",
        "carve": "tests.data.test_benchmark_registry:split_in_two",
        "inputs": ["every"],
        "ood": {"odd-half": {"group": "far"}},
        "id": {"layout": "folder", "path": ""},
    }
    negvocab.register_benchmark(carve)
    try:
        with pytest.raises(InputError, match="toy-carve carves its ID and OOD sets from .* and needs every"):
            negvocab.open_benchmark("toy-carve", toy_root / "val")
        got = negvocab.open_ood_sets(["toy-carve=" + str(toy_root / "val")], inputs={"toy-carve": {"every": 2}})
        assert len(got.id) + len(got["odd-half"]) == 5 and got.groups == {"odd-half": "far"}
        assert got["odd-half"].info["ood_group"] == "far"
        with pytest.raises(InputError, match="carves its own ID set; give no id_path"):
            negvocab.open_ood_sets(["toy-carve=" + str(toy_root / "val")], id_path=toy_root / "val")
    finally:
        negvocab.unregister_benchmark("toy-carve")


def split_in_two(root, *, every, ground_truth=None):
    """A carve function for the test: every ``every``-th image is OOD."""
    images = negvocab.open_image_set(root, layout="folder")
    ood = [i for i in range(len(images)) if i % every == 1]
    rest = [i for i in range(len(images)) if i % every != 1]
    return images.select(rest, name="rest"), {"odd-half": images.select(ood, name="odd half")}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ood": {"mean": {"path": "x"}}}, "set name 'mean' is not allowed"),
        ({"ood": {"a": {"path": "x", "group": "middle"}}}, "group 'middle'; choose one of near, far, other"),
        ({"ood": {"a": {"path": "x", "layout": "zip"}}}, "layout 'zip'; choose one of list, folder"),
        ({"ood": {"a": {"path": "x", "colour": "red"}}}, "ood.a: unknown key 'colour'"),
        ({"kind": "carve"}, "kind 'carve' needs carve = 'pkg.module:function'"),
        ({"name": "a=b"}, "must be non-empty, without '=' or '/'"),
        ({"ood": "x"}, "ood must be a table of sets"),
        ({"id": {"path": "v", "group": "near"}}, "an ID set has no group"),
    ],
)
def test_bad_benchmark_data_is_one_line(change, message):
    doc = {"name": "bad", "ood": {"a": {"path": "x"}}, **change}
    with pytest.raises(InputError, match=message) as e:
        benchmark_from_dict(doc)
    assert "\n" not in str(e.value)


def test_spec_rules_reserved_names_and_disagreeing_id_sets(toy_bench, toy_root, tmp_path):
    assert RESERVED_SET_NAMES == ("mean", "near-ood", "far-ood")
    for name in RESERVED_SET_NAMES:
        with pytest.raises(InputError, match=f"ood {name}=x: '{name}' names the average"):
            negvocab.open_ood_sets([f"{name}=x"])
    with pytest.raises(InputError, match="an empty data root"):
        negvocab.open_ood_sets(["toy-bench="])
    with pytest.raises(InputError, match="its set 'near-one' is given twice"):
        negvocab.open_ood_sets([f"near-one={toy_root / 'odd'}", f"toy-bench={toy_root}"])
    other = tmp_path / "other"
    _images(other / "val", ["w.png"])
    for sub in ("near_one/a", "images/far", "odd"):
        _images(other / sub, ["x.png"])
    (other / "lists").mkdir()
    (other / "lists" / "far_one.txt").write_text("far/x.png 0\n")
    negvocab.register_benchmark({**benchmark_from_dict_doc(), "name": "toy-two"})
    try:
        with pytest.raises(InputError, match="have different ID sets; give one with id_path"):
            negvocab.open_ood_sets([f"toy-bench={toy_root}", f"toy-two={other}"])
    finally:
        negvocab.unregister_benchmark("toy-two")


def benchmark_from_dict_doc():
    import tomllib

    doc = tomllib.loads(TOY_TOML)
    doc["ood"] = {f"{k}-2": v for k, v in doc["ood"].items()}
    return doc
