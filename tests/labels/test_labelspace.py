"""Any ID label space through WordNet: real class names mapped to synsets, checked against WordNet's own files.

The class names are real label spaces' (CIFAR-100's shipped list; CUB-200, Stanford Cars, Food-101 and
Oxford-IIIT Pets names written inline, as their datasets spell them). Every expectation is computed here,
independently of nltk and of negvocab: by reading WordNet 3.0's ``index.noun`` (a lemma's senses, in
WordNet's order) and ``data.noun`` (each synset's ``@``/``@i`` hypernym pointers) line by line.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

import pytest

from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses, imagenet1k, read_id_classes
from negvocab.labels.labelspace import NOT_IN_WORDNET, class_file_hints, class_file_pins, map_label_space, resolve_hint
from negvocab.labels.synonyms import SynonymFilter
from tests.labels.conftest import data_noun

CIFAR100 = Path(str(resources.files("negvocab").joinpath("resources", "classes", "cifar100.txt")))
CUB = ["Black_footed_Albatross", "Red_winged_Blackbird", "Cardinal", "Pied_billed_Grebe", "Tennessee_Warbler"]
CARS = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Bugatti Veyron 16.4 Coupe 2009"]
FOOD = ["baby_back_ribs", "apple_pie", "hot_dog", "french_fries"]
PETS = ["Abyssinian", "Bengal", "boxer", "pug", "Siamese"]


# -- WordNet 3.0 read by hand -------------------------------------------------------------------
@functools.cache
def _index(wn) -> dict[str, list[int]]:
    """``index.noun``: lemma -> its synset offsets in WordNet's sense order (the last ``synset_cnt`` fields)."""
    out = {}
    with wn.root.join("index.noun").open() as fh:
        for raw in fh:
            if raw.startswith(b"  "):
                continue
            f = raw.decode("utf-8").split()
            out[f[0]] = [int(x) for x in f[-int(f[2]) :]]
    return out


@functools.cache
def _hypernyms(wn) -> dict[int, list[int]]:
    """``data.noun``: offset -> the offsets its ``@`` and ``@i`` (instance) hypernym pointers name."""
    return {
        offset: [off for sym, off, pos in pointers if sym in ("@", "@i") and pos == "n"]
        for offset, _, pointers in data_noun(wn)
    }


def _above(wn, offset: int) -> set[int]:
    """The offset and every offset on its hypernym chains, by walking the pointers."""
    seen, todo = {offset}, [offset]
    while todo:
        for up in _hypernyms(wn)[todo.pop()]:
            if up not in seen:
                seen.add(up)
                todo.append(up)
    return seen


def _senses(wn, name: str) -> list[int] | None:
    """The senses of a class name as ``index.noun`` lists them: lowercase, each gap '_' or '-'."""
    words = name.lower().replace("_", " ").split()
    spellings = [""]
    for w in words:
        spellings = [f"{s}{sep}{w}" if s else w for s in spellings for sep in "_-"]
    for spelled in spellings:
        if spelled in _index(wn):
            return _index(wn)[spelled]
    return None


def _off(wnid: str) -> int:
    return int(wnid[1:])


# -- the mapper -----------------------------------------------------------------------------------
def test_cifar100_maps_every_name_wordnet_lists(wn):
    names = [x for x in CIFAR100.read_text(encoding="utf-8").splitlines() if x and not x.startswith("#")]
    m = map_label_space(names)
    assert len(m.senses) == 100 and m.classes.mapped
    # aquarium fish is no WordNet noun, and an aquarium is no fish: reported, never dropped
    assert m.unresolved == ["aquarium fish"] and m.classes.names[names.index("aquarium fish")] == "aquarium fish"
    assert "1 unresolved: aquarium fish" in m.summary() and "99 of 100" in m.summary()
    for s, wnid in zip(m.senses, m.classes.wnids, strict=True):
        if not s.resolved:
            assert _senses(wn, s.name) is None and wnid.startswith("custom")
            continue
        assert wnid == s.wnid
        senses = _senses(wn, s.name)
        if s.rule == "exact":
            assert _off(s.wnid) in senses and s.n_senses == len(senses), s
            if s.choice in ("only sense", "first sense"):
                assert _off(s.wnid) == senses[0], s
        elif s.rule == "head-word":  # "maple tree": the maple sense that is a tree
            assert senses is None
            stem, head = s.name.rsplit(" ", 1)
            tree = _index(wn)[head]
            assert _off(s.wnid) in _senses(wn, stem) and set(tree) & _above(wn, _off(s.wnid))
    by_name = {s.name: s for s in m.senses}
    # "ray": WordNet's first sense is a beam of light; the label space is animals: the fish
    ray = by_name["ray"]
    assert _off(ray.wnid) != _index(wn)["ray"][0] and ray.choice == "domain noun.animal"
    assert set(_index(wn)["fish"][:1]) & _above(wn, _off(ray.wnid))
    assert by_name["maple tree"].rule == "head-word"


