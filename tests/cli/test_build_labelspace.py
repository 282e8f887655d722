"""The builders take the label space as ``filter`` and ``build wordnet`` do (issue 31, part "labelspace"):
``build gpt``/``build eoe`` ``--classes FILE|BENCHMARK`` of class names, ``build siblings`` and the
generated commands (``build csp``) ``--id-classes``, mapped to WordNet unless ``--no-map-classes``, with
``--hint`` and the mapping's summary; ``--classes K`` and ImageNet-1k files as before.

The answers come from the local fake OpenAI server of tests/llm; what WordNet holds is read from nltk here.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from negvocab.builders.llm import build_gpt_vocabulary, vocabulary_from_journal
from negvocab.builders.llm_classes import label_space_from_record, label_space_record
from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import classes_file
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from tests.llm.conftest import DUMMY_KEY
from tests.llm.fake_openai import FakeOpenAI

#: real CUB-200 class names, as the shipped list writes them (checked below), and the file's hint
CUB_NAMES = ["Marsh Wren", "Cardinal", "Laysan Albatross"]
#: a WordNet hyponym of Marsh Wren, a lemma of Cardinal's bird sense, and a label no class is near
ANSWERS = ["Sedge Wren", "Cardinalis cardinalis", "violin"]
RANDOM_MODEL = ["--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--templates", "single"]


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        srv.state.extra_labels = list(ANSWERS)  # in every answer, beside the server's own labels
        yield srv


@pytest.fixture
def cub(tmp_path):
    shipped = classes_file("cub200").read_text(encoding="utf-8").splitlines()
    assert set(CUB_NAMES) <= set(shipped)  # the names are CUB's own
    path = tmp_path / "cub.txt"
    path.write_text("# hint: bird\n" + "\n".join(CUB_NAMES) + "\n", encoding="utf-8")
    return path


def _wordnet():
    from negvocab.labels.wordnet import load_wordnet

    wn = load_wordnet()  # nltk's own WordNet 3.0 reader (found offline), asked directly
    marsh = wn.synset("marsh_wren.n.01")
    assert wn.synset("sedge_wren.n.01") in marsh.closure(lambda s: s.hyponyms())  # a hyponym, by nltk itself
    cardinal = next(s for s in wn.synsets("cardinal", "n") if "Cardinalis_cardinalis" in s.lemma_names())
    return marsh, cardinal


def invoke(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def _gpt(server, tmp_path, out, *extra):
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    args = ["build", "gpt", "-m", "gpt-4o-mini", "-n", "3", "--rounds", "1", "--run-dir", tmp_path / "run"]
    return invoke(*args, *extra, "-o", out, env=env)


def test_build_gpt_filters_answers_against_the_mapped_label_space(server, cub, tmp_path):
    marsh, cardinal = _wordnet()
    mapped = _gpt(server, tmp_path, tmp_path / "mapped.json", "--classes", cub)
    assert mapped.exit_code == 0, mapped.output
    assert "custom:cub.txt: 2 of 3 classes mapped to WordNet synsets" in mapped.output
    assert "1 unresolved: Laysan Albatross" in mapped.output
    assert "as custom:cub.txt names/synonyms" in mapped.output
    doc = json.loads((tmp_path / "mapped.json").read_text())
    removed = doc["settings"]["synonym_filter"]["removed"]
    assert removed["sedge wren"]["rule"] == "wordnet-synset/hyponym"
    assert removed["sedge wren"]["via"][-1] == marsh.name()
    assert "cardinalis cardinalis" in removed and "violin" in doc["labels"]
    space = doc["settings"]["id_class_list"]
    offset = lambda s: f"n{s.offset():08d}"  # noqa: E731
    assert space["names"] == CUB_NAMES and space["wnids"][:2] == [offset(marsh), offset(cardinal)]
    assert doc["settings"]["label_space_mapping"].startswith("custom:cub.txt: 2 of 3")
    # the classes asked about are the label space's own: one request per class, each with its name
    assert set(server.state.chat_counts) == {f"{offset(marsh)}/r0", f"{offset(cardinal)}/r0", "custom00002/r0"}
    # the run folder keeps the label space: its journal alone rebuilds the same vocabulary, filter included
    # (it was rebuilt as ImageNet-1k's run: "1000 requests have no result in the journal")
    again = vocabulary_from_journal(tmp_path / "run")
    assert list(again.labels) == doc["labels"] and "sedge wren" not in again.labels
    assert again.settings["synonym_filter"]["removed"] == removed

    names_only = _gpt(server, tmp_path, tmp_path / "names.json", "--classes", cub, "--no-map-classes")
    assert names_only.exit_code == 0, names_only.output
    assert "mapped to WordNet" not in names_only.output
    kept = json.loads((tmp_path / "names.json").read_text())["labels"]
    assert {"sedge wren", "cardinalis cardinalis", "violin"} <= set(kept)  # matched by name only: all kept


def test_the_api_filters_against_its_own_label_space(server, tmp_path):
    """build_gpt_vocabulary(id_classes=...) with the default filter removes the label space's own class
    names, as `build gpt --classes` does (it filtered against ImageNet-1k, where "laysan albatross" is none)."""
    server.state.extra_labels = ["Laysan Albatross", "violin"]
    cub = IdClasses.from_names(CUB_NAMES, dataset="custom:cub.txt")
    vocab = build_gpt_vocabulary(
        "gpt-4o-mini", per_class=3, rounds=1, run_dir=tmp_path / "run", id_classes=cub,
        base_url=server.url, api_key=DUMMY_KEY,
    )  # fmt: skip
    assert "violin" in vocab.labels and "laysan albatross" not in vocab.labels
    assert vocab.settings["synonym_filter"]["removed"]["laysan albatross"]["rule"] == "clean-name/normalised"
    assert SynonymFilter().split(["laysan albatross"])[0] == ["laysan albatross"]  # ImageNet-1k's keeps it
    assert list(vocabulary_from_journal(tmp_path / "run").labels) == list(vocab.labels)


def test_the_siblings_prompt_names_the_label_space_asked_about(tmp_path):
    """A label space of its own gets the packaged prompt that lists its classes, not "NOT ImageNet-1k
    classes" (CUB's other birds are ImageNet-1k negatives but CUB's own classes); ImageNet-1k runs, whole
    or selected, keep the paper's prompt and so their run identity."""
    from negvocab.builders.llm import gpt_run

    cub = IdClasses.from_names(CUB_NAMES, dataset="custom:cub.txt")
    run = gpt_run("m", per_class=3, rounds=1, id_classes=cub, run_dir=tmp_path / "a")
    assert run.template.source == "prompts/gpt_siblings_labelspace.txt"
    system, user = (text for _, text in run.requests[0].messages)
    assert "ImageNet" not in system + user and 'In-distribution class: "Marsh Wren"' in user
    assert 'The in-distribution classes: "Cardinal", "Laysan Albatross".' in user  # its others, quoted
    assert "NOT in-distribution classes" in user and "Return exactly 3 distinct names." in user
    wide = IdClasses.from_names([f"bird {i}" for i in range(40)], dataset="custom:many.txt")
    user = gpt_run("m", per_class=3, rounds=1, id_classes=wide, run_dir=tmp_path / "b").requests[0].messages[-1][1]
    assert '"bird 1", ' in user and '"bird 30", ... (40 classes in all).' in user and '"bird 31"' not in user
    # a prompt of one's own may name the label space: a selection of K classes is still ImageNet-1k's
    own = tmp_path / "p.txt"
    own.write_text("[user]\nList {n} near {class_name}, none of {id_classes}\n", encoding="utf-8")
    user = gpt_run("m", per_class=3, rounds=1, classes=2, prompt_path=own, run_dir=tmp_path / "d").requests[0]
    text = user.messages[-1][1]
    assert text.startswith('List 3 near tench, none of "goldfish", "great white shark", "tiger shark", ')
    assert text.endswith('"American bullfrog", ... (1000 classes in all)') and text.count('"') == 2 * 30
    paper = (Path(__file__).parents[2] / "prompts" / "gpt_siblings.txt").read_text(encoding="utf-8")
    for kw in ({}, {"id_classes": imagenet1k()}, {"classes": 5}):
        run = gpt_run("m", per_class=3, rounds=1, run_dir=tmp_path / "c", **kw)
        assert run.template.source == "prompts/gpt_siblings.txt" and "NOT ImageNet-1k classes" in paper
        assert run.template.sha256 == hashlib.sha256(paper.encode()).hexdigest()


