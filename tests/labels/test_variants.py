"""Written variants of ID names (possessive, hyphen, abbreviation, genus-level): a vocabulary built for CUB-200
holds none of its species, and ImageNet-1k's possessive classes are removed without their possessive.

The variants are a list written here by hand from CUB-200's class names (as the dataset writes them), with
the class each names; the pool they are checked in is every noun lemma below ``bird.n.01`` in WordNet 3.0,
read from ``data.noun`` line by line (not through nltk or negvocab).
"""

from __future__ import annotations

import functools

import pytest

from negvocab.data.label_space import open_label_space
from negvocab.labels.synonyms import SynonymFilter
from negvocab.labels.variants import possessive_spellings, variant_keys, without_possessive
from tests.labels.conftest import data_noun

#: variant -> the CUB-200 class (its name in negvocab's cub200 list) it names; written by hand
CUB_VARIANTS = {
    # the possessive CUB drops, written back (WordNet has a few of them, a vocabulary may have any)
    "Brewer's blackbird": "Brewer Blackbird",
    "Brandt's cormorant": "Brandt Cormorant",
    "Heermann's gull": "Heermann Gull",
    "Anna's hummingbird": "Anna Hummingbird",
    "Clark's nutcracker": "Clark Nutcracker",
    "Scott's oriole": "Scott Oriole",
    "Baird's sparrow": "Baird Sparrow",
    "Brewer's sparrow": "Brewer Sparrow",
    "Harris's sparrow": "Harris Sparrow",
    "Harris' sparrow": "Harris Sparrow",
    "Henslow's sparrow": "Henslow Sparrow",
    "Le Conte's sparrow": "Le Conte Sparrow",
    "Lincoln's sparrow": "Lincoln Sparrow",
    "Nelson's sharp-tailed sparrow": "Nelson Sharp tailed Sparrow",
    "Forster's tern": "Forsters Tern",
    "Swainson's warbler": "Swainson Warbler",
    "Wilson's warbler": "Wilson Warbler",
    "Bewick's wren": "Bewick Wren",
    "chuck-will's-widow": "Chuck will Widow",
    "chuck will's widow": "Chuck will Widow",
    "Harris's sparrows": "Harris Sparrow",
    # hyphens, spaces and spelling
    "black-footed albatross": "Black footed Albatross",
    "groove-billed ani": "Groove billed Ani",
    "red-winged blackbird": "Red winged Blackbird",
    "yellow-headed blackbird": "Yellow headed Blackbird",
    "pied-billed grebe": "Pied billed Grebe",
    "scissor-tailed flycatcher": "Scissor tailed Flycatcher",
    "ruby-throated hummingbird": "Ruby throated Hummingbird",
    "white-breasted nuthatch": "White breasted Nuthatch",
    "whip-poor-will": "Whip poor Will",
    "whippoorwill": "Whip poor Will",
    "black-and-white warbler": "Black and white Warbler",
    "worm-eating warbler": "Worm eating Warbler",
    "American three-toed woodpecker": "American Three toed Woodpecker",
    "red-headed woodpecker": "Red headed Woodpecker",
    "redheaded woodpecker": "Red headed Woodpecker",
    "clay-colored sparrow": "Clay colored Sparrow",
    "clay-coloured sparrow": "Clay colored Sparrow",
    "grey catbird": "Gray Catbird",
    "great gray shrike": "Great Grey Shrike",
    "rose-breasted grosbeak": "Rose breasted Grosbeak",
    "frigate bird": "Frigatebird",
    # genus-level and common names, and WordNet's other names of the same species
    "raven": "Common Raven",
    "ravens": "Common Raven",
    "roadrunner": "Geococcyx",
    "chaparral cock": "Geococcyx",
    "phoebe": "Sayornis",
    "phoebe bird": "Sayornis",
    "nutcracker": "Clark Nutcracker",
    "fulmar": "Northern Fulmar",
    "flicker": "Northern Flicker",
    "yellow-shafted flicker": "Northern Flicker",
    "chewink": "Eastern Towhee",
    "English sparrow": "House Sparrow",
    "bank martin": "Bank Swallow",
    "black-necked grebe": "Eared Grebe",
    # the spelling CUB's own file misspells ("Artic Tern"; negvocab/resources/name_spellings.tsv)
    "arctic tern": "Artic Tern",
    "Arctic terns": "Artic Tern",
    # a bare CUB name behind a qualifier naming its North American species (the class file's '# qualifier:')
    "American tree sparrow": "Tree Sparrow",
    "North American tree sparrow": "Tree Sparrow",
    "American tree sparrows": "Tree Sparrow",
    "northern cardinal": "Cardinal",
    "northern mockingbird": "Mockingbird",
    "American white pelican": "White Pelican",
    "northern raven": "Common Raven",
    "common nighthawk": "Nighthawk",
    # scientific names WordNet gives the species
    "Corvus corax": "Common Raven",
    "Geococcyx californianus": "Geococcyx",
    "Sayornis phoebe": "Sayornis",
    "Nucifraga columbiana": "Clark Nutcracker",
    "Spizella arborea": "Tree Sparrow",
    "Salpinctes obsoletus": "Rock Wren",
    "Seiurus aurocapillus": "Ovenbird",
    "Fulmarus glacialis": "Northern Fulmar",
    "Colaptes auratus": "Northern Flicker",
    "Caprimulgus carolinensis": "Chuck will Widow",
    "Wilsonia pusilla": "Wilson Warbler",
    "Pipilo erythrophthalmus": "Eastern Towhee",
}
#: birds that are no CUB class and no variant of one: they stay
NOT_CUB = ["Passer montanus", "Xenicus gilviventris", "tree martin", "bird", "songbird", "warbler", "hawk", "ostrich"]
#: other species written as a CUB name behind a word that is no qualifier of CUB's: another region (CUB's
#: Tree Sparrow is the American Spizella arborea, the Eurasian tree sparrow Passer montanus) or a colour
#: (the yellow cardinal is Gubernatrix cristata, the blue mockingbird Melanotis caerulescens), and
#: neighbours of CUB species (the eastern wood pewee, Contopus virens, beside CUB's Western Wood Pewee)
NOT_CUB_QUALIFIED = [
    "Eurasian tree sparrow", "European tree sparrow", "yellow cardinal", "blue mockingbird", "eastern wood pewee",
    "American robin", "American kestrel", "common loon", "tree", "American", "northern",
]  # fmt: skip
#: goldfinch is a lemma of both goldfinch classes (WordNet's New World goldfinch and Carduelis carduelis)
GOLDFINCHES = {"American Goldfinch", "European Goldfinch"}


