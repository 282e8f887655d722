"""EOE far/fine ``size`` (L): rounds are added until L is reached or the model stops producing new
labels, and the vocabulary, the log and the CLI summary say the size reached against the size asked."""

from __future__ import annotations

import logging

from negvocab import build_eoe_vocabulary
from negvocab.builders.llm_size import MAX_TOP_UP_ROUNDS
from tests.llm.conftest import *  # noqa: F403  (the fake server, the endpoint, the synonym filter)
from tests.llm.conftest import FAST
from tests.llm.fake_openai import expected_merge


def _far(tmp_path, synonym_filter, size, **kw):
    # 10 classes in chunks of 4: 3 chunks, ceil(size / 3) labels a request
    return build_eoe_vocabulary(
        "gpt-test", mode="far", size=size, classes_per_request=4, classes=10, rounds=1, run_dir=tmp_path / "run",
        synonym_filter=synonym_filter, client_options=FAST, **kw,
    )  # fmt: skip


def _unique(rounds: int, n: int) -> int:
    """Distinct labels the fake answers for the 3 chunks over ``rounds`` rounds (independent merge)."""
    per_chunk = expected_merge([f"chunk{i:03d}" for i in range(3)], rounds, n)
    return len({lab for labels in per_chunk.values() for lab in labels})


def test_rounds_are_added_until_the_size_is_reached(endpoint, tmp_path, synonym_filter, caplog):
    assert _unique(1, 10) < 30 <= _unique(2, 10)  # one pass falls short, two reach it
    with caplog.at_level(logging.INFO):
        vocab = _far(tmp_path, synonym_filter, 30)
    assert len(vocab) == _unique(2, 10)
    assert vocab.settings["size"] == {"asked": 30, "reached": _unique(2, 10), "rounds_added": 1, "why": "reached"}
    assert sum(endpoint.state.chat_counts.values()) == 6  # 3 chunks x 2 rounds, nothing asked twice
    assert "41 labels, 30 asked (--size), 1 rounds added" in caplog.text


def test_a_model_without_new_labels_stops_the_rounds_and_says_so(endpoint, tmp_path, synonym_filter, caplog):
    endpoint.state.fixed_round = 0  # every round answered alike
    with caplog.at_level(logging.WARNING):
        vocab = _far(tmp_path, synonym_filter, 90)
    size = vocab.settings["size"]
    assert size["reached"] == len(vocab) == _unique(1, 30) < 90
    assert size["rounds_added"] == 1 and "stopped producing new ones" in size["why"]
    assert f"{len(vocab)} labels, 90 asked (--size)" in caplog.text


def test_rounds_added_are_bounded(endpoint, tmp_path, synonym_filter, monkeypatch):
    import negvocab.builders.llm_size as llm_size

    assert MAX_TOP_UP_ROUNDS == 4
    monkeypatch.setattr(
        llm_size, "MAX_TOP_UP_ROUNDS", 0
    )  # the fake grows by half a list a round: a cap of 0 shows the bound
    vocab = _far(tmp_path, synonym_filter, 30)
    assert vocab.settings["size"] == {
        "asked": 30,
        "reached": _unique(1, 10),
        "rounds_added": 0,
        "why": "0 rounds added, the most",
    }
    assert sum(endpoint.state.chat_counts.values()) == 3
