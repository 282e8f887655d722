"""Synonym filtering: keep ID class names and their WordNet synonyms out of negative vocabularies.

docs/methods.md#synonym-filtering (paper, supplement F): a candidate negative is removed when it matches an
ImageNet-1k clean name or a lemma name of an ID class's WordNet 3.0 synset, after normalising
case, underscores/hyphens/spaces, punctuation, leading articles and plural forms.

Matching is on whole labels, never on shared words: ``weasel`` (a class) is removed, ``tayra``
(a different mustelid) stays, and ``black-footed cat`` stays although "cat" is in many class
names. The forms are the clean names, the WordNet synonyms and every part of a composite clean
name (open_clip writes some classes "A / B" or "A (B)": "cardboard box / carton", "cherimoya
(custard apple)"; source ``composite-part``). Rules, tried in order:

- ``exact``: the label is a form as written (underscores read as spaces);
- ``normalised``: equal after :func:`normalise` (case folded, accents stripped, apostrophes and
  periods dropped, other punctuation/hyphens/underscores read as spaces, a leading "a"/"an"/"the"
  dropped), or equal with the spaces removed too ("sun glasses" = "sunglasses");
- ``plural``: equal after replacing the last word (or the whole phrase) by its WordNet base form
  (nltk's ``morphy``): "tenches" -> "tench", "geese" -> "goose". A plural that is itself a WordNet
  noun ("glasses", "shades") is left as it is, so it is not confused with its singular;
- ``spelling``: equal after British spellings are read as American ones, word by word, in the
  label and in the forms (:mod:`negvocab.labels.spelling`: rules and pairs as data), then as a
  plural ("african gray parrot" = "African grey parrot", "entertainment centres" = "entertainment
  center", "sulfur-crested cockatoos" = "sulphur-crested cockatoo");
- ``singular``: the singular of a lemma WordNet lists only in the plural ("baluster" of
  "balusters", "swim trunk"), when WordNet has no such noun or its noun is the class or a part,
  member, hyponym or hypernym of it ("shade" of "shades" stays: another concept);
- ``head-word``: a form followed by a generic head word from its own class's WordNet hypernym
  chain ("pomeranian dog", "orca whale", "carton box"; for animals also "breed", "species"),
  unless the whole phrase is a WordNet noun of its own ("leopard cat" stays);
- ``variant``: equal once a possessive is dropped or an abbreviation written out, in the label or the
  form (:func:`negvocab.labels.variants.variant_keys`): "Harris's sparrow" = "Harris Sparrow",
  "chuck-will's-widow" = "Chuck will Widow", "potter wheel" = "potter's wheel", "St. Bernard" = "Saint Bernard";
- ``name-spelling`` (a source): the right spelling of a class name its label space's file misspells, one
  more form of the class (:func:`negvocab.labels.variants.name_spellings`: CUB-200's "Artic Tern");
- ``decorated``: any rule above after :func:`negvocab.labels.clean.clean_label` removed a
  decoration ("crane (machine)", "gray wolf gray wolf", "1. **Trout** - a fish");
- ``hyponym`` (source ``wordnet-synset``; only for a label space whose senses were chosen for it, an
  :class:`IdClasses` with ``mapped``: :func:`negvocab.labels.labelspace.map_label_space` or a
  ``name<TAB>wnid`` file): the label's first WordNet noun sense (WordNet's most frequent), or its first
  sense in the label space's domain (the lexicographer file most ID synsets share: "rainbow trout" is
  food first, a fish in ``noun.animal``), is an ID class's synset (how ``synset``) or below it on a
  hypernym chain ("myrtle warbler" when "warbler" is ID: a kind of an ID class is that class's image
  too). Below a taxon (a genus such as CUB-200's "Sayornis") lie its members: "phoebe" is removed. Also
  ``genus``: the label is an ID species' genus-level name, a direct hypernym carrying the species
  name's last word ("nutcracker" beside Clark's nutcracker; :mod:`negvocab.labels.taxa`). Tried after
  every rule above, so ImageNet-1k, not mapped, keeps exactly its removals but for the ``variant`` rule;
  the report names the chain (``via``) and each class's hypernyms (``hypernyms``).

- ``qualified`` (a mapped label space with ``qualifiers``, a class file's ``# qualifier:`` lines): a form
  behind a leading qualifier ("American tree sparrow": CUB-200's Tree Sparrow), unless the whole label is
  a WordNet noun of another sense. Tried after every rule but ``hyponym``.

Every rule records which class and which form matched (:class:`Match`).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import InputError
from negvocab.labels.clean import clean_label, is_plain
from negvocab.labels.imagenet import WNID, IdClasses, imagenet1k
from negvocab.labels.keys import ARTICLES, normalise
from negvocab.labels.plurals import NOUN_SUFFIXES as _NOUN_SUFFIXES
from negvocab.labels.plurals import irregular_bases as _irregular_bases
from negvocab.labels.plurals import irregular_plurals as _irregular_plurals
from negvocab.labels.plurals import noun_base as _noun_base
from negvocab.labels.plurals import plural_only_singulars as _plural_only_singulars
from negvocab.labels.plurals import plurals_of as _plurals_of
from negvocab.labels.plurals import regular_plurals as _regular_plurals
from negvocab.labels.spelling import american, spelling_words
from negvocab.labels.taxa import below as below_synset
from negvocab.labels.taxa import genus_names
from negvocab.labels.variants import ABBREVIATIONS, name_spellings, qualified_name, variant_keys
from negvocab.labels.wordnet import load_wordnet

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset

    from negvocab.vocab import Vocabulary

__all__ = ["ARTICLES", "Match", "SPELLING", "SynonymFilter", "american", "composite_parts", "normalise"]


@dataclass(frozen=True)
class Match:
    """Why a label is an ID label: the class it names and the rule that matched."""

    wnid: str
    name: str  # the class's clean name
    form: str  # the clean name or WordNet synonym that matched
    source: str  # "clean-name", "wordnet-synonym", "composite-part" or "name-spelling"
    how: str  # "exact", "normalised", "plural", "spelling", "singular", "head-word", "decorated", "qualified", ...
    class_index: int

    @property
    def rule(self) -> str:
        """``source/how``, e.g. ``wordnet-synonym/plural``."""
        return f"{self.source}/{self.how}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rule": self.rule}


class SynonymFilter:
    """Decides whether a label names an ID class (a clean name or a WordNet synonym of one).

    The lookup tables are built once; :meth:`split` on 100,000 labels takes a fraction of a second.

    Parameters
    ----------
    id_classes
        The ID label space; default :func:`~negvocab.labels.imagenet.imagenet1k`.
    plurals
        Also match plural forms through WordNet's ``morphy`` (loads WordNet on first use).
    hyponyms
        Also remove a label whose first noun sense is an ID class's synset or a hyponym of one (rule
        ``wordnet-synset/hyponym``); default: when the label space is ``mapped`` (its senses chosen
        for it), never for ImageNet-1k as shipped.
    """

    def __init__(
        self, id_classes: IdClasses | None = None, *, plurals: bool = True, hyponyms: bool | None = None
    ) -> None:
        self.id_classes = id_classes if id_classes is not None else imagenet1k()
        self.plurals = plurals
        self.hyponyms = self.id_classes.mapped if hyponyms is None else bool(hyponyms)
        self._below: dict[int, int] | None = None  # synset offset -> ID class below which it lies (built on first use)
        self._lexname: str | None = None  # the ID synsets' domain ("": none), found on first use
        self._exact: dict[str, Match] = {}
        self._norm: dict[str, Match] = {}
        self._joined: dict[str, Match] = {}
        self._classes_of: dict[str, set[int]] = {}  # normalised form -> every class it names
        self._variants: dict[str, Match] = {}  # a form's key without its possessive or abbreviations
        self._variant_plurals: frozenset[str] | None = None  # their plural spellings (built on first use)
        self._genus: dict[str, int] | None = None  # a genus-level name -> the ID class (mapped; built on first use)
        for source in ("clean-name", "wordnet-synonym", "composite-part", "name-spelling"):
            for i, wnid in enumerate(self.id_classes.wnids):
                name = self.id_classes.names[i]
                if source == "clean-name":
                    forms: tuple[str, ...] = (name,)
                elif source == "wordnet-synonym":
                    forms = self.id_classes.synonyms[i]
                elif source == "name-spelling":
                    forms = name_spellings(name)
                else:
                    forms = composite_parts(name)
                for form in forms:
                    match = Match(wnid, name, form, source, "exact", i)
                    for written in (form, form.replace(" ", "_")):
                        self._exact.setdefault(written, match)
                    key = normalise(form)
                    if key:
                        self._norm.setdefault(key, match)
                        self._joined.setdefault(key.replace(" ", ""), match)
                        self._classes_of.setdefault(key, set()).add(i)
                    for variant in variant_keys(form):  # "potter wheel", "saint bernard"
                        self._variants.setdefault(variant, match)
        # every form in American spelling: a label in either spelling, singular or plural, spaced,
        # hyphenated or joined, meets its class here (the ``spelling`` rule)
        self._spelled: dict[str, Match] = {}
        for key, match in self._norm.items():
            self._spelled.setdefault(american(key), match)
        self._spelled_joined = {k.replace(" ", ""): m for k, m in self._spelled.items()}
        self._spelled_plural_keys: frozenset[str] | None = None
        self._plural_keys: frozenset[str] | None = None  # built on first use (needs WordNet)
        self._singulars: dict[str, Match] | None = None  # built on first use (needs WordNet)
        self._heads: list[frozenset[str]] | None = None  # per class, built on first use (needs WordNet)
        self._head_words: frozenset[str] | None = None  # built on first use (needs WordNet)

    def __repr__(self) -> str:
        return f"SynonymFilter({self.id_classes.dataset}, {len(self.id_classes)} classes, {len(self._norm)} forms)"

    def explain(self, label: str) -> Match | None:
        """The class ``label`` names and the rule that matched, or ``None`` if it is not an ID label."""
        if not isinstance(label, str):
            raise InputError(f"the synonym filter takes a label string, got {type(label).__name__} {label!r:.40}")
        match = self._explain_forms(label)
        if match is None and self.id_classes.mapped and self.id_classes.qualifiers:
            match = self._qualified_match(label)
        if match is None and self.hyponyms:
            return self._hyponym_match(label)
        return match

    def _qualified_match(self, label: str) -> Match | None:
        """Rule ``qualified``: a class's form behind a leading qualifier of the label space ("American tree
        sparrow": CUB-200's Tree Sparrow), unless the whole label is a WordNet noun that is not the class."""
        rest = qualified_name(normalise(label), self.id_classes.qualifiers)
        match = None if rest is None else self._explain_forms(rest)
        if match is None or _other_wordnet_noun(normalise(label), match.wnid):
            return None
        return _with_how(match, "qualified")

    def _explain_forms(self, label: str) -> Match | None:
        """Every rule but ``hyponym``: the label against the ID classes' names and synonyms."""
        match = self._exact.get(label)
        if match is not None:
            return match
        key = normalise(label)
        match = self._explain_key(key)
        if match is not None:
            return match
        match = self._variant_match(label, key)
        if match is not None:
            return match
        if is_plain(label):
            return None
        cleaned = clean_label(label)
        if cleaned and cleaned != label.strip().lower():
            match = self._exact.get(cleaned) or self._explain_key(normalise(cleaned))
            if match is not None:
                return _with_how(self._hinted(match, label), "decorated")
        return None

    def _variant_match(self, label: str, key: str) -> Match | None:
        """Rule ``variant``: the label and a form equal once the possessive is dropped or an abbreviation
        written out on either side ("Harris's sparrow" = "Harris Sparrow", "potter wheel" = "potter's wheel")."""
        keys = (key, *variant_keys(label)) if "'" in label or "\u2019" in label or "." in label else (key,)
        if self.plurals and self._variant_plurals is None:  # plural spellings of the variant keys: a set lookup
            self._variant_plurals = _plurals_of(self._variants)  # spares other labels WordNet's morphy
        gate = self._variant_plurals or frozenset()
        singular = [
            f"{h} {b}".strip()
            for k in keys
            if k in gate
            for h, _, w in [k.rpartition(" ")]
            if (b := _noun_base(w)) and b != w
        ]
        match = next((m for k in (*keys, *singular) if (m := self._variants.get(k)) is not None), None)
        if match is None:
            match = next((m for k in keys[1:] if (m := self._explain_key(k)) is not None), None)
        if match is None and key.partition(" ")[0] in ABBREVIATIONS:
            match = self._explain_key(" ".join(ABBREVIATIONS.get(w, w) for w in key.split()))
        return _with_how(match, "variant") if match is not None else None

    def _hinted(self, match: Match, label: str) -> Match:
        """Of the classes a decorated name names, the one its note points at: a note word on that
        class's hypernym chain, or a category word ("machine") off the first class's chain, when
        one other class is left ("crane (machine)" is the machine, not the bird)."""
        classes = self._classes_of.get(normalise(match.form), set())
        notes = set(normalise(" ".join(re.findall(r"\(([^)]*)\)", label))).split())
        if len(classes) < 2 or not notes or not self.plurals:
            return match
        heads = self._class_heads()
        if notes & heads[match.class_index] or not notes & self._head_gate():
            return match  # the note agrees with the first class, or names no category
        others = sorted(classes - {match.class_index})
        agreeing = [i for i in others if notes & heads[i]]
        pick = (
            agreeing[0] if agreeing else others[0] if len(others) == 1 else None
        )  # a category word against the first class
        if pick is None:
            return match
        return Match(
            self.id_classes.wnids[pick], self.id_classes.names[pick], match.form, match.source, match.how, pick
        )

    def _explain_key(self, key: str) -> Match | None:
        """Every rule but ``exact`` and ``decorated`` on a normalised key."""
        if not key:
            return None
        match = self._norm.get(key) or self._joined.get(key.replace(" ", ""))
        if match is not None:
            return _with_how(match, "normalised")
        if self.plurals:
            match = self._plural_match(key)
            if match is not None:
                return _with_how(match, "plural")
        words = key.split()
        spelled = american(key)
        match = self._spelled.get(spelled) or self._spelled_joined.get(spelled.replace(" ", ""))
        if match is None and self.plurals:
            match = self._plural_match(spelled, spelled=True)
        if match is not None:
            return _with_how(match, "spelling")
        if not self.plurals:
            return None
        match = self._singular_forms().get(key)
        if match is not None:
            return _with_how(match, "singular")
        if len(words) > 1 and words[-1] in self._head_gate():
            return self._head_word_match(key)
        return None

    def _plural_match(self, key: str, *, spelled: bool = False) -> Match | None:
        """A class form ``key`` is the plural of (``spelled``: among the forms in American spelling)."""
        norm, joined = (self._spelled, self._spelled_joined) if spelled else (self._norm, self._joined)
        for spelling in dict.fromkeys((key, key.replace(" ", ""))):  # "cell phones" as "cellphones" too
            for base in self._base_forms(spelling, spelled=spelled):
                match = norm.get(base) or joined.get(base.replace(" ", ""))
                if match is not None:
                    return match
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
        if not callable(getattr(vocab, "subset", None)):  # a Vocabulary (labels sit below vocabularies: no import)
            raise InputError(
                "SynonymFilter.apply takes a Vocabulary, got "
                f"{type(vocab).__name__}; for a list of labels use split(labels)"
            )
        kept, removed = self.split(vocab.labels)
        if not kept:
            raise InputError(f"the synonym filter removed all {len(vocab)} labels: every label names an ID class")
        return vocab.subset(kept, settings={"synonym_filter": self.report(kept, removed)})

    def report(self, kept: Iterable[str], removed: dict[str, Match]) -> dict[str, Any]:
        """The record every builder stores as ``settings["synonym_filter"]`` after :meth:`split`."""
        out: dict[str, Any] = {
            "id_classes": self.id_classes.dataset,
            "removed_count": len(removed),
            "kept_count": sum(1 for _ in kept),
            "removed": {
                lab: {"wnid": m.wnid, "name": m.name, "form": m.form, "rule": m.rule} for lab, m in removed.items()
            },
        }
        if self.hyponyms:  # the rule and the context it used; ImageNet-1k's report (not mapped) is as it was
            for lab, m in removed.items():
                if m.source == "wordnet-synset" and m.how != "genus":
                    out["removed"][lab]["via"] = _chain_to(m.form, m.wnid)
            out["hyponyms"] = True
            out["hypernyms"] = {
                w: list(_hypernym_names(w)) for w in self.id_classes.wnids if WNID.match(w) and _synset(w) is not None
            }
        return out

    # -- hyponyms of the ID classes (mapped label spaces) ------------------------------------------
    def _hyponym_match(self, label: str) -> Match | None:
        """The ID class whose synset is the label's first noun sense, or its first sense in the label
        space's domain, or lies above one of them (rule ``hyponym``)."""
        key = normalise(label)
        genus = self._genus_index()
        g = genus.get(key, genus.get((_noun_base(key.replace(" ", "_")) or "").replace("_", " "), -1))
        if g >= 0:  # "nutcracker" beside Clark's nutcracker: the species' genus-level name
            return Match(self.id_classes.wnids[g], self.id_classes.names[g], key, "wordnet-synset", "genus", g)
        senses = _noun_senses(" ".join(label.casefold().replace("_", " ").split())) or _noun_senses(key)
        if not senses:
            return None
        below = self._hyponym_index()
        domain = self._domain()
        in_domain = next((s for s in senses if s.lexname() == domain), None)
        for sense in dict.fromkeys(x for x in (senses[0], in_domain) if x is not None):
            i = below.get(sense.offset())
            if i is not None:
                how = "synset" if f"n{sense.offset():08d}" == self.id_classes.wnids[i] else "hyponym"
                return Match(self.id_classes.wnids[i], self.id_classes.names[i], sense.name(), "wordnet-synset", how, i)
        return None

    def _genus_index(self) -> dict[str, int]:
        """Every ID species' genus-level names (:func:`negvocab.labels.taxa.genus_names`) -> that class."""
        if self._genus is None:
            self._genus = {}
            for i, wnid in enumerate(self.id_classes.wnids):
                synset = _synset(wnid) if WNID.match(wnid) else None
                for name in genus_names(synset) if synset is not None else ():
                    self._genus.setdefault(normalise(name), i)
        return self._genus

    def _domain(self) -> str | None:
        """The lexicographer file most ID class synsets share (two or more, and a third of them), else None:
        WordNet lists the food sense of many fish first ("rainbow trout"), the animal is in the domain."""
        if self._lexname is None:
            counts = Counter(s.lexname() for w in self.id_classes.wnids if WNID.match(w) and (s := _synset(w)))
            top = counts.most_common(1)
            ok = top and top[0][1] >= 2 and 3 * top[0][1] >= sum(counts.values())
            self._lexname = top[0][0] if ok else ""
        return self._lexname or None

    def _hyponym_index(self) -> dict[int, int]:
        """Every synset offset at or below an ID class's synset (hyponyms, instances and a taxon's members)
        -> that class (the first class in order, when a synset lies below two)."""
        if self._below is None:
            below: dict[int, int] = {}
            for i, wnid in enumerate(self.id_classes.wnids):
                top = _synset(wnid) if WNID.match(wnid) else None
                if top is None:
                    continue
                for s in below_synset(top):  # members of a genus too: the phoebe of "Sayornis"
                    below.setdefault(s.offset(), i)
            self._below = below
        return self._below

    # -- head words and plural-only lemmas (WordNet) -----------------------------------------------
    def _head_word_match(self, key: str) -> Match | None:
        """``key`` = an ID form + a head word from that class's own hypernym chain ("orca whale")."""
        words = key.split()
        heads = self._class_heads()
        for k in range(1, min(3, len(words) - 1) + 1):
            stem, head = " ".join(words[:-k]), " ".join(words[-k:])
            head_forms = {head, (_noun_base(head.replace(" ", "_")) or "").replace("_", " ")}
            stem_key = american(stem)
            classes = self._classes_of.get(stem) or self._classes_of.get(stem_key) or set()
            for i in sorted(classes):
                if heads[i] & head_forms and not _other_wordnet_noun(key, self.id_classes.wnids[i]):
                    base = self._norm.get(stem) or self._spelled.get(stem_key)
                    if base is not None:
                        return Match(
                            self.id_classes.wnids[i],
                            self.id_classes.names[i],
                            base.form if base.class_index == i else stem,
                            base.source if base.class_index == i else "wordnet-synonym",
                            "head-word",
                            i,
                        )
        return None

    def _head_gate(self) -> frozenset[str]:
        """Every last word of a head word, singular or plural: a set lookup spares other labels WordNet."""
        if self._head_words is None:
            last = {h.rpartition(" ")[2] for h in frozenset().union(*self._class_heads())}
            irregular = _irregular_plurals()
            self._head_words = frozenset(
                last | {p for w in last for p in (*_regular_plurals(w), *irregular.get(w, ()))}
            )
        return self._head_words

    def _class_heads(self) -> list[frozenset[str]]:
        """Per class, the head words a model may append: every lemma (and its last word) of every
        synset on the class's WordNet hypernym chain, plus "breed"/"species"/... for organisms."""
        if self._heads is None:
            self._heads = [_heads_of(w) if WNID.match(w) else frozenset() for w in self.id_classes.wnids]
        return self._heads

    def _singular_forms(self) -> dict[str, Match]:
        """Singular key -> match, for lemmas WordNet lists only in the plural (see the module docstring)."""
        if self._singulars is None:
            out: dict[str, Match] = {}
            for key, match in self._norm.items():
                if WNID.match(match.wnid):
                    for singular in _plural_only_singulars(key, match.wnid):
                        if singular not in self._norm:
                            out.setdefault(singular, match)
            self._singulars = out
        return self._singulars

    # -- plural forms ----------------------------------------------------------------------------
    def _base_forms(self, key: str, *, spelled: bool = False) -> list[str]:
        """Singular readings of ``key`` that differ from it (last word, then whole phrase).

        Only keys that could be a plural of a class form (:meth:`_plural_gate`) reach WordNet, so
        filtering large vocabularies costs a set lookup per label.
        """
        if key not in self._plural_gate(spelled=spelled):
            return []
        head, _, last = key.rpartition(" ")
        out: list[str] = []
        known = _noun_base(last)
        # a word WordNet lacks, or the last word of a phrase that is a plural noun of its own
        # ("airplane wings": "wings" is a noun, the phrase is the plural of "airplane wing")
        regular = (
            tuple(last[: -len(a)] + b for a, b in _NOUN_SUFFIXES if last.endswith(a))
            if not known or (head and known == last)
            else ()
        )
        bases: list[str | None] = [known, *regular, *_irregular_bases().get(last, ())]
        for base in bases:
            if not base or base == last:
                continue
            form = f"{head} {base}" if head else base
            if form not in out:
                out.append(form)
        out.extend(b for b in _irregular_bases().get(key, ()) if b != key and b not in out)
        if head:
            phrase = _noun_base(key.replace(" ", "_"))
            if phrase:
                phrase = phrase.replace("_", " ")
                if phrase != key and phrase not in out:
                    out.append(phrase)
        return out

    def _plural_gate(self, *, spelled: bool = False) -> frozenset[str]:
        """Every plural spelling of every class form that nltk's ``morphy`` could map back to it:
        the regular noun suffix rules inverted, and WordNet's irregular plurals (``noun.exc``);
        ``spelled``: of the forms in American spelling, each plural read through :func:`american` too."""
        if spelled:
            if self._spelled_plural_keys is None:
                self._spelled_plural_keys = frozenset(american(k) for k in _plurals_of(self._spelled))
            return self._spelled_plural_keys
        if self._plural_keys is None:
            self._plural_keys = _plurals_of(self._norm)
        return self._plural_keys


