"""A tiny grid on disk: a 2-layer open_clip architecture (random weights), 32x32 images, small label files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from tests.data.conftest import cifar10_root  # noqa: F401 (a fixture: OpenOOD v1.5 CIFAR-10 lists)

ID_NAMES = ["goldfish", "tench", "great white shark", "rooster", "hen", "ostrich", "goldfinch", "robin"]
VOCAB_A = [
    "sofa",
    "mountain",
    "cloud",
    "bridge",
    "violin",
    "spoon",
    "carpet",
    "lamp",
    "river",
    "castle",
    "moss",
    "jelly",
]
VOCAB_B = ["kettle", "ladder", "tower", "glacier", "piano", "chair", "comet", "harbor"]
TINY = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


def _images(folder, n, rng):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"im{i:03d}.png")


@pytest.fixture(scope="session")
def grid_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("gridfiles")
    rng = np.random.default_rng(0)
    _images(root / "id", 24, rng)
    for name, n in (("oodA", 10), ("oodB", 7), ("oodC", 9)):
        _images(root / name, n, rng)
    (root / "TinyA.json").write_text(json.dumps(TINY))
    (root / "TinyB.json").write_text(json.dumps({**TINY, "embed_dim": 24}))
    (root / "classes.txt").write_text("\n".join(ID_NAMES) + "\n")
    (root / "vocabA.txt").write_text("\n".join(VOCAB_A) + "\n")
    (root / "vocabB.txt").write_text("\n".join(VOCAB_B) + "\n")
    return root


GRID_TOML = """
[grid]
templates = "single"
id_classes = "classes.txt"
conventions = ["paper", "openood"]
n_boot = 20
device = "cpu"
cache_dir = "{cache}"

[[models]]
name = "TinyA"
model_config = "TinyA.json"
random_weights = true

[[models]]
name = "TinyB"
model_config = "TinyB.json"
random_weights = true
seed = 1

[id]
path = "id"

[ood]
oodA = "oodA"
oodB = "oodB"
oodC = "oodC"

[vocabularies]
A = {{ file = "vocabA.txt", sizes = [4, 8, 12] }}
B = "vocabB.txt"

[[methods]]
name = "neglabel"
params = {{ groups = 2 }}

[[methods]]
name = "mcm"
"""


@pytest.fixture
def grid_toml(grid_files, tmp_path):
    path = grid_files / f"grid_{tmp_path.name}.toml"
    path.write_text(GRID_TOML.format(cache=tmp_path / "cache"))
    return path
