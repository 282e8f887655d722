"""Fixtures shared with the folders these tests came from (one definition each, imported here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.scoring.conftest import model_args, tiny  # noqa: F401

#: image-list lines shaped as OpenOOD v1.5's benchmark_imglist/imagenet/test_*.txt ("path label", -1 for OOD),
#: paths relative to images_largescale/ (Textures: images_classic/), as scripts/download/download.py lays them out
OPENOOD_LISTS = {
    "test_imagenet.txt": [
        "imagenet_1k/val/ILSVRC2012_val_00000001.JPEG 65",
        "imagenet_1k/val/ILSVRC2012_val_00000002.JPEG 970",
        "imagenet_1k/val/ILSVRC2012_val_00000003.JPEG 230",
    ],
    "test_ssb_hard.txt": ["ssb_hard/n00470682/n00470682_10155.JPEG -1", "ssb_hard/n02655523/n02655523_1002.JPEG -1"],
    "test_ninco.txt": [
        "ninco/amphiuma_means/amphiuma_means_000_10045958.jpeg -1",
        "ninco/caracal/caracal_001_1055418.jpeg -1",
        "ninco/caracal/caracal_002_1057750.jpeg -1",
    ],
    "test_inaturalist.txt": [
        "inaturalist/0155c1e3bcd9ab4b2ad0bc1f9aa61d77.jpg -1",
        "inaturalist/02a9a5ba5a5c2b21e5e0e0b6ea45a9c4.jpg -1",
    ],
    "test_textures.txt": ["texture/banded/banded_0002.jpg -1", "texture/bubbly/bubbly_0038.jpg -1"],
    "test_openimage_o.txt": [
        "openimage_o/000a1249af2bc5f0.jpg -1",
        "openimage_o/0017e4a25c3e8b8b.jpg -1",
        "openimage_o/001b5b3a1f4f0f5e.jpg -1",
    ],
}


def _image(path, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(path, format="JPEG")


@pytest.fixture(scope="session")
def openood_root(tmp_path_factory):
    """A tiny OpenOOD v1.5 data root: benchmark_imglist/imagenet/*.txt, images_largescale/, images_classic/."""
    root = tmp_path_factory.mktemp("openood")
    lists = root / "benchmark_imglist" / "imagenet"
    lists.mkdir(parents=True)
    for i, (name, lines) in enumerate(OPENOOD_LISTS.items()):
        (lists / name).write_text("\n".join(lines) + "\n")
        for j, line in enumerate(lines):
            rel = line.rsplit(" ", 1)[0]
            _image(root / ("images_classic" if name == "test_textures.txt" else "images_largescale") / rel, 100 * i + j)
    return root


@pytest.fixture(scope="session")
def mos_root(tmp_path_factory):
    """The MOS four as MCM and NegLabel read them (ImageFolder on iNaturalist/, SUN/, Places/; dtd/images/<class>/),
    and ImageNet-O (imagenet-o/<wnid>/*.jpg beside its README.txt)."""
    root = tmp_path_factory.mktemp("mos")
    files = [
        "iNaturalist/images/0a3b1c0c8b2dd0e1ba0b5e5b7a4e2f04.jpg",
        "iNaturalist/images/0b1e5a9a0c1f0c2b3d4e5f6a7b8c9d0e.jpg",
        "SUN/images/sun_aaaenpfahrjbnbcn.jpg",
        "Places/images/b_badlands_00000019.jpg",
        "Places/images/c_canyon_00001203.jpg",
        "dtd/images/banded/banded_0002.jpg",
        "dtd/images/zigzagged/zigzagged_0116.jpg",
        "dtd/images/zigzagged/zigzagged_0133.jpg",
        "imagenet-o/n01443537/n01443537_1.jpg",
        "imagenet-o/n01704323/n01704323_7.jpg",
    ]
    for i, f in enumerate(files):
        _image(root / f, i)
    (root / "imagenet-o" / "README.txt").write_text("ImageNet-O: 2000 images from 200 classes\n")
    return root


# -- the catalog benchmarks (tests/data/test_benchmark_catalog.py, tests/cli/test_benchmark_catalog.py) --
def png(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(path)


def write_lists(root: Path, lists: dict[str, list[str]], image_dir: str) -> None:
    """Image lists as OpenOOD ships them (``benchmark_imglist/<id>/<name>.txt``: ``path label`` lines, paths
    under ``images_classic/`` or ``images_largescale/``), with an 8x8 image for every line."""
    for i, (name, lines) in enumerate(lists.items()):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("\n".join(lines) + "\n")
        for j, line in enumerate(lines):
            folder = "images_classic" if "texture" in name else image_dir
            png(root / folder / line.rsplit(" ", 1)[0], 100 * i + j)


#: OpenOOD v1.5's CIFAR-10 lists (benchmark_imglist/cifar10/, under images_classic/): label = CIFAR-10 index
CIFAR10_LISTS = {
    "benchmark_imglist/cifar10/test_cifar10.txt": [
        "cifar10/test/airplane/0298.png 0",
        "cifar10/test/cat/0013.png 3",
        "cifar10/test/truck/0100.png 9",
    ],
    "benchmark_imglist/cifar10/test_cifar100.txt": ["cifar100/test/apple/0001.png -1", "cifar100/test/bee/0021.png -1"],
    "benchmark_imglist/cifar10/test_tin.txt": ["tin/test/n01443537/test_3.JPEG -1"],
    "benchmark_imglist/cifar10/test_mnist.txt": ["mnist/test/7/0000.png -1", "mnist/test/2/0001.png -1"],
    "benchmark_imglist/cifar10/test_svhn.txt": ["svhn/test/1/00012.png -1"],
    "benchmark_imglist/cifar10/test_texture.txt": ["texture/banded/banded_0002.jpg -1"],
    "benchmark_imglist/cifar10/test_places365.txt": ["places365/airfield/00000123.jpg -1"],
}


@pytest.fixture(scope="module")
def cifar10_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("openood_cifar10")
    write_lists(root, CIFAR10_LISTS, "images_classic")
    return root


# -- the fine-grained and spurious benchmarks (tests/data/test_finegrained_benchmarks.py, tests/cli/) --
#: lines of CUB-200-2011's own tables (CUB_200_2011/images.txt, image_class_labels.txt, train_test_split.txt):
#: images 1 and 2 as the dataset lists them (1 test, 2 train); 5001 (087.Mallard) is a real file name, its id ours
CUB_IMAGES = [
    "1 001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg",
    "2 001.Black_footed_Albatross/Black_Footed_Albatross_0009_34.jpg",
    "5001 087.Mallard/Mallard_0123_76653.jpg",
]
CUB_LABELS = ["1 1", "2 1", "5001 87"]
CUB_SPLIT = ["1 0", "2 1", "5001 0"]
#: Food-101's meta/test.txt lines (class/image, no extension); meta/test.json holds the same lists by class
FOOD_TEST = ["apple_pie/1011328", "apple_pie/101251", "cheese_plate/1001116", "waffles/971843"]
#: Oxford-IIIT Pet's annotations/test.txt lines (image CLASS-ID SPECIES BREED-ID; 1: cat, 2: dog; no '#' header,
#: which only list.txt has)
PETS_TEST = [
    "Abyssinian_201 1 1 1",
    "Abyssinian_202 1 1 1",
    "american_bulldog_10 2 2 1",
    "yorkshire_terrier_190 37 2 25",
]
#: Stanford Cars' cars_test_annos_withlabels.mat rows: (bbox x1, y1, x2, y2, class 1..196, fname)
CARS_TEST = [
    (30, 52, 246, 147, 181, "00001.jpg"),
    (100, 19, 576, 203, 103, "00002.jpg"),
    (51, 105, 968, 659, 145, "00003.jpg"),
]
#: Waterbirds' metadata.csv (group DRO's header; y 1 waterbird, split 2 test, place 1 water), rows after its generator
WATERBIRDS_CSV = [
    "img_id,img_filename,y,split,place,place_filename",
    "1,001.Black_footed_Albatross/Black_Footed_Albatross_0046_18.jpg,1,2,1,/o/ocean/00002178.jpg",
    "2,001.Black_footed_Albatross/Black_Footed_Albatross_0009_34.jpg,1,0,1,/l/lake/natural/00000065.jpg",
    "1010,017.Cardinal/Cardinal_0001_17057.jpg,0,2,1,/o/ocean/00003160.jpg",
    "1011,017.Cardinal/Cardinal_0002_19155.jpg,0,2,0,/b/bamboo_forest/00000251.jpg",
]
#: the OOD sets as MCM reads them under ROOT/ImageNet_OOD_dataset (ImageFolder: one folder level of classes)
MCM_OOD = [
    "ImageNet_OOD_dataset/iNaturalist/images/0a3b1c0c8b2dd0e1ba0b5e5b7a4e2f04.jpg",
    "ImageNet_OOD_dataset/SUN/images/sun_aaaenpfahrjbnbcn.jpg",
    "ImageNet_OOD_dataset/SUN/images/sun_aabvfvhkbtanvpqd.jpg",
    "ImageNet_OOD_dataset/Places/images/b_badlands_00000019.jpg",
    "ImageNet_OOD_dataset/dtd/images/banded/banded_0002.jpg",
    "ImageNet_OOD_dataset/placesbg/land/00000251.jpg",
    "ImageNet_OOD_dataset/placesbg/water/00002178.jpg",
]


def _lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def make_finegrained_root(root: Path) -> Path:
    """A tiny MCM data root holding each fine-grained ID set in its real layout and list format, Waterbirds and
    the OOD sets, an 8x8 image for every listed file."""
    import json

    from scipy.io import savemat

    from negvocab.data.benchmarks import classes_file

    cub = root / "CUB_200_2011"
    _lines(cub / "images.txt", CUB_IMAGES)
    _lines(cub / "image_class_labels.txt", CUB_LABELS)
    _lines(cub / "train_test_split.txt", CUB_SPLIT)
    files = [f"CUB_200_2011/images/{line.split()[1]}" for line in CUB_IMAGES]
    food = root / "food-101"
    names = [x for x in classes_file("food101").read_text().splitlines() if not x.startswith("#")]
    _lines(food / "meta" / "classes.txt", [x.replace(" ", "_") for x in names])
    _lines(food / "meta" / "test.txt", FOOD_TEST)
    by_class: dict[str, list[str]] = {x.replace(" ", "_"): [] for x in names}  # every class, as the real file
    for line in FOOD_TEST:
        by_class.setdefault(line.split("/")[0], []).append(line)
    (food / "meta" / "test.json").write_text(json.dumps(dict(sorted(by_class.items(), key=lambda kv: -len(kv[1])))))
    files += [f"food-101/images/{line}.jpg" for line in FOOD_TEST]
    _lines(root / "oxford-iiit-pet" / "annotations" / "test.txt", PETS_TEST)
    files += [f"oxford-iiit-pet/images/{line.split()[0]}.jpg" for line in PETS_TEST if not line.startswith("#")]
    cars = root / "stanford_cars"
    (cars / "devkit").mkdir(parents=True)
    fields = ["bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname"]
    rec = np.zeros((1, len(CARS_TEST)), dtype=[(f, "O") for f in fields])
    for i, (*box, cls, fname) in enumerate(CARS_TEST):
        rec[0, i] = (*(np.array([[v]], dtype=np.uint16) for v in box), np.array([[cls]], dtype=np.uint8), fname)
    savemat(cars / "cars_test_annos_withlabels.mat", {"annotations": rec})
    car_names = [x for x in classes_file("stanford_cars").read_text().splitlines() if not x.startswith("#")]
    savemat(cars / "devkit" / "cars_meta.mat", {"class_names": np.array([car_names], dtype=object)})
    files += [f"stanford_cars/cars_test/{row[-1]}" for row in CARS_TEST]
    _lines(root / "waterbird_complete95_forest2water2" / "metadata.csv", WATERBIRDS_CSV)
    files += [f"waterbird_complete95_forest2water2/{row.split(',')[1]}" for row in WATERBIRDS_CSV[1:]]
    for i, f in enumerate([*files, *MCM_OOD]):
        png(root / f, 300 + i)
    return root


@pytest.fixture(scope="module")
def finegrained_root(tmp_path_factory):
    return make_finegrained_root(tmp_path_factory.mktemp("mcm_root"))