def test_cub_cars_food_pets_names(wn):
    cub = map_label_space(CUB, hints=["bird"])
    birds = set(_index(wn)["bird"])  # a word hint takes every noun sense of the word
    assert cub.hints == ("bird",)
    for s in cub.senses:
        senses = _senses(wn, s.name)
        if senses is None:
            assert not s.resolved and s.name in cub.unresolved
            continue
        # the first sense, in WordNet's order, that has a sense of "bird" above it: here the animal
        assert _off(s.wnid) == next(o for o in senses if birds & _above(wn, o)), s
        assert _index(wn)["bird"][0] in _above(wn, _off(s.wnid))
    assert {s.name: s.choice for s in cub.senses}["Cardinal"] == "hint bird.n.01"  # cardinal.n.01 is a prelate
    assert cub.unresolved == ["Tennessee_Warbler"]  # WordNet 3.0 has no such lemma

    cars = map_label_space(CARS, hints=["car"])
    assert cars.n_resolved == 0 and cars.unresolved == CARS and "0 of 3" in cars.summary()

    food = map_label_space(FOOD, hints=["food"])
    assert food.unresolved == ["baby_back_ribs"]  # "rib" alone is not the class
    foods = set(_index(wn)["food"])  # nutrient (dishes) and solid food (pies)
    assert {x.offset() for x in resolve_hint("food")} == foods
    for s in food.senses[1:]:
        assert _off(s.wnid) == next(o for o in _senses(wn, s.name) if foods & _above(wn, o)), s

    pets = map_label_space(PETS, hints=["dog", "cat"])
    animals = {_index(wn)["dog"][0], _index(wn)["cat"][0]}
    hints = set(_index(wn)["dog"]) | set(_index(wn)["cat"])
    for s in pets.senses:
        if s.resolved:
            assert animals & _above(wn, _off(s.wnid)), s  # every breed under the dog or the cat
        else:  # WordNet's Bengal is a region only: no sense under the hints, so none is taken
            assert not any(hints & _above(wn, o) for o in _senses(wn, s.name)), s
    assert pets.unresolved == ["Bengal"] and "WordNet's first: bengal.n.01" in pets.senses[1].choice
    assert {s.name: s.synset for s in pets.senses}["boxer"] == "boxer.n.04"  # not the pugilist (boxer.n.01)


def test_without_context_or_hints_the_first_sense(wn):
    m = map_label_space(["ray", "seal", "otter", "beaver"], context=False)
    for s in m.senses:
        assert _off(s.wnid) == _index(wn)[s.name][0] and s.choice == "first sense"


def test_plural_and_spelling_variants(wn):
    names = ["Tulips", "Harbour Seals", "Grey Whales"]
    m = map_label_space(names)
    assert [s.rule for s in m.senses] == ["plural", "spelling", "plural"]
    assert _index(wn).get("harbour_seal") is None  # WordNet spells it the American way only
    for wnid, lemma in zip(m.classes.wnids, ["tulip", "harbor_seal", "grey_whale"], strict=True):
        assert _off(wnid) == _index(wn)[lemma][0]


def test_mapped_classes_carry_lemmas_and_keep_imagenet_wnids():
    base = imagenet1k()
    space = IdClasses((base.wnids[0], "custom00001"), (base.names[0], "Cardinal"), (base.synonyms[0], ("Cardinal",)))
    m = map_label_space(space, hints=["bird.n.01"])
    assert m.classes.wnids[0] == base.wnids[0] and m.senses[0].rule == "pinned"
    assert "redbird" in m.classes.synonyms[1] and m.classes.synonyms[1][0] == "Cardinal"


def test_bad_hint_is_one_line():
    with pytest.raises(InputError, match=r"hints: 'nosuchthingword' is not a WordNet 3.0 noun"):
        map_label_space(["cardinal"], hints=["nosuchthingword"])


