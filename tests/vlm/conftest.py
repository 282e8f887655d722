"""Session-scoped random-weight models (built once) and tiny image folders for the vlm tests."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")

# a spread of prompt lengths: one word, multi-word, punctuation, unicode, long (over 20 tokens)
LABELS = [
    "goldfish",
    "tench",
    "x",
    "umbrella",
    "great white shark",
    "café au lait",
    "hot-air balloon",
    "a very long label that goes on and on with many words so the prompt is far longer than the rest",
    "red",
    "Entlebucher Sennenhund",
    "traffic light",
    "zebra's stripes",
    "mountain bike",
    "night sky over the sea",
    "o",
    "electric guitar",
    "snow",
    "kite",
    "chain mail",
    "lighthouse",
]


@pytest.fixture(scope="session", autouse=True)
def _few_threads():
    """The machine is shared: two threads are enough for these tests."""
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="session")
def vit():
    """Random-weight ViT-B-32 (no cache)."""
    from negvocab.vlm.model import VLM

    return VLM("ViT-B-32", random_weights=True, device="cpu", cache=False)


@pytest.fixture(scope="session")
def rn50():
    """Random-weight RN50 (no cache)."""
    from negvocab.vlm.model import VLM

    return VLM("RN50", random_weights=True, device="cpu", cache=False)


def tiny_clip(*, causal: bool = True, seed: int = 0):
    """A small open_clip model (ViT image tower, 2-layer text tower) built in memory.

    ``causal=False`` gives a SigLIP-style CustomTextCLIP text tower: no causal mask, 'last' pooling.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        vision = dict(image_size=32, patch_size=8, width=64, layers=2, head_width=32)
        text = dict(context_length=77, vocab_size=49408, width=64, heads=2, layers=2)
        if causal:
            model = open_clip.CLIP(embed_dim=32, vision_cfg=vision, text_cfg=text)
        else:
            text.update(no_causal_mask=True, pool_type="last", proj_bias=True)
            model = open_clip.CustomTextCLIP(embed_dim=32, vision_cfg=vision, text_cfg=text)
    return model.eval()


def make_tiny_vlm(tmp_path=None, *, causal: bool = True, seed: int = 0, cache: bool = True):
    from negvocab.vlm.model import VLM

    return VLM.from_model(
        tiny_clip(causal=causal, seed=seed),
        open_clip.get_tokenizer("ViT-B-32"),
        name=f"tiny-{'causal' if causal else 'bidirectional'}",
        random_weights=True,
        device="cpu",
        cache_dir=None if tmp_path is None else tmp_path / "emb",
        cache=cache,
    )


@pytest.fixture
def tiny(tmp_path):
    """A tiny causal CLIP with a private embedding cache."""
    return make_tiny_vlm(tmp_path)


@pytest.fixture
def image_dir(tmp_path):
    """A folder of 5 tiny images (PNG/JPEG, one in a subfolder) and one corrupt file."""
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    (root / "sub").mkdir(parents=True)
    paths = []
    for i in range(4):
        p = root / f"img{i}.{'png' if i % 2 else 'jpg'}"
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(p)
        paths.append(p)
    p = root / "sub" / "gray.png"
    Image.fromarray(rng.integers(0, 255, (40, 24), dtype=np.uint8)).save(p)  # grayscale, non-square
    paths.append(p)
    (root / "broken.jpg").write_bytes(b"\xff\xd8 this is not a jpeg " * 8)
    (root / "notes.txt").write_text("not an image")
    return root
