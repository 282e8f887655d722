"""Any ID label space through WordNet: class names mapped to WordNet 3.0 noun synsets, with a report.

ImageNet-1k's classes carry their wnids; a CUB, Cars, Food-101 or CIFAR class file carries names only,
so the synonym filter could match those names and their plurals but had no synonyms, no hypernym
context and no hyponyms to go on. :func:`map_label_space` gives each class name a noun synset where
one resolves, by these rules, tried in order on the name (docs/methods.md#any-id-label-space):

- ``pinned``: the class already has a wnid (an ImageNet-1k class, or a ``name<TAB>wnid`` line);
- ``exact``: a WordNet noun as written, spaces, underscores and hyphens read as WordNet's
  ``_`` or ``-`` in every gap ("Black_footed_Albatross" -> ``black-footed_albatross.n.01``), or with
  the spaces removed ("sun glasses");
- ``plural``: the same after WordNet's base form (nltk ``morphy``: "baby back ribs" is not a noun,
  "ribs" -> "rib" is only tried on the whole phrase);
- ``spelling``: the same after British spellings read as American (:func:`negvocab.labels.spelling.american`);
- ``possessive``: the same with one word before the last made possessive (an eponym written without
  it: CUB's "Clark Nutcracker" -> ``clark's_nutcracker.n.01``, "Chuck will Widow" -> ``chuck-will's-widow``);
- ``head-word``: a name whose last word is a generic head on the rest's own hypernym chain
  ("maple tree" -> ``maple.n.02``, a tree; "aquarium fish" stays unresolved: an aquarium is no fish);
- ``hint-word``: with hints, a name none of whose senses lies under one, followed by a hint's word
  (Pets' "Persian" under "cat": ``persian_cat.n.01``, not the people of Iran).

A name with several noun senses picks one by a stated rule, recorded per class as ``choice``:
``hint X`` (the first sense, in WordNet's order, with the hint synset X on its hypernym chain: "bird"
for CUB, "car" for Cars, "food" for Food-101, "dog"/"cat" for Pets; where hints are given, a name
none of whose senses lies under one is unresolved: Pets' "Bengal" is in WordNet only as a region; a
taxon, such as CUB's genus "Sayornis", lies under a hint when its members do). With hints, a name with two
organisms under them is unresolved (``ambiguous``): CUB's "Tree Sparrow" is the American species,
WordNet's first sense the Eurasian one, and no rule tells which; the shipped class files pin such names.
``only sense``; ``first sense``
(WordNet's most frequent) when it lies in the label space's domain (the lexicographer file most of its
single-sense classes share, e.g. ``noun.animal``) or there is no domain; else ``domain L``: of the senses
in that file L, the one sharing the most hypernyms with the single-sense classes (summed over them; ties:
WordNet's order): CIFAR-100's "ray" is the fish, not a beam of light, and its "seal" the animal, not
sealing wax. No rule is right for every name ("baby" there becomes a young mammal): pin a sense with a
``name<TAB>wnid`` line (``negvocab map-classes`` writes the mapping in that form, to be corrected).
A name that resolves by none of the rules keeps its ``custom`` id and is reported, never dropped;
its ``choice`` says why (:data:`NOT_IN_WORDNET`, no sense under the hints, ambiguous, synset taken).
Hints are given as arguments or in a class file's header (``# hint: bird``, one or more, comma-separated),
and so are pins (``pins=``, or ``# pin: n01536334 Tree Sparrow`` header lines: read only when mapping, so
scoring reads the file as plain names).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.imagenet import WNID, IdClasses
from negvocab.labels.spelling import american
from negvocab.labels.synonyms import normalise
from negvocab.labels.taxa import ORGANISMS, is_taxon
from negvocab.labels.variants import possessive_spellings
from negvocab.labels.wordnet import load_wordnet

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset

__all__ = [
    "ClassSense",
    "LabelSpaceMap",
    "class_file_hints",
    "class_file_pins",
    "class_file_qualifiers",
    "map_label_space",
    "resolve_hint",
]

#: how a class name reached its synset, in the order the rules are tried
RULES = ("pinned", "exact", "plural", "spelling", "possessive", "head-word", "hint-word")
#: why a class name maps to no synset (a :class:`ClassSense`'s ``choice`` when unresolved)
NOT_IN_WORDNET = "no WordNet 3.0 noun by any rule (as written, plural, spelling, possessive, head word)"
HINT_PREFIX = "hint:"
PIN_PREFIX = "pin:"
QUALIFIER_PREFIX = "qualifier:"


@dataclass(frozen=True)
class ClassSense:
    """One class of a mapped label space: its WordNet noun synset (or none) and how it was chosen.

    Parameters
    ----------
    name : str
        The class name.
    wnid : str or None
        ``"n"`` + 8-digit offset; None: unresolved.
    synset : str or None
        nltk's name, e.g. ``"warbler.n.02"``.
    rule : str
        One of ``RULES``, or ``"unresolved"``.
    choice : str
        ``"only sense"``, ``"first sense"``, ``"hint bird.n.01"``, ``"domain noun.animal"``, ``"pinned"`` or ``""``.
    n_senses : int
        Noun senses the matched WordNet word has (0: unresolved or pinned).
    hypernyms : tuple of str, default ()
        The synset's hypernym chain, nearest first (its first path), head words.
    """

    name: str
    wnid: str | None  # "n" + 8-digit offset; None: unresolved
    synset: str | None  # nltk's name, e.g. "warbler.n.02"
    rule: str  # one of RULES, or "unresolved"
    choice: str  # "only sense", "first sense", "hint bird.n.01", "domain noun.animal", "pinned" or ""
    n_senses: int  # noun senses the matched WordNet word has (0: unresolved or pinned)
    hypernyms: tuple[str, ...] = ()  # the synset's hypernym chain, nearest first (its first path), head words

    @property
    def resolved(self) -> bool:
        return self.wnid is not None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "hypernyms": list(self.hypernyms)}


@dataclass(frozen=True)
class LabelSpaceMap:
    """A label space mapped to WordNet: the :class:`IdClasses` the filter and builders take (``mapped``),
    one :class:`ClassSense` per class, and the hints given.

    Parameters
    ----------
    classes : IdClasses
        The mapped label space.
    senses : tuple of ClassSense
        One per class.
    hints : tuple of str, default ()
        The hints given.
    """

    classes: IdClasses
    senses: tuple[ClassSense, ...]
    hints: tuple[str, ...] = ()

    @property
    def unresolved(self) -> list[str]:
        """The class names no rule resolved (they keep a ``custom`` id; matched by name only)."""
        return [s.name for s in self.senses if not s.resolved]

    @property
    def n_resolved(self) -> int:
        return sum(s.resolved for s in self.senses)

    def summary(self) -> str:
        """One line: how many classes resolved, by which rule and choice, and the unresolved names."""
        rules = Counter(s.rule for s in self.senses if s.resolved)
        ambiguous = sum(s.n_senses > 1 for s in self.senses)
        line = (
            f"{self.classes.dataset}: {self.n_resolved} of {len(self.senses)} classes mapped to WordNet synsets "
            f"({', '.join(f'{r} {n}' for r, n in sorted(rules.items())) or 'none'}; {ambiguous} ambiguous"
        )
        line += f", hints {', '.join(self.hints)}" if self.hints else ""
        missing = self.unresolved
        tail = f"; {len(missing)} unresolved: {', '.join(missing[:10])}{', ...' if len(missing) > 10 else ''}"
        return line + ")" + (tail if missing else "; none unresolved")

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.classes.dataset,
            "n": len(self.senses),
            "resolved": self.n_resolved,
            "unresolved": self.unresolved,
            "hints": list(self.hints),
            "classes": [s.to_dict() for s in self.senses],
        }

    def pinned_text(self) -> str:
        """The mapping as a class file (``name<TAB>wnid``; unresolved names alone): read back by
        :func:`negvocab.labels.imagenet.read_id_classes` with every sense pinned."""
        return "".join(f"{s.name}\t{s.wnid}\n" if s.wnid else f"{s.name}\n" for s in self.senses)


def map_label_space(
    classes: IdClasses | Sequence[str],
    *,
    hints: Sequence[str] = (),
    context: bool = True,
    pins: Mapping[str, str] | None = None,
    qualifiers: Sequence[str] = (),
) -> LabelSpaceMap:
    """Map each class name to a WordNet 3.0 noun synset (rules and choices: the module docstring).

    Parameters
    ----------
    classes
        An :class:`IdClasses` (classes with a wnid keep it: rule ``pinned``) or class names.
    hints
        Hypernyms the label space lives under ("bird", "motor_vehicle", "food.n.02", "n01503061"); a
        word means every noun sense it has ("food": nutrient and solid food), a synset name or wnid that
        synset only. A name takes its first sense under a hint; a name with none is unresolved.
    context
        Let an ambiguous name without a hint sense, whose first sense lies outside the label space's
        domain, take a sense in the domain (see the module docstring); False: always its first sense.
    pins
        Class name -> wnid: the sense a class takes whatever the rules say (rule ``pinned``; a class
        file's ``# pin: WNID NAME`` header lines, :func:`class_file_pins`).
    qualifiers
        Leading words that leave a class name's meaning in this label space (a class file's
        ``# qualifier:`` lines, :func:`class_file_qualifiers`): the synonym filter reads "American tree
        sparrow" as CUB-200's Tree Sparrow.

    Returns
    -------
    LabelSpaceMap
        ``classes``: the label space with the resolved wnids, each synset's lemma names added to the
        class's synonyms, ``mapped=True``; ``senses``: what each class got and why.
    """
    space = classes if isinstance(classes, IdClasses) else IdClasses.from_names(classes)
    wn = load_wordnet()
    hint_synsets = tuple(dict.fromkeys(s for h in dict.fromkeys(hints) for s in resolve_hint(h)))
    hint_words = tuple(dict.fromkeys(_hint_word(h) for h in hints))
    given = _pinned(space, pins or {})
    found = [_senses_of(name) if not WNID.match(w) else None for w, name in zip(given, space.names, strict=True)]
    single = [f[1][0] for f in found if f is not None and len(f[1]) == 1]
    domain = _domain(single) if context else None
    out: list[ClassSense] = []
    for i, (wnid, name) in enumerate(zip(given, space.names, strict=True)):
        hit = found[i]
        if hit is None:  # a wnid given with the class
            synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
            out.append(_sense(name, synset, "pinned", "pinned", 0))
        else:
            out.append(_resolve(name, hit, (hint_synsets, hint_words), domain, single))
    wnids = [s.wnid or space.wnids[i] for i, s in enumerate(out)]
    if len(set(wnids)) < len(wnids):  # two names on one synset: the later keeps its own id
        seen: set[str] = set()
        for i, w in enumerate(wnids):
            if w in seen:
                wnids[i] = f"custom{i:05d}"
                s = out[i]
                out[i] = ClassSense(s.name, None, None, "unresolved", f"synset {s.synset} taken by an earlier class", 0)
            seen.add(wnids[i])
    synonyms = tuple(
        tuple(dict.fromkeys((*space.synonyms[i], *_lemmas(wn, s.wnid)))) if s.wnid else space.synonyms[i]
        for i, s in enumerate(out)
    )
    quals = tuple(dict.fromkeys((*space.qualifiers, *(q.strip() for q in qualifiers if q.strip()))))
    mapped = IdClasses(tuple(wnids), space.names, synonyms, dataset=space.dataset, mapped=True, qualifiers=quals)
    return LabelSpaceMap(mapped, tuple(out), tuple(dict.fromkeys(h.strip() for h in hints)))


def _pinned(space: IdClasses, pins: Mapping[str, str]) -> list[str]:
    """The classes' wnids with ``pins`` (name -> wnid) in place; a pin naming no class or no noun is refused."""
    wn = load_wordnet()
    for name, wnid in pins.items():
        if name not in space.names:
            raise InputError(f"pins: {name!r} is no class of {space.dataset} (pin a class by its name)", param="pins")
        if not WNID.match(wnid):
            raise InputError(f"pins: {wnid!r} ({name}) is not a wnid (n and 8 digits, e.g. n01440764)", param="pins")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # nltk warns before it returns None; the error below says it
                known = wn.synset_from_pos_and_offset("n", int(wnid[1:])) is not None
        except Exception:  # nltk: an unknown offset (older nltk raises, newer returns None)
            known = False
        if not known:
            raise InputError(f"pins: {wnid!r} ({name}) is not a WordNet 3.0 noun synset", param="pins")
    return [pins.get(name, w) for w, name in zip(space.wnids, space.names, strict=True)]


def _resolve(
    name: str,
    hit: tuple[str, tuple[Synset, ...]],
    given: tuple[tuple[Synset, ...], tuple[str, ...]],
    domain: str | None,
    single: Sequence[Synset],
) -> ClassSense:
    """One class name's sense: by its own senses (:func:`_choose`), else with a hint's word after it
    ("Persian" under the hint "cat": Persian cat), else unresolved with the reason. ``given``: the
    hints' synsets and their words."""
    hints, words = given
    rule, senses = hit
    synset, choice = _choose(senses, hints, domain, single) if senses else (None, NOT_IN_WORDNET)
    if synset is not None:
        return _sense(name, synset, rule, choice, len(senses))
    if hints and not choice.startswith("ambiguous"):
        key = normalise(name.replace("_", " "))
        for word in words:
            found = _lookup(load_wordnet(), f"{key} {word}", morphy=False) if key else ()
            if found:
                picked, how = _choose(found, hints, domain, single)
                if picked is not None:
                    return _sense(name, picked, "hint-word", f"{how}, as '{key} {word}'", len(found))
    return ClassSense(name, None, None, "unresolved", choice, len(senses))


def _hint_word(hint: str) -> str:
    """The word a hint names: itself, or its synset's first lemma ("bird.n.01", "n01503061": bird)."""
    text = hint.strip()
    if WNID.match(text) or ".n." in text:
        return resolve_hint(text)[0].lemma_names()[0].replace("_", " ").lower()
    return text.replace("_", " ").lower()


def resolve_hint(hint: str) -> tuple[Synset, ...]:
    """A hint's noun synsets: a wnid's or an nltk synset name's ("bird.n.01") one, or every noun sense of a word."""
    wn = load_wordnet()
    text = hint.strip()
    synsets: tuple[Synset, ...] = ()
    try:
        if WNID.match(text):
            synsets = (wn.synset_from_pos_and_offset("n", int(text[1:])),)
        elif ".n." in text:
            synsets = (wn.synset(text),)
        elif text:
            synsets = tuple(wn.synsets(text.replace(" ", "_"), "n"))
    except Exception:  # nltk: an unknown offset or synset name
        synsets = ()
    if not synsets:
        raise InputError(
            f"hints: {hint!r} is not a WordNet 3.0 noun (give a word, a synset such as bird.n.01 or a wnid)",
            param="hints",
        )
    return synsets


def class_file_hints(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The hints a class file's header names (``# hint: bird``, comma-separated, one or more lines)."""
    return _header_list(path, HINT_PREFIX)


def class_file_qualifiers(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The qualifiers a class file's header names (``# qualifier: american, north american``, comma-separated,
    one or more lines): leading words that leave a class name's meaning in this label space."""
    return _header_list(path, QUALIFIER_PREFIX)


def _header_list(path: str | os.PathLike[str], prefix: str) -> tuple[str, ...]:
    """The comma-separated values of a class file's ``# prefix`` header lines, in order."""
    out: list[str] = []
    for _, body in _header(Path(path).expanduser()):
        if body.casefold().startswith(prefix):
            out.extend(h.strip() for h in body[len(prefix) :].split(",") if h.strip())
    return tuple(out)


def class_file_pins(path: str | os.PathLike[str]) -> dict[str, str]:
    """The senses a class file's header pins (``# pin: WNID NAME``, one a line): name -> wnid.

    Read only when the names are mapped to WordNet, so the file stays a list of names for scoring."""
    out: dict[str, str] = {}
    where = Path(path).expanduser()
    for i, body in _header(where):
        if body.casefold().startswith(PIN_PREFIX):
            wnid, _, name = body[len(PIN_PREFIX) :].strip().partition(" ")
            if not WNID.match(wnid) or not name.strip():
                raise InputError(
                    f"{where}: line {i}: {body!r}; a pin is '# pin: WNID NAME' (e.g. # pin: n01536334 Tree Sparrow)"
                )
            out[name.strip()] = wnid
    return out


def _header(path: Path) -> list[tuple[int, str]]:
    """A class file's header: its comment lines before the first class, numbered, without the ``#``."""
    out: list[tuple[int, str]] = []
    for i, line in enumerate(read_text(path, "ID classes file").splitlines(), start=1):
        if not line.startswith("#"):
            if line.strip():
                break
            continue
        out.append((i, line.lstrip("#").strip()))
    return out


# -- resolving one name ---------------------------------------------------------------------------
def _spellings(key: str) -> list[str]:
    """WordNet spellings of a normalised key: every gap an underscore or a hyphen, and no gaps."""
    words = key.split()
    if len(words) > 6:
        return ["_".join(words)]
    out = [""]
    for w in words:
        out = [f"{o}{sep}{w}" if o else w for o in out for sep in ("_", "-")]
    return [*dict.fromkeys(out), "".join(words)]


@functools.lru_cache(maxsize=50_000)
def _senses_of(name: str) -> tuple[str, tuple[Synset, ...]]:
    """``(rule, noun senses)`` of a class name by the first rule that finds a noun; ``("", ())`` if none."""
    wn = load_wordnet()
    key = normalise(name.replace("_", " "))
    if not key:
        return "", ()
    for rule, text in (("exact", key), ("spelling", american(key))):
        exact = _lookup(wn, text, morphy=False)
        if exact:
            return rule, exact
        plural = _lookup(wn, text, morphy=True)
        if plural:
            return "plural" if rule == "exact" else rule, plural
    words = key.split()
    for spelled in possessive_spellings(words):  # "Clark Nutcracker" -> Clark's nutcracker
        found = _lookup(wn, " ".join(spelled), morphy=False) or _lookup(wn, " ".join(spelled), morphy=True)
        if found:
            return "possessive", found
    if len(words) > 1:
        stem, head = " ".join(words[:-1]), words[-1]
        heads = {head, wn.morphy(head, "n") or head}
        under = tuple(s for s in _lookup(wn, stem, morphy=True) if heads & _chain_words(s))
        if under:
            return "head-word", under
    return "", ()


def _lookup(wn: Any, key: str, *, morphy: bool) -> tuple[Synset, ...]:
    """Noun synsets of ``key`` in any WordNet spelling: the word as written, or (``morphy``) its base forms."""
    out: dict[Synset, None] = {}
    for spelled in _spellings(key):
        senses = wn.synsets(spelled, "n")  # nltk adds the base forms (morphy) to the word itself
        if not morphy:
            senses = [s for s in senses if spelled.lower() in {x.lower() for x in s.lemma_names()}]
        out.update(dict.fromkeys(senses))
        if out:
            break
    return tuple(out)


def _chain_words(synset: Synset) -> set[str]:
    """Every lemma (and its last word) of every synset above ``synset``, lowercased with spaces."""
    words: set[str] = set()
    for hyper in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()):
        for lemma in hyper.lemma_names():
            text = lemma.replace("_", " ").lower()
            words |= {text, text.rpartition(" ")[2]}
    return words


def _above(synset: Synset) -> set[Synset]:
    """The synset and every synset on its hypernym chains (instance hypernyms too)."""
    return {synset, *synset.closure(lambda x: x.hypernyms() + x.instance_hypernyms())}


def _hinted(synset: Synset) -> set[Synset]:
    """The synsets a hint may name above ``synset``: its hypernym chains and, for a taxon (a genus, a
    family), its members' ("Sayornis" is a bird genus, not a bird: its member, the phoebe, is a bird)."""
    out = _above(synset)
    if is_taxon(synset):
        for member in synset.closure(lambda x: x.member_meronyms() if is_taxon(x) else []):
            out |= _above(member)
    return out


def _domain(single: Sequence[Synset]) -> str | None:
    """The lexicographer file most single-sense classes share (at least two and a third of them), else None."""
    counts = Counter(s.lexname() for s in single)
    if not counts:
        return None
    lexname, n = counts.most_common(1)[0]
    return lexname if n >= 2 and 3 * n >= len(single) else None


def _choose(
    senses: tuple[Synset, ...], hints: tuple[Synset, ...], domain: str | None, single: Sequence[Synset]
) -> tuple[Synset | None, str]:
    """The sense a name takes, and the rule that chose it (see the module docstring); None: hints were
    given and no sense lies under one."""
    under = [s for s in senses if any(h in _hinted(s) for h in hints)] if hints else list(senses)
    taxa = [s for s in under if s.lexname() in ORGANISMS] if hints else []
    if len(taxa) > 1:  # "tree sparrow" under "bird": the Eurasian and the American species; no rule knows which
        return None, f"ambiguous: {len(taxa)} organisms ({', '.join(t.name() for t in taxa)}); pin one (NAME<TAB>WNID)"
    for s in under if hints else ():
        hit = next(h for h in hints if h in _hinted(s))
        return s, "only sense" if len(senses) == 1 else f"hint {hit.name()}"
    if hints:
        return None, f"no sense under the hints (WordNet's first: {senses[0].name()})"
    if len(senses) == 1:
        return senses[0], "only sense"
    inside = [s for s in senses if s.lexname() == domain]
    if domain is None or not inside or senses[0].lexname() == domain:
        return senses[0], "first sense"
    shared: Counter[Synset] = Counter()
    for s in single:
        shared.update(_above(s))
    best = max(inside, key=lambda s: (sum(shared[a] for a in _above(s)), -senses.index(s)))
    return best, f"domain {domain}"


def _sense(name: str, synset: Synset, rule: str, choice: str, n_senses: int) -> ClassSense:
    chain = synset.hypernym_paths()[0][::-1][1:] if synset.hypernym_paths() else []
    return ClassSense(
        name,
        f"n{synset.offset():08d}",
        synset.name(),
        rule,
        choice,
        n_senses,
        tuple(s.lemma_names()[0].replace("_", " ") for s in chain),
    )


def _lemmas(wn: Any, wnid: str) -> tuple[str, ...]:
    synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
    return tuple(x.replace("_", " ") for x in synset.lemma_names())
