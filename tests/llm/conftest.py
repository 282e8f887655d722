"""Fixtures for the LLM tests: a local fake OpenAI server, a dummy key, a warm synonym filter."""

from __future__ import annotations

import pytest

from tests.llm.fake_openai import FakeOpenAI

DUMMY_KEY = "sk-test-DUMMY-0123456789-never-written"
#: short retry waits so the failure tests take milliseconds, not seconds
FAST = {"wait_base": 0.001, "wait_max": 0.01}


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture
def endpoint(server, monkeypatch):
    """OPENAI_BASE_URL / OPENAI_API_KEY pointing at the fake server, as a user would set them."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    return server


@pytest.fixture(scope="session")
def synonym_filter():
    from negvocab import SynonymFilter

    f = SynonymFilter()
    f.split(["warm up"])  # builds its lookup tables once per session
    return f


def assert_no_key(*paths, texts=()):
    """The dummy key appears in none of the files below ``paths`` and none of ``texts``."""
    from pathlib import Path

    for root in paths:
        root = Path(root)
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for f in files:
            assert DUMMY_KEY.encode() not in f.read_bytes(), f"API key written to {f}"
            assert DUMMY_KEY[8:20].encode() not in f.read_bytes(), f"part of the API key written to {f}"
    for t in texts:
        assert DUMMY_KEY not in t and DUMMY_KEY[8:20] not in t