def test_a_kept_label_space_is_validated_on_read():
    record = label_space_record(IdClasses.from_names(CUB_NAMES, dataset="custom:cub.txt"))
    assert label_space_from_record(record, "run").names == tuple(CUB_NAMES)
    assert label_space_record(imagenet1k()) is None and label_space_record(None) is None  # as before: not kept
    for bad, message in (
        ([1], "run: 'id_classes' must be a label space as negvocab writes it"),
        ({**record, "names": "Cardinal"}, "run: id_classes.names must be a list of strings"),
        ({**record, "synonyms": [["a"], "b"]}, "run: id_classes.synonyms must be a list of lists of strings"),
        ({**record, "mapped": "yes"}, "id_classes.mapped true or false"),
        ({**record, "names": CUB_NAMES[:2]}, "run: id_classes: ID label space: 3 wnids, 2 names"),
    ):
        with pytest.raises(InputError, match=re.escape(message)):
            label_space_from_record(bad, "run")


def test_build_gpt_with_k_classes_or_imagenet_files_is_unchanged(server, tmp_path):
    from negvocab.builders.llm import gpt_run
    from negvocab.labels.imagenet import imagenet1k

    wnids, names = tmp_path / "wnids.txt", tmp_path / "names.txt"
    wnids.write_text("\n".join(imagenet1k().wnids[:2]) + "\n")
    names.write_text("\n".join(imagenet1k().names[:2]) + "\n")  # ImageNet-1k names: a selection, as before
    for classes in ("2", wnids, names):
        out = tmp_path / f"o{Path(classes).name}.json"
        res = _gpt(server, tmp_path, out, "--classes", classes)
        assert res.exit_code == 0, res.output
        assert "mapped to WordNet" not in res.output and "as ImageNet-1k names/synonyms" in res.output
        settings = json.loads(out.read_text())["settings"]
        assert not {"id_classes", "id_class_list", "label_space_mapping"} & set(settings)
        run = gpt_run("gpt-4o-mini", per_class=3, rounds=1, classes=str(classes), run_dir=tmp_path / "run")
        assert settings["run_identity_sha256"] == run.identity_sha256 and settings["keys"] == 2
        assert "id_classes" not in run._settings()  # the run folder's settings are as before
    bad = _gpt(server, tmp_path, tmp_path / "x.json", "--classes", "2", "--hint", "bird")
    assert bad.exit_code == 2 and bad.output.strip().splitlines() == [
        "error: --hint goes with --map-classes and a --classes file of class names or a benchmark's name "
        "(not K, nor a file of ImageNet-1k wnids or names)"
    ]
    bad = _gpt(server, tmp_path, tmp_path / "x.json", "--classes", tmp_path / "cub.txt", "--no-map-classes")
    assert bad.exit_code == 2 and "cub.txt: no such class file" in bad.output and len(bad.output.splitlines()) == 1


