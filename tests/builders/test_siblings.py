"""WordNet siblings checked against WordNet itself (nltk, written out independently) and a float64 ranking."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.builders.siblings import build_sibling_vocabulary, sibling_id_classes, wordnet_siblings
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.wordnet import load_wordnet
from negvocab.vocab import Vocabulary
from tests.vlm.conftest import make_tiny_vlm

# the first 60 ImageNet-1k classes: fish, birds, amphibians, reptiles (goldfish, tench, sharks, ...)
N_CLASSES = 60


@pytest.fixture(scope="module")
def wn():
    return load_wordnet()


@pytest.fixture(scope="module")
def classes():
    c = imagenet1k()
    return c.subset(list(c.wnids[:N_CLASSES]))


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    return make_tiny_vlm(tmp_path_factory.mktemp("sib"))


@pytest.fixture(scope="module")
def vocab(vlm, classes):
    return build_sibling_vocabulary(vlm, classes, per_class=5, templates="single")


def synset(wn, wnid):
    return wn.synset_from_pos_and_offset("n", int(wnid[1:]))


def family(wn, classes):
    """Every ID synset, ancestor and descendant, computed with nltk's own closures."""
    ids = {synset(wn, w) for w in classes.wnids}
    out = set(ids)
    for s in ids:
        out |= set(s.closure(lambda x: x.hypernyms() + x.instance_hypernyms()))
        out |= set(s.closure(lambda x: x.hyponyms() + x.instance_hyponyms()))
    return out


def test_a_sibling_is_a_co_hyponym_and_no_id_synset(wn, classes, vocab):
    excluded = family(wn, classes)
    id_names = {n.lower() for n in classes.names} | {s.lower() for syn in classes.synonyms for s in syn}
    assert vocab.source == "siblings" and len(vocab.views) == N_CLASSES
    checked = 0
    for wnid, view in vocab.views.items():
        parents = set(synset(wn, wnid).hypernyms() + synset(wn, wnid).instance_hypernyms())
        for label in view:
            prov = vocab.meta[label]["proposed_by"][wnid]
            rel = wn.synset(prov["synset"])
            assert parents & set(rel.hypernyms()), (wnid, label)  # shares a parent: a co-hyponym
            assert rel not in excluded, (wnid, label)  # not an ID synset, nor above or below one
            assert rel.lemma_names()[0].replace("_", " ").lower() == label  # named by its head word
            assert label not in id_names
            assert prov["level"] == 1 and prov["distance"] == 2 and prov["path"][0] == synset(wn, wnid).name()
            checked += 1
    assert checked > 100
    tench = vocab.views["n01440764"]
    assert {"rudd", "carp"} <= set(wordnet_siblings(classes, per_class=50)[0]["n01440764"][i].label for i in range(8))
    assert "goldfish" not in vocab and "cyprinid" not in vocab and "tench" not in tench


def test_per_class_counts_are_min_of_k_and_the_eligible_siblings(wn, classes, vocab):
    excluded = family(wn, classes)
    from negvocab.labels.synonyms import SynonymFilter

    filt = SynonymFilter(classes)
    for wnid in classes.wnids:
        s = synset(wn, wnid)
        heads = set()
        for parent in s.hypernyms() + s.instance_hypernyms():
            for rel in parent.hyponyms():
                head = rel.lemma_names()[0].replace("_", " ").lower()
                if rel not in excluded and not filt.is_id(head) and len(head) > 1:
                    heads.add(head)
        assert len(vocab.views[wnid]) == min(5, len(heads)), wnid
        assert set(vocab.views[wnid]) <= heads
        assert vocab.settings["unique_per_key"][wnid] == len(heads)
        assert vocab.settings["kept_per_key"][wnid] == len(vocab.views[wnid])
    assert vocab.settings["short_classes"] == sorted(w for w in classes.wnids if len(vocab.views[w]) < 5)


def test_each_view_is_ranked_closest_first(vlm, classes):
    full = build_sibling_vocabulary(vlm, classes, per_class=1000, templates="single")
    all_rel, _, _ = wordnet_siblings(classes, per_class=1000)
    for i, wnid in enumerate(classes.wnids[:20]):
        labels = [s.label for s in all_rel[wnid]]
        if not labels:
            continue
        t = vlm.encode_text(labels, "single").astype(np.float64)
        c = vlm.encode_text([classes.names[i]], "single").astype(np.float64)[0]
        sims = t @ c
        expected = [labels[j] for j in sorted(range(len(labels)), key=lambda j: (-sims[j], labels[j]))]
        assert full.views[wnid] == expected
        for lab in expected:
            assert full.meta[lab]["proposed_by"][wnid]["similarity"] == pytest.approx(sims[labels.index(lab)], abs=1e-5)