#: British spelling -> American whole-word pairs (kept for older imports; the rules and pairs are
#: the data of negvocab/resources/spelling.tsv, read by :mod:`negvocab.labels.spelling`)
SPELLING = spelling_words()

#: head words any animal or plant class may take ("pomeranian breed"), beside its hypernym chain
_ORGANISM_HEADS = frozenset({"breed", "species", "variety", "animal", "plant"})


def composite_parts(name: str) -> tuple[str, ...]:
    """The parts of an open_clip composite class name: "baluster / handrail" -> both,
    "military hat (bearskin or shako)" -> "military hat", "bearskin", "shako"."""
    if "/" not in name and "(" not in name:
        return ()
    parts: list[str] = []
    for piece in re.split(r"\s*/\s*", name):
        outer = re.sub(r"\s*\([^)]*\)", "", piece).strip()
        inner = re.findall(r"\(([^)]*)\)", piece)
        parts.append(outer)
        for group in inner:
            parts.extend(re.split(r"\s+or\s+|\s*,\s*", group.strip()))
    return tuple(p for p in dict.fromkeys(parts) if p and p != name)


@functools.cache
def _heads_of(wnid: str) -> frozenset[str]:
    wn = load_wordnet()
    synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
    out: set[str] = set()
    for hyper in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()):
        for lemma in hyper.lemma_names():
            key = normalise(lemma)
            out.add(key)
            out.add(key.rpartition(" ")[2])
    if synset.lexname() in ("noun.animal", "noun.plant"):
        out |= _ORGANISM_HEADS
    return frozenset(out - {""})


