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


def _build(tmp_path, synonym_filter, classes=2, **kw):
    """A small GPT-sibling run against the fake server, in ``tmp_path / "run"``."""
    return build_gpt_vocabulary(
        "gpt-test", run_dir=tmp_path / "run", synonym_filter=synonym_filter, client_options=FAST,
        concurrency=4, per_class=6, rounds=1, classes=classes, **kw,
    )  # fmt: skip


def test_decorated_answers_give_clean_filtered_labels(endpoint, tmp_path, synonym_filter):
    endpoint.state.extra_labels = DECORATED
    vocab = _build(tmp_path, synonym_filter, classes=3)
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
        "a:0": {
            "status": "ok",
            "labels": ["trout** - explanation", "1.trout", "a koi", "koi"],
        },  # the old normaliser's output
        "b:0": {
            "status": "ok",
            "labels": ["ignored"],
            "raw_labels": ["Q: given the image category [tench]", "**Pike**"],
        },
    }
    cleaned, report = reclean_results(results)
    assert cleaned["a:0"]["labels"] == ["trout", "koi"]
    assert cleaned["b:0"]["labels"] == ["pike"] and cleaned["b:0"]["status"] == "ok"
    assert report.changed == {"trout** - explanation": "trout", "1.trout": "trout", "a koi": "koi", "**Pike**": "pike"}
    assert report.dropped == ["Q: given the image category [tench]"]
    assert results["a:0"]["labels"][0] == "trout** - explanation"  # the journal's records are not touched


def test_oracle_labels_go_through_the_same_normaliser():
    vocab = build_oracle_vocabulary(
        ["Kite_toy", "kite toy", "Paper towel holder (kitchen)", "goldfish", "Q: what is this?"]
    )
    assert vocab.labels == ["kite toy", "paper towel holder"]
    cleaning = vocab.settings["label_cleaning"]
    assert cleaning["changed"]["Paper towel holder (kitchen)"] == "paper towel holder"
    assert cleaning["dropped"] == ["Q: what is this?"]


def _journaled_results(run_dir):
    from negvocab.llm.journal import Journal

    journal = Journal.open_existing(run_dir)  # reads every line, checking its CRC-32
    return [rec for rec in journal.results.values() if rec.get("kind", "result") == "result"]


def test_raw_items_reach_the_journal_and_the_cleaning_record(endpoint, tmp_path, synonym_filter):
    endpoint.state.extra_labels = DECORATED
    vocab = _build(tmp_path, synonym_filter, classes=2)
    cleaning = vocab.settings["label_cleaning"]
    assert cleaning["changed"]["1. **Snow Goose** - a white bird of the tundra"] == "snow goose"
    assert cleaning["changed"]["a photo of a Koi"] == "koi"
    assert cleaning["changed"]["crane (machine)"] == "crane"
    assert cleaning["dropped"] == [DECORATED[-1]] and cleaning["dropped_count"] == 1
    records = _journaled_results(tmp_path / "run")
    assert len(records) == 2
    for rec in records:
        assert rec["raw_labels"][-len(DECORATED) :] == DECORATED  # the raw strings stay in the journal
        assert "snow goose" in rec["labels"] and DECORATED[0] not in rec["labels"]
    line = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()[-1]
    assert line.endswith('"}') and '"crc32":' in line


def test_free_text_answers_journal_their_raw_lines(endpoint, tmp_path, synonym_filter):
    endpoint.state.kind = "free"  # no structured output: numbered lists, bullets, bold, prose
    endpoint.state.extra_labels = ["Sure! Here are some more", DECORATED[0]]
    vocab = _build(tmp_path, synonym_filter, classes=2, response_format="text")
    assert "snow goose" in vocab.labels
    cleaning = vocab.settings["label_cleaning"]
    assert any(raw.endswith(DECORATED[0]) or raw == DECORATED[0] for raw in cleaning["changed"])
    assert any("Sure! Here are some more" in d for d in cleaning["dropped"])


def test_journals_without_raw_items_still_build(endpoint, tmp_path, synonym_filter):
    """A journal of an older negvocab (no ``raw_labels``, no line checksums) gives the same vocabulary."""
    import json

    endpoint.state.extra_labels = DECORATED
    first = _build(tmp_path, synonym_filter)
    path = tmp_path / "run" / "journal.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec.pop("crc32", None)
        rec.pop("raw_labels", None)  # as an older negvocab wrote it
        lines.append(json.dumps(rec, separators=(",", ":"), ensure_ascii=False).encode())
    path.write_bytes(b"\n".join(lines) + b"\n")
    again = _build(tmp_path, synonym_filter)
    assert again.labels == first.labels
    assert again.settings["label_cleaning"]["dropped"] == []  # the old journal never kept the echo


def test_a_key_the_model_echoes_never_reaches_the_journal(endpoint, tmp_path, synonym_filter):
    from tests.llm.conftest import DUMMY_KEY, assert_no_key

    endpoint.state.extra_labels = [f"Key: {DUMMY_KEY}", f"{DUMMY_KEY} (the key you sent)"]
    vocab = _build(tmp_path, synonym_filter, classes=2)
    assert_no_key(tmp_path / "run", texts=[repr(vocab.settings)])
    # the items that hold the key are dropped whole, never rewritten; the other labels are kept as written
    assert not any("***" in raw for raw in vocab.settings["label_cleaning"]["changed"])
    assert "common thing 0" in vocab.labels


def test_stuttered_imagenet_names_are_filtered_as_the_classes_they_are(endpoint, tmp_path, synonym_filter):
    """Gemini-Pro's stutters (issue 24): "submarine submarine" kept its stutter and so passed the synonym
    filter although "submarine" is an ImageNet class; cleaned first, the filter knows it."""
    stutters = ["Submarine Submarine", "mop mop", "banana banana", "saxophone saxophone", "snow goose snow goose"]
    endpoint.state.extra_labels = stutters
    vocab = _build(tmp_path, synonym_filter)
    classes = {n.lower() for n in imagenet1k().names}
    assert {"submarine", "mop", "banana", "saxophone"} <= classes  # the independent fact the filter must use
    for word in ("submarine", "mop", "banana", "saxophone"):
        assert word not in vocab.labels and f"{word} {word}" not in vocab.labels
        assert word in vocab.settings["synonym_filter"]["removed"]
    assert "snow goose" in vocab.labels and "snow goose snow goose" not in vocab.labels  # no class: kept, once
