"""Label cleaning: the one normaliser, the answer parser, and the 2,100-answer fixture."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

import negvocab
from negvocab.labels.clean import (
    clean_label,
    clean_labels,
    clean_labels_report,
    parse_label_list,
    split_glued,
    written_plainly,
)
from negvocab.llm import text as llm_text

DATA = Path(__file__).with_name("data")
FIXTURE = DATA / "llm_answers.jsonl"


@pytest.fixture(scope="module")
def answers():
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        # what issue 11 saw kept as labels
        ("shetland pony (horse breed)", "shetland pony"),
        ("snowy owl: shares the white color with the arctic fox", "snowy owl"),
        ("golden retriever (note: similar coat, but longer)", "golden retriever"),
        ("q: given the image category [goldfish], list 20 similar categories", ""),
        ("rapeseed- granite boulder", "rapeseed"),
        ("red panda red panda", "red panda"),
        ("1. **Trout** - a fish of cold streams", "trout"),
        ("1.Trout", "trout"),
        ("a koi", "koi"),
        ("the koi", "koi"),
        ("a photo of a goldfish", "goldfish"),
        ("A bad photo of the Goldfish.", "goldfish"),
        # explanations after other separators
        ("koi \u2014 a coloured carp", "koi"),
        ("koi \u2013 a coloured carp", "koi"),
        ("koi -- a coloured carp", "koi"),
        ("koi; a carp", "koi"),
        ("koi, which is a carp", "koi"),
        ("koi (e.g. a carp", "koi"),
        ("Label: Koi", "koi"),
        ("### Koi", "koi"),
        ("- [Koi](https://en.wikipedia.org/wiki/Koi)", "koi"),
        ("\U0001f41f Koi", "koi"),
        ("#3 koi", "koi"),
        ("(koi)", "koi"),
        # sentences, preambles and closing remarks
        ("Sure! Here are 20 categories that look like a goldfish:", ""),
        ("These are all visually similar to the tench.", ""),
        ("Hope this helps!", ""),
        ("Certainly.", ""),
        ("**", ""),
        # names whose punctuation is part of the name
        ("T. rex", "t. rex"),
        ("E. coli", "e. coli"),
        ("jack-o'-lantern", "jack-o'-lantern"),
        ("4x4", "4x4"),
        ("St. Bernard", "st. bernard"),
        ("Washington, D.C.", "washington, d.c."),
        (".22 caliber", ".22 caliber"),
        ("chow chow", "chow chow"),  # one doubled word is a name
        ("a cappella", "a cappella"),
        ("A-line", "a-line"),
        ("no man's land", "no man's land"),
        ("3.4x4", "4x4"),
        ("1.5 litre bottle", "1.5 litre bottle"),
    ],
)
def test_clean_label(raw, clean):
    assert clean_label(raw) == clean
    assert clean_label(clean) == clean  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "Sorry, an internal error occurred while processing your request; please try again later.",
        "Sorry", "Note", "Certainly!", "Sure.", "Here are", "Here you go:", "I hope this helps", "Thank you!",
        "Thanks", "Of course!", "Apologies for the confusion.", "I apologize",
        "I'm sorry, but I can't assist with that.",
        "As an AI language model, I cannot see images.", "Unfortunately, I am unable to comply.",
        "Error: rate limit exceeded", "Warning: output truncated", "OK", "Great question!", "You're welcome",
    ],
)  # fmt: skip
def test_chatter_is_no_label(text):
    assert parse_label_list(text) == []
    assert clean_label(text) == ""
    assert parse_label_list(f"{text}\n1. Koi\n2. Trout") == ["koi", "trout"]


@pytest.mark.parametrize(
    "name",
    [
        "hello kitty",
        "no entry sign",
        "thank-you card",
        "notebook",
        "note card",
        "error bar",
        "sure-footed goat",
        "yes man",
    ],
)
def test_names_starting_like_chatter_stay(name):
    assert clean_label(name) == name
    assert parse_label_list(f"- {name}\n- koi") == [name, "koi"]


def test_glued_items_split_and_report():
    assert split_glued("rapeseed- granite boulder") == ["rapeseed", "granite boulder"]
    assert split_glued("jack-o'-lantern") == ["jack-o'-lantern"]
    result = clean_labels_report(
        ["Koi", "koi (a carp)", "Q: given the image category [tench]", "rapeseed- granite boulder", "GOLDFISH"]
    )
    assert result.labels == ["koi", "rapeseed", "granite boulder", "goldfish"]
    assert result.dropped == ["Q: given the image category [tench]"]
    # case and spacing alone are not recorded; everything else is
    assert result.changed == {"koi (a carp)": "koi", "rapeseed- granite boulder": "rapeseed | granite boulder"}
    assert result.to_settings()["dropped_count"] == 1
    assert clean_labels(["Lynx", "1. lynx", "", "Puma", "puma."]) == ["lynx", "puma"]


def test_one_normaliser_everywhere():
    assert llm_text.clean_label is clean_label and llm_text.clean_labels is clean_labels
    assert negvocab.clean_label is clean_label and negvocab.parse_label_list is parse_label_list


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ('{"labels": ["Koi", "the carp"]}', ["koi", "carp"]),
        ('Here you are:\n```json\n{"categories": ["Koi", "Carp"]}\n```\nEnjoy!', ["koi", "carp"]),
        ('["koi", "carp",]', ["koi", "carp"]),
        ("['koi', 'carp']", ["koi", "carp"]),
        ('{"items": [{"name": "Koi", "reason": "colour"}, {"label": "carp"}]}', ["koi", "carp"]),
        ('{"koi": "a carp", "trout": "a salmonid"}', ["koi", "trout"]),
        ('{"fish": ["koi"], "birds": ["heron"]}', ["koi", "heron"]),
        ("Sure! Here are 3:\n1. **Koi** - a carp\n2. Trout\n3) the pike\nHope this helps!", ["koi", "trout", "pike"]),
        ("- koi\n* carp\n\u2022 trout\n\nThese are all fish that look like a tench.", ["koi", "carp", "trout"]),
        ("**Fish:**\n- koi\n- carp\n### Birds\n- heron", ["koi", "carp", "heron"]),
        ("1. **Fish**:\n   - koi\n   - carp", ["koi", "carp"]),
        ("Here are some: koi, carp, and trout.", ["koi", "carp", "trout"]),
        ("koi, carp and trout", ["koi", "carp", "trout"]),
        ("koi\ncarp: a fish\ntrout - a salmonid", ["koi", "carp", "trout"]),
        ("| Label | Why |\n|---|---|\n| koi | colour |\n| trout | shape |", ["koi", "trout"]),
        ("Q: Given the image category [goldfish], ...\nA:\n1. koi\n2. carp", ["koi", "carp"]),
        ("1 - koi\n2 - carp", ["koi", "carp"]),
        ("", []),
        ("I cannot help with that.", []),
        # written by hand after the fixture, in the styles of GPT-4, Claude, Gemini and Mixtral answers
        (
            'Here are 3 visually similar categories to "goldfish" that are not in ImageNet-1k:\n\n1. Koi carp\n'
            "2. Comet goldfish\n3. Oranda\n\nThese categories share similar colors, shapes, or aquatic environments.",
            ["koi carp", "comet goldfish", "oranda"],
        ),
        (
            "Here is a list of 2 categories:\n\n1. Koi fish - Ornamental carp with orange and white coloring\n"
            "2. Carrot slices - Similar orange color\n\nLet me know if you would like more!",
            ["koi fish", "carrot slices"],
        ),
        (
            "**Visually Similar Categories:**\n\n* **Koi:** Similar body shape.\n* **Orange Cichlid:** Similar color.",
            ["koi", "orange cichlid"],
        ),
        ('{"labels": ["koi", "carp"]}\n\nI chose these because they look alike.', ["koi", "carp"]),
        ('Sure, here: ["koi", "carp"] - all fish.', ["koi", "carp"]),
        (
            "1. Koi\n   - Similar shape and size\n   - Orange color\n2. Carp\n   - Same family\n3. Orfe",
            ["koi", "carp", "orfe"],
        ),
        ("Category: Koi\nReason: similar shape\n\nCategory: Orfe\nReason: orange color", ["koi", "orfe"]),
        ("- Koi/Nishikigoi\n- Carp / Common carp\n- AC/DC", ["koi/nishikigoi", "carp", "ac/dc"]),
        ("1. *Koi* (*Cyprinus rubrofuscus*)\n2. _Orfe_\n3. ***Carp***", ["koi", "orfe", "carp"]),
        ("1. 3D printer\n2. 35mm film camera\n3. Boeing 747", ["3d printer", "35mm film camera", "boeing 747"]),
        ('"koi",\n"carp",', ["koi", "carp"]),
    ],
)
def test_parse_label_list_forms(text, labels):
    assert parse_label_list(text) == labels


def test_fixture_is_large_and_covers_every_form(answers):
    assert len(answers) >= 2000
    assert len({a["class"] for a in answers}) >= 100
    forms = collections.Counter(a["form"] for a in answers)
    assert len(forms) >= 16 and min(forms.values()) >= 100, forms
    assert sum(len(a["hidden"]) for a in answers) >= 1000


def test_every_fixture_answer_parses_to_its_expected_labels(answers):
    failed = [(a["form"], a["text"][:200]) for a in answers if parse_label_list(a["text"]) != a["expected"]]
    assert not failed, (len(failed), failed[:3])


def test_fixture_hidden_id_labels_are_filtered_and_ood_labels_stay(answers, synfilter):
    leaked, lost = [], []
    for a in answers:
        kept, removed = synfilter.split(parse_label_list(a["text"]))
        leaked += [h for h in a["hidden"] if h in kept]
        lost += [x for x in a["expected"] if x not in a["hidden"] and x in removed]
        for label, wnid in a["hidden"].items():
            assert removed[label].wnid == wnid or label in removed, (label, wnid)
    assert not leaked and not lost, (leaked[:5], lost[:5])


def test_fixture_is_reproducible(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_llm_answers", DATA / "make_llm_answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "answers.jsonl")
    assert (tmp_path / "answers.jsonl").read_bytes() == FIXTURE.read_bytes()


def test_the_wordnet_pool_survives_cleaning(neglabel_pool):
    """WordNet head words are clean already: only a leading "the"/"a" goes, and a few idioms and
    words of chatter ("note", "thanks", "error")."""
    changed = {c.text: clean_label(c.text) for c in neglabel_pool if clean_label(c.text) != c.text}
    assert len(changed) < 30, changed
    for raw, clean in changed.items():
        assert clean == "" or raw.split(" ", 1)[0] in ("the", "a") or raw.startswith("'"), (raw, clean)


# -- issue 24: stutters, notes that hold "similar", nonsense ----------------------------------------
REAL_FAILURES = json.loads((DATA / "real_failures.json").read_text(encoding="utf-8"))
#: held-out cases the cleaner misses (found when the set was first run, after the cleaner was written)


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("submarine submarine", "submarine"), ("Mop mop", "mop"), ("banana, banana", "banana"),
        ("SAXOPHONE saxophone", "saxophone"), ("banana banana banana", "banana"), ("red panda red panda", "red panda"),
        ("chow chow", "chow chow"), ("mahi mahi", "mahi mahi"), ("Jaculus jaculus", "jaculus jaculus"),
        ("walla walla sweet onion", "walla walla sweet onion"),
    ],
)  # fmt: skip
def test_stutters_collapse_and_doubled_word_names_stay(raw, clean):
    assert clean_label(raw) == clean
    assert clean_label(clean) == clean  # idempotent


def test_a_wordnet_noun_with_a_doubled_word_is_read_as_written(wn, tmp_path, caplog):
    """Every WordNet noun lemma whose words repeat ("homo sapiens sapiens", "dama dama"), found in
    ``index.noun`` here, is kept as written by a vocabulary file; a stutter that is no noun is cleaned,
    with a warning that names it."""
    doubled = []
    with wn.root.join("index.noun").open() as fh:
        for raw in fh:
            if raw.startswith(b"  "):
                continue
            words = raw.decode("utf-8").split(" ", 1)[0].split("_")
            if any(a == b for a, b in zip(words, words[1:], strict=False)) and all(w.isalpha() for w in words):
                doubled.append(" ".join(words))
    assert "homo sapiens sapiens" in doubled and len(doubled) > 30
    assert clean_label("homo sapiens sapiens") == "homo sapiens"  # the stutter rule alone would rewrite it
    assert all(written_plainly(x) for x in doubled), [x for x in doubled if not written_plainly(x)]
    path = tmp_path / "mine.txt"
    path.write_text("homo sapiens sapiens\ndama dama\nred panda red panda\n", encoding="utf-8")
    vocab = negvocab.Vocabulary.load(path)
    assert vocab.labels == ["homo sapiens sapiens", "dama dama", "red panda"]
    assert vocab.settings["label_cleaning"]["changed"] == {"red panda red panda": "red panda"}
    assert "1 labels rewritten on reading (e.g. 'red panda red panda' -> 'red panda')" in caplog.text


def test_a_note_that_says_similar_never_drops_or_splits_its_list():
    assert parse_label_list("stop sign, lady of the lake (mythical figure with similar name), tomato") == [
        "stop sign",
        "lady of the lake",
        "tomato",
    ]
    assert parse_label_list("koi (a fish, orange; similar to carp), carp") == ["koi", "carp"]
    assert parse_label_list("These categories share a similar shape, which helps") == []  # a sentence still goes whole


@pytest.mark.parametrize("text, labels", REAL_FAILURES["parse"])
def test_held_out_real_failure_shapes_parse(text, labels):
    assert parse_label_list(text) == labels


@pytest.mark.parametrize("text", REAL_FAILURES["nonsense"])
def test_held_out_nonsense_answers_are_not_language(text):
    from negvocab.llm.formats import not_language

    assert not_language(text)


@pytest.mark.parametrize("text", REAL_FAILURES["language"])
def test_held_out_names_in_many_languages_pass(text):
    from negvocab.labels.clean import keep_names

    kept, dropped = keep_names(parse_label_list(text))
    assert kept and not dropped, dropped


@pytest.mark.parametrize(
    "label, ok",
    [
        ("ség familiacolor bother involving", False), ("%> чтоs register", False), ("xkcdqz", False),
        ("{{name}}", False),
        ("4x4", True), ("t. rex", True), ("北京烤鸭", True), ("москва", True), ("schwarzschild radius", True),
        ("7-eleven", True),
    ],
)  # fmt: skip
def test_looks_like_name(label, ok):
    from negvocab.labels.clean import looks_like_name

    assert looks_like_name(label) is ok


def test_bare_markup_items_count_against_an_answer_but_json_cut_short_is_language():
    from negvocab.llm.formats import not_language

    # glued subword tokens ("ndingsBy", "ulations") pass as words; with the markup lines they are not "most"
    assert not_language("ndingsBy ofthe ulations\nтоrespect the fromwith\n```\n}} ]] ));")
    cut = '{\n  "labels": [\n    "hot dog",\n    "bagel",\n    "pretz'  # pretty JSON cut at the token limit
    assert not not_language(cut) and not not_language('{"labels": ["hot dog", "bagel", "pre')
    assert not not_language("- cat\n- dog\n}}")  # one stray brace under a list
