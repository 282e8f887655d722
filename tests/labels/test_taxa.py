"""WordNet's taxonomy for species and genera: members below a genus, a species' genus-level name."""

from __future__ import annotations

from negvocab.labels.taxa import below, genus_names, is_taxon


def test_a_genus_has_its_members_below_it(wn):
    sayornis, phoebe = wn.synset("sayornis.n.01"), wn.synset("phoebe.n.03")
    assert phoebe not in sayornis.closure(lambda s: s.hyponyms())  # WordNet: a member, not a kind
    assert phoebe in sayornis.member_meronyms() and is_taxon(sayornis) and not is_taxon(phoebe)
    assert below(sayornis) == [sayornis, phoebe]
    birds = below(wn.synset("bird.n.01"))
    assert phoebe in birds and len(birds) == len(set(birds))
    team = wn.synset("team.n.01")  # members of a group that is no taxon are not below it
    assert not is_taxon(team) and not set(team.member_meronyms()) & set(below(team))


def test_genus_names(wn):
    assert genus_names(wn.synset("clark's_nutcracker.n.01")) == ["nutcracker"]
    assert genus_names(wn.synset("tree_sparrow.n.02")) == []  # its hypernym is "New World sparrow"
    assert genus_names(wn.synset("potter's_wheel.n.01")) == []  # no organism
