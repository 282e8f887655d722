"""Deployability: caveats (oracle, transductive) survive every derivation; hand removals; `negvocab drop`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vocab import Vocabulary, labels_hash

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def oracle():
    return negvocab.build_oracle_vocabulary(["paper towel holder", "kite toy", "goldfish", "sea slug"])


@pytest.fixture
def wordnet():
    labels = ["gadget", "mountain bike", "tayra", "violin", "castle"]
    return Vocabulary.from_labels(
        labels, source="wordnet", meta={x: {"rank": i} for i, x in enumerate(labels)}, views={"first": labels[:3]}
    )


def test_an_oracle_vocabulary_is_not_deployable_and_says_why(oracle, wordnet):
    assert oracle.deployable is False and set(oracle.caveats) == {"oracle"}
    assert "goldfish" not in oracle  # the synonym filter ran, and kept the caveat
    assert wordnet.deployable is True and wordnet.caveats == {}
    transductive = Vocabulary.from_labels(
        ["a"], source="file", settings={"caveats": {"transductive": "mined from the OOD images"}}
    )
    assert transductive.deployable is False and transductive.caveats == {"transductive": "mined from the OOD images"}


def test_every_derivation_keeps_the_caveat(oracle, wordnet, tmp_path):
    union = Vocabulary.union(wordnet, oracle)
    derived = {
        "union": union,
        "union of a union": Vocabulary.union(wordnet, union),
        "head": union.head(6),
        "head without any oracle label": union.head(2),  # conservative: derived from oracle labels
        "subset": union.subset(["gadget", "sea slug"]),
        "filter": SynonymFilter().apply(union),
        "drop": union.drop(["gadget"]),
        "json round trip": Vocabulary.load(union.save(tmp_path / "u.json")),
        "txt round trip": Vocabulary.load(union.save(tmp_path / "u.txt")),
    }
    for name, vocab in derived.items():
        assert vocab.deployable is False and "oracle" in vocab.caveats, name


def test_older_oracle_files_and_unions_stripped_by_hand_still_count(wordnet, tmp_path):
    old = Vocabulary.from_labels(["kite toy"], source="oracle", settings={"oracle": True, "deployable": False})
    assert old.caveats == {"oracle": negvocab.vocab.ORACLE_CAVEAT}
    flag_only = Vocabulary.from_labels(["kite toy"], source="file", settings={"oracle": True})
    assert flag_only.deployable is False
    doc = Vocabulary.union(wordnet, old).to_json()
    for key in ("caveats", "deployable"):
        del doc["settings"][key]  # edited by hand: the parts and each label's sources still tell
    (tmp_path / "u.json").write_text(json.dumps(doc))
    assert Vocabulary.load(tmp_path / "u.json").deployable is False
    doc["settings"]["parts"] = []
    (tmp_path / "u.json").write_text(json.dumps(doc))
    assert Vocabulary.load(tmp_path / "u.json").caveats == {"oracle": negvocab.vocab.ORACLE_CAVEAT}


def test_merge_and_info_show_it(oracle, wordnet, tmp_path):
    wordnet.save(tmp_path / "wn.json")
    oracle.save(tmp_path / "oracle.json")
    r = run("merge", tmp_path / "wn.json", tmp_path / "oracle.json", "-o", tmp_path / "union.json")
    assert r.exit_code == 0 and "NOT DEPLOYABLE (oracle)" in r.stdout
    r = run("info", tmp_path / "union.json")
    assert "deployable: NO" in r.stdout and "NOT DEPLOYABLE (oracle)" in r.stdout
    doc = json.loads(run("info", tmp_path / "union.json", "--json").stdout)
    assert doc["deployable"] is False and set(doc["caveats"]) == {"oracle"}
    assert "deployable: yes" in run("info", tmp_path / "wn.json").stdout


def test_labels_removed_by_hand_are_accepted_and_recorded(wordnet, tmp_path, caplog):
    path = wordnet.save(tmp_path / "wn.json")
    doc = json.loads(path.read_text())
    doc["labels"].remove("tayra")
    doc["labels"].remove("castle")
    path.write_text(json.dumps(doc))
    back = Vocabulary.load(path)
    assert back.labels == ["gadget", "mountain bike", "violin"] and set(back.meta) == set(back.labels)
    assert back.sha256 == labels_hash(back.labels) and back.views == {"first": ["gadget", "mountain bike"]}
    assert back.settings["dropped"][-1] == {
        "reason": "removed by hand from the file", "count": 2, "labels": ["tayra", "castle"],
        "from_sha256": wordnet.sha256,
    }  # fmt: skip
    assert "removed by hand" in caplog.text


@pytest.mark.parametrize(
    "edit",
    [
        lambda labels: labels.__setitem__(1, "mountain bicycle"),  # renamed
        lambda labels: labels.append("kayak"),  # added
        lambda labels: labels.reverse(),  # reordered
        lambda labels: (labels.remove("tayra"), labels.reverse()),  # removed and reordered
    ],
)
def test_other_hand_edits_are_still_refused(wordnet, tmp_path, edit):
    path = wordnet.save(tmp_path / "wn.json")
    doc = json.loads(path.read_text())
    edit(doc["labels"])
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError):
        Vocabulary.load(path)


def test_a_removal_from_a_vocabulary_without_metadata_is_refused(tmp_path):
    vocab = Vocabulary.from_labels(["a", "b", "c"], source="gpt")  # nothing proves what was there
    doc = vocab.to_json()
    doc["labels"].remove("b")
    (tmp_path / "g.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="does not match the labels"):
        Vocabulary.load(tmp_path / "g.json")


def test_drop_command(oracle, wordnet, tmp_path):
    union = Vocabulary.union(wordnet, oracle).save(tmp_path / "u.json")
    (tmp_path / "gone.txt").write_text("# bad ones\ntayra\nkite toy\nnot there\n")
    r = run("drop", union, tmp_path / "gone.txt", "-o", tmp_path / "out.json")
    assert r.exit_code == 0, r.output
    assert "dropped 2 of 7 labels; kept 5" in r.stdout and "not in the vocabulary" in r.stderr
    out = Vocabulary.load(tmp_path / "out.json")
    assert "tayra" not in out and "kite toy" not in out and out.labels[0] == "gadget"
    assert out.settings["dropped"][-1]["labels"] == ["tayra", "kite toy"] and out.deployable is False
    (tmp_path / "none.txt").write_text("kayak\n")
    r = run("drop", union, tmp_path / "none.txt", "-o", tmp_path / "x.json")
    assert r.exit_code == 2 and "nothing to drop" in r.stderr and not (tmp_path / "x.json").exists()