def test_labels_are_round_robin_with_ranks_and_every_label_has_a_proposer(vocab):
    firsts = list(dict.fromkeys(v[0] for v in vocab.views.values() if v))
    assert vocab.labels[: len(firsts)] == firsts
    assert [vocab.meta[lab]["rank"] for lab in vocab.labels] == list(range(1, len(vocab) + 1))
    union = {lab for v in vocab.views.values() for lab in v}
    assert union == set(vocab.labels)
    for lab in vocab.labels:
        for wnid, prov in vocab.meta[lab]["proposed_by"].items():
            assert vocab.views[wnid][prov["rank"] - 1] == lab


def test_deterministic(vlm, classes, vocab, tmp_path):
    again = build_sibling_vocabulary(make_tiny_vlm(tmp_path), classes, per_class=5, templates="single")
    assert again.to_json() == vocab.to_json()
    vocab.save(tmp_path / "s.json")
    loaded = Vocabulary.load(tmp_path / "s.json")
    assert loaded.views == vocab.views and loaded.meta == vocab.meta and loaded.source == "siblings"


def test_widening_only_for_classes_with_too_few(vlm, classes):
    one = build_sibling_vocabulary(vlm, classes, per_class=8, levels=1, templates="single")
    two = build_sibling_vocabulary(vlm, classes, per_class=8, levels=2, templates="single")
    widened = 0
    for wnid in classes.wnids:
        levels = [two.meta[lab]["proposed_by"][wnid]["level"] for lab in two.views[wnid]]
        if len(one.views[wnid]) >= 8:
            assert two.views[wnid] == one.views[wnid] and set(levels) == {1}
        else:
            assert two.views[wnid][: len(one.views[wnid])] == one.views[wnid]  # siblings first, cousins fill
            assert levels == sorted(levels)
            widened += 2 in levels
    assert widened > 5
    assert two.settings["levels_used"].get("2", 0) == widened


def test_cousins_are_at_the_class_depth_not_a_subtree(wn, classes, vlm):
    rel, _, _ = wordnet_siblings(classes, per_class=10_000, levels=2)
    for wnid in classes.wnids[:30]:
        s = synset(wn, wnid)
        grand = {g for p in s.hypernyms() for g in p.hypernyms()}
        for sib in rel[wnid]:
            node = wn.synset(sib.synset)
            if sib.level == 2:  # a grandchild of a grandparent, exactly
                assert any(g in grand for p in node.hypernyms() for g in p.hypernyms()), sib
                assert len(sib.path) == 5


def test_user_id_classes_wnids_and_names(vlm, caplog):
    # dog.n.01 and domestic_cat.n.01 are not ImageNet-1k classes; "my widget" has no synset
    classes = sibling_id_classes(["n02084071", "n02121808", "my widget", "n01440764"])
    assert classes.names[:2] == ("dog", "domestic cat") and classes.wnids[2] == "custom00002"
    with caplog.at_level("WARNING"):
        v = build_sibling_vocabulary(vlm, classes, per_class=50, templates="single")
    assert "my widget" in caplog.text
    assert v.settings["skipped"] == {"custom00002": "my widget"} and "custom00002" not in v.views
    assert {"wolf", "jackal", "wild dog"} <= set(v.views["n02084071"])
    assert "wildcat" in v.views["n02121808"]
    assert "dog" not in v and "domestic cat" not in v and "house cat" not in v
    with pytest.raises(InputError, match="n09999999 is not a WordNet 3.0 noun synset"):
        sibling_id_classes(["n09999999"])
    with pytest.raises(InputError, match="none of the 1 ID classes has a WordNet synset"):
        build_sibling_vocabulary(vlm, ["my widget"], templates="single")
    with pytest.raises(InputError, match="per_class"):
        build_sibling_vocabulary(vlm, ["n02084071"], per_class=0, templates="single")