# -- class files: hints and pinned senses --------------------------------------------------------
def test_pinned_class_file_round_trip(tmp_path, wn):
    path = tmp_path / "cub.txt"
    path.write_text(
        "# CUB sample\n# hint: bird, n01503061\nCardinal\tn01541386\nWarbler\nn01440764\n", encoding="utf-8"
    )
    assert class_file_hints(path) == ("bird", "n01503061")
    space = read_id_classes(path)
    assert space.mapped and space.wnids[0] == "n01541386" and space.names[0] == "Cardinal"
    assert space.wnids[1] == "custom00001" and space.names[2] == "tench"
    assert "redbird" in space.synonyms[0]
    m = map_label_space(space)
    again = tmp_path / "again.txt"
    again.write_text(m.pinned_text(), encoding="utf-8")
    assert read_id_classes(again).wnids == m.classes.wnids


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("Cardinal\tn0154138", "line 2: 'n0154138' is not a wnid"),
        ("Cardinal\tn99999999", "line 2: 'n99999999' is not a WordNet 3.0 noun synset"),
        ("Cardinal\tn01541386\textra", "line 2: 'Cardinal\\tn01541386\\textra' has 3 tab-separated fields"),
    ],
)
def test_pinned_lines_are_validated(tmp_path, line, says):
    path = tmp_path / "classes.txt"
    path.write_text(f"Warbler\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_id_classes(path)
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value)
    assert "NAME<TAB>WNID" in str(err.value)


# -- the synonym filter on a mapped label space ----------------------------------------------------
def test_a_hyponym_leaks_by_name_and_is_removed_when_mapped(wn):
    names = ["Warbler", "Red_winged_Blackbird"]
    plain = SynonymFilter(IdClasses.from_names(names))
    mapped = SynonymFilter(map_label_space(names, hints=["bird"]).classes)
    leaks = ["myrtle warbler", "Audubon's warbler", "new world warbler"]
    warbler = _off(mapped.id_classes.wnids[0])
    for label in leaks:
        # WordNet itself: the label's first sense has warbler.n.02 above it
        assert warbler in _above(wn, _senses(wn, label)[0])
        assert plain.explain(label) is None  # today: a kind of warbler stays in the vocabulary
        match = mapped.explain(label)
        assert match is not None and match.rule == "wordnet-synset/hyponym" and match.name == "Warbler"
    kept, removed = mapped.split([*leaks, "sparrow", "redwing", "warblers"])
    assert kept == ["sparrow"]  # a bird, but no kind of an ID class
    assert removed["redwing"].rule == "wordnet-synonym/exact"  # a lemma of red-winged_blackbird.n.01
    assert removed["warblers"].rule == "clean-name/plural"  # the older rules still come first
    report = mapped.report(kept, removed)
    via = report["removed"]["myrtle warbler"]["via"]
    assert via[0] == "myrtle_warbler.n.01" and via[-1] == "warbler.n.02"
    assert "bird.n.01" in report["hypernyms"][mapped.id_classes.wnids[0]]


def test_imagenet_is_not_mapped_so_its_filter_is_as_it_was(synfilter, neglabel_pool):
    assert not imagenet1k().mapped and not synfilter.hyponyms
    assert not imagenet1k().subset(list(imagenet1k().wnids[:5])).mapped
    texts = [c.text for c in neglabel_pool]
    _, removed = synfilter.split(texts)
    assert len(removed) == 758 and not any(m.source == "wordnet-synset" for m in removed.values())
    assert "hyponyms" not in synfilter.report([], removed)


# -- the shipped fine-grained label spaces ---------------------------------------------------------
#: a pinned class -> the scientific name (or, for breeds, the lemma) its WordNet synset must carry; by hand
PINNED = {
    "cub200": {
        "Tree Sparrow": "Spizella_arborea",
        "Rock Wren": "Salpinctes_obsoletus",
        "Ovenbird": "Seiurus_aurocapillus",
        "Common Raven": "Corvus_corax",
        "Northern Fulmar": "Fulmarus_glacialis",
        "American Goldfinch": "Spinus_tristis",
        "European Goldfinch": "Carduelis_carduelis",
        "Northern Flicker": "Colaptes_auratus",
        "Red headed Woodpecker": "Melanerpes_erythrocephalus",
        "Scissor tailed Flycatcher": "Muscivora-forficata",
        "Frigatebird": "frigate_bird",
        "Eastern Towhee": "Pipilo_erythrophthalmus",
        "Tree Swallow": "Iridoprocne_bicolor",
    },
    "oxford_pets": {
        "Japanese Chin": "Japanese_spaniel",
        "German Shorthaired": "German_short-haired_pointer",
        "Leonberger": "Leonberg",
        "Wheaten Terrier": "soft-coated_wheaten_terrier",
    },
    "food101": {"chicken wings": "chicken_wing", "beef tartare": "steak_tartare"},
}


