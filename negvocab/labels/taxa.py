"""WordNet's taxonomy of organisms, as a label space of species and genera needs it.

WordNet files a species under its genus by *membership*, not as a kind: ``Sayornis`` (a genus, CUB-200's
class "Sayornis") has the phoebe as a member meronym, not as a hyponym, so "phoebe" is no hyponym of the
class, and "roadrunner" none of ``Geococcyx``. :func:`below` walks hyponyms, instances and, from a
taxon (a synset under ``taxonomic_group.n.01``), its members. A species' genus-level name is its
direct hypernym when that carries the species name's last word: "nutcracker" (``nutcracker.n.03``,
the Nucifraga birds) above "Clark's nutcracker" (:func:`genus_names`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from negvocab.labels.wordnet import load_wordnet

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import Synset

__all__ = ["below", "genus_names", "is_taxon"]

#: the lexicographer files of organisms: two senses of one name there are two taxa
ORGANISMS = frozenset({"noun.animal", "noun.plant"})


@functools.cache
def _taxonomic_group() -> Synset:
    return load_wordnet().synset("taxonomic_group.n.01")


@functools.lru_cache(maxsize=100_000)
def is_taxon(synset: Synset) -> bool:
    """Whether ``synset`` is a taxonomic group (a genus, family, order, ...): its members are organisms."""
    return _taxonomic_group() in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())


def below(synset: Synset) -> list[Synset]:
    """``synset`` and every synset below it: hyponyms, instances and, from a taxon, its members (and theirs)."""

    def down(s: Synset) -> list[Synset]:
        return s.hyponyms() + s.instance_hyponyms() + (s.member_meronyms() if is_taxon(s) else [])

    return [synset, *synset.closure(down)]


def genus_names(synset: Synset) -> list[str]:
    """The genus-level names of an organism ``synset``: lemmas of a direct hypernym equal to the last word
    of one of the synset's own lemmas ("nutcracker" for ``clark's_nutcracker.n.01``), lowercased, ``_`` as
    spaces. None for a synset outside :data:`ORGANISMS`."""
    if synset.lexname() not in ORGANISMS:
        return []
    last = {lemma.replace("_", " ").replace("-", " ").lower().split()[-1] for lemma in synset.lemma_names()}
    out: list[str] = []
    for hyper in synset.hypernyms():
        for lemma in hyper.lemma_names():
            text = lemma.replace("_", " ").lower()
            if text in last and text not in out:
                out.append(text)
    return out
