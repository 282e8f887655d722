"""The WordNet candidate pool of the WordNet (NegLabel / NegMining) vocabulary: docs/methods.md#wordnet-farthest-first.

Candidates are WordNet 3.0 synsets' head words: the first lemma name of each synset, underscores
read as spaces, lowercased, de-duplicated (first occurrence kept). NegLabel reads the noun
lexicographer files except ``noun.animal`` and ``noun.food`` plus the adjective files (``adj.all``,
``adj.pert``, ``adj.ppl``): preset ``"neglabel"``. Preset ``"all"`` excludes nothing.

Order is deterministic: by part of speech as given (nouns, then adjectives), then by synset offset
(the order of WordNet's data files). The farthest-first ranking re-orders them anyway; a fixed
order makes ties and the stored pool reproducible.

The pool is not synonym-filtered: builders run :class:`~negvocab.labels.synonyms.SynonymFilter`
over it (or over the ranked vocabulary).
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from negvocab.core.errors import InputError
from negvocab.labels.wordnet import LEXNAMES, load_wordnet

__all__ = ["CANDIDATE_FIELDS", "Candidate", "POS_NAMES", "PRESETS", "is_usable", "sample_pool", "wordnet_candidates"]

#: preset -> lexicographer files it leaves out
PRESETS: dict[str, tuple[str, ...]] = {
    "neglabel": ("noun.animal", "noun.food"),
    "all": (),
}
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective satellite", "r": "adverb"}


@dataclass(frozen=True)
class Candidate:
    """One candidate label: its text and the synset it comes from.

    Parameters
    ----------
    text : str
        Lowercase, spaces for underscores.
    pos : str
        The synset's part of speech: "n", "v", "a", "s" (adjective satellite) or "r".
    lexname : str
        Lexicographer file, e.g. "noun.artifact".
    synset : str
        nltk synset name, e.g. "tench.n.01".
    offset : int, default 0
        WordNet 3.0 offset within the part of speech's data file.
    """

    text: str  # lowercase, spaces for underscores
    pos: str  # the synset's part of speech: "n", "v", "a", "s" (adjective satellite) or "r"
    lexname: str  # lexicographer file, e.g. "noun.artifact"
    synset: str  # nltk synset name, e.g. "tench.n.01"
    offset: int = 0  # WordNet 3.0 offset within the part of speech's data file

    @property
    def synset_id(self) -> str:
        """``pos`` + 8-digit offset (``n01440764``): an ImageNet-style wnid for nouns."""
        return f"{'a' if self.pos == 's' else self.pos}{self.offset:08d}"


def wordnet_candidates(
    preset: str = "neglabel",
    *,
    pos: str | Iterable[str] = ("n", "a"),
    exclude_lexnames: Iterable[str] | None = None,
    all_lemmas: bool = False,
    drop_unusable: bool = True,
) -> list[Candidate]:
    """The WordNet 3.0 candidate strings for the WordNet vocabulary, in a fixed order.

    Parameters
    ----------
    preset
        ``"neglabel"`` (leave out ``noun.animal`` and ``noun.food``, as NegLabel did) or ``"all"``.
    pos
        Parts of speech, in output order: any of ``n v a r`` (``a`` includes satellites ``s``);
        a string such as ``"n,a"`` is accepted.
    exclude_lexnames
        Lexicographer files to leave out, replacing the preset's list.
    all_lemmas
        Every lemma name of each synset instead of the head word only (far more strings, mostly
        synonyms of one another).
    drop_unusable
        Drop strings that make no label: a single character, or no letter at all ("1000", ".22").

    Returns
    -------
    list[Candidate]
        Unique texts (the first synset that yields a text keeps it). The "neglabel" preset gives
        about 70,000 candidates.
    """
    if preset not in PRESETS:
        raise InputError(f"unknown candidate preset {preset!r}; choose one of {', '.join(PRESETS)}")
    pos_tuple = _parse_pos(pos)
    excluded = tuple(sorted(set(PRESETS[preset] if exclude_lexnames is None else _check_lexnames(exclude_lexnames))))
    return list(_pool(pos_tuple, excluded, bool(all_lemmas), bool(drop_unusable)))


CANDIDATE_FIELDS = ("text", "pos", "lexname", "synset", "offset")


def sample_pool(n: int, candidates: Sequence[Candidate] | None = None) -> list[Candidate]:
    """``n`` WordNet candidates spread evenly over the NegLabel pool (deterministic).

    The candidate pool of a small WordNet build (the demo's ``--n-candidates``, a grid's ``n_candidates``): the
    pool is :func:`wordnet_candidates` ``("neglabel")`` (about 70k words), or ``candidates`` when given
    (another preset's pool); ``n`` at or above its size gives all of it. Candidate ``i`` is
    ``pool[int(i * (len(pool) / n))]``, so the picks cover the whole pool in its fixed order rather
    than its first ``n`` words.

    Parameters
    ----------
    n : int
        How many candidates.
    candidates : sequence of Candidate, optional
        The pool (default: the NegLabel pool).
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InputError(f"n must be a positive whole number of candidates, got {n!r}")
    pool = wordnet_candidates("neglabel") if candidates is None else list(candidates)
    if n >= len(pool):
        return list(pool)
    step = len(pool) / n
    return [pool[int(i * step)] for i in range(n)]


def _parse_pos(pos: str | Iterable[str]) -> tuple[str, ...]:
    items = pos.replace(",", " ").split() if isinstance(pos, str) else list(pos)
    out: list[str] = []
    for p in items:
        p = str(p).strip().lower()
        if p not in POS_NAMES:
            raise InputError(f"unknown part of speech {p!r}; use n (noun), a (adjective), v (verb) or r (adverb)")
        p = "a" if p == "s" else p
        if p not in out:
            out.append(p)
    if not out:
        raise InputError("no part of speech given; use n, a, v or r")
    return tuple(out)


def _check_lexnames(names: Iterable[str]) -> list[str]:
    known = {name for name, _ in LEXNAMES}
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown lexicographer file {unknown[0]!r}; e.g. noun.animal, noun.food, adj.all")
    return names


def is_usable(text: str) -> bool:
    """Whether ``text`` can serve as a label: at least two characters, at least one letter."""
    return len(text) > 1 and any(ch.isalpha() for ch in text)


@functools.cache
def _pool(
    pos: tuple[str, ...], excluded: tuple[str, ...], all_lemmas: bool, drop_unusable: bool
) -> tuple[Candidate, ...]:
    skip = set(excluded)
    seen: set[str] = set()
    out: list[Candidate] = []
    for p in pos:
        for offset, ss_type, lexname, lemmas, name in _synsets(p):
            if lexname in skip:
                continue
            for lemma in lemmas if all_lemmas else lemmas[:1]:
                text = lemma.replace("_", " ").lower()
                if text in seen or (drop_unusable and not is_usable(text)):
                    continue
                seen.add(text)
                out.append(Candidate(text, ss_type, lexname, name, offset))
    return tuple(out)


_DATA_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}


