"""``[grid] id_classes`` as a label space (issue 31, part "labelspace"): a class file's names mapped to
WordNet unless ``map_classes = false`` (with ``hints``), or a benchmark's name; the mapping is in a cell's
identity only where a builder takes it, so a grid of file vocabularies resumes with the same digests."""

from __future__ import annotations

import hashlib

import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import classes_file
from negvocab.data.label_space import open_label_space
from negvocab.grid import labelspace
from negvocab.grid.config import parse_config
from negvocab.grid.labelspace import id_classes, open_id_classes
from negvocab.grid.work import _id_classes_doc, build_in_grid, load_model, open_sets, plan_cells
from tests.grid.test_grid_config import BASE

CUB = "# hint: bird\nMarsh Wren\nCardinal\nLaysan Albatross\n"  # CUB-200 names; a WordNet hyponym of the first:
HYPONYM = "sedge wren"


def _grid(grid_toml, grid_files, *, grid_keys="", vocab=""):
    text = grid_toml.read_text().replace('id_classes = "classes.txt"', f'id_classes = "classes.txt"\n{grid_keys}')
    if vocab:
        text = text.replace('B = "vocabB.txt"', f'B = "vocabB.txt"\n{vocab}')
    grid_toml.write_text(text)
    return negvocab.load_grid(grid_toml)


def _digests(cfg):
    return {c.key(): c.digest for c in plan_cells(cfg, open_sets(cfg))}


def test_a_grid_of_file_vocabularies_keeps_its_digests(grid_toml, grid_files):
    """The tiny grid's id_classes is a file of class names: mapped by default now, yet no cell of a file
    vocabulary changes (the names, all that scoring embeds, are the same); the ID classes' part of the
    identity is still the file's sha256 (computed here from its bytes)."""
    cfg = negvocab.load_grid(grid_toml)
    assert cfg.map_classes and open_id_classes(cfg).mapping is not None  # mapped: the default
    assert _id_classes_doc(cfg) == hashlib.sha256((grid_files / "classes.txt").read_bytes()).hexdigest()
    mapped = _digests(cfg)
    off = _digests(_grid(grid_toml, grid_files, grid_keys="map_classes = false"))
    assert mapped == off and len(mapped) == 2 * 4 * 3 * 2 + 2 * 3 * 2  # neglabel: 4 vocabularies; mcm: none


def test_the_mapping_is_in_the_identity_of_builder_vocabularies_only(grid_toml, grid_files):
    (grid_files / "cub.txt").write_text(CUB)
    (grid_files / "cands.txt").write_text(f"{HYPONYM}\nmountain\nviolin\n")
    vocab = 'W = { builder = "wordnet", candidates = "cands.txt" }'
    text = grid_toml.read_text().replace('id_classes = "classes.txt"', 'id_classes = "cub.txt"')
    grid_toml.write_text(text)
    mapped = _grid(grid_toml, grid_files, vocab=vocab)
    before = grid_toml.read_text()
    grid_toml.write_text(before.replace('id_classes = "cub.txt"', 'id_classes = "cub.txt"\nmap_classes = false'))
    names_only = negvocab.load_grid(grid_toml)
    a, b = _digests(mapped), _digests(names_only)
    changed = {k[1] for k in a if a[k] != b[k]}
    assert changed == {"W"}  # the builder's cells only: its synonym filter reads the senses
    # the label space is in a builder vocabulary's identity with its revision: LLM builders ask about it and
    # filter against it since revision 2, so a resumed grid of an older release rebuilds them, mapped or not
    assert labelspace.mapping_doc(names_only, "gpt") == {"revision": labelspace.LABEL_SPACE_REVISION} == {"revision": 2}
    assert set(labelspace.mapping_doc(mapped, "eoe")) == {"revision", "wordnet"}
    plain = negvocab.load_grid(grid_toml)
    object.__setattr__(plain, "id_classes", "imagenet1k")
    assert labelspace.mapping_doc(plain, "gpt") is None  # ImageNet-1k grids: digests as before

    spec = next(v for v in mapped.vocabularies if v.name == "W")
    vlm = load_model(mapped, mapped.models[0])
    built = build_in_grid(mapped, spec, vlm)
    assert HYPONYM not in built.labels and built.settings["synonym_filter"]["removed"][HYPONYM]["via"] == [
        "sedge_wren.n.01",
        "marsh_wren.n.01",
    ]
    assert HYPONYM in build_in_grid(names_only, spec, vlm).labels  # matched by name only: kept


def test_id_classes_may_name_a_benchmark_with_hints(grid_toml, grid_files):
    cfg = _grid(grid_toml, grid_files, grid_keys='hints = ["bird"]')
    assert open_id_classes(cfg).mapping.hints == ("bird",)
    text = grid_toml.read_text().replace('id_classes = "classes.txt"', 'id_classes = "finegrained-cub200"')
    grid_toml.write_text(text)
    cfg = negvocab.load_grid(grid_toml)
    expected = open_label_space("cub200", map_wordnet=True, hints=["bird"]).classes
    assert id_classes(cfg, mapped=True).wnids == expected.wnids and len(expected) == 200
    # scoring reads the names as negvocab score does: never mapped, so no unit loads WordNet for it
    plain = id_classes(cfg)
    assert not plain.mapped and plain.names == expected.names and plain.wnids != expected.wnids
    assert _id_classes_doc(cfg) == hashlib.sha256(classes_file("cub200").read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"hints": ["bird"]}, 'g.toml: grid.hints: given with id_classes = "imagenet1k"; hints go with a file'),
        (
            {"id_classes": "c.txt", "map_classes": False, "hints": ["bird"]},
            "g.toml: grid.hints: given with map_classes = false",
        ),
        ({"map_classes": "no"}, "g.toml: grid.map_classes = 'no': must be true or false"),
        ({"hints": "bird"}, "g.toml: grid.hints = 'bird': must be a list of hypernyms"),
    ],
)
def test_bad_label_space_keys_are_one_line(grid, message):
    with pytest.raises(InputError, match=f"^{message}") as e:
        parse_config({**BASE, "grid": grid}, source="g.toml")
    assert "\n" not in str(e.value)


def test_hints_for_a_file_of_wnids_are_one_line(tmp_path):
    (tmp_path / "wnids.txt").write_text("n01440764\nn01443537\n")
    cfg = parse_config({**BASE, "grid": {"id_classes": "wnids.txt", "hints": ["fish"]}}, base=str(tmp_path), source="g")
    with pytest.raises(InputError, match="^g: grid.hints: wnids.txt has no class names to map$"):
        id_classes(cfg, mapped=True)


def test_a_builder_that_reads_the_file_itself_gets_no_mapping_made(grid_toml, grid_files, monkeypatch):
    """mapping_doc asks the builder first: the plug-in toy takes id_classes as a file, so no WordNet
    mapping is made (nor paid for) for it; wordnet's builder takes the IdClasses and gets one."""
    from tests.plugins import toy_builder

    toy_builder.register()
    try:
        cfg = negvocab.load_grid(grid_toml)
        made = []
        real = labelspace.open_label_space
        monkeypatch.setattr(labelspace, "_OPENED", {})
        monkeypatch.setattr(
            labelspace, "open_label_space", lambda *a, **k: made.append(k["map_wordnet"]) or real(*a, **k)
        )
        assert labelspace.mapping_doc(cfg, "toy") is None and True not in made
        assert labelspace.mapping_doc(cfg, "wordnet") is not None and made[-1] is True
    finally:
        toy_builder.unregister()
