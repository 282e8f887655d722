"""Synonym filtering: keep ID class names and their WordNet synonyms out of negative vocabularies.

docs/methods.md#synonym-filtering (paper, supplement F): a candidate negative is removed when it matches an
ImageNet-1k clean name or a lemma name of an ID class's WordNet 3.0 synset, after normalising
case, underscores/hyphens/spaces, punctuation, leading articles and plural forms.

Matching is on whole labels, never on shared words: ``weasel`` (a class) is removed, ``tayra``
(a different mustelid) stays, and ``black-footed cat`` stays although "cat" is in many class
names. Three rules, tried in order, for the class forms in class order (clean names first):

- ``exact``: the label is a clean name or a synonym as written (underscores read as spaces);
- ``normalised``: equal after :func:`normalise` (case folded, accents stripped, apostrophes and
  periods dropped, other punctuation/hyphens/underscores read as spaces, a leading "a"/"an"/"the"
  dropped), or equal with the spaces removed too ("sun glasses" = "sunglasses");
- ``plural``: equal after replacing the last word (or the whole phrase) by its WordNet base form
  (nltk's ``morphy``): "tenches" -> "tench", "geese" -> "goose". A plural that is itself a WordNet
  noun ("glasses", "shades") is left as it is, so it is not confused with its singular.

Every rule records which class and which form matched (:class:`Match`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from negvocab.errors import InputError
from negvocab.labels.imagenet import IdClasses, imagenet1k

if TYPE_CHECKING:
    from negvocab.vocab import Vocabulary

ARTICLES = frozenset({"a", "an", "the"})
_DROP = re.compile(r"['\u2019\u2018`\u00b4.]")  # apostrophes and periods join: jack-o'-lantern, St. Bernard
_SPACE = re.compile(r"[^0-9a-z]+")  # everything else separates words


def normalise(label: str) -> str:
    """The matching key of a label: lowercase ASCII words joined by single spaces.

    >>> normalise("The Jack-o'-Lantern")
    'jack o lantern'
    >>> normalise("toilet_tissue")
    'toilet tissue'
    """
    text = label.casefold()
    if not text.isascii():
        text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    words = _SPACE.sub(" ", _DROP.sub("", text)).split()
    if len(words) > 1 and words[0] in ARTICLES and text.lstrip()[len(words[0]) : len(words[0]) + 1].isspace():
        words = words[1:]  # "the tench", "a goldfish"; not "A-line" (no space after the letter)
    return " ".join(words)


@dataclass(frozen=True)
class Match:
    """Why a label is an ID label: the class it names and the rule that matched."""

    wnid: str
    name: str  # the class's clean name
    form: str  # the clean name or WordNet synonym that matched
    source: str  # "clean-name" or "wordnet-synonym"
    how: str  # "exact", "normalised" or "plural"
    class_index: int

    @property
    def rule(self) -> str:
        """``source/how``, e.g. ``wordnet-synonym/plural``."""
        return f"{self.source}/{self.how}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rule": self.rule}


class SynonymFilter:
    """Decides whether a label names an ID class (a clean name or a WordNet synonym of one).

    Parameters
    ----------
    id_classes
        The ID label space; default :func:`~negvocab.labels.imagenet.imagenet1k`.
    plurals
        Also match plural forms through WordNet's ``morphy`` (loads WordNet on first use).

    The lookup tables are built once; :meth:`split` on 100,000 labels takes a fraction of a second.
    """

    def __init__(self, id_classes: IdClasses | None = None, *, plurals: bool = True) -> None:
        self.id_classes = id_classes if id_classes is not None else imagenet1k()
        self.plurals = plurals
        self._exact: dict[str, Match] = {}
        self._norm: dict[str, Match] = {}
        self._joined: dict[str, Match] = {}
        for source in ("clean-name", "wordnet-synonym"):
            for i, wnid in enumerate(self.id_classes.wnids):
                name = self.id_classes.names[i]
                forms = (name,) if source == "clean-name" else self.id_classes.synonyms[i]
                for form in forms:
                    match = Match(wnid, name, form, source, "exact", i)
                    for written in (form, form.replace(" ", "_")):
                        self._exact.setdefault(written, match)
                    key = normalise(form)
                    if key:
                        self._norm.setdefault(key, match)
                        self._joined.setdefault(key.replace(" ", ""), match)
        self._plural_keys: frozenset[str] | None = None  # built on first use (needs WordNet)

    def __repr__(self) -> str:
        return f"SynonymFilter({self.id_classes.dataset}, {len(self.id_classes)} classes, {len(self._norm)} forms)"

    def explain(self, label: str) -> Match | None:
        """The class ``label`` names and the rule that matched, or ``None`` if it is not an ID label."""
        match = self._exact.get(label)
        if match is not None:
            return match
        key = normalise(label)
        if not key:
            return None
        match = self._norm.get(key) or self._joined.get(key.replace(" ", ""))
        if match is not None:
            return _with_how(match, "normalised")
        if self.plurals:
            for spelling in dict.fromkeys((key, key.replace(" ", ""))):  # "cell phones" as "cellphones" too
                for base in self._base_forms(spelling):
                    match = self._norm.get(base) or self._joined.get(base.replace(" ", ""))
                    if match is not None:
                        return _with_how(match, "plural")
        return None

    def is_id(self, label: str) -> bool:
        """Whether ``label`` is an ID class name or a synonym of one (see :meth:`explain`)."""
        return self.explain(label) is not None

    def split(self, labels: Iterable[str]) -> tuple[list[str], dict[str, Match]]:
        """Partition ``labels`` (order kept) into the kept ones and ``{removed label: Match}``."""
        kept: list[str] = []
        removed: dict[str, Match] = {}
        for label in labels:
            match = self.explain(label)
            if match is None:
                kept.append(label)
            else:
                removed[label] = match
        return kept, removed

    def apply(self, vocab: Vocabulary) -> Vocabulary:
        """``vocab`` without its ID labels; the settings record what was removed and why.

        ``settings["synonym_filter"] = {"id_classes", "removed_count", "kept_count", "removed":
        {label: {"wnid", "name", "form", "rule"}}}``. Raises :class:`InputError` if no label is left.
        """
        kept, removed = self.split(vocab.labels)
        if not kept:
            raise InputError(f"the synonym filter removed all {len(vocab)} labels: every label names an ID class")
        return vocab.subset(kept, settings={"synonym_filter": self.report(kept, removed)})

    def report(self, kept: Iterable[str], removed: dict[str, Match]) -> dict[str, Any]:
        """The record every builder stores as ``settings["synonym_filter"]`` after :meth:`split`."""
        return {
            "id_classes": self.id_classes.dataset,
            "removed_count": len(removed),
            "kept_count": sum(1 for _ in kept),
            "removed": {lab: {"wnid": m.wnid, "name": m.name, "form": m.form, "rule": m.rule} for lab, m in removed.items()},
        }

    # -- plural forms ----------------------------------------------------------------------------
    def _base_forms(self, key: str) -> list[str]:
        """Singular readings of ``key`` that differ from it (last word, then whole phrase).

        Only keys that could be a plural of a class form (:meth:`_plural_gate`) reach WordNet, so
        filtering large vocabularies costs a set lookup per label.
        """
        if key not in self._plural_gate():
            return []
        head, _, last = key.rpartition(" ")
        out = []
        for base in (_noun_base(last), *_irregular_bases().get(last, ())):
            spelled = f"{head} {base}" if head else base
            if base and base != last and spelled not in out:
                out.append(spelled)
        out.extend(b for b in _irregular_bases().get(key, ()) if b != key and b not in out)
        if head:
            phrase = _noun_base(key.replace(" ", "_"))
            if phrase:
                phrase = phrase.replace("_", " ")
                if phrase != key and phrase not in out:
                    out.append(phrase)
        return out

    def _plural_gate(self) -> frozenset[str]:
        """Every plural spelling of every class form that nltk's ``morphy`` could map back to it:
        the regular noun suffix rules inverted, and WordNet's irregular plurals (``noun.exc``)."""
        if self._plural_keys is None:
            irregular = _irregular_plurals()
            keys: set[str] = set()
            for key in self._norm:
                head, _, last = key.rpartition(" ")
                prefix = f"{head} " if head else ""
                keys.update(prefix + p for p in (*_regular_plurals(last), *irregular.get(last, ())))
                keys.update(irregular.get(key, ()))
            self._plural_keys = frozenset(keys)
        return self._plural_keys


