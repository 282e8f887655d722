"""Validation splits as data (part "ccr" of issue 31): a benchmark's OpenOOD v1.5 validation lists opened from a
tiny root in the real list format (``path label`` lines), never its test lists; one-line refusals."""

from __future__ import annotations

import pytest

from negvocab.core.errors import InputError
from negvocab.data.validation import open_validation, validation_split
from tests.data.conftest import CIFAR10_LISTS, write_lists

#: OpenOOD v1.5's CIFAR-10 validation lists (DATA_INFO['cifar10'] id val, ood val), in their format
CIFAR10_VAL_LISTS = {
    "benchmark_imglist/cifar10/val_cifar10.txt": [
        "cifar10/val/airplane/1001.png 0",
        "cifar10/val/cat/1002.png 3",
        "cifar10/val/dog/1003.png 5",
    ],
    "benchmark_imglist/cifar10/val_tin.txt": ["tin/val/n01443537/val_1.JPEG -1", "tin/val/n01629819/val_2.JPEG -1"],
}


def test_a_benchmark_opens_its_validation_lists_not_its_test_lists(tmp_path):
    write_lists(tmp_path, {**CIFAR10_LISTS, **CIFAR10_VAL_LISTS}, "images_classic")
    id_set, ood = open_validation("openood-cifar10", tmp_path)
    assert id_set.name == "CIFAR-10 (OpenOOD val)" and id_set.labels == ["0", "3", "5"]
    assert all("/cifar10/val/" in p for p in id_set.paths)
    assert list(ood) == ["tin-val"] and [p.rsplit("/", 2)[-2] for p in ood["tin-val"].paths] == [
        "n01443537",
        "n01629819",
    ]
    # the ImageNet benchmarks share one split: OpenOOD's val_imagenet.txt against val_openimage_o.txt
    for name in ("openood", "openood-near", "openood-far", "openood-fs"):
        split = validation_split(name)
        assert split is not None and split.id is not None
        assert split.id.where == "benchmark_imglist/imagenet/val_imagenet.txt"
        assert [s.where for s in split.sets] == ["benchmark_imglist/imagenet/val_openimage_o.txt"]


def test_refusals(tmp_path):
    assert validation_split("mos") is None
    with pytest.raises(InputError, match="benchmark 'mos' names no validation split"):
        open_validation("mos", tmp_path)
    with pytest.raises(InputError, match="no image list .*val_cifar10.txt"):
        open_validation("openood-cifar10", tmp_path)
    with pytest.raises(InputError, match="no such data root"):
        open_validation("openood-cifar10", tmp_path / "nothing")


def test_a_users_benchmark_file_declares_its_own_validation_split(tmp_path):
    """A benchmark read from a TOML file with a [validation] table: its tuning lists open, not its test lists;
    the split without id or ood is one line naming the key."""
    from negvocab.data.benchmarks import load_benchmarks, unregister_benchmark

    write_lists(tmp_path, {**CIFAR10_LISTS, **CIFAR10_VAL_LISTS}, "images_classic")
    spec = tmp_path / "mine.toml"
    spec.write_text(
        'name = "my-cifar"\ntitle = "CIFAR-10 against TIN, my split"\n'
        'id = { layout = "list", path = "benchmark_imglist/cifar10/test_cifar10.txt", image_root = "images_classic" }\n'
        '[ood.tin]\ngroup = "near"\nlayout = "list"\npath = "benchmark_imglist/cifar10/test_tin.txt"\n'
        'image_root = "images_classic"\n'
        "[validation]\n"
        'id = { layout = "list", path = "benchmark_imglist/cifar10/val_cifar10.txt", image_root = "images_classic" }\n'
        '[validation.ood.tin-val]\nlayout = "list"\npath = "benchmark_imglist/cifar10/val_tin.txt"\n'
        'image_root = "images_classic"\n'
    )
    [bench] = load_benchmarks(spec)
    try:
        id_set, ood = open_validation("my-cifar", tmp_path)
        assert id_set.labels == ["0", "3", "5"] and all("/cifar10/val/" in p for p in id_set.paths)
        assert list(ood) == ["tin-val"] and len(ood["tin-val"].paths) == 2
        assert all("/tin/val/" in p for p in ood["tin-val"].paths)
        assert bench.validation is not None and validation_split("my-cifar") is bench.validation
    finally:
        unregister_benchmark("my-cifar")
    bad = tmp_path / "bad.toml"
    bad.write_text(spec.read_text().split("[validation]")[0] + '[validation.ood.x]\npath = "a.txt"\n')
    with pytest.raises(InputError) as e:
        load_benchmarks(bad)
    assert str(e.value) == (
        f"{bad}: benchmark 'my-cifar': validation must be a table with id and ood (the tuning split's sets)"
    )
    typo = tmp_path / "typo.toml"
    typo.write_text(spec.read_text().replace('path = "benchmark_imglist/cifar10/val_tin.txt"', 'pth = "x.txt"'))
    with pytest.raises(InputError) as e:
        load_benchmarks(typo)
    assert str(e.value).startswith(f"{typo}: benchmark 'my-cifar [validation]': ood.tin-val: unknown key 'pth'")
