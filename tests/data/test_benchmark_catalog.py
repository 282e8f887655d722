"""The built-in benchmarks given as data (negvocab/resources/benchmarks.toml): OpenOOD v1.5's CIFAR-10/100
and full-spectrum ImageNet-1k, the hard-OOD ImageNet-10/20/100 splits (MCM's and OpenOOD-VLM's) and
NINCO, each opened from a tiny root built here in the real layout (OpenOOD's ``path label`` image lists,
MCM's ImageFolder class folders, NINCO's tarball folders), with its ID set, ID classes and groups."""

from __future__ import annotations

import pytest

from negvocab.data.benchmarks import get_benchmark, id_classes_of, open_benchmark
from negvocab.data.ood_specs import open_ood_sets
from tests.data.conftest import png as _image
from tests.data.conftest import write_lists


def test_openood_cifar10_opens_with_its_id_set_classes_and_groups(cifar10_root):
    sets = open_benchmark("openood-cifar10", cifar10_root)
    assert list(sets) == ["cifar100", "tin", "mnist", "svhn", "textures", "places365"]
    assert sets.groups == {"cifar100": "near", "tin": "near", "mnist": "far", "svhn": "far", "textures": "far",
                           "places365": "far"}  # fmt: skip
    assert [len(s) for s in sets.values()] == [2, 1, 2, 1, 1, 1]
    assert sets.id is not None and sets.id.labels == ["0", "3", "9"]
    classes = id_classes_of(sets.id)
    assert classes is not None and len(classes) == 10
    # the list's labels index the shipped class list: 0 airplane, 3 cat, 9 truck (CIFAR-10's label_names)
    assert [classes.names[int(x)] for x in sets.id.labels] == ["airplane", "cat", "truck"]
    assert "Krizhevsky" in get_benchmark("openood-cifar10").classes_source()


def test_openood_cifar100_names_its_100_classes_in_label_order():
    classes = get_benchmark("openood-cifar100").id_classes()
    assert classes is not None and len(classes) == 100
    assert classes.names[:3] == ("apple", "aquarium fish", "baby") and classes.names[-1] == "worm"
    assert list(classes.names) == sorted(classes.names)  # CIFAR-100's fine labels are alphabetical
    assert [s.name for s in get_benchmark("openood-cifar100").sets][:2] == ["cifar10", "tin"]


#: OpenOOD v1.5's ImageNet-1k lists for its full-spectrum setting (benchmark_imglist/imagenet/, under
#: images_largescale/; Textures under images_classic/): csid lists hold ID labels, OOD lists -1
FS_LISTS = {
    "benchmark_imglist/imagenet/test_imagenet.txt": [
        "imagenet_1k/val/ILSVRC2012_val_00000001.JPEG 65",
        "imagenet_1k/val/ILSVRC2012_val_00000002.JPEG 970",
    ],
    "benchmark_imglist/imagenet/test_imagenet_v2.txt": ["imagenet_v2/0/7e5b1e0f.jpeg 0"],
    "benchmark_imglist/imagenet/test_imagenet_c.txt": ["imagenet_c/blur/5/n01440764/ILSVRC2012_val_00000293.JPEG 0"],
    "benchmark_imglist/imagenet/test_imagenet_r.txt": [
        "imagenet_r/n01443537/art_0.jpg 1",
        "imagenet_r/n01443537/a.jpg 1",
    ],
    "benchmark_imglist/imagenet/test_imagenet_es.txt": ["imagenet_es/param_control/l1/n01440764/1.JPEG 0"],
    "benchmark_imglist/imagenet/test_ssb_hard.txt": ["ssb_hard/n00470682/n00470682_10155.JPEG -1"],
    "benchmark_imglist/imagenet/test_ninco.txt": ["ninco/caracal/caracal_001_1055418.jpeg -1"],
    "benchmark_imglist/imagenet/test_inaturalist.txt": ["inaturalist/0155c1e3bcd9ab4b2ad0bc1f9aa61d77.jpg -1"],
    "benchmark_imglist/imagenet/test_textures.txt": ["texture/banded/banded_0002.jpg -1"],
    "benchmark_imglist/imagenet/test_openimage_o.txt": ["openimage_o/000a1249af2bc5f0.jpg -1"],
}