def _regular_plurals(word: str) -> list[str]:
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
    from negvocab.labels.wordnet import load_wordnet

    pairs = []
    with load_wordnet().open("noun.exc") as fh:
        for line in fh:
            inflected, *bases = line.split()
            pairs.extend((normalise(inflected), normalise(base)) for base in bases)
    return tuple(pairs)


@functools.cache
def _irregular_plurals() -> dict[str, tuple[str, ...]]:
    """Base form -> its irregular plurals."""
    out: dict[str, list[str]] = {}
    for inflected, base in _noun_exceptions():
        out.setdefault(base, []).append(inflected)
    return {base: tuple(forms) for base, forms in out.items()}


@functools.cache
def _irregular_bases() -> dict[str, tuple[str, ...]]:
    """Irregular plural -> every base form it has (``morphy`` gives only one, and none for a
    plural that is also a word of its own, such as "oxen")."""
    out: dict[str, list[str]] = {}
    for inflected, base in _noun_exceptions():
        out.setdefault(inflected, []).append(base)
    return {inflected: tuple(bases) for inflected, bases in out.items()}


def _with_how(match: Match, how: str) -> Match:
    return Match(match.wnid, match.name, match.form, match.source, how, match.class_index)


@functools.lru_cache(maxsize=200_000)
def _noun_base(word: str) -> str | None:
    """WordNet's base noun form of ``word`` (nltk ``morphy``), or ``None`` if WordNet has none."""
    from negvocab.labels.wordnet import load_wordnet

    return load_wordnet().morphy(word, "n")
