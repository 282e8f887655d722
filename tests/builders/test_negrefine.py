"""NegRefine's LLM filter (negvocab.builders.negrefine) against NegRefine's own decision code.

The answers are recorded as Qwen2.5-Instruct answers NegRefine's questions ("Yes.", "No.", "Yes, ..."),
with the forms its parsing treats differently (a leading space, "YES", "Not exactly"), served by the
local fake OpenAI server; NegRefine's ``_llm_filter`` (tests/reference/negrefine.py) asks the same
questions of the same recorded answers. The decisions, the reasons and the number of questions agree.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from typer.testing import CliRunner

import negvocab
from negvocab.builders.negrefine import clean_words, top_matching_classes
from negvocab.core.errors import ResourceError
from negvocab.labels.imagenet import IdClasses
from negvocab.llm.settings import LLMSettings
from tests.llm.conftest import FAST
from tests.reference import negrefine as ref
from tests.vlm.conftest import make_tiny_vlm

CLASSES = ["goldfish", "tabby cat", "golden retriever", "oak", "sports car", "tennis ball"]
LABELS = [
    "paris",  # a proper noun
    "koi",  # a subcategory of goldfish, whichever rank goldfish has
    "tabby cat",  # the same as an ID class: removed without a question, once ranked
    "maine coon",
    "mount everest",
    "hatchback",
    "o'clock",  # cleaned to "oclock" as NegRefine does
    "ab",  # cleaned away (< 3 characters)
    "thunderstorm",
    "velvet",
    "gravel",
    "lantern",
]
PROPER = "Is '{}' a proper noun, like the name of a city, country, mountain, river, or any unique place or entity?"
SUB = "Is '{}' a subcatgeory of '{}'?"
#: answers as the model writes them (the Yes forms of a chat model; one it reads as No: a leading space)
RECORDED_PROPER = {
    "paris": "Yes.",
    "mount everest": "Yes, Mount Everest is a proper noun.",
    "thunderstorm": " Yes",  # NegRefine reads it as No: it does not start with "yes"
    "velvet": "No.",
    "lantern": "NO",
}
RECORDED_SUB = {
    ("koi", "goldfish"): "Yes, koi is a type of fish, though not a goldfish strictly.",
    ("maine coon", "tabby cat"): "YES",
    ("hatchback", "sports car"): "Not exactly; a hatchback is a body style.",
    ("hatchback", "golden retriever"): "No",
    ("gravel", "oak"): "yes",
}


def _record(server):
    answers = {PROPER.format(lab): text for lab, text in RECORDED_PROPER.items()}
    answers.update({SUB.format(lab, cls): text for (lab, cls), text in RECORDED_SUB.items()})
    server.state.answers = answers
    server.state.answer_default = "No."


def _reference(vlm):
    """NegRefine's _clean_words, _find_top_matching_pairs and _llm_filter on the recorded answers."""
    embed = lambda texts: torch.from_numpy(vlm.encode_text(texts, ["{}"]))  # noqa: E731 (bare texts, as theirs)
    answers = {PROPER.format(lab): text for lab, text in RECORDED_PROPER.items()}
    answers.update({SUB.format(lab, cls): text for (lab, cls), text in RECORDED_SUB.items()})
    asked: list[str] = []

    def query_llm(prompt):
        asked.append(prompt)
        return answers.get(prompt, "No.")

    log: list[str] = []
    pairs = ref._find_top_matching_pairs(ref._clean_words(LABELS), CLASSES, embed)
    kept = ref._llm_filter(pairs, query_llm, log)
    removed = {}
    for line in log:
        parts = [p.strip() for p in line.split("|")]
        if parts[-1] == "proper noun":
            removed[parts[0]] = ("proper noun", None)
        elif parts[-1] in ("the same", "subcategory"):
            removed[parts[0]] = ("same" if parts[-1] == "the same" else "subcategory", parts[1])
    return kept, removed, asked


@pytest.fixture(scope="module")
def vlm():
    return make_tiny_vlm(cache=False)


def _build(vlm, run_dir, **kw):
    vocab = negvocab.Vocabulary.from_labels(LABELS, source="file")
    kw.setdefault("settings", LLMSettings(client_options=FAST))
    return negvocab.build_vocabulary(
        "negrefine",
        vlm=vlm,
        vocabulary=vocab,
        llm_model="qwen2.5-14b-instruct",
        id_classes=IdClasses.from_names(CLASSES),
        run_dir=run_dir,
        **kw,
    )


def _embed_text(text_list, vlm):
    """NegRefine's ``_embed_text`` (src/neg_filter.py): the model's raw features of the bare texts, then
    ``/= norm`` (the tiny model's raw norms vary, as CLIP's do)."""
    with torch.no_grad():
        features = vlm.model.encode_text(vlm.tokenizer(list(text_list))).float()
    return features / features.norm(dim=-1, keepdim=True)


def test_clean_words_and_top_matches_equal_negrefines(vlm):
    assert set(clean_words(LABELS)) == set(ref._clean_words(LABELS))
    assert clean_words(["b", "o'clock", "oclock", "x-ray", "café"]) == ["oclock", "x-ray", "café"]
    labels = clean_words(LABELS)
    neg, pos = vlm.encode_text(labels, ["{}"]), vlm.encode_text(CLASSES, ["{}"])
    idx = top_matching_classes(neg, pos, 10)
    theirs = ref._find_top_matching_pairs(labels, CLASSES, lambda t: _embed_text(t, vlm))
    assert [[CLASSES[j] for j in row] for row in idx.tolist()] == [p[1] for p in theirs]
    assert idx.shape == (len(labels), len(CLASSES))  # min(10, C)


