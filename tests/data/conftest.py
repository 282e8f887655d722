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
