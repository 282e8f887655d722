"""Known words: an answer that is no language never reaches a vocabulary, whatever the flags (issue 33's
``ientos`` and ``différentesindex``, written by a tiny gibberish model, passed the shape test alone)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from negvocab.cli.app import app
from negvocab.labels.lexicon import english_words, is_known, judge_answer
from negvocab.llm.text import reclean_results
from tests.llm.conftest import DUMMY_KEY, server  # noqa: F401 (the fake server fixture)

#: what the issue's tiny-garbage model answered, one answer a request
GIBBERISH = ["ientos", "différentesindex", "ientos\ndifférentesindex\nrapidamentecontra"]


def test_words_are_judged_against_wordnet_lemmas():
    words = english_words()
    assert words is not None and "cloud" in words and "pyrenees" in words and "ientos" not in words
    assert is_known("yellow cloud") and is_known("stop signs") and is_known("great pyrenees")
    assert not is_known("ientos") and not is_known("différentesindex")
    assert is_known("北京烤鸭") and is_known("4x4")  # nothing to judge: not refused


def test_an_answer_is_judged_as_a_whole_and_a_stray_name_in_a_good_one_stays():
    named, bad, babble = judge_answer(["koi", "carp", "goldfish", "xoloitzcuintli"])
    assert not babble and named == ["koi", "carp", "goldfish", "xoloitzcuintli"]  # unknown names kept in good company
    assert judge_answer(["ientos"])[2] and judge_answer(["ientos", "différentesindex", "carp"])[2]
    assert bad == [w for w in ["koi", "carp", "goldfish", "xoloitzcuintli"] if not is_known(w)]


def test_an_older_journal_holding_gibberish_as_ok_gives_no_label():
    results = {
        "a/r0": {"status": "ok", "labels": ["ientos"], "n": 6},
        "b/r0": {"status": "ok", "labels": ["trout", "carp", "koi"], "n": 6},
    }
    out, cleaning = reclean_results(results)
    assert out["a/r0"]["labels"] == [] and out["a/r0"]["status"] == "invalid"
    assert out["b/r0"]["labels"] == ["trout", "carp", "koi"] and out["b/r0"]["status"] == "ok"
    assert "ientos" in cleaning.dropped


@pytest.mark.parametrize("answer", GIBBERISH)
@pytest.mark.parametrize(
    "flags",
    [
        ["--min-labels", "1", "--response-format", "text", "-j", "1"],  # the command
        ["--min-labels", "1"],
        ["--response-format", "json_object", "--min-labels", "1", "-j", "4"],
        [],
    ],
)
def test_a_gibberish_model_never_reaches_a_vocabulary_whatever_the_flags(tmp_path, server, answer, flags):  # noqa: F811
    server.state.kind, server.state.babble_lines = "babble", answer.split("\n")
    out = tmp_path / "o.json"
    args = ["build", "gpt", "-m", "tiny-garbage", "--classes", "12", "--rounds", "1", "-n", "6",
            "--run-dir", str(tmp_path / "r"), "-o", str(out), *flags]  # fmt: skip
    res = CliRunner().invoke(app, args, env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY})
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert res.exit_code == 2 and len(errors) == 1, res.output
    assert "not language" in errors[0] and "--min-labels cannot help" in errors[0]
    assert "likely fix: --min-labels" not in errors[0]  # no advice that leads to garbage
    assert not out.exists() and sum(server.state.chat_counts.values()) <= 10
    journal = (tmp_path / "r" / "journal.jsonl").read_text() if (tmp_path / "r" / "journal.jsonl").exists() else ""
    assert '"status": "ok"' not in journal and '"status":"ok"' not in journal
