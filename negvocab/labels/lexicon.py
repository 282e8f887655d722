"""Known words: whether a label's words are words of a language, judged against WordNet 3.0's lemmas.

:func:`negvocab.labels.clean.looks_like_name` judges a label's shape (letters, vowels, no markup); a
small model that writes fragments of words (``ientos``, ``différentesindex``) passes that test. A list of
names from a working model is mostly made of known words ("yellow cloud", "stop sign", "great pyrenees"),
with a few proper names beside them; an answer whose items are mostly no known word at all is not
language, whatever its length. :func:`unknown_labels` says which labels hold no known word; a label with
no Latin word of three letters or more (digits, another script) cannot be judged and counts as known.
Without a WordNet (:func:`negvocab.labels.wordnet.load_wordnet` fails) nothing is judged here.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from negvocab.core.errors import ResourceError
from negvocab.labels.clean import keep_names
from negvocab.labels.wordnet import WORDNET_DIR_ENV, load_wordnet, system_dirs

__all__ = ["english_words", "is_known", "judge_answer", "unknown_labels"]

log = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W\d_]+")
POS = ("noun", "verb", "adj", "adv")


@functools.cache
def english_words() -> frozenset[str] | None:
    """Every word of a WordNet lemma, lower case without accents (``None`` when no WordNet is found). Read from
    the index files of a WordNet folder (``$NEGVOCAB_WORDNET_DIR``, the system database) when there is one,
    which takes a second, else through nltk's reader (:func:`~negvocab.labels.wordnet.load_wordnet`)."""
    words: set[str] = set()
    for line in _index_lines():
        if not line.startswith(" "):  # the index files: one lemma a line, after a licence header
            words.update(_WORD.findall(_plain(line.split(" ", 1)[0])))
    return frozenset(words) or None


def _index_lines() -> Iterator[str]:
    env = os.environ.get(WORDNET_DIR_ENV)
    folders = [Path(env).expanduser()] if env else system_dirs()
    for folder in folders:
        files = [folder / f"index.{pos}" for pos in POS]
        if all(f.is_file() for f in files):
            for f in files:
                with open(f, encoding="utf-8", errors="replace") as lines:
                    yield from lines
            return
    try:
        reader = load_wordnet()
    except ResourceError as e:
        log.info("no WordNet to judge words against (%s): answers are judged by their shape only", e)
        return
    for pos in POS:
        with reader.open(f"index.{pos}") as lines:
            yield from lines


def _plain(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text.lower()) if not unicodedata.combining(c))


def _stems(word: str) -> Iterable[str]:
    yield word
    for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("'s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            yield word[: -len(suffix)] + repl


def is_known(label: str, words: frozenset[str] | None = None) -> bool:
    """Whether ``label`` holds a known word, or cannot be judged (no Latin word of 3+ letters, or no WordNet)."""
    words = english_words() if words is None else words
    if not words:
        return True
    latin = [w for w in _WORD.findall(_plain(label)) if len(w) >= 3 and all("a" <= c <= "z" for c in w)]
    if not latin:
        return True
    return any(stem in words for w in latin for stem in _stems(w))


def unknown_labels(labels: Iterable[str]) -> list[str]:
    """The labels that hold no known word (:func:`is_known`), in order."""
    words = english_words()
    if not words:
        return []
    return [label for label in labels if not is_known(label, words)]


def judge_answer(labels: list[str]) -> tuple[list[str], list[str], bool]:
    """One answer's cleaned labels judged item by item: the names kept (shaped like a name:
    :func:`~negvocab.labels.clean.keep_names`), the items that are no language (no name's shape, or no known
    word), and whether the answer as a whole is not language (more than half of its items are not). A stray
    nonsense item in a good answer goes; an unknown proper name in a good answer stays."""
    named, nonsense = keep_names(labels)
    unknown = unknown_labels(named)
    bad = [*nonsense, *unknown]
    return named, bad, 2 * len(bad) > len(labels)
