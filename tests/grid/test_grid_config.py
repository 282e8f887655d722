"""Grid files: the example parses, builder vocabularies are built per model, bad files are one line."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.grid.config import parse_config
from negvocab.grid.resources import Resources

EXAMPLE = Path(__file__).parents[2] / "examples" / "grid.toml"


def test_the_example_parses():
    cfg = negvocab.load_grid(EXAMPLE, random_weights=True)
    assert [m.display for m in cfg.models] == ["CLIP ViT-B/32", "CLIP RN50"] and all(
        m.random_weights for m in cfg.models
    )
    assert [s.name for s in cfg.ood_sets] == ["graphics", "noise", "stripes"]
    assert cfg.vocabularies[0].names() == ["wordnet@100", "wordnet@200", "wordnet@400"]
    assert cfg.conventions == ["paper", "openood"] and cfg.path("grid-cache") == str(EXAMPLE.parent / "grid-cache")


BASE = {
    "models": [{"name": "ViT-B-32", "random_weights": True}],
    "id": {"path": "id"},
    "ood": {"a": "a"},
    "vocabularies": {"v": "v.txt"},
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"models": []}, "models = \\[\\]: must be at least one \\[\\[models\\]\\]"),
        ({"models": [{"name": "ViT-B-32"}]}, "exactly one of pretrained"),
        ({"models": [{"name": "ViT-B-32", "random_weights": True, "weights": 1}]}, "unknown key"),
        ({"ood": {}}, "no OOD set"),
        ({"ood": {"mean": "x"}}, "may not be named 'mean'"),
        ({"vocabularies": {"v": {"builder": "nope"}}}, "vocabularies.v.builder = 'nope': must be one of wordnet, gpt"),
        ({"vocabularies": {"v": {"builder": "gpt", "model": "m"}}}, "vocabularies.v.builder = 'gpt': needs an LLM"),
        ({"vocabularies": {"v": {"builder": "oracle", "labels": "l.txt", "sizes": [2]}}}, "does not rank its labels"),
        ({"vocabularies": {"v": {"builder": "wordnet", "templates": "single"}}}, "vocabularies.v.templates: unknown"),
        (
            {"vocabularies": {"v": {"builder": "wordnet", "n_candidates": 3, "candidates": "c.tsv"}}},
            "vocabularies.v: give n_candidates .* or candidates .*, not both",
        ),
        ({"vocabularies": {"v": {"builder": "wordnet", "sizes": [0]}}}, "positive integers"),
        (
            {"vocabularies": {"v": {"builder": "wordnet", "colour": 1}}},
            "vocabularies.v.colour: unknown key; known: .*quantile",
        ),
        ({"methods": [{"name": "nope"}]}, "unknown method"),
        (
            {"grid": {"conventions": ["fancy"]}},
            "grid.conventions = \\['fancy'\\]: must be a non-empty list of FPR conventions, from paper",
        ),
        ({"grid": {"speed": 1}}, "unknown key"),
        ({"vocabularies": {}}, "need \\[vocabularies\\]"),
    ],
)
def test_bad_files_are_one_line(change, message):
    with pytest.raises(InputError, match=message) as e:
        parse_config({**BASE, **change})
    assert "\n" not in str(e.value)


# every bad value of issue 23 (and a few more): one line naming the key, the value and what is allowed
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grid": {"seed": 1}}, "grid.seed: unknown key; known: templates"),
        ({"grid": {"tpr": "0.9"}}, "grid.tpr = '0.9': must be a number in \\(0, 1\\]"),
        ({"grid": {"tpr": 2}}, "grid.tpr = 2: must be a number in \\(0, 1\\]"),
        ({"grid": {"n_boot": -5}}, "grid.n_boot = -5: must be an integer between 0 and 100,000"),
        ({"grid": {"n_boot": "5"}}, "grid.n_boot = '5': must be an integer"),
        ({"grid": {"n_boot": 1.5}}, "grid.n_boot = 1.5: must be an integer"),
        ({"grid": {"conventions": []}}, "grid.conventions = \\[\\]: must be a non-empty list"),
        ({"grid": {"cache_dir": 3}}, "grid.cache_dir = 3: must be a non-empty path"),
        ({"grid": 3}, "grid = 3: must be a \\[grid\\] table"),
        ({"grid": {"templates": "no-such-templates"}}, "grid.templates = 'no-such-templates': unknown template preset"),
        ({"grid": {"device": "gpu"}}, "grid.device = 'gpu': unknown device"),
        ({"grid": {"batch_size": 0}}, "grid.batch_size = 0: must be a positive integer"),
        ({"resources": {"bogus": 1}}, "resources.bogus: unknown key; known: num_gpus, num_cpus, memory, workers"),
        ({"resources": {"score": {"num_cpus": -1}}}, "resources.score.num_cpus = -1: must be a number > 0"),
        (
            {"models": [{"name": "ViT-B-32", "random_weights": True, "seed": 1.5}]},
            "models\\[0\\].seed = 1.5: must be an integer >= 0",
        ),
        (
            {"models": [{"name": "ViT-B-32", "random_weights": "yes"}]},
            "models\\[0\\].random_weights = 'yes': must be true or false",
        ),
        (
            {"models": [{"name": "ViT-B-32", "random_weights": True, "precision": "fp8"}]},
            "models\\[0\\].precision = 'fp8': must be fp32, fp16 or bf16",
        ),
        (
            {"models": [{"name": "ViT-B-32", "random_weights": True, "precision": "fp16"}]},
            "models\\[0\\].precision = 'fp16': precision fp16 needs a CUDA device",
        ),
        ({"models": [{"random_weights": True}]}, "models\\[0\\].name is missing: give an open_clip model name"),
        (
            {"vocabularies": {"v": {"builder": "wordnet", "quantile": "x"}}},
            "vocabularies.v.quantile = 'x': must be a quantile level",
        ),
        (
            {"vocabularies": {"v": {"builder": "wordnet", "preset": "fancy"}}},
            "vocabularies.v.preset = 'fancy': must be a candidate preset, one of",
        ),
        (
            {"vocabularies": {"v": {"builder": "wordnet", "n_candidates": -1}}},
            "vocabularies.v.n_candidates = -1: must be a positive integer",
        ),
        ({"vocabularies": {"v": 3}}, "vocabularies.v = 3: must be a table of name = file"),
        ({"ood": {"a": ""}}, "ood.a = '': must be a table of name = path"),
        ({"ood": {"a": {"path": "x", "lay": 1}}}, "ood.a.lay: unknown key; known: path, layout"),
        ({"id": 5}, r"id = 5: must be a path, a table with path = \.\.\., or \{benchmark, root\} \(its ID set\)"),
        (
            {"methods": [{"name": "neglabel", "params": {"groups": "a"}}]},
            "methods\\[0\\].params: groups must be an integer, got 'a'",
        ),
        ({"methods": [{"name": "neglabel", "params": {"groups": 0}}]}, "methods\\[0\\].params: groups must be"),
        ({"methods": [{"name": "mcm", "params": {"groups": 2}}]}, "methods\\[0\\].params: mcm: unexpected parameter"),
    ],
)
def test_each_bad_value_is_one_line_naming_file_key_and_value(change, message):
    doc = {**BASE, "grid": {"device": "cpu"}, **change}
    if isinstance(change.get("grid"), dict):
        doc["grid"] = {"device": "cpu", **change["grid"]}
    with pytest.raises(InputError, match=f"^g\\.toml: {message}") as e:
        parse_config(doc, source="g.toml")
    assert "\n" not in str(e.value)


def test_a_good_document_keeps_its_values():
    doc = {
        **BASE,
        "grid": {"device": "cpu", "tpr": 0.9, "n_boot": 0, "conventions": "openood"},
        "models": [{"name": "ViT-B-32", "random_weights": True, "seed": 3}],
    }
    cfg = parse_config(doc)
    assert (cfg.tpr, cfg.n_boot, cfg.conventions, cfg.models[0].seed, cfg.resources) == (
        0.9,
        0,
        ["openood"],
        3,
        Resources(),
    )
    v = parse_config(
        {**doc, "vocabularies": {"w": {"builder": "wordnet", "sizes": [50, 20, 50], "n_candidates": 300}}}
    ).vocabularies[0]
    assert v.sizes == (20, 50) and dict(v.options) == {"n_candidates": 300}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "a folder, not a grid file"),
        (bytes(range(256)), "not a UTF-8 text file"),
        ("[grid]\ntemplates = 'caf\u00e9'\n".encode("latin-1"), "not a UTF-8 text file"),
        (b"[grid]\nseed = \n", "not valid TOML"),
        (b"\x00\x01garbage = = =", "not valid TOML"),
    ],
)
def test_unreadable_grid_files_are_one_line_through_the_cli(tmp_path, content, message):
    from typer.testing import CliRunner

    from negvocab.cli import app

    path = tmp_path / "g.toml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    for argv in (
        ["grid", "run", str(path), "-o", str(tmp_path / "out")],
        ["grid", "status", str(path), "-o", str(tmp_path / "out")],
    ):
        res = CliRunner().invoke(app, argv)
        said = (
            "not a grid results folder" if content is None and argv[1] == "status" else message
        )  # status reads a folder as results
        assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before any folder is made


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(InputError, match="no such grid file"):
        negvocab.load_grid(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[grid\n")
    with pytest.raises(InputError, match="not valid TOML"):
        negvocab.load_grid(tmp_path / "bad.toml")


def test_builder_vocabularies_are_built_per_model(grid_toml, tmp_path):
    from negvocab.grid.work import load_model
    from negvocab.labels.candidates import sample_pool

    text = grid_toml.read_text().replace(
        'B = "vocabB.txt"', 'W = { builder = "wordnet", pool = 300, sizes = [20, 50] }'
    )
    text = text.replace('[[methods]]\nname = "mcm"\n', "")
    grid_toml.write_text(text)
    res = negvocab.run_grid(grid_toml, tmp_path / "out")
    cfg = negvocab.load_grid(grid_toml)
    classes = negvocab.read_id_classes(cfg.path("classes.txt"))
    for spec in cfg.models:
        vlm = load_model(cfg, spec)
        full = negvocab.build_wordnet_vocabulary(
            vlm, None, templates="single", id_classes=classes, candidates=sample_pool(300)
        )
        for m in (20, 50):
            rows = [r for r in res.rows if r["model"] == spec.display and r["vocabulary"] == f"W@{m}"]
            assert rows and {r["vocab_hash"] for r in rows} == {full.head(m).short_hash} and rows[0]["vocab_size"] == m
    hashes = {r["model"]: r["vocab_hash"] for r in res.rows if r["vocabulary"] == "W@50"}
    assert hashes["TinyA"] != hashes["TinyB"]  # each model ranks with its own text embeddings


def test_fi_imagenet_split_in_the_id_section(tmp_path):
    """fi_ood in [id]: the ID set is the val folder minus the OOD and ambiguous lists, and the
    listed images are an OOD set named Fi-ImageNet-1k, before the other OOD sets."""
    import numpy as np
    from PIL import Image

    from negvocab.grid.work import open_sets, plan_cells

    wnids = negvocab.imagenet1k().wnids
    rng = np.random.default_rng(0)
    for i in range(1, 11):
        folder = tmp_path / "val" / wnids[i % 3]
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(folder / f"ILSVRC2012_val_{i:08d}.JPEG")
    (tmp_path / "ood.txt").write_text("ILSVRC2012_val_00000002\nILSVRC2012_val_00000005\nILSVRC2012_val_00000009\n")
    (tmp_path / "amb.txt").write_text("ILSVRC2012_val_00000007\n")
    (tmp_path / "other").mkdir()
    doc = {**BASE, "id": {"path": "val", "fi_ood": "ood.txt", "fi_ambiguous": "amb.txt"}, "ood": {"other": "other"}}
    cfg = parse_config(doc, base=str(tmp_path))
    assert [s.name for s in cfg.ood_sets] == ["Fi-ImageNet-1k", "other"]
    cfg.ood_sets = cfg.ood_sets[:1]  # the empty folder is not opened
    sets = open_sets(cfg)
    assert sorted(sets["Fi-ImageNet-1k"].ids) == [
        "ILSVRC2012_val_00000002",
        "ILSVRC2012_val_00000005",
        "ILSVRC2012_val_00000009",
    ]
    assert len(sets["ID"]) == 6 and "ILSVRC2012_val_00000007" not in sets["ID"].ids
    (tmp_path / "v.txt").write_text("sofa\nlamp\n")
    cells = plan_cells(cfg, sets)
    assert {c.ood_set for c in cells} == {"Fi-ImageNet-1k"} and len({c.digest for c in cells}) == len(cells)


def _random_value(rng, depth=0):
    kind = rng.integers(0, 9 if depth < 2 else 6)
    return [
        lambda: int(rng.integers(-5, 10**6)),
        lambda: float(rng.choice([0.5, 1.5, -1.0, float("nan"), float("inf"), 2.0])),
        lambda: str(rng.choice(["", " ", "paper", "x" * 300, "caf\u00e9", "../..", "{}", "cuda:7", "neglabel"])),
        lambda: bool(rng.integers(0, 2)),
        lambda: [],
        lambda: {},
        lambda: [_random_value(rng, depth + 1) for _ in range(rng.integers(1, 4))],
        lambda: {
            str(rng.choice(["path", "name", "sizes", "builder", "params", "file", "seed", "k"])): _random_value(
                rng, depth + 1
            )
        },
        lambda: {
            "name": "neglabel",
            "params": {str(rng.choice(["groups", "top_k", "temperature", "nope"])): _random_value(rng, depth + 1)},
        },
    ][kind]()


def test_random_documents_give_a_config_or_one_line():
    """A seeded fuzz of the schema: any key of a good document set to a random value (numbers,
    strings, lists, tables, nested) gives a GridConfig or one InputError line, never another exception."""
    import numpy as np

    rng = np.random.default_rng(23)
    good = {
        **BASE,
        "grid": {"device": "cpu", "n_boot": 10},
        "methods": [{"name": "neglabel", "params": {"groups": 2}}],
        "resources": {"image": {"num_cpus": 2}},
    }
    paths = [("grid", "tpr"), ("grid", "n_boot"), ("grid", "conventions"), ("grid", "cache_dir"), ("grid", "templates"),
             ("resources",), ("resources", "image"),
             ("models",), ("id",), ("ood",), ("ood", "a"), ("vocabularies",), ("vocabularies", "v"), ("methods",),
             ("grid",)]  # fmt: skip
    outcomes = {"ok": 0, "refused": 0}
    for _ in range(400):
        doc = copy.deepcopy(good)
        where = paths[rng.integers(0, len(paths))]
        target = doc
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = _random_value(rng)
        try:
            parse_config(doc, source="f.toml")
            outcomes["ok"] += 1
        except InputError as e:
            assert "\n" not in str(e) and str(e).startswith("f.toml: "), str(e)
            outcomes["refused"] += 1
    assert outcomes["ok"] > 0 and outcomes["refused"] > 100


def test_the_field_example_holds_the_new_builders_and_test_time_methods():
    """examples/grid_field.toml: the example grid plus CSP (ranked), NegRefine and AdaNeg/TANL as streams."""
    cfg = negvocab.load_grid(EXAMPLE.with_name("grid_field.toml"), random_weights=True)
    names = [n for v in cfg.vocabularies for n in v.names()]
    assert names == ["wordnet@100", "wordnet@200", "wordnet@400", "handpicked", "csp@100", "csp@400"]
    assert [m.name for m in cfg.methods] == ["neglabel", "mcm", "negrefine", "adaneg", "tanl"]
    assert [bool(m.stream) for m in cfg.methods] == [False, False, False, True, True]
    assert dict(cfg.methods[4].stream)["seed"] == 0 and dict(cfg.methods[4].stream)["order"] == "shuffled"