@pytest.fixture(scope="module")
def cub():
    return SynonymFilter(open_label_space("cub200", map_wordnet=True).classes)


@functools.cache
def _bird_lemmas(wn) -> list[str]:
    """Every lemma of every noun synset below bird.n.01 (hyponym ``~``/``~i`` pointers, and a taxon's member
    ``%m`` pointers), read from ``data.noun``: the part of the whole WordNet pool the CUB species live in."""
    lemmas = {offset: [w.replace("_", " ") for w in words] for offset, words, _ in data_noun(wn)}
    down = {offset: [o for sym, o, _ in pointers if sym in ("~", "~i", "%m")] for offset, _, pointers in data_noun(wn)}
    bird = wn.synset("bird.n.01").offset()
    seen, todo = {bird}, [bird]
    while todo:
        for x in down[todo.pop()]:
            if x not in seen:
                seen.add(x)
                todo.append(x)
    return list(dict.fromkeys(lemma for o in sorted(seen) for lemma in lemmas[o]))


@pytest.mark.parametrize(("label", "name"), sorted(CUB_VARIANTS.items()))
def test_every_cub_variant_is_removed(cub, label, name):
    match = cub.explain(label)
    assert match is not None, label
    assert match.name == name or (label == "goldfinch" and match.name in GOLDFINCHES), (label, match)


def test_the_bird_pool_keeps_no_cub_species_nor_a_variant(cub, wn):
    pool = _bird_lemmas(wn)
    assert len(pool) > 1500 and "Clark's nutcracker" in pool and "roadrunner" in pool
    kept, removed = cub.split(pool)
    in_pool = [v for v in CUB_VARIANTS if v in pool]
    assert len(in_pool) >= 25  # WordNet writes many of the variants itself
    assert not set(in_pool) & set(kept)
    # every lemma of a synset a CUB class maps to is removed: the species under any of its WordNet names
    wnids = {w for w in cub.id_classes.wnids if not w.startswith("custom")}
    for wnid in wnids:
        for lemma in wn.synset_from_pos_and_offset("n", int(wnid[1:])).lemma_names():
            assert lemma.replace("_", " ") not in kept, (wnid, lemma)
    assert set(NOT_CUB) & set(pool) <= set(kept)
    assert {label: cub.explain(label) for label in NOT_CUB} == dict.fromkeys(NOT_CUB)