def _other_wordnet_noun(key: str, wnid: str) -> bool:
    """Whether ``key`` is a WordNet noun of its own, none of whose senses is the class ``wnid`` (any WordNet
    noun, for a class without a synset)."""
    wn = load_wordnet()
    words = key.split()
    spellings = {"_".join(words), "".join(words)}  # WordNet writes "two-piece_suit": try each gap as a hyphen too
    spellings |= {"_".join(words[:i]) + "-" + "_".join(words[i:]) for i in range(1, len(words))}
    synsets = {s for spelled in spellings for s in wn.synsets(spelled, "n")}
    offset = int(wnid[1:]) if WNID.match(wnid) else -1
    return bool(synsets) and all(s.offset() != offset for s in synsets)


@functools.cache
def _synset(wnid: str) -> Synset | None:
    """The WordNet 3.0 noun synset of a wnid, or None (not a noun offset)."""
    try:
        return load_wordnet().synset_from_pos_and_offset("n", int(wnid[1:]))
    except Exception:  # nltk: an unknown offset
        return None


@functools.lru_cache(maxsize=200_000)
def _noun_senses(key: str) -> tuple[Synset, ...]:
    """A label's WordNet noun senses in WordNet's order (the word as written, else its base form): ``key``
    is lowercased with single spaces ("audubon's warbler") or :func:`normalise`'d."""
    words = key.split()
    if not words:
        return ()
    wn = load_wordnet()
    spellings = ["_".join(words), "".join(words)]
    spellings += ["_".join(words[:i]) + "-" + "_".join(words[i:]) for i in range(1, len(words))]
    for spelled in dict.fromkeys(spellings):
        senses = wn.synsets(spelled, "n")
        if senses:
            return tuple(senses)
    return ()


def _hypernym_names(wnid: str) -> tuple[str, ...]:
    """The synset names on a class's first hypernym path, nearest first (the report's context)."""
    synset = _synset(wnid)
    paths = synset.hypernym_paths() if synset is not None else []
    return tuple(s.name() for s in paths[0][::-1][1:]) if paths else ()


def _chain_to(synset_name: str, wnid: str) -> list[str]:
    """The synset names from ``synset_name`` up to the class ``wnid`` (a shortest hypernym path)."""
    start = load_wordnet().synset(synset_name)
    top = _synset(wnid)
    paths = [p[::-1] for p in start.hypernym_paths() if top in p]
    if not paths:
        return [synset_name]
    path = min(paths, key=len)
    return [s.name() for s in path[: path.index(top) + 1]]


def _with_how(match: Match, how: str) -> Match:
    return Match(match.wnid, match.name, match.form, match.source, how, match.class_index)
