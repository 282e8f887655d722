"""Grid files: the example parses, builder vocabularies are built per model, bad files are one line."""

from __future__ import annotations

from pathlib import Path

import pytest

import negvocab
from negvocab.errors import InputError
from negvocab.grid.config import parse_config

EXAMPLE = Path(__file__).parents[2] / "examples" / "grid.toml"


def test_the_example_parses():
    cfg = negvocab.load_grid(EXAMPLE, random_weights=True)
    assert [m.display for m in cfg.models] == ["CLIP ViT-B/32", "CLIP RN50"] and all(m.random_weights for m in cfg.models)
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
        ({"models": []}, "no \\[\\[models\\]\\]"),
        ({"models": [{"name": "ViT-B-32"}]}, "exactly one of pretrained"),
        ({"models": [{"name": "ViT-B-32", "random_weights": True, "weights": 1}]}, "unknown key"),
        ({"ood": {}}, "no OOD set"),
        ({"ood": {"mean": "x"}}, "may not be named 'mean'"),
        ({"vocabularies": {"v": {"builder": "gpt"}}}, "builder must be one of"),
        ({"vocabularies": {"v": {"builder": "wordnet", "sizes": [0]}}}, "positive integers"),
        ({"vocabularies": {"v": {"builder": "wordnet", "colour": 1}}}, "unknown builder option"),
        ({"methods": [{"name": "nope"}]}, "unknown method"),
        ({"grid": {"conventions": ["fancy"]}}, "unknown FPR convention"),
        ({"grid": {"speed": 1}}, "unknown key"),
        ({"vocabularies": {}}, "need \\[vocabularies\\]"),
    ],
)
def test_bad_files_are_one_line(change, message):
    with pytest.raises(InputError, match=message) as e:
        parse_config({**BASE, **change})
    assert "\n" not in str(e.value)


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(InputError, match="no such grid file"):
        negvocab.load_grid(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[grid\n")
    with pytest.raises(InputError, match="not valid TOML"):
        negvocab.load_grid(tmp_path / "bad.toml")


def test_builder_vocabularies_are_built_per_model(grid_toml, tmp_path):
    from negvocab.grid.work import load_model
    from negvocab.labels.candidates import sample_pool

    text = grid_toml.read_text().replace('B = "vocabB.txt"', 'W = { builder = "wordnet", pool = 300, sizes = [20, 50] }')
    text = text.replace('[[methods]]\nname = "mcm"\n', "")
    grid_toml.write_text(text)
    res = negvocab.run_grid(grid_toml, tmp_path / "out")
    cfg = negvocab.load_grid(grid_toml)
    classes = negvocab.read_id_classes(cfg.path("classes.txt"))
    for spec in cfg.models:
        vlm = load_model(cfg, spec)
        full = negvocab.build_wordnet_vocabulary(vlm, None, templates="single", id_classes=classes, candidates=sample_pool(300))
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
    assert sorted(sets["Fi-ImageNet-1k"].ids) == ["ILSVRC2012_val_00000002", "ILSVRC2012_val_00000005", "ILSVRC2012_val_00000009"]
    assert len(sets["ID"]) == 6 and "ILSVRC2012_val_00000007" not in sets["ID"].ids
    (tmp_path / "v.txt").write_text("sofa\nlamp\n")
    cells = plan_cells(cfg, sets)
    assert {c.ood_set for c in cells} == {"Fi-ImageNet-1k"} and len({c.digest for c in cells}) == len(cells)
