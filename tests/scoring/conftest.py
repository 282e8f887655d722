"""Fixtures for the end-to-end tests: tiny generated images, a small ID label space, a shared cache."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

ID_NAMES = ["goldfish", "tench", "great white shark", "rooster", "hen", "ostrich", "goldfinch", "robin"]
NEG_A = ["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "carpet", "lamp", "river", "castle"]
NEG_B = ["moss", "jelly", "kettle", "ladder", "tower", "glacier", "piano", "chair"]


def _save(path, rng, size=32):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(path)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Folders and files: id/ (6 images), ood/<class>/ (4 images), val/<wnid>/ILSVRC2012_val_*.JPEG (8),
    classes.txt, negA.txt, negB.txt, and a shared embedding cache dir."""
    import negvocab

    root = tmp_path_factory.mktemp("tiny")
    rng = np.random.default_rng(0)
    for i in range(6):
        _save(root / "id" / f"id{i}.png", rng)
    for i, cls in enumerate(["paper_towel_holder", "goldfish", "paper_towel_holder", "kite_toy"]):
        _save(root / "ood" / cls / f"o{i}.png", rng)
    wnids = negvocab.imagenet1k().wnids
    for i in range(1, 9):
        _save(root / "val" / wnids[i % 2] / f"ILSVRC2012_val_{i:08d}.JPEG", rng)
    (root / "classes.txt").write_text("\n".join(ID_NAMES) + "\n")
    (root / "negA.txt").write_text("\n".join(NEG_A) + "\n")
    (root / "negB.txt").write_text("\n".join(NEG_B) + "\n")
    (root / "cache").mkdir()
    return root


#: CLI options for a random ViT-B-32 on the CPU with one template (add --cache-dir and, if needed, --id-classes)
RANDOM_VIT = ["--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--templates", "single"]


@pytest.fixture
def model_args(tiny):
    """CLI options for a random ViT-B-32 on the CPU with one template and the small ID label space."""
    return [
        "--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--templates", "single",
        "--id-classes", str(tiny / "classes.txt"), "--cache-dir", str(tiny / "cache"),
    ]  # fmt: skip
