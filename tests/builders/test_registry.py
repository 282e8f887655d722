"""The builder registry: built-ins as entries, a plug-in builder (tests/plugins/toy_builder.py) through the
public API, one-line option errors, and the sources a Vocabulary accepts."""

from __future__ import annotations

import json

import numpy as np
import pytest

import negvocab
from negvocab.builders.registry import unregister_builder
from negvocab.core.errors import InputError
from negvocab.labels.candidates import sample_pool
from negvocab.vocab import Vocabulary, known_sources
from tests.vlm.conftest import make_tiny_vlm

CLASSES = ["goldfish", "tench", "great white shark", "rooster"]


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    return make_tiny_vlm(tmp_path_factory.mktemp("reg"))


@pytest.fixture
def toy():
    from tests.plugins import toy_builder

    toy_builder.register()
    yield toy_builder
    toy_builder.unregister()


@pytest.fixture
def classes_file(tmp_path):
    path = tmp_path / "classes.txt"
    path.write_text("\n".join(CLASSES) + "\n")
    return path


def test_the_built_ins_are_entries_with_their_facts():
    assert negvocab.list_builders()[:6] == ["wordnet", "gpt", "eoe", "oracle", "siblings", "mined"]
    facts = {
        n: (b.source, b.ranked, b.deployable, sorted(b.needs))
        for n in negvocab.list_builders()[:6]
        for b in [negvocab.get_builder(n)]
    }
    assert facts == {
        "wordnet": ("wordnet", True, True, ["vlm"]),
        "gpt": ("gpt", False, True, ["llm"]),
        "eoe": ("eoe", False, True, ["llm"]),
        "oracle": ("oracle", False, False, []),
        "siblings": ("siblings", True, True, ["vlm"]),
        "mined": ("mined", True, True, ["images", "vlm"]),
    }
    assert negvocab.get_builder("WordNet").name == "wordnet"
    with pytest.raises(InputError, match="unknown builder 'nope'; choose one of wordnet, gpt"):
        negvocab.get_builder("nope")


def test_build_vocabulary_is_the_builder_function():
    labels = ["fungus", "moss", "goldfish", "fungus"]
    got = negvocab.build_vocabulary("oracle", labels=labels)
    assert got == negvocab.build_oracle_vocabulary(labels) and got.labels == ["fungus", "moss"]
    assert not got.deployable and got.source == "oracle"


def test_wordnet_through_the_registry_equals_the_direct_call(vlm):
    got = negvocab.build_vocabulary("wordnet", vlm=vlm, n_candidates=40, templates="single", quantile=0.9)
    direct = negvocab.build_wordnet_vocabulary(vlm, candidates=sample_pool(40), templates="single", quantile=0.9)
    assert got == direct and got.labels == direct.labels


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("wordnet", {"quantile": 2}, "builder 'wordnet': quantile = 2: must be a quantile level in \\(0, 1\\]"),
        ("wordnet", {"colour": "red"}, "builder 'wordnet': colour: unknown option; known: size, quantile"),
        (
            "wordnet",
            {"n_candidates": 5, "ratio": 0.1, "size": 3},
            "builder 'wordnet': give either size or ratio, not both",
        ),
        ("oracle", {}, "builder 'oracle': labels is missing: give the OOD labels"),
        ("siblings", {"levels": 11}, "builder 'siblings': levels = 11: must be an integer between 1 and 10"),
        ("mined", {"images": "x", "index": "flat"}, "builder 'mined': index = 'flat': must be one of exact, ivf, hnsw"),
        ("gpt", {"model": "m", "per_class": 0}, "builder 'gpt': per_class = 0: must be an integer >= 1"),
    ],
)
def test_bad_options_are_one_line_before_any_work(name, options, message):
    vlm = object() if "vlm" in negvocab.get_builder(name).needs else None  # never reached: the options fail first
    with pytest.raises(InputError, match=f"^{message}") as e:
        negvocab.build_vocabulary(name, vlm=vlm, **options)
    assert "\n" not in str(e.value)


def test_a_vlm_is_asked_for_only_where_needed():
    with pytest.raises(InputError, match="builder 'wordnet' needs a VLM"):
        negvocab.build_vocabulary("wordnet")
    with pytest.raises(InputError, match="builder 'oracle' uses no VLM"):
        negvocab.build_vocabulary("oracle", vlm=object(), labels=["a"])