def test_openood_full_spectrum_joins_the_covariate_shifted_sets_to_the_id_set(tmp_path):
    write_lists(tmp_path, FS_LISTS, "images_largescale")
    sets = open_benchmark("openood-fs", tmp_path)
    assert list(sets) == ["ssb-hard", "ninco", "inaturalist", "textures", "openimage-o"]
    idset = sets.id
    assert idset is not None and len(idset) == 2 + 1 + 1 + 2 + 1
    assert idset.info["csid"] == {"imagenet-v2": 1, "imagenet-c": 1, "imagenet-r": 2, "imagenet-es": 1}
    assert idset.labels == ["65", "970", "0", "0", "1", "1", "0"]
    plain = open_benchmark("openood", tmp_path).id
    assert plain is not None and idset.ids[:2] == plain.ids and idset.paths[:2] == plain.paths
    assert idset.ids[2].startswith("imagenet-v2/") and len(set(idset.ids)) == len(idset.ids)
    assert id_classes_of(idset) is None  # ImageNet-1k: the default label space
    # as --ood openood-fs=ROOT opens it (no --id): the same joined ID set
    given = open_ood_sets([f"openood-fs={tmp_path}"]).id
    assert given is not None and given.ids == idset.ids and given.info["csid"] == idset.info["csid"]


@pytest.mark.parametrize(
    ("bench", "id_folder", "ood_folder", "n_classes"),
    [
        ("imagenet10-vs-imagenet20", "ImageNet10/val", "ImageNet20/val", 10),
        ("imagenet20-vs-imagenet10", "ImageNet20/val", "ImageNet10/train", 20),
        ("imagenet100-vs-imagenet10", "ImageNet100/val", "ImageNet10/train", 100),
    ],
)
def test_hard_ood_splits_open_mcms_class_folders(tmp_path, bench, id_folder, ood_folder, n_classes):
    b = get_benchmark(bench)
    classes = b.id_classes()
    assert classes is not None and len(classes) == n_classes and list(classes.wnids) == sorted(classes.wnids)
    # MCM's layout: ImageFolder class folders named by wnid (create_imagenet_subset.py)
    for k, wnid in enumerate(classes.wnids[:2]):
        _image(tmp_path / id_folder / wnid / f"{wnid}_{k}.JPEG", k)
    _image(tmp_path / ood_folder / "n04552348" / "n04552348_1.JPEG", 9)
    _image(tmp_path / ood_folder / "n02951358" / "n02951358_1.JPEG", 8)
    sets = open_ood_sets([f"{bench}={tmp_path}"])
    assert sets.id is not None and sets.id.labels == list(classes.wnids[:2])
    assert [len(s) for s in sets.values()] == [2] and list(sets.groups.values()) == ["near"]
    assert id_classes_of(sets.id) == classes


def test_openood_vlm_imagenet10_split_opens_near_and_far(tmp_path):
    b = get_benchmark("imagenet10-vs-imagenet100")
    classes = b.id_classes()
    assert classes is not None and len(classes) == 10
    _image(tmp_path / "ImageNet10/val" / classes.wnids[0] / "a.JPEG", 0)
    _image(tmp_path / "ImageNet20/val/n04147183/b.JPEG", 1)
    _image(tmp_path / "ImageNet100/val/n01498041/c.JPEG", 2)
    _image(tmp_path / "ImageNet100/val/n01518878/d.JPEG", 3)
    sets = open_ood_sets([f"imagenet10-vs-imagenet100={tmp_path}"])
    assert sets.groups == {"imagenet-20": "near", "imagenet-100": "far"}
    assert [len(s) for s in sets.values()] == [1, 2] and sets.id is not None and len(sets.id) == 1


#: who pairs which hard-OOD split, read from the sources: MCM's eval_ood_detection.py (out_datasets per
#: in_dataset: ImageNet10 -> ImageNet20, ImageNet20 -> ImageNet10, ImageNet100 -> the MOS four) and
#: OpenOOD-VLM's configs/datasets/hardood/imagenet_100.yml (ImageNet-10) and imagenet_10.yml (ImageNet-20, -100)
PAIRED_BY = {
    "imagenet10-vs-imagenet20": "Ming et al., MCM",
    "imagenet20-vs-imagenet10": "Ming et al., MCM",
    "imagenet100-vs-imagenet10": "OpenOOD-VLM",
    "imagenet10-vs-imagenet100": "OpenOOD-VLM",
}


@pytest.mark.parametrize(("bench", "credit"), sorted(PAIRED_BY.items()))
def test_hard_ood_splits_credit_who_paired_them(bench, credit):
    b = get_benchmark(bench)
    assert b.source.startswith(credit), b.source
    if credit == "OpenOOD-VLM":
        assert "OpenOOD-VLM" in b.title and "configs/datasets/hardood/imagenet_1" in b.source


