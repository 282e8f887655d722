"""Shared fixtures for the label-space tests: WordNet, the ImageNet classes, one filter, one pool."""

from __future__ import annotations

import functools
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


@functools.cache
def data_noun(wn) -> tuple[tuple[int, tuple[str, ...], tuple[tuple[str, int, str], ...]], ...]:
    """``data.noun`` read line by line: (offset, lemmas, pointers as (symbol, offset, pos)) per synset."""
    rows = []
    with wn.root.join("data.noun").open() as fh:
        for raw in fh:
            if raw.startswith(b"  "):
                continue
            f = raw.decode("utf-8").split(" ")
            n_words = int(f[3], 16)
            k = 4 + 2 * n_words
            lemmas = tuple(f[4 + 2 * i] for i in range(n_words))
            pointers = tuple((f[k + 1 + 4 * j], int(f[k + 2 + 4 * j]), f[k + 3 + 4 * j]) for j in range(int(f[k])))
            rows.append((int(f[0]), lemmas, pointers))
    return tuple(rows)
