"""The WordNet candidate pool against a direct reading of WordNet's data files."""

from __future__ import annotations

import pytest

from negvocab.core.errors import InputError
from negvocab.labels import candidates as cmod
from negvocab.labels.candidates import Candidate, wordnet_candidates
from negvocab.labels.wordnet import LEXNAMES
from negvocab.vocab import Vocabulary, load_candidates
from tests.labels.conftest import wordnet_file

NEGLABEL_SIZE = 70_766  # measured on WordNet 3.0 (docs/methods.md#wordnet-farthest-first)


def _direct_head_words(wn, files=("noun", "adj"), excluded=("noun.animal", "noun.food")):
    """Head words straight from data.<pos>: the first word of each line, in file order."""
    out: dict[str, None] = {}
    for name in files:
        for line in wordnet_file(wn, f"data.{name}"):
            fields = line.split(" ")
            if LEXNAMES[int(fields[1])][0] in excluded:
                continue
            word = fields[4]
            if name == "adj" and word.endswith(")"):
                word = word[: word.index("(")]  # adjective markers: long(a)
            text = word.replace("_", " ").lower()
            if len(text) > 1 and any(ch.isalpha() for ch in text):
                out.setdefault(text, None)
    return list(out)


def test_neglabel_pool_equals_a_direct_reading_of_wordnet(wn, neglabel_pool):
    texts = [c.text for c in neglabel_pool]
    assert len(texts) == NEGLABEL_SIZE
    assert len(set(texts)) == len(texts)
    assert texts == _direct_head_words(wn)
    assert texts[:3] == ["entity", "physical entity", "abstraction"]


def test_candidate_fields(neglabel_pool, wn):
    by_text = {c.text: c for c in neglabel_pool}
    c = by_text["physical entity"]
    assert c == Candidate("physical entity", "n", "noun.Tops", "physical_entity.n.01", 1930)
    assert c.synset_id == "n00001930"
    assert {c.pos for c in neglabel_pool} == {"n", "a", "s"}  # adjectives include satellites
    assert not {c.lexname for c in neglabel_pool} & {"noun.animal", "noun.food"}
    assert {c.lexname for c in neglabel_pool if c.pos in "as"} == {"adj.all", "adj.pert", "adj.ppl"}
    for c in neglabel_pool[::97]:  # the recorded synset (nltk name) really yields the text as its head word
        synset = wn.synset(c.synset)
        assert synset.lemma_names()[0].replace("_", " ").lower() == c.text
        assert (synset.lexname(), synset.offset(), synset.pos()) == (c.lexname, c.offset, c.pos)
    assert "tench" not in by_text and "goldfish" not in by_text  # noun.animal
    assert by_text["weasel"].lexname == "noun.person"  # the ID word survives in another sense: the filter removes it
    assert "hot dog" not in by_text  # noun.food


def test_deterministic_and_cached(neglabel_pool):
    again = wordnet_candidates("neglabel", pos="n,a")
    assert again == neglabel_pool and again is not neglabel_pool  # a fresh list each call
    again.clear()
    assert len(wordnet_candidates()) == NEGLABEL_SIZE  # mutating a result does not touch the cache
    cmod._pool.cache_clear()
    cmod._synsets.cache_clear()
    assert wordnet_candidates() == neglabel_pool