@functools.cache
def _synsets(pos: str) -> tuple[tuple[int, str, str, list[str], str], ...]:
    """``(offset, ss_type, lexname, lemma names, nltk synset name)`` for every synset of ``pos``,
    in data-file (offset) order, read straight from WordNet's files: ~10x faster than building
    nltk Synset objects. Names follow nltk: first lemma, lowercased, and its sense number among
    the lemma's synsets (a satellite among the lemma's satellites only, as nltk does)."""
    wn = load_wordnet()
    rows = []
    with wn.root.join(f"data.{_DATA_FILES[pos]}").open() as fh:
        for raw in fh:
            if raw.startswith(b"  "):
                continue
            f = raw.decode("utf-8").split(" ", 4 + 2 * 255)
            n = int(f[3], 16)
            lemmas = [_strip_marker(f[4 + 2 * i]) for i in range(n)]
            rows.append((int(f[0]), f[2], LEXNAMES[int(f[1])][0], lemmas))
    ss_type = {offset: t for offset, t, _, _ in rows}
    senses: dict[tuple[str, int], int] = {}
    with wn.root.join(f"index.{_DATA_FILES[pos]}").open() as fh:
        for raw in fh:
            if raw.startswith(b"  "):
                continue
            f = raw.decode("utf-8").split()
            satellites = 0
            for i, off in enumerate(map(int, f[-int(f[2]) :]), 1):
                if ss_type.get(off) == "s":  # nltk numbers satellites among satellites only
                    satellites += 1
                    senses[(f[0], off)] = satellites
                else:
                    senses[(f[0], off)] = i
    return tuple(
        (offset, t, lexname, lemmas, f"{lemmas[0].lower()}.{t}.{senses[(lemmas[0].lower(), offset)]:02d}")
        for offset, t, lexname, lemmas in rows
    )


def _strip_marker(word: str) -> str:
    """``long(a)`` -> ``long``: drop the adjective position marker of data.adj words."""
    return word[: word.index("(")] if word.endswith(")") and "(" in word else word