def test_merge_and_info_treat_siblings_like_gpt(vocab):
    from negvocab.cli.labels import vocabulary_summary

    gpt = Vocabulary.from_labels(
        ["rudd", "koi"],
        source="gpt",
        meta={"rudd": {"proposed_by": {"n01440764": [0]}}, "koi": {"proposed_by": {"n01443537": [0, 1]}}},
        views={"n01440764": ["rudd"], "n01443537": ["koi"]},
    )
    union = Vocabulary.union(vocab, gpt)
    assert union.meta["rudd"]["sources"] == ["siblings", "gpt"]
    assert union.meta["rudd"]["siblings"]["proposed_by"]["n01440764"]["rank"] >= 1
    assert union.meta["rudd"]["gpt"]["proposed_by"] == {"n01440764": [0]}
    summary = vocabulary_summary(vocab)
    assert summary["source"] == "siblings" and summary["views"]["n01440764"] == len(vocab.views["n01440764"])
    json.dumps(vocab.to_json())  # plain JSON throughout


def test_cli_builds_the_same_vocabulary(vlm, classes, tmp_path, monkeypatch):
    import negvocab.cli.build_offline as cmd
    from negvocab.cli import app

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: vlm)
    ids = tmp_path / "ids.txt"
    ids.write_text("# my classes\n" + "\n".join(classes.wnids[:10]) + "\nmy widget\n", encoding="utf-8")
    out = tmp_path / "sib.json"
    r = CliRunner().invoke(
        app,
        ["build", "siblings", "--random-weights", "-K", "3", "--id-classes", str(ids), "-t", "single", "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "skipped 1 classes without a synset: my widget" in r.output and "RANDOM weights" in r.output
    got = Vocabulary.load(out)
    assert got.random_weights is True and got.settings["random_weights"] is True  # results tables mark it
    expected = build_sibling_vocabulary(vlm, sibling_id_classes(ids), per_class=3, templates="single")
    assert got.labels == expected.labels and got.views == expected.views
    monkeypatch.setattr(cmd, "load_vlm", _no_model)
    bad = CliRunner().invoke(app, ["build", "siblings", "--random-weights", "--levels", "0", "-o", str(out)])
    assert bad.exit_code == 2 and bad.stderr.strip().count("\n") == 0 and "levels must be" in bad.stderr
    names = tmp_path / "names.txt"
    names.write_text("my widget\nanother thing\n", encoding="utf-8")
    bad = CliRunner().invoke(app, ["build", "siblings", "--random-weights", "--id-classes", str(names), "-o", str(out)])
    assert bad.exit_code == 2 and "none of the 2 ID classes is a wnid" in bad.stderr


def _no_model(*_a, **_k):
    raise AssertionError("the model must not be loaded")


def test_head_per_class_is_the_sweep_over_k_for_siblings_and_gpt(vlm, classes, vocab):
    from negvocab.builders.siblings import head_per_class

    two = head_per_class(vocab, 2)
    direct = build_sibling_vocabulary(vlm, classes, per_class=2, templates="single")
    assert two.labels == direct.labels and two.views == direct.views and two.settings["per_class_head"] == 2
    gpt = Vocabulary.from_labels(
        ["a", "b", "c", "d"],
        source="gpt",
        views={"n1": ["a", "b", "c"], "n2": ["d", "b"]},
        meta={"c": {"proposed_by": {"n1": [3]}}},
    )
    one = head_per_class(gpt, 1)
    assert one.labels == ["a", "d"] and one.views == {"n1": ["a"], "n2": ["d"]} and one.meta == {}
    with pytest.raises(InputError, match="no per-class views"):
        head_per_class(Vocabulary.from_labels(["x"], source="file"), 1)


def test_a_wnid_file_with_stray_tabs_reads_as_wnids(tmp_path):
    """A trailing tab or a tab in a comment is no NAME<TAB>WNID line: the file is still read as wnids (any
    WordNet noun, not only ImageNet-1k's), as a file without them is; a real pinned line is read as pinned."""
    plain = tmp_path / "plain.txt"
    plain.write_text("n02084071\nn02121808\n")
    stray = tmp_path / "stray.txt"
    stray.write_text("# dogs\tand cats\nn02084071\t\nn02121808\n")
    assert sibling_id_classes(stray).wnids == sibling_id_classes(plain).wnids == ("n02084071", "n02121808")
    pinned = tmp_path / "pinned.txt"
    pinned.write_text("tench\tn01440764\ngoldfish\tn01443537\n")
    assert sibling_id_classes(pinned).wnids == ("n01440764", "n01443537")
