"""Named benchmarks: OpenOOD v1.5's ImageNet-1k lists, the MOS four and ImageNet-O, read from tiny trees
laid out as the published ones (tests/data/conftest.py), each set named and grouped."""

from __future__ import annotations

import shutil

import pytest

from negvocab.core.errors import InputError
from negvocab.data import open_image_set
from negvocab.data.benchmarks import (
    benchmark_set,
    benchmark_table,
    get_benchmark,
    id_split_name,
    list_benchmarks,
    ood_group,
    open_benchmark,
)
from tests.data.conftest import OPENOOD_LISTS


def _listed(root, name, folder="images_largescale"):
    return [str(root / folder / line.rsplit(" ", 1)[0]) for line in OPENOOD_LISTS[name]]


def test_openood_near_and_far_read_the_published_lists(openood_root):
    near = open_benchmark("openood-near", openood_root)
    far = open_benchmark("OpenOOD-far", openood_root)
    assert list(near) == ["ssb-hard", "ninco"] and list(far) == ["inaturalist", "textures", "openimage-o"]
    assert near["ninco"].paths == _listed(openood_root, "test_ninco.txt")
    assert far["textures"].paths == _listed(
        openood_root, "test_textures.txt", "images_classic"
    )  # Textures sit in images_classic/
    assert far["openimage-o"].labels == ["-1"] * 3  # OpenOOD's OOD label
    assert {s.info["ood_group"] for s in near.values()} == {"near"} and {s.info["ood_group"] for s in far.values()} == {
        "far"
    }
    assert list(open_benchmark("openood", openood_root)) == [*near, *far]
    # each set records the benchmark it was opened from (results keep it: published figures match on it)
    assert {s.info["benchmark"] for s in near.values()} == {"openood-near"}
    assert {s.info["benchmark"] for s in far.values()} == {"openood-far"}
    both = open_benchmark("openood", openood_root, with_id=True)
    assert both.id.name == id_split_name(get_benchmark("openood")) == "ImageNet-1k (OpenOOD test)"
    assert (
        both.id.info["benchmark"] == "openood"
        and benchmark_set("openood", "ninco", openood_root).info["benchmark"] == "openood"
    )


def test_the_openood_id_list_opens_with_its_image_root(openood_root):
    """`negvocab benchmarks` tells the ID set as --id LIST --image-root ROOT/images_largescale: that opens."""
    ids = open_image_set(
        openood_root / "benchmark_imglist/imagenet/test_imagenet.txt", image_root=openood_root / "images_largescale"
    )
    assert ids.paths == _listed(openood_root, "test_imagenet.txt") and ids.labels == ["65", "970", "230"]


def test_mos_four_and_imagenet_o(mos_root):
    mos = open_benchmark("mos", mos_root)
    assert {k: len(v) for k, v in mos.items()} == {"inaturalist": 2, "sun": 1, "places": 2, "textures": 3}
    assert mos["textures"].labels == ["banded", "zigzagged", "zigzagged"]
    o = open_benchmark("imagenet-o", mos_root)["imagenet-o"]
    assert len(o) == 2 and o.labels == [
        "n01443537",
        "n01704323",
    ]  # the README.txt beside the class folders is not an image


def test_a_missing_file_is_named_in_one_line(openood_root, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(openood_root, root)
    (root / "benchmark_imglist/imagenet/test_ninco.txt").unlink()
    with pytest.raises(
        InputError, match=r"^ninco: no image list .*test_ninco.txt \(expected under the data root .*\)$"
    ):
        open_benchmark("openood-near", root)
    shutil.rmtree(root / "images_largescale" / "ssb_hard")
    with pytest.raises(InputError, match=r"test_ssb_hard.txt: 2 of 2 listed images do not exist"):
        open_benchmark("openood-near", root)
    with pytest.raises(InputError, match="no such data root"):
        open_benchmark("mos", tmp_path / "nowhere")
    with pytest.raises(InputError, match="^inaturalist: no folder .*iNaturalist"):
        open_benchmark("mos", root)


def test_names_groups_and_the_table(tmp_path):
    with pytest.raises(
        InputError,
        match="unknown benchmark 'openood-mid'; did you mean 'openood', 'openood-fs' or 'openood-far'\\? "
        "choose one of openood-near, openood-far, openood, mos, imagenet-o",
    ):
        get_benchmark("openood-mid")
    fi = get_benchmark("fi-imagenet-1k")  # a carve entry: opened with its lists, not from a root alone
    assert fi.kind == "carve" and fi.group_of("fi-imagenet-1k") == "near"
    with pytest.raises(InputError, match="needs ood_list .*--fi-ood"):
        open_benchmark("fi-imagenet-1k", tmp_path)
    assert [
        ood_group(n) for n in ("ssb-hard", "NINCO", "fi-imagenet-1k", "textures", "sun", "imagenet-o", "my-folder")
    ] == ["near", "near", "near", "far", "far", "far", None]
    rows = benchmark_table()
    assert sum(len(get_benchmark(b).sets) for b in list_benchmarks()) == len(rows)
    assert rows[-1]["benchmark"] == "fi-imagenet-1k"  # the carve benchmark last
    import negvocab.data.benchmarks as B

    with pytest.warns(DeprecationWarning, match="use list_benchmarks"):
        older = B.BENCHMARKS
    assert "fi-imagenet-1k" not in older and list(older) == [
        b for b in list_benchmarks() if b != "fi-imagenet-1k"
    ]  # opened from a root
    assert all(r["expects"] and r["source"] for r in rows)
