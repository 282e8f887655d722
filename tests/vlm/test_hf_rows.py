"""Images from Hugging Face ``datasets`` rows (an ``image`` field: a PIL image or an undecoded
{"bytes", "path"} dict) are accepted like torchvision datasets; ``datasets`` itself is not needed."""

from __future__ import annotations

import numpy as np
from PIL import Image


def test_rows_with_an_image_field_encode_like_the_files(tiny, image_dir):
    files = [image_dir / "img0.jpg", image_dir / "img1.png", image_dir / "sub" / "gray.png"]
    with Image.open(files[0]) as im:
        pil = im.copy()  # a decoded row: Image(decode=True), the datasets default
    rows = [
        {"image": pil, "label": 3, "id": "a"},
        {"image": {"bytes": files[1].read_bytes(), "path": "img1.png"}, "label": 1},  # Image(decode=False)
        {"image": {"bytes": None, "path": str(files[2])}, "label": 0, "image_id": 17},
        {"image": {"bytes": b"\x89PNG not really", "path": "bad.png"}, "label": 2},  # corrupt: reported, skipped
    ]
    emb = tiny.encode_images(rows, num_workers=0)
    direct = tiny.encode_images([str(f) for f in files], num_workers=0)
    np.testing.assert_allclose(emb.embeddings, direct.embeddings, atol=1e-5, rtol=0)
    assert list(emb.ids) == ["a", "1", "17"]  # named by id / image_id, else by index
    assert len(emb.failed) == 1 and "3" in str(emb.failed[0])
