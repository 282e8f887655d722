"""A grid's [vocabularies] take any registered builder: the plug-in ``toy`` (tests/plugins/toy_builder.py)
and the oracle are built per model through the registry, their options checked at parse time in one
line, and ``grid plan`` counts what they embed."""

from __future__ import annotations

import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.grid.config import parse_config
from negvocab.grid.plan import plan_grid
from tests.grid.conftest import ID_NAMES, VOCAB_A

WORDS = ["kettle", "ladder", "tower", "glacier", "piano", "chair", "comet"]
ORACLE = ["fungus", "moss", "goldfish", "lichen"]  # goldfish is an ID class: the synonym filter drops it


@pytest.fixture
def toy():
    from tests.plugins import toy_builder

    toy_builder.register()
    yield
    toy_builder.unregister()


@pytest.fixture
def builder_grid(grid_toml, grid_files):
    (grid_files / "oracle_labels.txt").write_text("\n".join(ORACLE) + "\n")
    words = ", ".join(f'"{w}"' for w in WORDS)
    text = grid_toml.read_text().replace(
        'B = "vocabB.txt"',
        f'T = {{ builder = "toy", stride = 2, words = [{words}], sizes = [2, 4] }}\n'
        'O = { builder = "oracle", labels = "oracle_labels.txt" }',
    )
    grid_toml.write_text(text.replace('[[methods]]\nname = "mcm"\n', ""))
    return grid_toml


def test_a_plugin_builder_runs_in_a_grid(toy, builder_grid, tmp_path):
    from negvocab.grid.work import load_model

    res = negvocab.run_grid(builder_grid, tmp_path / "out")
    cfg = negvocab.load_grid(builder_grid)
    oracle = negvocab.build_oracle_vocabulary(cfg.path("oracle_labels.txt"))
    assert oracle.labels == ["fungus", "moss", "lichen"]
    for spec in cfg.models:
        vlm = load_model(cfg, spec)
        toy = negvocab.build_vocabulary(
            "toy", vlm=vlm, words=WORDS, stride=2, templates="single", id_classes=cfg.path("classes.txt")
        )
        assert len(toy) == 4 and toy.source == "toy"
        for m in (2, 4):
            rows = [r for r in res.rows if r["model"] == spec.display and r["vocabulary"] == f"T@{m}"]
            assert rows and {(r["vocab_hash"], r["vocab_size"], r["vocab_source"]) for r in rows} == {
                (toy.head(m).short_hash, m, "toy")
            }
        rows = [r for r in res.rows if r["model"] == spec.display and r["vocabulary"] == "O"]
        assert rows and {(r["vocab_hash"], r["vocab_source"]) for r in rows} == {(oracle.short_hash, "oracle")}


def test_grid_plan_counts_what_each_builder_embeds(toy, builder_grid):
    cfg = negvocab.load_grid(builder_grid)
    plans, _ = plan_grid(cfg, probe=False)
    toy_texts = len(WORDS) + len(ID_NAMES)  # the toy's own count: its words and the class names
    assert plans[0].labels == len(ID_NAMES) + len(VOCAB_A) + toy_texts + len(set(ORACLE))


BASE = {
    "grid": {"device": "cpu"},
    "models": [{"name": "ViT-B-32", "random_weights": True}],
    "id": {"path": "id"},
    "ood": {"a": "a"},
}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"stride": 9}, "vocabularies.T.stride = 9: must be an integer between 1 and 5"),
        ({"stride": "2"}, "vocabularies.T.stride = '2': must be an integer between 1 and 5"),
        ({"words": []}, "vocabularies.T.words = \\[\\]: must be a non-empty list of words"),
        ({"colour": 1}, "vocabularies.T.colour: unknown key; known: builder, sizes, words, stride$"),
        ({"templates": "single"}, "vocabularies.T.templates: unknown key"),  # [grid] gives it
    ],
)
def test_plugin_options_are_checked_at_parse_time_in_one_line(toy, table, message):
    with pytest.raises(InputError, match=f"^g\\.toml: {message}") as e:
        parse_config({**BASE, "vocabularies": {"T": {"builder": "toy", **table}}}, source="g.toml")
    assert "\n" not in str(e.value)


def test_without_its_plugin_the_builder_is_unknown():
    with pytest.raises(InputError, match="vocabularies.T.builder = 'toy': must be one of wordnet, gpt, eoe"):
        parse_config({**BASE, "vocabularies": {"T": {"builder": "toy"}}}, source="g.toml")


def test_a_builder_that_needs_images_takes_them_from_its_table(grid_files):
    doc = {**BASE, "vocabularies": {"M": {"builder": "mined", "images": "oodA", "top_k": 3, "sizes": [5]}}}
    spec = parse_config(doc, base=str(grid_files), source="g.toml").vocabularies[0]
    assert (spec.builder, dict(spec.options), spec.names()) == ("mined", {"images": "oodA", "top_k": 3}, ["M@5"])
    with pytest.raises(InputError, match="^g\\.toml: vocabularies\\.M\\.images is missing: give the unlabelled images"):
        parse_config({**BASE, "vocabularies": {"M": {"builder": "mined"}}}, source="g.toml")


def test_a_file_a_builder_reads_is_part_of_its_cells_identity(toy, builder_grid, grid_files):
    """An edited labels file of a builder table (the oracle's ``labels``) changes the cells' identity, so a
    resumed grid rebuilds that vocabulary instead of reusing its old score files."""
    from negvocab.grid.work import _vocab_docs

    cfg = negvocab.load_grid(builder_grid)
    spec = next(v for v in cfg.vocabularies if v.name == "O")
    before = _vocab_docs(cfg, spec, {"m": 1}, {})
    (grid_files / "oracle_labels.txt").write_text("\n".join([*ORACLE, "tundra"]) + "\n")
    after = _vocab_docs(cfg, spec, {"m": 1}, {})
    assert before["O"]["files"] and before["O"]["files"] != after["O"]["files"]
    assert {k: v for k, v in before["O"].items() if k != "files"} == {
        k: v for k, v in after["O"].items() if k != "files"
    }
