"""Plural and singular forms of nouns as WordNet reads them: the synonym filter's ``plural`` and
``singular`` rules (:mod:`negvocab.labels.synonyms`).

nltk's ``morphy`` maps a plural to its base form; the filter needs the other way too (every plural
spelling a class form may take, so that a label reaches WordNet only when it could be one) and the
irregular plurals of WordNet's ``noun.exc`` in both directions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from negvocab.labels.keys import normalise
from negvocab.labels.wordnet import load_wordnet

__all__ = [
    "NOUN_SUFFIXES",
    "irregular_bases",
    "irregular_plurals",
    "noun_base",
    "plural_only_singulars",
    "plurals_of",
    "regular_plurals",
]


def plurals_of(keys: Iterable[str]) -> frozenset[str]:
    """Every plural spelling of each key: its last word's regular and irregular plurals."""
    irregular = irregular_plurals()
    out: set[str] = set()
    for key in keys:
        head, _, last = key.rpartition(" ")
        prefix = f"{head} " if head else ""
        out.update(prefix + p for p in (*regular_plurals(last), *irregular.get(last, ())))
        out.update(irregular.get(key, ()))
    return frozenset(out)


def regular_plurals(word: str) -> list[str]:
    """Spellings that nltk's noun suffix rules turn into ``word`` (the rules read backwards)."""
    out = [word + "s", word + "es"]
    if word.endswith("y"):
        out.append(word[:-1] + "ies")
    if word.endswith("f"):
        out.append(word[:-1] + "ves")
    if word.endswith("man"):
        out.append(word[:-3] + "men")
    return out


@functools.cache
def _noun_exceptions() -> tuple[tuple[str, str], ...]:
    """WordNet's noun exception list (``noun.exc``) as normalised (irregular plural, base) pairs."""
    pairs: list[tuple[str, str]] = []
    with load_wordnet().open("noun.exc") as fh:
        for line in fh:
            inflected, *bases = line.split()
            pairs.extend((normalise(inflected), normalise(base)) for base in bases)
    return tuple(pairs)


@functools.cache
def irregular_plurals() -> dict[str, tuple[str, ...]]:
    """Base form -> its irregular plurals."""
    out: dict[str, list[str]] = {}
    for inflected, base in _noun_exceptions():
        out.setdefault(base, []).append(inflected)
    return {base: tuple(forms) for base, forms in out.items()}


@functools.cache
def irregular_bases() -> dict[str, tuple[str, ...]]:
    """Irregular plural -> every base form it has (``morphy`` gives only one, and none for a
    plural that is also a word of its own, such as "oxen")."""
    out: dict[str, list[str]] = {}
    for inflected, base in _noun_exceptions():
        out.setdefault(inflected, []).append(base)
    return {inflected: tuple(bases) for inflected, bases in out.items()}


#: nltk's (and WordNet's) regular noun suffix rules: plural ending -> singular ending
NOUN_SUFFIXES = (
    ("s", ""),
    ("ses", "s"),
    ("ves", "f"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("ies", "y"),
)


def plural_only_singulars(key: str, wnid: str) -> list[str]:
    """Singulars of ``key`` (a form whose last word is a regular plural) that name the class."""
    head, _, last = key.rpartition(" ")
    if len(last) < 4 or not last.endswith("s") or last.endswith("ss"):
        return []

    wn = load_wordnet()
    synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
    related = {synset, *synset.part_meronyms(), *synset.member_meronyms(), *synset.substance_meronyms(),
               *synset.hyponyms(), *synset.hypernyms(), *synset.part_holonyms()}  # fmt: skip
    out = []
    for suffix, ending in NOUN_SUFFIXES:
        base = last[: -len(suffix)] + ending if last.endswith(suffix) else ""
        if not base or base == last or not wn.synsets(base, "n"):
            continue
        singular = f"{head} {base}".strip()
        senses = wn.synsets(singular.replace(" ", "_"), "n")
        if not senses or senses[0] in related:  # "baluster"; not "bar" (a barroom first)
            out.append(singular)
    return out


@functools.lru_cache(maxsize=200_000)
def noun_base(word: str) -> str | None:
    """WordNet's base noun form of ``word`` (nltk ``morphy``), or ``None`` if WordNet has none."""
    return load_wordnet().morphy(word, "n")
