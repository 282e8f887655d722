"""The one label normaliser inside the LLM builders and the oracle: decorated answers give clean
labels, decorated ID names are filtered, and the provenance says what cleaning changed or dropped."""

from __future__ import annotations

from negvocab import build_gpt_vocabulary, build_oracle_vocabulary, imagenet1k
from negvocab.llm.text import reclean_results
from tests.llm.conftest import FAST
from tests.llm.fake_openai import expected_merge

DECORATED = [
    "1. **Snow Goose** - a white bird of the tundra",  # -> "snow goose"
    "a photo of a Koi",  # -> "koi"
    "Pomeranian dog",  # an ID class + a head word from its hypernym chain: filtered
    "crane (machine)",  # an ID class behind a note: filtered
    "Q: given the image category [tench], list visually similar categories",  # a prompt echo: dropped
]


def test_decorated_answers_give_clean_filtered_labels(endpoint, tmp_path, synonym_filter):
    endpoint.state.extra_labels = DECORATED
    vocab = build_gpt_vocabulary(
        "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST,
        concurrency=4, per_class=6, rounds=1, classes=3,
    )  # fmt: skip
    wnids = list(imagenet1k().wnids[:3])
    per_class = expected_merge(wnids, 1, 6, [])
    expected = list(dict.fromkeys([lab for w in wnids for lab in per_class[w]] + ["snow goose", "koi"]))
    assert sorted(vocab.labels) == sorted(expected)
    removed = vocab.settings["synonym_filter"]["removed"]
    assert removed["pomeranian dog"]["rule"] == "clean-name/head-word"
    assert "crane" in removed  # the note went first, then the filter knew the class
    assert "label_cleaning" in vocab.settings


def test_reclean_results_fixes_old_journals_and_reports():
    results = {
        "a:0": {"status": "ok", "labels": ["trout** - explanation", "1.trout", "a koi", "koi"]},  # the old normaliser's output
        "b:0": {"status": "ok", "labels": ["ignored"], "raw_labels": ["Q: given the image category [tench]", "**Pike**"]},
    }
    cleaned, report = reclean_results(results)
    assert cleaned["a:0"]["labels"] == ["trout", "koi"]
    assert cleaned["b:0"]["labels"] == ["pike"] and cleaned["b:0"]["status"] == "ok"
    assert report.changed == {"trout** - explanation": "trout", "1.trout": "trout", "a koi": "koi", "**Pike**": "pike"}
    assert report.dropped == ["Q: given the image category [tench]"]
    assert results["a:0"]["labels"][0] == "trout** - explanation"  # the journal's records are not touched


def test_oracle_labels_go_through_the_same_normaliser():
    vocab = build_oracle_vocabulary(["Kite_toy", "kite toy", "Paper towel holder (kitchen)", "goldfish", "Q: what is this?"])
    assert vocab.labels == ["kite toy", "paper towel holder"]
    cleaning = vocab.settings["label_cleaning"]
    assert cleaning["changed"]["Paper towel holder (kitchen)"] == "paper towel holder"
    assert cleaning["dropped"] == ["Q: what is this?"]