def test_filter_decisions_equal_negrefines_code(vlm, endpoint, tmp_path):
    _record(endpoint)
    vocab = _build(vlm, tmp_path / "run")
    kept, removed, asked = _reference(vlm)
    assert set(vocab.labels) == set(kept)
    assert vocab.labels == [lab for lab in clean_words(LABELS) if lab in set(kept)]  # the input's order
    ours = {r["label"]: (r["reason"], r["id_class"]) for r in vocab.settings["removed"]}
    assert ours == removed
    assert {"paris", "mount everest", "koi"} <= set(ours) and "thunderstorm" in vocab.labels  # " Yes" is a No
    assert vocab.source == "negrefine" and vocab.settings["input"]["source"] == "file"
    assert vocab.settings["cleaned"] == {"oclock": "o'clock"}
    # the same questions, each once: no more requests than NegRefine's loop makes
    counts = endpoint.state.chat_counts
    assert sum(counts.values()) == len(asked) == vocab.settings["questions"]
    assert max(counts.values()) == 1
    # a finished run is rebuilt from its journal without a request
    again = _build(vlm, tmp_path / "run")
    assert again == vocab and sum(endpoint.state.chat_counts.values()) == len(asked)


def test_resumed_run_equals_clean_run(vlm, endpoint, tmp_path):
    _record(endpoint)
    clean = _build(vlm, tmp_path / "clean")
    endpoint.state.chat_counts.clear()
    # the sub-category question of koi fails until the server gives up: the run stops part-way
    for cid in [f"koi/r{k}" for k in range(1, 7)] + ["velvet/r0"]:
        endpoint.state.add_faults(cid, "500same", "500same", "500same")
    with pytest.raises(ResourceError, match="re-run"):  # no deferral: a request out of attempts ends the run
        _build(vlm, tmp_path / "resumed", settings=LLMSettings(client_options={**FAST, "deferrals": 0}))
    first = Counter(endpoint.state.chat_counts)
    endpoint.state.faults.clear()
    endpoint.state.chat_counts.clear()
    resumed = _build(vlm, tmp_path / "resumed")
    strip = lambda v: {k: x for k, x in v.settings.items() if k not in ("run_dir", "provenance")}  # noqa: E731
    assert resumed.labels == clean.labels and strip(resumed) == strip(clean)
    # nothing answered in the first session was asked again
    answered_first = {cid for cid, n in first.items() if not cid.startswith(("koi/", "velvet/"))}
    assert not answered_first & set(endpoint.state.chat_counts)


def test_batch_api_gives_the_same_vocabulary(vlm, endpoint, tmp_path):
    _record(endpoint)
    sync = _build(vlm, tmp_path / "sync")
    batch = _build(vlm, tmp_path / "batch", settings=LLMSettings(batch=True, poll_interval=0))
    assert batch.labels == sync.labels and batch.settings["removed"] == sync.settings["removed"]
    assert endpoint.state.batch_inputs  # it went through the Batch API


def test_dry_run_prices_at_most_every_question_and_sends_nothing(vlm, endpoint, tmp_path):
    _record(endpoint)
    b = negvocab.get_builder("negrefine")
    opts = dict(
        vocabulary=negvocab.Vocabulary.from_labels(LABELS, source="file"),
        llm_model="gpt-4o-mini",
        id_classes=IdClasses.from_names(CLASSES),
        run_dir=tmp_path / "run",
        top_n=3,
    )
    est = b.estimate_cost(vlm=vlm, **opts)
    assert est.requests == len(clean_words(LABELS)) * (1 + 3) and est.already_done == 0
    assert sum(endpoint.state.chat_counts.values()) == 0 and not (tmp_path / "run").exists()
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LABELS) + "\n")
    vocab = b.run(vlm=vlm, **{**opts, "vocabulary": src}, settings=LLMSettings(client_options=FAST))
    assert vocab.settings["top_n"] == 3 and vocab.settings["input_file"] == str(src)
    assert "paris" not in vocab.labels and vocab.settings["input"]["source"] == "file"
    assert b.estimate_cost(vlm=vlm, **opts).requests == 0


def test_cli_generic_build_dry_run(endpoint, cache_dir, tmp_path):
    from negvocab.cli import app

    _record(endpoint)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LABELS[:4]) + "\n")
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(CLASSES) + "\n")
    args = ["build", "negrefine", "--vocabulary", str(src), "--llm-model", "m", "--id-classes", str(ids)]
    args += ["--top-n", "2", "--run-dir", str(tmp_path / "run"), "--random-weights", "-o", str(tmp_path / "v.json")]
    r = CliRunner().invoke(app, [*args, "--dry-run"])
    assert r.exit_code == 0, r.output
    assert "dry run, nothing sent: 12 requests to send" in r.output and not (tmp_path / "v.json").exists()
    r = CliRunner().invoke(app, [*args[:-2], "--top-n", "0", "-o", str(tmp_path / "w.json")])
    assert r.exit_code != 0 and "--top-n" in r.output and "Traceback" not in r.output
