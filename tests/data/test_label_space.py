"""The label space a command names: a file, a benchmark's class list, a shipped list or ImageNet-1k,
mapped to WordNet only where it has class names to map."""

from __future__ import annotations

import pytest

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import classes_file, get_benchmark, load_benchmarks, unregister_benchmark
from negvocab.data.label_space import label_space_file, open_label_space
from negvocab.labels.imagenet import imagenet1k, read_id_classes


def test_a_benchmark_names_its_class_list_as_score_reads_it():
    bench = get_benchmark("openood-cifar100")
    assert label_space_file("openood-cifar100") == classes_file(bench.classes)
    opened = open_label_space("openood-cifar100")
    assert opened.classes == bench.id_classes() and opened.mapping is None and not opened.classes.mapped
    assert label_space_file("cifar100") == classes_file("cifar100")  # a shipped list by its own name


def test_mapping_only_where_names_are(tmp_path):
    mapped = open_label_space("cifar10", map_wordnet=True)
    assert mapped.classes.mapped and mapped.mapping is not None and mapped.mapping.n_resolved == 10
    assert mapped.classes.names == read_id_classes(classes_file("cifar10")).names  # prompts keep their names
    wnids = tmp_path / "wnids.txt"
    wnids.write_text("n01440764\nn01443537\n", encoding="utf-8")
    same = open_label_space(wnids, map_wordnet=True)
    assert same.mapping is None and same.classes == imagenet1k().subset(["n01440764", "n01443537"])
    assert not same.classes.mapped
    assert open_label_space(None, map_wordnet=True).classes is imagenet1k()
    assert open_label_space("imagenet1k").classes is imagenet1k()


def test_the_file_header_hints_are_used(tmp_path):
    path = tmp_path / "cub.txt"
    path.write_text("# hint: bird\nCardinal\n", encoding="utf-8")
    assert open_label_space(path, map_wordnet=True).mapping.senses[0].synset == "cardinal.n.04"
    path.write_text("Cardinal\n", encoding="utf-8")
    assert open_label_space(path, map_wordnet=True).mapping.senses[0].synset == "cardinal.n.01"  # the prelate
    assert open_label_space(path, map_wordnet=True, hints=["bird"]).mapping.senses[0].synset == "cardinal.n.04"


def test_a_benchmark_without_a_class_list_and_a_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"benchmark 'openood-fs' names no class list of its own") as err:
        open_label_space("openood-fs")
    assert err.value.param == ("id_classes",)
    with pytest.raises(InputError, match="no such ID classes file"):
        open_label_space("no-such-benchmark-or-list")


def test_a_users_benchmark_with_classes_is_found_too(tmp_path):
    classes = tmp_path / "birds.txt"
    classes.write_text("# hint: bird\nWarbler\n", encoding="utf-8")
    spec = tmp_path / "mine.toml"
    spec.write_text(
        f'[[benchmark]]\nname = "my-birds"\ntitle = "birds"\nclasses = "{classes}"\n'
        '[benchmark.ood]\nx = { group = "far", layout = "folder", path = "x" }\n',
        encoding="utf-8",
    )
    load_benchmarks(spec)
    try:
        opened = open_label_space("my-birds", map_wordnet=True)
        assert opened.file == classes and opened.mapping.senses[0].synset == "warbler.n.02"
    finally:
        unregister_benchmark("my-birds")