def test_build_eoe_takes_a_benchmark_label_space(server, tmp_path):
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": DUMMY_KEY}
    out = tmp_path / "o.json"
    res = invoke("build", "eoe", "-m", "gpt-4o-mini", "--classes", "finegrained-cub200", "--hint", "bird",
                 "--dry-run", "-o", out, env=env)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "200 requests to send" in res.output and "of 200 classes mapped to WordNet synsets" in res.output
    assert "hints bird" in res.output and not out.exists() and not server.state.chat_counts
    res = invoke("build", "eoe", "-m", "gpt-4o-mini", "--classes", "finegrained-cub200", "--no-map-classes",
                 "--hint", "bird", "--dry-run", "-o", out, env=env)  # fmt: skip
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        "error: --hint goes with --map-classes and class names to map; --classes finegrained-cub200 has none"
    ]


def test_build_siblings_maps_class_names_to_synsets(cub, tmp_path):
    marsh, _ = _wordnet()
    out = tmp_path / "sib.json"
    res = invoke("build", "siblings", "--id-classes", cub, "-K", "2", *RANDOM_MODEL, "-o", out)
    assert res.exit_code == 0, res.output
    assert (
        "2 of 3 classes mapped" in res.output and "skipped 1 classes without a synset: Laysan Albatross" in res.output
    )
    doc = json.loads(out.read_text())
    siblings = {h.lemma_names()[0].replace("_", " ").lower() for p in marsh.hypernyms() for h in p.hyponyms()}
    assert doc["views"][f"n{marsh.offset():08d}"] and set(doc["views"][f"n{marsh.offset():08d}"]) <= siblings
    res = invoke("build", "siblings", "--id-classes", cub, "--no-map-classes", *RANDOM_MODEL, "-o", tmp_path / "x.json")
    assert res.exit_code == 2 and "none of the 3 ID classes is a wnid" in res.output  # names only: as before
    res = invoke("build", "siblings", "--no-map-classes", "--hint", "bird", "--id-classes", cub, "-o", tmp_path / "y")
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        "error: --hint goes with --map-classes and an --id-classes file of class names"
    ]


