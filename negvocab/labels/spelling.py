"""British and American spellings read as one, word by word: the synonym filter's ``spelling`` rule.

The rules are data (``negvocab/resources/spelling.tsv``): regular expressions for the systematic
differences (-our/-or, -re/-er, -ogue/-og, -ll-/-l-, -ise/-ize and -isation/-ization, -yse/-yze,
ae/e, oe/e, sulph/sulf, -gramme/-gram), each with the inflections it allows, and whole-word pairs
for the rest (grey/gray, plough/plow, tyre/tire, ...). :func:`american` rewrites every British
spelling of a normalised key to the American one; the filter reads both the labels and the ID
class forms through it, so either spelling of either matches (and plural, hyphenated and spaced
forms too, through the filter's other rules).

A rule that would turn a word into a different WordNet word is not applied to it: "acre" stays
(not "acer", a maple), "poet" stays (not "pet"), "miller" stays (not "miler", a runner). Two spellings
of one word share a WordNet synset ("colour"/"color", "sulphur"/"sulfur"), so they pass.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from negvocab.labels.wordnet import load_wordnet

__all__ = ["SpellingRule", "american", "american_word", "spelling_rules", "spelling_words"]

#: endings a whole-word pair also takes ("ploughs", "moulded")
_WORD_ENDINGS = ("", "s", "es", "ed", "d", "ing", "ings", "er", "ers", "y", "ness", "less", "ish")


@dataclass(frozen=True)
class SpellingRule:
    """One systematic British -> American rule: a pattern over a whole word and its replacement."""

    pattern: re.Pattern[str]
    replacement: str
    example: tuple[str, str]  # (british, american): the rule's own check

    def apply(self, word: str) -> str:
        return self.pattern.sub(self.replacement, word)


@functools.cache
def _table() -> tuple[tuple[SpellingRule, ...], dict[str, str]]:
    rules: list[SpellingRule] = []
    words: dict[str, str] = {}
    text = resources.files("negvocab").joinpath("resources/spelling.tsv").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, british, american_, *rest = line.split("\t")
        if kind == "rule":
            example = tuple(rest[0].split()) if rest else ("", "")
            rules.append(SpellingRule(re.compile(british), american_, (example[0], example[1])))
        else:
            words[british] = american_
    return tuple(rules), words


def spelling_rules() -> tuple[SpellingRule, ...]:
    """The systematic rules of the table, in the order they are applied."""
    return _table()[0]


def spelling_words() -> dict[str, str]:
    """The whole-word pairs of the table (British -> American)."""
    return dict(_table()[1])


@functools.lru_cache(maxsize=200_000)
def american_word(word: str) -> str:
    """``word`` (lowercase ASCII) in American spelling; unchanged if no rule or pair applies, or
    if the rewrite would be another WordNet word of a different meaning.

    >>> american_word("centres"), american_word("sulphur"), american_word("acre")
    ('centers', 'sulfur', 'acre')
    """
    words = _table()[1]
    for ending in _WORD_ENDINGS:
        stem = word[: len(word) - len(ending)] if ending else word
        if (not ending or word.endswith(ending)) and stem in words:
            return words[stem] + ending
    spelled = word
    for rule in _table()[0]:
        spelled = rule.apply(spelled)
    if spelled != word and _different_words(word, spelled):
        return word
    return spelled


def american(key: str) -> str:
    """A normalised key (lowercase words, single spaces) with every word in American spelling."""
    return " ".join(american_word(w) for w in key.split())


def _different_words(a: str, b: str) -> bool:
    """Whether WordNet knows both words and gives them no sense in common."""
    wn = load_wordnet()
    senses_a, senses_b = set(wn.synsets(a)), set(wn.synsets(b))
    return bool(senses_a) and bool(senses_b) and not senses_a & senses_b