@pytest.mark.parametrize(
    ("space", "at_least", "wrong"),
    [
        # WordNet's first senses that are another species or no animal at all: none may be taken
        ("cub200", 84, {"Tree Sparrow": "tree_sparrow.n.01", "Rock Wren": "rock_wren.n.01"}),
        ("oxford_pets", 25, {"Bengal": "bengal.n.01", "Bombay": "mumbai.n.01", "Persian": "irani.n.01"}),
        ("food101", 54, {}),
        ("stanford_cars", 0, {}),
    ],
)
def test_shipped_label_spaces_map_without_a_wrong_sense(wn, space, at_least, wrong):
    from negvocab.data.label_space import open_label_space

    m = open_label_space(space, map_wordnet=True).mapping
    assert m is not None and m.n_resolved >= at_least
    by_name = {s.name: s for s in m.senses}
    for name, synset in wrong.items():
        assert by_name[name].synset != synset, by_name[name]
    for name, lemma in PINNED.get(space, {}).items():
        s = by_name[name]
        assert s.rule == "pinned" and lemma in wn.synset(s.synset).lemma_names(), s
    for s in m.senses:  # every name that maps to none says why
        assert s.resolved or s.choice, s
    if space == "stanford_cars":  # make, model and year: WordNet names no car model
        assert {s.choice for s in m.senses} == {NOT_IN_WORDNET}


def test_possessive_hint_word_and_ambiguous_species(wn):
    birds = map_label_space(["Clark Nutcracker", "Chuck will Widow", "Tree Sparrow", "Sayornis"], hints=["bird"])
    nutcracker, widow, sparrow, genus = birds.senses
    assert (nutcracker.synset, nutcracker.rule) == ("clark's_nutcracker.n.01", "possessive")
    assert widow.synset == "chuck-will's-widow.n.01"
    # two birds are "tree sparrow" in WordNet (index.noun lists two senses, both under bird): neither is taken
    assert len(_index(wn)["tree_sparrow"]) == 2
    assert all(_index(wn)["bird"][0] in _above(wn, o) for o in _index(wn)["tree_sparrow"])
    assert not sparrow.resolved and sparrow.choice.startswith("ambiguous: 2 organisms")
    assert genus.synset == "sayornis.n.01"  # a bird genus: its member, the phoebe, is a bird
    assert map_label_space(["Tree Sparrow"]).senses[0].synset == "tree_sparrow.n.01"  # no hint: as before
    cats = map_label_space(["Persian", "Bengal"], hints=["dog", "cat"])
    assert (cats.senses[0].synset, cats.senses[0].rule) == ("persian_cat.n.01", "hint-word")
    assert not cats.senses[1].resolved


def test_pins_in_a_class_file_header(tmp_path):
    from negvocab.data.label_space import open_label_space

    path = tmp_path / "birds.txt"
    path.write_text("# hint: bird\n# pin: n01536334 Tree Sparrow\nTree Sparrow\nRock Wren\n", encoding="utf-8")
    assert class_file_pins(path) == {"Tree Sparrow": "n01536334"}
    plain = read_id_classes(path)  # scoring reads names: the pin is a comment there
    assert not plain.mapped and plain.names == ("Tree Sparrow", "Rock Wren")
    m = open_label_space(path, map_wordnet=True).mapping
    assert [(s.synset, s.rule) for s in m.senses] == [("tree_sparrow.n.02", "pinned"), (None, "unresolved")]
    for line, says in [
        ("# pin: n0153 Tree Sparrow", "line 1: 'pin: n0153 Tree Sparrow'; a pin is"),
        ("# pin: n01536334", "a pin is"),
    ]:
        path.write_text(f"{line}\nTree Sparrow\n", encoding="utf-8")
        with pytest.raises(InputError, match=says):
            class_file_pins(path)
    with pytest.raises(InputError, match=r"pins: 'Song Sparrow' is no class"):
        map_label_space(["Tree Sparrow"], pins={"Song Sparrow": "n01536334"})
    with pytest.raises(InputError, match=r"pins: 'n99999999' \(Tree Sparrow\) is not a WordNet 3.0 noun"):
        map_label_space(["Tree Sparrow"], pins={"Tree Sparrow": "n99999999"})