def test_generated_build_commands_take_the_label_space(tmp_path):
    cands = tmp_path / "cands.txt"
    cands.write_text("sedge wren\nmountain\nviolin\n")
    args = ["build", "csp", "--candidates", cands, *RANDOM_MODEL]
    res = invoke(*args, "--id-classes", "finegrained-cub200", "--hint", "bird", "-o", tmp_path / "m.json")
    assert res.exit_code == 0, res.output
    assert "custom:cub200.txt: " in res.output and "of 200 classes mapped to WordNet synsets" in res.output
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["settings"]["synonym_filter"]["removed"]["sedge wren"]["rule"] == "wordnet-synset/hyponym"
    assert "sedge wren" not in doc["labels"] and doc["settings"]["id_class_list"]["n"] == 200
    res = invoke(*args, "--id-classes", "finegrained-cub200", "--no-map-classes", "-o", tmp_path / "n.json")
    assert res.exit_code == 0, res.output
    assert "sedge wren" in json.loads((tmp_path / "n.json").read_text())["labels"]
    res = invoke(*args, "--hint", "bird", "-o", tmp_path / "x.json")
    assert res.exit_code == 2 and res.output.strip().splitlines() == [
        "error: --hint goes with --map-classes and an --id-classes file of class names"
    ]


def test_a_siblings_class_file_may_pin_senses(tmp_path):
    """``NAME<TAB>WNID`` lines (what ``map-classes -o`` writes) are read as every class file reader reads
    them, senses pinned; a file of wnids (any WordNet noun) is read as before."""
    from negvocab.builders.siblings import sibling_id_classes
    from negvocab.labels.imagenet import read_id_classes

    pinned = tmp_path / "pinned.txt"
    pinned.write_text("Marsh Wren\tn01585121\nLaysan Albatross\n")
    got = sibling_id_classes(pinned)
    assert got == read_id_classes(pinned) and got.mapped and got.wnids[0] == "n01585121"
    assert "marsh wren" in {s.lower() for s in got.synonyms[0]}
    wnids = tmp_path / "wnids.txt"
    wnids.write_text("n01585121\n")  # not an ImageNet-1k class: siblings take any WordNet noun, as before
    assert sibling_id_classes(wnids).wnids == ("n01585121",) and not sibling_id_classes(wnids).mapped


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "Marsh Wren",
                    "goldfish",
                    "n01440764",
                    "n0144O764",
                    "# hint: bird",
                    "Cardinal\tn01541386",
                    "Cardinal\tn99999999",
                    "a\tb\tc",
                    "",
                    "\x00",
                    "caf\xe9",
                ]
            ),  # fmt: skip
            st.text(max_size=20),
        ),
        max_size=6,
    )
)
def test_build_gpt_classes_from_random_files_is_a_result_or_one_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("classes") / "classes.txt"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    res = CliRunner().invoke(app, ["build", "gpt", "-m", "m", "--classes", str(path), "--dry-run", "-o", "x.json"])
    assert res.exit_code in (0, 2), (res.output, res.exception)
    if res.exit_code == 2:
        assert len(res.output.strip().splitlines()) == 1 and res.output.startswith("error: "), res.output
