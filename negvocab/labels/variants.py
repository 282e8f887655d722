"""Written variants of a class name that WordNet and users spell differently: the possessive, abbreviations.

Bird and breed names are often eponyms written with or without the possessive: CUB-200 writes
"Harris Sparrow", "Clark Nutcracker" and "Chuck will Widow", WordNet 3.0 "Clark's nutcracker" and
"chuck-will's-widow", and a vocabulary may hold either. ImageNet-1k's "potter's wheel" is written
"potter wheel" by a model that drops the apostrophe. :func:`without_possessive` reads a name without
its possessive (the synonym filter matches both forms), :func:`possessive_spellings` writes a
name's words with one possessive (the label-space mapper looks each up in WordNet).
:func:`variant_keys` gives the matching keys a name has besides its own: the possessive dropped and
the abbreviations of :data:`ABBREVIATIONS` written out ("St. Bernard" = "Saint Bernard").
:func:`name_spellings` gives a class name a label space's own file misspells its right spelling (the
table ``negvocab/resources/name_spellings.tsv``, each line with its source: CUB-200's "Artic Tern"), and
:func:`qualified_name` reads a name behind a leading qualifier of its label space ("American tree
sparrow" behind "american": CUB-200's "Tree Sparrow"; the qualifiers are the class file's
``# qualifier:`` lines).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from importlib import resources

from negvocab.labels.keys import normalise

__all__ = [
    "ABBREVIATIONS",
    "name_spellings",
    "possessive_spellings",
    "qualified_name",
    "variant_keys",
    "without_possessive",
]

#: abbreviations names take, as words of a normalised key (periods dropped) -> the word written out
ABBREVIATIONS = {"st": "saint", "ste": "sainte", "mt": "mount", "ft": "fort"}

_APOSTROPHE = "['\u2019]"
_POSSESSIVE = re.compile(rf"(?<=[^\W_]){_APOSTROPHE}s\b|(?<=s){_APOSTROPHE}(?=[\s_-]|$)", re.IGNORECASE)


def without_possessive(text: str) -> str:
    """``text`` with every possessive ending dropped ("'s", and "'" after an s).

    >>> without_possessive("Harris's sparrow"), without_possessive("chuck-will's-widow")
    ('Harris sparrow', 'chuck-will-widow')
    >>> without_possessive("Travers' loupe"), without_possessive("jack-o'-lantern")
    ('Travers loupe', "jack-o'-lantern")
    """
    return _POSSESSIVE.sub("", text)


def possessive_spellings(words: Sequence[str]) -> list[tuple[str, ...]]:
    """``words`` with one word before the last made possessive, each way English writes it.

    A word becomes ``word's``; a word ending in s also ``word'`` and, read as a possessive whose
    apostrophe was lost, ``wor's`` ("forsters tern" -> "forster's tern").

    >>> possessive_spellings(["clark", "nutcracker"])
    [("clark's", 'nutcracker')]
    >>> possessive_spellings(["forsters", "tern"])
    [("forsters's", 'tern'), ("forsters'", 'tern'), ("forster's", 'tern')]
    """
    out: list[tuple[str, ...]] = []
    for i, word in enumerate(words[:-1]):
        if not word.isalpha() or len(word) < 2:
            continue
        forms = [f"{word}'s"]
        if word.endswith("s") and len(word) > 3:
            forms += [f"{word}'", f"{word[:-1]}'s"]
        out += [(*words[:i], form, *words[i + 1 :]) for form in forms]
    return out


def variant_keys(text: str) -> tuple[str, ...]:
    """The keys of ``text`` besides its own :func:`~negvocab.labels.keys.normalise` key: without the
    possessive, and with :data:`ABBREVIATIONS` written out (each alone and both).

    >>> variant_keys("St. Bernard's lily")
    ('st bernard lily', 'saint bernards lily', 'saint bernard lily')
    >>> variant_keys("sea lion")
    ()
    """
    own = normalise(text)
    bare = normalise(without_possessive(text))
    keys = (bare, _written_out(own), _written_out(bare))
    return tuple(k for k in dict.fromkeys(keys) if k and k != own)


def _written_out(key: str) -> str:
    return " ".join(ABBREVIATIONS.get(w, w) for w in key.split())


@functools.cache
def _spelling_table() -> dict[str, tuple[str, ...]]:
    """``name_spellings.tsv``: a name as written (its normalised key) -> the spellings it reads as."""
    text = resources.files("negvocab").joinpath("resources/name_spellings.tsv").read_text(encoding="utf-8")
    out: dict[str, tuple[str, ...]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            written, reads_as, *_ = line.split("\t")
            out[normalise(written)] = (*out.get(normalise(written), ()), reads_as)
    return out


def name_spellings(name: str) -> tuple[str, ...]:
    """The right spellings of a class name its label space's file misspells (none for most names).

    >>> name_spellings("Artic Tern"), name_spellings("Arctic Tern")
    (('Arctic Tern',), ())
    """
    return _spelling_table().get(normalise(name), ())


def qualified_name(key: str, qualifiers: Sequence[str]) -> str | None:
    """The rest of a normalised key behind its leading qualifier (the longest of ``qualifiers`` that
    starts it, as whole words), or None where none does.

    >>> qualified_name("american tree sparrow", ["american", "north american"])
    'tree sparrow'
    >>> qualified_name("north american tree sparrow", ["american", "north american"])
    'tree sparrow'
    >>> qualified_name("americana", ["american"]) is None
    True
    """
    for q in sorted({normalise(q) for q in qualifiers if normalise(q)}, key=len, reverse=True):
        if key.startswith(q + " ") and key[len(q) + 1 :].strip():
            return key[len(q) + 1 :]
    return None
