"""Vocabulary files: round trips, every malformed-file case, union provenance, head and subset."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pydantic
import pytest

from negvocab.core.errors import InputError
from negvocab.vocab import SCHEMA_VERSION, Vocabulary


@pytest.fixture
def wordnet_vocab():
    labels = ["gadget", "café crème", "mountain bike", "tayra"]
    return Vocabulary.from_labels(
        labels,
        source="wordnet",
        meta={lab: {"rank": i, "distance": 0.1 * i} for i, lab in enumerate(labels)},
        settings={"model": "ViT-B-32", "percentile": 0.95},
        views={"first_two": labels[:2]},
    )


@pytest.fixture
def gpt_vocab():
    return Vocabulary.from_labels(
        ["tayra", "sea otter", "gadget"],
        source="gpt",
        meta={
            "tayra": {"classes": ["n02441942"], "rounds": [1]},
            "sea otter": {"classes": ["n02444819"], "rounds": [2]},
        },
        settings={"model": "gpt-x"},
    )


def _write_json(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# -- round trips -------------------------------------------------------------------------------
def test_json_round_trip_keeps_everything(tmp_path, wordnet_vocab):
    path = wordnet_vocab.save(tmp_path / "sub" / "v.json")
    assert [p.name for p in path.parent.iterdir()] == ["v.json"]  # atomic write left no temp file
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema_version"] == SCHEMA_VERSION and doc["sha256"] == wordnet_vocab.sha256
    assert "café crème" in path.read_text(encoding="utf-8")  # UTF-8, not escaped
    back = Vocabulary.load(path)
    assert back == wordnet_vocab
    assert back.labels == wordnet_vocab.labels and back.meta == wordnet_vocab.meta
    assert back.views == wordnet_vocab.views
    # the file also records who wrote it: versions and the command line (not part of equality)
    provenance = back.settings.pop("provenance")
    assert back.settings == wordnet_vocab.settings
    assert provenance[-1]["versions"]["numpy"] == np.__version__ and provenance[-1]["command"]


def test_text_round_trip_is_a_file_vocabulary(tmp_path, wordnet_vocab):
    path = wordnet_vocab.save(tmp_path / "v.txt")
    assert path.read_text(encoding="utf-8") == "gadget\ncafé crème\nmountain bike\ntayra\n"
    back = Vocabulary.load(path)
    assert back.source == "file" and back.labels == wordnet_vocab.labels
    assert back.sha256 == wordnet_vocab.sha256  # the hash is of the labels only
    assert back.settings == {"path": str(path), "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


@pytest.mark.parametrize("label", ["# not a comment", "#hashtag"])
def test_labels_that_a_text_file_would_change_are_refused(tmp_path, label):
    vocab = Vocabulary.from_labels(["gadget", label], source="gpt")
    with pytest.raises(InputError, match="would not read back from a text file; save as .json"):
        vocab.save(tmp_path / "v.txt")
    assert list(tmp_path.iterdir()) == []
    assert Vocabulary.load(vocab.save(tmp_path / "v.json")) == vocab  # JSON keeps it exactly


def test_text_file_skips_blanks_comments_and_repeats(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("# my labels\n\n  gadget \nshoe\ngadget\n\r\nsea otter\n", encoding="utf-8")
    assert Vocabulary.load(path).labels == ["gadget", "shoe", "sea otter"]


def test_byte_order_mark_is_not_part_of_a_label(tmp_path, wordnet_vocab):
    path = tmp_path / "notepad.txt"
    path.write_bytes(b"\xef\xbb\xbftench\r\ngadget\r\n")
    assert Vocabulary.load(path).labels == ["tench", "gadget"]
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(wordnet_vocab.to_json()).encode())
    assert Vocabulary.load(path) == wordnet_vocab


def test_hash_identifies_labels_in_order(wordnet_vocab):
    same = Vocabulary.from_labels(wordnet_vocab.labels, source="file")
    swapped = Vocabulary.from_labels(list(reversed(wordnet_vocab.labels)), source="file")
    assert same.sha256 == wordnet_vocab.sha256 != swapped.sha256
    assert len(wordnet_vocab.sha256) == 64 and wordnet_vocab.short_hash == wordnet_vocab.sha256[:12]


def test_sequence_behaviour_and_immutability(wordnet_vocab):
    assert len(wordnet_vocab) == 4 and list(wordnet_vocab) == wordnet_vocab.labels
    assert "tayra" in wordnet_vocab and "weasel" not in wordnet_vocab
    assert wordnet_vocab == Vocabulary.model_validate(wordnet_vocab.to_json())  # the lookup cache is not state
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        wordnet_vocab.source = "gpt"


# -- malformed files -----------------------------------------------------------------------------
def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"nope\.json: no such vocabulary file"):
        Vocabulary.load(tmp_path / "nope.json")


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(InputError, match="cannot read vocabulary file"):
        Vocabulary.load(tmp_path)


def test_not_utf8(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"gadget\n\xff\xfe shoe\n")
    with pytest.raises(InputError, match=r"v\.txt: not a UTF-8"):
        Vocabulary.load(path)


def test_malformed_json_names_file_and_position(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('{"labels": ["a",\n ]', encoding="utf-8")
    with pytest.raises(InputError, match=r"v\.json: malformed JSON \(line 2"):
        Vocabulary.load(path)


def test_a_brace_text_file_is_read_as_json(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match="malformed JSON"):
        Vocabulary.load(path)


@pytest.mark.parametrize("doc", ["labels", 3, None])
def test_json_that_is_not_an_object(tmp_path, doc):
    with pytest.raises(InputError, match="expected a JSON object"):
        Vocabulary.load(_write_json(tmp_path / "v.json", doc))


@pytest.mark.parametrize("doc", [["sofa", "kayak", "sofa"], {"labels": ["sofa", "kayak"]}])
def test_a_hand_written_json_label_list_loads_like_a_text_file(tmp_path, doc):
    v = Vocabulary.load(_write_json(tmp_path / "v.json", doc))
    assert v.labels == ["sofa", "kayak"] and v.source == "file"
    with pytest.raises(InputError, match="only strings"):
        Vocabulary.load(_write_json(tmp_path / "v.json", ["sofa", 3]))


def test_other_schema_version(tmp_path, wordnet_vocab):
    for version in (2, "1"):
        doc = {**wordnet_vocab.to_json(), "schema_version": version}
        with pytest.raises(InputError, match=f"schema version {version!r} is not supported"):
            Vocabulary.load(_write_json(tmp_path / "v.json", doc))
    doc = wordnet_vocab.to_json()
    del doc["schema_version"]
    with pytest.raises(InputError, match="no 'schema_version'; not a negvocab vocabulary file"):
        Vocabulary.load(_write_json(tmp_path / "v.json", doc))


def test_missing_or_mismatching_hash(tmp_path, wordnet_vocab):
    doc = wordnet_vocab.to_json()
    del doc["sha256"]
    with pytest.raises(InputError, match="no 'sha256' field"):
        Vocabulary.load(_write_json(tmp_path / "v.json", doc))
    doc = {**wordnet_vocab.to_json(), "labels": wordnet_vocab.labels[:-1]}  # truncated by hand
    doc["meta"] = {k: v for k, v in doc["meta"].items() if k in doc["labels"]}
    with pytest.raises(
        InputError,
        match=(
            r"v\.json: invalid vocabulary: sha256 .* does not match the "
            r"labels .*edited by hand\? save the labels as a \.txt list"
        ),
    ):
        Vocabulary.load(_write_json(tmp_path / "v.json", doc))


def _doc_with(labels, **extra):
    vocab_doc = {"schema_version": 1, "source": "file", "labels": labels, "sha256": "", **extra}
    return vocab_doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_doc_with(["a", "b", "a"]), "duplicate label 'a'"),
        (_doc_with([]), "no labels"),
        (_doc_with(["a", "  "]), "label 2 is empty"),
        (_doc_with(["a", ""]), "label 2 is empty"),
        (_doc_with(["a", "\x00"]), r"label 2 '\\x00' holds a control character"),
        (_doc_with(["a", "b "]), "label 2 'b ' has surrounding whitespace"),
        (_doc_with(["a", "x" * 10_000]), "label 2 'x{40}'... is 10,000 characters long \\(at most 200\\); not a label"),
        (_doc_with("abc"), "labels"),
        (_doc_with(["a", 3]), "labels.1"),
        (_doc_with(["a"], colour="red"), "colour: Extra inputs are not permitted"),
        (_doc_with(["a"], meta={"b": {}}), "metadata for labels not in the vocabulary"),
        (_doc_with(["a"], source="bing"), "source"),
    ],
)
def test_invalid_contents(tmp_path, doc, message):
    with pytest.raises(InputError, match=message) as err:
        Vocabulary.load(_write_json(tmp_path / "v.json", doc))
    assert str(err.value).startswith(str(tmp_path / "v.json"))
    assert "\n" not in str(err.value)


def test_text_file_without_labels(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty\.txt: the vocabulary file has no labels"):
        Vocabulary.load(path)


def test_from_labels_errors():
    with pytest.raises(InputError, match="invalid gpt vocabulary: the vocabulary has no labels"):
        Vocabulary.from_labels([], source="gpt")
    with pytest.raises(InputError, match="duplicate label 'x'"):
        Vocabulary.from_labels(["x", "y", "x"], source="file")
    with pytest.raises(InputError, match="source"):
        Vocabulary.from_labels(["x"], source="bing")  # type: ignore[arg-type]


# -- union, head, subset ---------------------------------------------------------------------------
def test_union_keeps_first_occurrence_order_and_merges_provenance(wordnet_vocab, gpt_vocab):
    u = Vocabulary.union(wordnet_vocab, gpt_vocab)
    assert u.source == "union"
    assert u.labels == ["gadget", "café crème", "mountain bike", "tayra", "sea otter"]
    assert u.meta["tayra"] == {
        "sources": ["wordnet", "gpt"],
        "wordnet": {"rank": 3, "distance": 0.30000000000000004},
        "gpt": {"classes": ["n02441942"], "rounds": [1]},
    }
    assert u.meta["sea otter"]["sources"] == ["gpt"]
    assert u.meta["gadget"]["sources"] == ["wordnet", "gpt"] and "gpt" not in u.meta["gadget"]  # no gpt meta given
    assert u.label_sources("tayra") == ["wordnet", "gpt"]
    assert u.source_counts() == {"wordnet": 4, "gpt": 3}
    parts = u.settings["parts"]
    assert [p["source"] for p in parts] == ["wordnet", "gpt"]
    assert parts[0]["sha256"] == wordnet_vocab.sha256 and parts[1]["size"] == 3
    assert parts[0]["settings"]["model"] == "ViT-B-32"


def test_union_of_unions_flattens_sources(wordnet_vocab, gpt_vocab, tmp_path):
    other = Vocabulary.from_labels(["kayak", "tayra"], source="eoe", meta={"kayak": {"round": 1}})
    nested = Vocabulary.union(Vocabulary.union(wordnet_vocab, gpt_vocab), other)
    flat = Vocabulary.union(wordnet_vocab, gpt_vocab, other)
    assert nested.labels == flat.labels
    assert nested.meta == flat.meta
    assert nested.meta["tayra"]["sources"] == ["wordnet", "gpt", "eoe"]
    assert nested.meta["kayak"] == {"sources": ["eoe"], "eoe": {"round": 1}}
    assert Vocabulary.load(nested.save(tmp_path / "u.json")) == nested
    with pytest.raises(InputError, match="at least one"):
        Vocabulary.union()


def test_head_is_the_ranked_prefix(wordnet_vocab):
    h = wordnet_vocab.head(2)
    assert h.labels == ["gadget", "café crème"] and h.source == "wordnet"
    assert h.meta == {"gadget": {"rank": 0, "distance": 0.0}, "café crème": {"rank": 1, "distance": 0.1}}
    assert h.settings == {"model": "ViT-B-32", "percentile": 0.95, "size": 2}
    assert wordnet_vocab.head(4).labels == wordnet_vocab.labels
    for bad in (0, -1, 5):
        with pytest.raises(InputError, match="vocabulary"):
            wordnet_vocab.head(bad)


def test_subset_keeps_vocabulary_order_meta_and_views(wordnet_vocab):
    s = wordnet_vocab.subset(["tayra", "gadget", "not there"], settings={"filtered": True})
    assert s.labels == ["gadget", "tayra"]
    assert set(s.meta) == {"gadget", "tayra"}
    assert s.views == {"first_two": ["gadget"]}
    assert s.settings["filtered"] is True and s.settings["model"] == "ViT-B-32"
    with pytest.raises(InputError, match="no labels"):
        wordnet_vocab.subset(["not there"])


def test_union_keeps_each_labels_part_of_speech(tmp_path):
    # the "neglabel" templates pick the adjective template by pos: a union must not lose it
    wn = Vocabulary.from_labels(
        ["bright", "kayak"], source="wordnet", meta={"bright": {"pos": "a"}, "kayak": {"pos": "n"}}
    )
    gpt = Vocabulary.from_labels(["sea otter", "bright"], source="gpt", meta={"sea otter": {"classes": ["n02444819"]}})
    assert wn.parts_of_speech() == ["a", "n"]
    u = Vocabulary.union(gpt, wn)
    assert u.labels == ["sea otter", "bright", "kayak"]
    assert u.parts_of_speech() == [None, "a", "n"]
    nested = Vocabulary.union(Vocabulary.from_labels(["quiet"], source="eoe", meta={"quiet": {"pos": "a"}}), u)
    assert Vocabulary.load(nested.save(tmp_path / "u.json")).parts_of_speech() == ["a", None, "a", "n"]


@pytest.mark.parametrize("fmt", ["tsv", "csv", "json"])
def test_a_candidates_export_loads_with_its_parts_of_speech(tmp_path, fmt):
    rows = [("meadow", "n", "noun.object"), ("bright", "a", "adj.all"), ("meadow", "n", "noun.object")]
    path = tmp_path / f"pool.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps([{"text": t, "pos": p, "lexname": lx} for t, p, lx in rows]), encoding="utf-8")
    else:
        sep = "\t" if fmt == "tsv" else ","
        path.write_text("".join(sep.join(r) + "\n" for r in [("text", "pos", "lexname"), *rows]), encoding="utf-8")
    vocab = Vocabulary.load(path)
    assert vocab.labels == ["meadow", "bright"] and vocab.parts_of_speech() == ["n", "a"]
    assert vocab.settings["format"] == "candidates"


def test_tables_without_a_text_column_are_refused_and_one_column_files_are_labels(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("name,score\nmeadow,1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t.csv: a table without a 'text' or 'label' column"):
        Vocabulary.load(table)
    plain = tmp_path / "p.csv"
    plain.write_text("meadow\ncloud\n", encoding="utf-8")
    assert Vocabulary.load(plain).labels == ["meadow", "cloud"]
    plain.write_text("meadow\nwashington, d.c.\ncloud\n", encoding="utf-8")  # a label with the delimiter
    assert Vocabulary.load(plain).labels == ["meadow", "washington, d.c.", "cloud"]
    table.write_text("name,score\nmeadow,0.3\nparis,0.4\n", encoding="utf-8")  # other columns: refused
    with pytest.raises(InputError, match="a table without a 'text' or 'label' column"):
        Vocabulary.load(table)
    table.write_text(
        "path,Label\nimg/1.jpg,meadow\nimg/2.jpg,paris\n", encoding="utf-8"
    )  # an image list's 'label' column
    assert Vocabulary.load(table).labels == ["meadow", "paris"]
    (tmp_path / "t.tsv").write_text("label\tpos\nbright\ta\n", encoding="utf-8")
    assert Vocabulary.load(tmp_path / "t.tsv").parts_of_speech() == ["a"]
    plain.write_text("# my labels, v2\nwashington, d.c.\nmeadow\n", encoding="utf-8")  # a list, not a table
    assert Vocabulary.load(plain).labels == ["washington, d.c.", "meadow"]
    for content in (
        '"text","pos"\n"washington, d.c.",n\n',
        "Text, pos\nwashington d.c.,n\n",
        "# exported\npos,text\nn,washington d.c.\n",
    ):
        table.write_text(content, encoding="utf-8")  # quoted, capitalised, after a comment line
        assert Vocabulary.load(table).labels[0].startswith("washington"), content


def test_a_union_says_when_a_part_came_from_random_weights(wordnet_vocab, gpt_vocab):
    assert not Vocabulary.union(wordnet_vocab, gpt_vocab).random_weights
    rnd = Vocabulary.from_labels(["kayak"], source="wordnet", settings={"random_weights": True})
    u = Vocabulary.union(gpt_vocab, rnd)
    assert u.random_weights and u.settings["random_weights"] is True
    assert Vocabulary.union(u, wordnet_vocab).random_weights


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (["gadget", "two\nlines"], r"label 2 'two\\nlines' holds a control character"),
        (["gadget", "carriage\rreturn"], "holds a control character"),
        (["sep\u2028arated"], "holds a control character"),
        (["\x00"], r"label 1 '\\x00' holds a control character"),
        (["\x01\x02"], "holds a control character"),
        (["gadget", "y" * 201], "is 201 characters long"),
        ("umbrella", "labels must be a list of strings, got str"),
        (["a", "a "], "duplicate label 'a'"),
    ],
)
def test_wrong_labels_are_refused_by_the_api(labels, message):
    with pytest.raises(InputError, match=message) as err:
        Vocabulary.from_labels(labels, source="gpt")
    assert "\n" not in str(err.value) and len(str(err.value)) < 200


def test_labels_lose_surrounding_whitespace_everywhere():
    v = Vocabulary.from_labels(
        [" gadget", "shoe\t "], source="gpt", meta={" gadget": {"rank": 1}}, views={"x": ["shoe "]}
    )
    assert v.labels == ["gadget", "shoe"] and v.meta == {"gadget": {"rank": 1}} and v.views == {"x": ["shoe"]}
    assert v.sha256 == Vocabulary.from_labels(["gadget", "shoe"], source="gpt").sha256


def test_a_json_labels_string_is_not_a_list_of_letters(tmp_path):
    path = _write_json(tmp_path / "v.json", {"labels": "umbrella"})
    with pytest.raises(InputError, match="'labels' must be a JSON list of strings, got str"):
        Vocabulary.load(path)
    text = tmp_path / "v.txt"
    text.write_bytes(b"gadget\n\x00\n")
    with pytest.raises(InputError, match=r"v.txt: label 2 '\\x00' holds a control character"):
        Vocabulary.load(text)


# -- hand-written lists go through the one label normaliser; saved lists read back as written -----
MESSY = [
    "# my negatives",
    "1. **Trout** - a fish of cold rivers",
    "a photo of a goldfish",
    "Koi",
    "red panda red panda",
    "shetland pony (horse breed)",
    "Here are some more labels that I thought would help you:",
    "Sure!",
    "the hague",  # written plainly: a name, kept as written
    "koi",  # a repeat once cleaned
]


@pytest.mark.parametrize("form", ["txt", "json_list", "json_labels"])
def test_a_messy_user_list_loads_clean(tmp_path, form):
    if form == "txt":
        path = tmp_path / "mine.txt"
        path.write_text("\n".join(MESSY) + "\n", encoding="utf-8")
    else:
        items = [x for x in MESSY if not x.startswith("#")]
        path = tmp_path / "mine.json"
        path.write_text(json.dumps(items if form == "json_list" else {"labels": items}), encoding="utf-8")
    vocab = Vocabulary.load(path)
    assert vocab.labels == ["trout", "goldfish", "koi", "red panda", "shetland pony", "the hague"]
    cleaning = vocab.settings["label_cleaning"]
    assert cleaning["changed"]["1. **Trout** - a fish of cold rivers"] == "trout"
    assert cleaning["changed"]["a photo of a goldfish"] == "goldfish"
    assert cleaning["dropped"] == ["Here are some more labels that I thought would help you:", "Sure!"]
    assert "the hague" not in cleaning["changed"]


def test_a_list_of_chatter_only_is_refused_in_one_line(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("Sure! Here are the labels you asked for:\nI hope this helps!\n", encoding="utf-8")
    with pytest.raises(InputError, match="no labels, only sentences or chatter") as e:
        Vocabulary.load(path)
    assert "\n" not in str(e.value)


ODD_NAMES = [
    "the hague",
    "t. rex",
    "jack-o'-lantern",
    "'hood",
    "note",
    "here and now",
    "a cappella",
    "the star-spangled banner",
    "st. bernard",
]


@pytest.mark.parametrize("labels", [ODD_NAMES, ["Trout", "a photo of a goldfish", "red panda red panda", "Sure"]])
def test_a_saved_text_list_reads_back_the_same_labels(tmp_path, labels):
    vocab = Vocabulary.from_labels(labels, source="wordnet")
    again = Vocabulary.load(vocab.save(tmp_path / "v.txt"))
    assert again.labels == vocab.labels
    assert again.sha256 == vocab.sha256
    assert "label_cleaning" not in again.settings


def test_a_plain_list_is_written_without_a_header(tmp_path):
    path = Vocabulary.from_labels(["the hague", "koi", "note"], source="wordnet").save(tmp_path / "v.txt")
    assert path.read_text(encoding="utf-8") == "the hague\nkoi\nnote\n"  # a plain file another tool reads as it is
    assert Vocabulary.load(path).labels == ["the hague", "koi", "note"]


def test_the_wordnet_pool_round_trips_through_a_text_file(tmp_path):
    from negvocab.labels.candidates import wordnet_candidates

    labels = list(dict.fromkeys(c.text for c in wordnet_candidates("neglabel")))
    vocab = Vocabulary.from_labels(labels, source="wordnet")
    path = vocab.save(tmp_path / "wordnet.txt")
    assert Vocabulary.load(path).labels == labels
    # read as a hand-written list (no header): WordNet's names are written plainly, none changes
    bare = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    loaded = Vocabulary.from_text_lines(bare)
    assert loaded.labels == labels and "label_cleaning" not in loaded.settings


def test_a_candidates_table_goes_through_the_normaliser(tmp_path):
    from negvocab.labels.clean import CleanResult
    from negvocab.vocab import load_candidates

    rows = [
        "text\tpos",
        "1. **Trout** - a fish\tn",
        "the hague\tn",
        "'hood\tn",
        "Sure!\tn",
        "Quick\ta",
        "rapeseed- granite boulder\tn",
    ]
    path = tmp_path / "cands.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    cleaning = CleanResult()
    cands = load_candidates(path, cleaning)
    assert [(c.text, c.pos) for c in cands] == [
        ("trout", "n"), ("the hague", "n"), ("'hood", "n"), ("quick", "a"), ("rapeseed", "n"), ("granite boulder", "n"),
    ]  # fmt: skip
    assert cleaning.dropped == ["Sure!"] and cleaning.changed["1. **Trout** - a fish"] == "trout"
    vocab = Vocabulary.load(path)
    assert vocab.labels == [c.text for c in cands] and vocab.meta["quick"]["pos"] == "a"
    assert vocab.settings["label_cleaning"]["dropped"] == ["Sure!"]
