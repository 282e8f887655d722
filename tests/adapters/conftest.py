"""A tiny random-weight open_clip model (built in memory, as tests/vlm), its ID classes, a vocabulary
and image batches."""

from __future__ import annotations

import pytest

from tests.vlm.conftest import make_tiny_vlm

torch = pytest.importorskip("torch")

ID = ["goldfish", "tench", "great white shark", "rooster", "hen"]
NEG = [
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
    "kettle",
    "glacier",
]


@pytest.fixture(scope="session")
def vlm():
    return make_tiny_vlm(cache=False)


@pytest.fixture(scope="session")
def batches():
    """Preprocessed batches as a DataLoader yields them: an 'ID' and an 'OOD' batch of 32x32 images."""
    g = torch.Generator().manual_seed(0)
    return torch.randn(6, 3, 32, 32, generator=g), torch.randn(5, 3, 32, 32, generator=g) * 1.5 + 0.3
