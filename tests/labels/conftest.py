"""Shared fixtures for the label-space tests: WordNet, the ImageNet classes, one filter, one pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from negvocab.labels.candidates import wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.labels.wordnet import load_wordnet

SYSTEM_WORDNET = Path("/usr/share/wordnet")


@pytest.fixture(scope="session")
def wn():
    return load_wordnet()


@pytest.fixture(scope="session")
def classes():
    return imagenet1k()


@pytest.fixture(scope="session")
def synfilter(wn, classes):
    return SynonymFilter(classes)


@pytest.fixture(scope="session")
def neglabel_pool(wn):
    return wordnet_candidates("neglabel")


def wordnet_file(wn, name: str) -> list[str]:
    """The lines of one file of the WordNet database nltk reads (licence header skipped)."""
    with wn.root.join(name).open() as fh:
        return [line.decode("utf-8") for line in fh if not line.startswith(b"  ")]