def test_other_species_behind_a_word_stay(cub):
    assert {label: cub.explain(label) for label in NOT_CUB_QUALIFIED} == dict.fromkeys(NOT_CUB_QUALIFIED)
    assert cub.explain("American tree sparrow").how == "qualified"  # the rule is named in the report
    assert cub.explain("arctic tern").source == "name-spelling"
    assert cub.id_classes.names[cub.explain("arctic tern").class_index] == "Artic Tern"  # the name kept as written


def test_qualifiers_only_where_the_label_space_names_them(wn):
    """The class file's '# qualifier:' lines, read when mapping; a label space without them (the same names
    given as a list, or unmapped) reads "American tree sparrow" as no class."""
    from negvocab.labels.imagenet import IdClasses
    from negvocab.labels.labelspace import class_file_qualifiers, map_label_space
    from negvocab.labels.variants import qualified_name

    opened = open_label_space("cub200", map_wordnet=True)
    assert class_file_qualifiers(opened.file) == ("american", "north american", "northern", "common")
    assert opened.classes.qualifiers == ("american", "north american", "northern", "common")
    names = ["Tree Sparrow", "Cardinal", "Mockingbird"]
    bare = SynonymFilter(map_label_space(names, hints=["bird"]).classes)
    assert bare.explain("American tree sparrow") is None and bare.explain("tree sparrow") is not None
    spaced = SynonymFilter(map_label_space(names, hints=["bird"], qualifiers=["american"]).classes)
    assert spaced.explain("American tree sparrow").name == "Tree Sparrow"
    assert spaced.explain("northern cardinal") is None  # "northern" not given
    unmapped = SynonymFilter(IdClasses.from_names(names))
    assert unmapped.explain("American tree sparrow") is None
    assert qualified_name("american", ["american"]) is None and qualified_name("americans tree", ["american"]) is None


def test_imagenet_possessive_classes_without_the_possessive(synfilter, classes):
    forms = [(i, f) for i in range(len(classes)) for f in (classes.names[i], *classes.synonyms[i]) if "'s " in f]
    assert len(forms) >= 10  # potter's wheel, carpenter's kit, jeweler's loupe, ...
    for i, form in forms:
        for label in (form.replace("'s ", " "), form.replace("'s ", "s "), form):
            match = synfilter.explain(label)
            assert match is not None and match.class_index == i, (label, match)
    for label in ("potter wheel", "carpenter kit", "jeweler loupe", "potter wheels"):
        assert synfilter.explain(label).rule.endswith("/variant"), label


def test_the_spelling_table_is_read_with_its_sources():
    from importlib import resources

    from negvocab.labels.variants import name_spellings

    lines = [
        line.split("\t")
        for line in resources.files("negvocab").joinpath("resources/name_spellings.tsv").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines and all(len(parts) == 4 and len(parts[3]) > 40 for parts in lines)  # every line with its source
    shipped = open_label_space("cub200").classes.names
    for written, reads_as, space, _ in lines:
        assert written in open_label_space(space).classes.names  # a name its label space writes so
        assert name_spellings(written) == (reads_as,)
    assert (
        "Artic Tern" in shipped
        and name_spellings("Arctic Tern") == ()
        and name_spellings("artic  tern") == ("Arctic Tern",)
    )


def test_written_variants():
    assert without_possessive("Harris's Sparrow") == "Harris Sparrow"
    assert without_possessive("Travers\u2019s loupe") == "Travers loupe"
    assert without_possessive("jack-o'-lantern") == "jack-o'-lantern"
    assert without_possessive("it's") == "it"
    assert possessive_spellings(["le", "conte", "sparrow"]) == [
        ("le's", "conte", "sparrow"),
        ("le", "conte's", "sparrow"),
    ]
    assert possessive_spellings(["tern"]) == []
    assert variant_keys("Mt. Fuji") == ("mount fuji",)
    assert variant_keys("sea lion") == ()
