"""``negvocab map-classes`` and ``--id-classes``/``--map-classes``/``--hint`` of ``filter``: a label space
named by a file, a benchmark or a shipped list, mapped to WordNet, with every unresolved name said."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.labels.imagenet import read_id_classes
from negvocab.vocab import Vocabulary

CUB_FILE = "# CUB-200-2011 classes.txt, a sample\n# hint: bird\nBlack_footed_Albatross\nCardinal\nTennessee_Warbler\n"


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_map_classes_prints_the_table_and_the_unresolved(runner, tmp_path):
    classes = tmp_path / "cub.txt"
    classes.write_text(CUB_FILE, encoding="utf-8")
    result = run(runner, "map-classes", classes)
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows[0][:5] == ["name", "wnid", "synset", "rule", "choice"]
    by_name = {r[0]: r for r in rows[1:]}
    assert by_name["Cardinal"][2] == "cardinal.n.04" and by_name["Cardinal"][4] == "hint bird.n.01"  # file's hint
    assert by_name["Tennessee_Warbler"][3] == "unresolved" and by_name["Tennessee_Warbler"][1] == ""
    assert "2 of 3 classes mapped" in result.stderr and "1 unresolved: Tennessee_Warbler" in result.stderr

    pinned = tmp_path / "pinned.txt"
    assert run(runner, "map-classes", classes, "-o", pinned).exit_code == 0
    assert pinned.read_text(encoding="utf-8").splitlines()[1] == "Cardinal\tn01541386"
    space = read_id_classes(pinned)  # the mapping, read back as a class file with its senses pinned
    assert space.mapped and space.wnids[1] == "n01541386" and space.wnids[2].startswith("custom")
    again = run(runner, "map-classes", classes, "-o", pinned)
    assert again.exit_code == 2 and "--overwrite" in again.stderr


def test_map_classes_of_a_benchmark_and_a_shipped_list(runner):
    by_bench = run(runner, "map-classes", "openood-cifar100", "-f", "json")
    assert by_bench.exit_code == 0, by_bench.output
    doc = json.loads(by_bench.stdout)
    assert doc["n"] == 100 and doc["unresolved"] == ["aquarium fish"]
    ray = next(c for c in doc["classes"] if c["name"] == "ray")
    assert ray["synset"] == "ray.n.07" and ray["choice"] == "domain noun.animal"
    assert run(runner, "map-classes", "cifar100", "-f", "json").stdout == by_bench.stdout


def test_map_classes_errors_are_one_line(runner, tmp_path):
    bad = run(runner, "map-classes", "cifar100", "--hint", "nosuchthingword")
    assert bad.exit_code == 2 and bad.stderr.strip().splitlines() == [
        "error: --hint: 'nosuchthingword' is not a WordNet 3.0 noun (give a word, a synset such as bird.n.01 or a wnid)"
    ]
    fmt = run(runner, "map-classes", "cifar100", "-f", "xml")
    assert fmt.exit_code == 2 and "--format must be one of pinned, tsv, json" in fmt.stderr
    missing = run(runner, "map-classes", tmp_path / "absent.txt")
    assert missing.exit_code == 2 and "no such ID classes file" in missing.stderr


def test_filter_takes_the_benchmark_label_space_and_removes_hyponyms(runner, tmp_path):
    # "rainbow trout" is a kind of CIFAR-100's "trout" (in the label space's domain, noun.animal; WordNet's first
    # sense is the food): by name it stays, mapped it goes
    src = tmp_path / "pool.txt"
    src.write_text("rainbow trout\nsparrow\ntrouts\nmaple\n", encoding="utf-8")  # maple: a lemma of maple tree
    out = tmp_path / "out.txt"
    names_only = run(runner, "filter", src, "-o", out, "--id-classes", "openood-cifar100", "--no-map-classes")
    assert names_only.exit_code == 0, names_only.output
    assert out.read_text(encoding="utf-8").splitlines() == ["rainbow trout", "sparrow", "maple"]
    report = tmp_path / "why.json"
    mapped = run(
        runner, "filter", src, "-o", out, "--id-classes", "openood-cifar100", "--removed", report, "--overwrite"
    )
    assert mapped.exit_code == 0, mapped.output
    assert out.read_text(encoding="utf-8").splitlines() == ["sparrow"]
    assert "99 of 100 classes mapped" in mapped.stderr and "aquarium fish" in mapped.stderr
    why = json.loads(report.read_text(encoding="utf-8"))
    assert why["removed"]["rainbow trout"]["rule"] == "wordnet-synset/hyponym"
    assert why["removed"]["rainbow trout"]["via"][-1] == "trout.n.02"
    assert "  wordnet-synset/hyponym: 1, e.g. 'rainbow trout' (trout)" in mapped.stdout.splitlines()


def test_filter_with_imagenet_wnids_is_unchanged_by_mapping(runner, tmp_path):
    src = tmp_path / "pool.txt"
    src.write_text("tench\nrainbow trout\ngoldfish\n", encoding="utf-8")
    wnids = tmp_path / "wnids.txt"
    wnids.write_text("n01440764\n", encoding="utf-8")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    on = run(runner, "filter", src, "-o", a, "--id-classes", wnids)
    off = run(runner, "filter", src, "-o", b, "--id-classes", wnids, "--no-map-classes")
    assert on.exit_code == off.exit_code == 0
    assert Vocabulary.load(a).labels == Vocabulary.load(b).labels == ["rainbow trout", "goldfish"]
    assert "mapped" not in on.stderr  # nothing to map: every class has its wnid
    hint = run(runner, "filter", src, "-o", b, "--id-classes", wnids, "--hint", "fish", "--overwrite")
    assert hint.exit_code == 2 and "--hint goes with --map-classes" in hint.stderr


def test_build_wordnet_takes_a_benchmark_label_space(tmp_path, tmp_path_factory, monkeypatch):
    import negvocab.builders.wordnet as wn_builder
    import negvocab.cli.build_wordnet as cmd
    from negvocab.builders.wordnet import build_wordnet_vocabulary
    from negvocab.data.label_space import open_label_space
    from negvocab.labels.candidates import Candidate
    from tests.vlm.conftest import make_tiny_vlm

    vlm = make_tiny_vlm(tmp_path_factory.mktemp("ls"))
    pool = [
        Candidate("jetliner", "n", "noun.artifact", "jetliner.n.01"),  # a kind of CIFAR-10's airplane
        Candidate("minivan", "n", "noun.artifact", "minivan.n.01"),  # a kind of its automobile (car.n.01)
        Candidate("meadow", "n", "noun.object", "meadow.n.01"),
        Candidate("pebble", "n", "noun.object", "pebble.n.01"),
        Candidate("cloud", "n", "noun.phenomenon", "cloud.n.01"),
        Candidate("wooden", "a", "adj.all", "wooden.a.01"),
    ]
    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: vlm)
    monkeypatch.setattr(wn_builder, "wordnet_candidates", lambda preset="neglabel", **k: list(pool))
    out, names_only = tmp_path / "wn.json", tmp_path / "names.json"
    args = ["build", "wordnet", "--random-weights", "--id-classes", "openood-cifar10", "-t", "single"]
    result = run(CliRunner(), *args, "-o", out)
    assert result.exit_code == 0, result.output
    assert "10 of 10 classes mapped" in result.stderr
    got = Vocabulary.load(out)
    classes = open_label_space("openood-cifar10", map_wordnet=True).classes
    assert got.labels == build_wordnet_vocabulary(vlm, None, id_classes=classes, templates="single").labels
    assert "jetliner" not in got.labels and "minivan" not in got.labels and "meadow" in got.labels
    plain = run(CliRunner(), *args, "--no-map-classes", "-o", names_only)
    assert plain.exit_code == 0, plain.output
    assert {"jetliner", "minivan"} <= set(Vocabulary.load(names_only).labels)
