"""The fine-grained benchmarks (MCM's CUB-200, Stanford Cars, Food-101 and Oxford-IIIT Pet against the MOS four) and
Waterbirds' spurious OOD, each opened from a tiny root built from the datasets' real list formats
(tests/data/conftest.py), compared with the readers their authors use: torchvision's own ``Food101``,
``OxfordIIITPet`` and ``StanfordCars`` (which MCM's dataloaders/ copy), and hand loops that follow MCM's
``Cub2011`` and Spurious_OOD's ``WaterbirdDataset`` line by line (those repositories carry no licence)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from negvocab.data.benchmarks import get_benchmark, id_classes_of, open_benchmark
from negvocab.data.ood_specs import open_ood_sets

FINE = ["finegrained-cub200", "finegrained-stanford-cars", "finegrained-food101", "finegrained-oxford-pets"]


@pytest.mark.parametrize(
    ("bench", "n", "spots"),
    [
        # CUB-200-2011 classes.txt: 001.Black_footed_Albatross, 087.Mallard, 200.Common_Yellowthroat (MCM's spelling)
        ("finegrained-cub200", 200, {0: "Black footed Albatross", 86: "Mallard", 199: "Common Yellowthroat"}),
        # cars_meta.mat class_names (as CLIP's data/prompts.md lists them): class 1, 181, 196
        ("finegrained-stanford-cars", 196,
         {0: "AM General Hummer SUV 2000", 180: "Suzuki Aerio Sedan 2007", 195: "smart fortwo Convertible 2012"}),
        # Food-101 meta/classes.txt: cheese_plate sorts before cheesecake (MCM's hard-coded list swaps the two)
        ("finegrained-food101", 101, {0: "apple pie", 16: "cheese plate", 17: "cheesecake", 100: "waffles"}),
        # Oxford-IIIT Pet list.txt CLASS-ID 1, 2, 33, 37 (MCM/torchvision: the image prefix, parts title-cased)
        ("finegrained-oxford-pets", 37,
         {0: "Abyssinian", 1: "American Bulldog", 32: "Siamese", 36: "Yorkshire Terrier"}),
        ("waterbirds-spurious", 2, {0: "landbird", 1: "waterbird"}),
    ],
)  # fmt: skip
def test_the_class_lists_have_the_published_counts_and_names(bench, n, spots):
    b = get_benchmark(bench)
    classes = b.id_classes()
    assert classes is not None and len(classes) == n and len(set(classes.names)) == n
    assert {i: classes.names[i] for i in spots} == spots
    assert b.classes_source()  # each file names where its names come from


def test_the_pets_classes_follow_the_datasets_class_ids():
    """list.txt numbers the breeds alphabetically ignoring case (Abyssinian 1, american_bulldog 2, ..., Bengal 6)."""
    names = get_benchmark("finegrained-oxford-pets").id_classes().names
    assert [x.lower() for x in names] == sorted(x.lower() for x in names)
    assert names[5] == "Bengal" and names[20] == "Maine Coon"


@pytest.mark.parametrize("bench", [*FINE, "waterbirds-spurious"])
def test_each_benchmark_opens_its_id_set_and_ood_sets(finegrained_root, bench):
    sets = open_ood_sets([f"{bench}={finegrained_root}"])  # as --ood BENCH=ROOT opens it: no id_path
    if bench == "waterbirds-spurious":
        assert {n: len(s) for n, s in sets.items()} == {"placesbg": 2} and sets.groups == {"placesbg": "other"}
    else:
        assert {n: len(s) for n, s in sets.items()} == {"inaturalist": 1, "sun": 2, "places": 1, "textures": 1}
        assert set(sets.groups.values()) == {"far"}
    assert sets.id is not None and sets.id.info["layout"] == "table"
    classes = id_classes_of(sets.id)
    assert classes is not None and classes == get_benchmark(bench).id_classes()
    assert all(0 <= int(x) < len(classes) for x in sets.id.labels or ["-"])


def test_cub_reads_the_test_split_as_mcms_cub2011_does(finegrained_root):
    """MCM's Cub2011(train=False): images.txt merged with image_class_labels.txt and train_test_split.txt on img_id,
    is_training_img == 0 kept, target = class - 1, path = CUB_200_2011/images/filepath (followed here by hand)."""
    cub = finegrained_root / "CUB_200_2011"

    def table(name):
        return dict(line.split() for line in (cub / name).read_text().splitlines())

    images, labels, split = table("images.txt"), table("image_class_labels.txt"), table("train_test_split.txt")
    want = [(str(cub / "images" / f), str(int(labels[i]) - 1)) for i, f in images.items() if int(split[i]) == 0]
    got = open_benchmark("finegrained-cub200", finegrained_root).id
    assert list(zip(got.paths, got.labels, strict=True)) == want and len(want) == 2
    names = get_benchmark("finegrained-cub200").id_classes().names
    assert [names[int(x)] for x in got.labels] == ["Black footed Albatross", "Mallard"]


def test_food101_matches_torchvisions_food101_test_split(finegrained_root):
    """torchvision's Food101(split='test') reads meta/test.json; negvocab reads meta/test.txt: the same images and
    labels (torchvision's classes: the sorted folder names, Food-101's classes.txt order)."""
    from torchvision.datasets import Food101

    ref = Food101(str(finegrained_root), split="test")
    got = open_benchmark("finegrained-food101", finegrained_root).id
    assert sorted(zip(got.paths, map(int, got.labels), strict=True)) == sorted(
        zip(map(str, ref._image_files), ref._labels, strict=True)
    )
    names = get_benchmark("finegrained-food101").id_classes().names
    assert [names[int(x)] for x in got.labels] == ["apple pie", "apple pie", "cheese plate", "waffles"]


def test_pets_matches_torchvisions_oxford_iiit_pet_test_split(finegrained_root):
    from torchvision.datasets import OxfordIIITPet

    ref = OxfordIIITPet(str(finegrained_root), split="test")
    got = open_benchmark("finegrained-oxford-pets", finegrained_root).id
    assert got.paths == [str(p) for p in ref._images] and list(map(int, got.labels)) == ref._labels
    names = get_benchmark("finegrained-oxford-pets").id_classes().names
    # torchvision names the classes it saw the same way MCM does (its .classes, one per label present)
    assert {names[int(x)] for x in got.labels} == set(ref.classes)


def test_stanford_cars_matches_torchvisions_stanford_cars_test_split(finegrained_root):
    from torchvision.datasets import StanfordCars

    ref = StanfordCars(str(finegrained_root), split="test")
    got = open_benchmark("finegrained-stanford-cars", finegrained_root).id
    assert list(zip(got.paths, map(int, got.labels), strict=True)) == ref._samples
    names = get_benchmark("finegrained-stanford-cars").id_classes().names
    assert list(names) == ref.classes  # cars_meta.mat, as written into the fake root
    assert [names[int(x)] for x in got.labels][0] == "Suzuki Aerio Sedan 2007"


def test_waterbirds_reads_the_test_split_as_spurious_ood_does(finegrained_root):
    """Spurious_OOD's WaterbirdDataset(split='test'): metadata.csv rows with split == 2, y, dataset_dir/img_filename."""
    folder = finegrained_root / "waterbird_complete95_forest2water2"
    rows = list(csv.DictReader((folder / "metadata.csv").open()))
    want = [(str(folder / r["img_filename"]), r["y"]) for r in rows if int(r["split"]) == 2]
    got = open_benchmark("waterbirds-spurious", finegrained_root).id
    assert list(zip(got.paths, got.labels, strict=True)) == want and len(want) == 3
    assert [get_benchmark("waterbirds-spurious").id_classes().names[int(x)] for x in got.labels] == [
        "waterbird", "landbird", "landbird",
    ]  # fmt: skip


def test_a_missing_image_names_the_table_and_the_file(finegrained_root, tmp_path):
    from negvocab.core.errors import InputError
    from tests.data.conftest import make_finegrained_root

    root = make_finegrained_root(tmp_path)
    (root / "food-101" / "images" / "waffles" / "971843.jpg").unlink()
    with pytest.raises(InputError, match=r"test\.txt: 1 of 4 listed images do not exist \(first: .*971843\.jpg\)"):
        open_benchmark("finegrained-food101", root)
    assert Path(finegrained_root).is_dir()