def test_a_plugin_builder_works_from_the_api(toy, vlm, classes_file, tmp_path):
    """Ranked by an independent float64 computation: the largest cosine to an ID class, ascending."""
    words = ["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "carpet"]
    got = negvocab.build_vocabulary("toy", vlm=vlm, words=words, stride=2, templates="single", id_classes=classes_file)
    w = vlm.encode_text(words, "single").astype(np.float64)
    c = vlm.encode_text(CLASSES, "single").astype(np.float64)
    closeness = [max(float(np.dot(wi, ci)) for ci in c) for wi in w]
    ranked = [word for _, word in sorted(zip(closeness, words, strict=True), key=lambda t: t[0])]
    assert got.labels == ranked[::2] and len(got) == 4
    assert got.source == "toy" and got.settings["stride"] == 2
    path = tmp_path / "toy.json"
    got.save(path)
    assert json.loads(path.read_text())["source"] == "toy" and Vocabulary.load(path) == got
    with pytest.raises(InputError, match="^builder 'toy': stride = 6: must be an integer between 1 and 5") as e:
        negvocab.build_vocabulary("toy", vlm=vlm, stride=6)
    assert "\n" not in str(e.value)


def test_a_file_with_an_unknown_source_is_one_line_naming_file_key_and_choices(tmp_path):
    doc = json.loads(negvocab.Vocabulary.from_labels(["a", "b"], source="file").model_dump_json())
    path = tmp_path / "v.json"
    path.write_text(json.dumps({**doc, "source": "nobody-registered-this"}))
    with pytest.raises(InputError) as e:
        Vocabulary.load(path)
    line = str(e.value)
    assert line.startswith(f"{path}: invalid vocabulary: source: unknown source 'nobody-registered-this'; known: ")
    assert "wordnet, gpt, eoe, oracle, union, file, siblings, mined" in line and "\n" not in line
    path.write_text(json.dumps({**doc, "source": "mined"}))  # every built-in source still reads
    assert Vocabulary.load(path).source == "mined"


def test_registering_checks_the_entry_and_adds_its_source():
    class Opts(negvocab.BuilderOptions):
        n: int = 1

    def build(*, n: int) -> Vocabulary:
        return Vocabulary.from_labels([f"w{i}" for i in range(n)], source="countdown")

    with pytest.raises(InputError, match="options must be a pydantic model class"):
        negvocab.register_builder("countdown", build, options=dict)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="needs \\['gpu'\\] unknown"):
        negvocab.register_builder("countdown", build, options=Opts, needs=("gpu",))
    negvocab.register_builder("countdown", build, options=Opts)
    try:
        assert "countdown" in known_sources() and negvocab.build_vocabulary("countdown", n=3).labels == [
            "w0",
            "w1",
            "w2",
        ]
        with pytest.raises(InputError, match="builder 'countdown' is registered already"):
            negvocab.register_builder("countdown", build, options=Opts)
    finally:
        unregister_builder("countdown")


def test_a_builder_must_record_its_own_source():
    class Opts(negvocab.BuilderOptions):
        pass

    negvocab.register_builder("liar", lambda: Vocabulary.from_labels(["a"], source="wordnet"), options=Opts)
    try:
        with pytest.raises(InputError, match="builder 'liar' made a vocabulary of source 'wordnet'"):
            negvocab.build_vocabulary("liar")
    finally:
        unregister_builder("liar")


def test_a_builder_marked_not_deployable_marks_its_vocabularies():
    class Opts(negvocab.BuilderOptions):
        pass

    negvocab.register_builder(
        "peek", lambda: Vocabulary.from_labels(["a", "b"], source="peek"), options=Opts, deployable=False
    )
    try:
        got = negvocab.build_vocabulary("peek")
        assert got.labels == ["a", "b"] and not got.deployable and "peek" in got.caveats
        assert got.head(1).caveats == got.caveats  # derived vocabularies keep the mark
    finally:
        unregister_builder("peek")


def test_a_sweep_asks_the_builder_registry_whether_a_source_ranks(toy):
    """A plug-in builder that ranks its labels is sweepable by M without ranks in the metadata; a source
    whose builder does not rank (gpt) is not, and ranks in the metadata always count."""
    from negvocab.evaluation.sweeps import is_ranked

    plain = {"meta": None}
    assert is_ranked(Vocabulary.from_labels(["a", "b"], source="toy", **plain))
    assert is_ranked(Vocabulary.from_labels(["a", "b"], source="wordnet", **plain))
    assert not is_ranked(Vocabulary.from_labels(["a", "b"], source="gpt", **plain))
    ranked = {"a": {"rank": 1}, "b": {"rank": 2}}
    assert is_ranked(Vocabulary.from_labels(["a", "b"], source="gpt", meta=ranked))
    unregister_builder("toy")
    try:
        assert not is_ranked(Vocabulary.from_labels(["a", "b"], source="toy", **plain))
    finally:
        toy.register()