def test_options(wn, neglabel_pool):
    nouns = wordnet_candidates(pos="n")
    assert [c.text for c in nouns] == _direct_head_words(wn, files=("noun",))
    everything = wordnet_candidates("all")
    assert [c.text for c in everything] == _direct_head_words(wn, excluded=())
    assert {c.text for c in neglabel_pool} < {c.text for c in everything}
    no_food = wordnet_candidates("all", exclude_lexnames=["noun.food"])
    assert any(c.lexname == "noun.animal" for c in no_food) and not any(c.lexname == "noun.food" for c in no_food)
    raw = wordnet_candidates(drop_unusable=False)
    dropped = {c.text for c in raw} - {c.text for c in neglabel_pool}
    assert dropped and all(len(t) == 1 or not any(ch.isalpha() for ch in t) for t in dropped)
    assert {"24/7", "9/11", "a", "z"} <= dropped
    lemmas = wordnet_candidates(all_lemmas=True)
    assert len(lemmas) > len(neglabel_pool) + 40_000
    assert {c.text for c in neglabel_pool} < {c.text for c in lemmas}
    assert [c.pos for c in wordnet_candidates(pos=("a",))][:1] == ["a"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"preset": "negmine"}, "unknown candidate preset 'negmine'"),
        ({"pos": "n,x"}, "unknown part of speech 'x'"),
        ({"pos": ""}, "no part of speech"),
        ({"exclude_lexnames": ["noun.animals"]}, "unknown lexicographer file 'noun.animals'"),
    ],
)
def test_bad_options(kwargs, message):
    with pytest.raises(InputError, match=message):
        wordnet_candidates(**kwargs)


# -- reading a pool back (negvocab build wordnet --candidates) ------------------------------------
@pytest.mark.parametrize("suffix", ["tsv", "csv", "json"])
def test_an_exported_pool_loads_back_exactly(tmp_path, suffix):
    from typer.testing import CliRunner

    from negvocab.cli import app

    out = tmp_path / f"pool.{suffix}"
    result = CliRunner().invoke(app, ["candidates", "--preset", "all", "--pos", "a", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert load_candidates(out) == wordnet_candidates("all", pos="a")


def test_plain_label_files_load_as_nouns(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("\ufeffmeadow\nred\n\nmeadow\n", encoding="utf-8")
    assert load_candidates(path) == [Candidate("meadow", "n", "", ""), Candidate("red", "n", "", "")]
    table = tmp_path / "mine.tsv"
    table.write_text("text\tpos\nmeadow\t\nred\ts\nred\ta\n", encoding="utf-8")  # only 'text' is required
    assert load_candidates(table) == [Candidate("meadow", "n", "", ""), Candidate("red", "s", "", "")]
    listed = tmp_path / "mine.json"
    listed.write_text('["meadow", {"text": "red", "pos": "a"}]', encoding="utf-8")
    assert load_candidates(listed) == [Candidate("meadow", "n", "", ""), Candidate("red", "a", "", "")]
    vocab = tmp_path / "vocab.json"
    Vocabulary.from_labels(["meadow", "red"], source="gpt").save(vocab)
    assert load_candidates(vocab) == [Candidate("meadow", "n", "", ""), Candidate("red", "n", "", "")]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.tsv", None, "no such candidates file"),
        ("nohead.tsv", "word\tpos\nmeadow\tn\n", "no 'text' or 'label' column"),
        ("badpos.csv", "text,pos\nmeadow,x\n", r"entry 1 \('meadow'\) has an unknown part of speech 'x'"),
        ("badoff.csv", "text,offset\nmeadow,abc\n", "non-integer offset 'abc'"),
        ("empty.csv", "text,pos\n", "no candidates in this file"),
        ("latin1.tsv", b"text\ncaf\xe9\n", "not a UTF-8 text file"),
        ("objects.json", '["cloud", {"label": "meadow"}]', "entry 2 has no 'text'"),
        ("broken.json", '[{"text": ', "malformed JSON"),
        ("empty.txt", "\n\n", "has no labels"),
    ],
)
def test_bad_candidate_files(tmp_path, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        load_candidates(path)
    assert name in str(err.value) and "\n" not in str(err.value)


def test_sample_pool_spreads_n_candidates_over_the_pool_and_refuses_no_candidates():
    import negvocab

    pool = wordnet_candidates("neglabel")
    got = negvocab.sample_pool(7)
    # candidate i sits at floor(i * len / n), computed exactly with integers
    assert [c.text for c in got] == [pool[i * len(pool) // 7].text for i in range(7)]
    assert got[0] == pool[0] and got[-1] != pool[6]  # spread over the pool, not its first words
    assert len(negvocab.sample_pool(len(pool) + 5)) == len(pool)  # more than the pool: all of it
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="n must be a positive whole number"):
            negvocab.sample_pool(bad)