#: MCM's data/ImageNet10/ImageNet-10-classlist.csv and data/ImageNet20/ImageNet-20-classlist.csv (commit ea7130f),
#: its names written without spaces: the shipped lists take MCM's names from utils/common.py, with spaces
MCM_CSV = {
    "imagenet10_mcm": "n04552348,warplane n04285008,sportscar n01530575,bramblingbird n02123597,Siamesecat "
    "n02422699,antelope n02107574,swissmountaindog n01641577,bullfrog n03417042,garbagetruck n02389026,horse "
    "n03095699,containership",
    "imagenet20_mcm": "n04147183,sailboat n02951358,canoe n02782093,balloon n04389033,tank n03773504,missile "
    "n02917067,bullettrain n02317335,starfish n01632458,spottedsalamander n01630670,commonnewt n01631663,eft "
    "n02391049,zebra n01693334,greenlizard n01697457,Africancrocodile n02120079,Arcticfox n02114367,timberwolf "
    "n02132136,brownbear n03785016,moped n04310018,steamlocomotive n04266014,spaceshuttle n04252077,snowmobile",
}


@pytest.mark.parametrize("name", ["imagenet10_mcm", "imagenet20_mcm", "imagenet100_mcm"])
def test_mcm_class_names_ship_for_the_hard_ood_splits(name):
    from negvocab.data.label_space import open_label_space

    classes = open_label_space(name).classes
    plain = get_benchmark({"imagenet10_mcm": "imagenet10-vs-imagenet20", "imagenet20_mcm": "imagenet20-vs-imagenet10",
                           "imagenet100_mcm": "imagenet100-vs-imagenet10"}[name]).id_classes()  # fmt: skip
    assert plain is not None and classes.wnids == plain.wnids  # the benchmark's classes, in its label order
    if name in MCM_CSV:
        csv = dict(x.split(",") for x in MCM_CSV[name].split())
        assert {w: n.replace(" ", "") for w, n in zip(classes.wnids, classes.names, strict=True)} == csv
        assert classes.names != plain.names  # MCM's own names, not negvocab's ImageNet-1k ones
    else:  # Keras's imagenet_class_index.json names, as MCM's obtain_ImageNet100_classes reads them
        named = dict(zip(classes.wnids, classes.names, strict=True))
        assert [named[w] for w in ("n01498041", "n03000684", "n02113186")] == ["stingray", "chain saw", "Cardigan"]


def test_the_hard_ood_splits_do_not_overlap():
    """MCM's ImageNet-10 shares no class with its ImageNet-20 or ImageNet-100 (else an 'OOD' image is ID)."""
    w = {
        n: set(get_benchmark(f"imagenet{n}-vs-imagenet{o}").id_classes().wnids)
        for n, o in ((10, 20), (20, 10), (100, 10))
    }
    assert not w[10] & w[20] and not w[10] & w[100]


def test_ninco_all_opens_ninco_s_own_folders(tmp_path):
    for k, rel in enumerate(
        [
            "NINCO/NINCO_OOD_classes/caracal/caracal_001_1055418.jpeg",
            "NINCO/NINCO_OOD_classes/amphiuma_means/amphiuma_means_000_10045958.jpeg",
            "NINCO/NINCO_OOD_unit_tests/noise/black/black_0.png",
            "NINCO/NINCO_popular_datasets_subsamples/SSB_hard/n00470682_10155.JPEG",
            "ImageNet/val/n01440764/ILSVRC2012_val_00000293.JPEG",
        ]
    ):
        _image(tmp_path / rel, k)
    sets = open_benchmark("ninco-all", tmp_path)
    assert {n: len(s) for n, s in sets.items()} == {"ninco": 2, "ninco-unit-tests": 1, "ninco-popular": 1}
    assert sets.groups == {"ninco": "near", "ninco-unit-tests": "other", "ninco-popular": "other"}
    assert sets.id is not None and len(sets.id) == 1


def test_a_plain_dataset_name_stays_a_users_own_set(tmp_path):
    """--ood cifar10=PATH is a folder named cifar10, never the benchmark (whose name says openood-)."""
    _image(tmp_path / "a.png", 0)
    sets = open_ood_sets([f"cifar10={tmp_path}", f"ninco={tmp_path}"], id_path=tmp_path)
    assert list(sets) == ["cifar10", "ninco"] and set(sets.groups.values()) == {None}
