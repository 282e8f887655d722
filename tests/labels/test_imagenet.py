"""The ImageNet-1k label space against its sources: timm's synset list, open_clip's names, WordNet 3.0."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses, imagenet1k, read_id_classes

ROOT = Path(__file__).resolve().parents[2]


def test_standard_order_and_uniqueness(classes):
    assert len(classes) == len(classes.wnids) == len(classes.names) == len(classes.synonyms) == 1000
    assert len(set(classes.wnids)) == 1000
    assert list(classes.wnids) == sorted(classes.wnids)  # ILSVRC-2012 order is the sorted wnids
    assert classes.wnids[0] == "n01440764" and classes.names[0] == "tench"
    assert classes.wnids[-1] == "n15075141" and classes.names[-1] == "toilet paper"
    assert all(w[0] == "n" and len(w) == 9 and w[1:].isdigit() for w in classes.wnids)
    assert imagenet1k() is classes


def test_names_are_open_clips_clean_names(classes):
    from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES

    assert list(classes.names) == list(IMAGENET_CLASSNAMES)


def test_wnids_are_timms_imagenet_synsets(classes):
    import timm

    path = Path(timm.__file__).parent / "data" / "_info" / "imagenet_synsets.txt"
    assert list(classes.wnids) == path.read_text().split()


def test_every_wnid_resolves_in_wordnet_30_with_its_lemmas(wn, classes):
    for wnid, synonyms in zip(classes.wnids, classes.synonyms, strict=True):
        synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
        assert synset.pos() == "n"
        assert list(synonyms) == [name.replace("_", " ") for name in synset.lemma_names()]
    assert classes.synonyms[classes.index_of("n04356056")] == ("sunglasses", "dark glasses", "shades")


def test_committed_table_is_what_the_generator_makes(wn):
    spec = importlib.util.spec_from_file_location("make_imagenet_wnids", ROOT / "scripts" / "make_imagenet_wnids.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.OUT.read_text(encoding="utf-8") == module.build()


def test_index_of_and_subset(classes):
    assert classes.index_of("n01440764") == 0
    assert classes.index_of("n15075141") == 999
    with pytest.raises(InputError, match="n99999999"):
        classes.index_of("n99999999")
    sub = classes.subset(["n15075141", "n01440764"])
    assert sub.names == ("toilet paper", "tench") and len(sub) == 2
    assert sub.synonyms[1] == ("tench", "Tinca tinca")


def test_repeated_clean_names_are_distinct_classes(classes):
    # open_clip names two classes 'missile' and two 'sunglasses'; the wnids tell them apart
    assert [i for i, n in enumerate(classes.names) if n == "missile"] == [657, 744]
    assert [i for i, n in enumerate(classes.names) if n == "sunglasses"] == [836, 837]


def test_malformed_label_spaces_are_refused():
    with pytest.raises(InputError, match="differ in length"):
        IdClasses(wnids=("n1", "n2"), names=("a",), synonyms=((), ()))
    with pytest.raises(InputError, match="duplicate"):
        IdClasses(wnids=("n1", "n1"), names=("a", "b"), synonyms=((), ()))
    with pytest.raises(InputError, match="at least one"):
        IdClasses(wnids=(), names=(), synonyms=())


def test_read_id_classes(tmp_path):
    wn = tmp_path / "wnids.txt"
    wn.write_text("n01440764\nn01443537\n")
    assert read_id_classes(wn).names == ("tench", "goldfish")
    names = tmp_path / "names.txt"
    names.write_text("# custom\ncat\ndog\ncat\n")
    c = read_id_classes(names)
    assert c.names == ("cat", "dog") and c.dataset == "custom:names.txt"
    assert c.wnids == ("custom00000", "custom00001") and c.synonyms == (("cat",), ("dog",))
    assert IdClasses.from_names([" cat", "dog", "cat", ""]).names == c.names
    with pytest.raises(InputError, match="no such ID classes"):
        read_id_classes(tmp_path / "absent.txt")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1.txt: not a UTF-8 text file \(ID classes file\)"):
        read_id_classes(latin)
    wn.write_text("n01440764\nn99999999\n")
    with pytest.raises(InputError, match="wnids.txt: .*n99999999"):
        read_id_classes(wn)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n01440764\nn0144O764\n", r"line 2: 'n0144O764' is not a wnid \(n and 8 digits"),  # letter O for zero
        ("n01440764\nn0144076\n", r"line 2: 'n0144076' is not a wnid \(n and 8 digits"),  # a digit short
        ("tench\nn014407640\n", r"line 2: 'n014407640' is not a wnid"),  # a digit too many, among names
        ("# mine\ngoldfish\nnl443537\n", r"line 3: 'nl443537' is not a wnid"),  # an l for a 1
        ("n01440764\nn99999999\n", r"line 2: 'n99999999' is not one of the 1000 ImageNet-1k wnids"),
        ("n01440764\nn01440764\n", r"ids.txt: ID label space: duplicate wnids"),
    ],
)
def test_a_bogus_wnid_is_refused_never_taken_as_a_name(tmp_path, text, message):
    """Before: any file with one line that is not a well-formed wnid was read as class NAMES, so a
    typo turned 'n01440764' (tench) into a class called 'n01440764', with no message."""
    path = tmp_path / "ids.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as e:
        read_id_classes(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_wnids_and_names_together_resolve_the_wnids(tmp_path):
    """README's own example: a wnid is its ImageNet-1k class (name, synonyms), a name a custom class."""
    path = tmp_path / "mine.txt"
    path.write_text("n01440764\ngoldfish\n", encoding="utf-8")
    got = read_id_classes(path)
    tench = imagenet1k().index_of("n01440764")
    assert got.names == ("tench", "goldfish") and got.wnids == ("n01440764", "custom00001")
    assert got.synonyms == (imagenet1k().synonyms[tench], ("goldfish",)) and got.dataset == "custom:mine.txt"


def test_names_that_only_start_like_a_wnid_stay_names(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("n95 mask\nnautilus\nn64\n", encoding="utf-8")  # short digit runs are not wnid attempts
    assert read_id_classes(path).names == ("n95 mask", "nautilus", "n64")
