"""GL-MCM patch features: peak memory of ``encode_images(local_features=True)``, ours beside RAM.

GL-MCM needs [n, p, d] patch features: for ImageNet-1k val on ViT-B/16 that is float32
50,000 x 196 x 512 = 18.7 GiB. negvocab keeps patch features beyond ``LOCAL_RAM_BYTES`` (1 GiB) in a
memory-mapped temporary file and writes them to the embedding cache in pieces of at most
``IMAGE_PIECE_BYTES`` (256 MiB), so its peak memory does not grow with n. The baseline keeps them
in RAM the way GL-MCM's reference code does: per-batch features collected in a list, then
concatenated.

The model is a random-weight 2-layer ViT with ViT-B/16's patch grid and embedding size (196
patches of 512-d, 0.4 MB of features an image), so that a 2-core CPU makes gigabytes of features in
minutes: memory depends on the features, not on the depth. Each variant runs in a fresh
subprocess over the same tiny random PNGs; peak anonymous RSS (RSS less file-backed pages, which
the kernel can write back and drop) is sampled every 5 ms above the process's size once the model
is built.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _rss import PeakRSS

REAL_IMAGES = 50_000


def make_images(folder: Path, n: int) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"{i:06d}.png")


def child(variant: str, folder: str, cache: str) -> None:
    import open_clip
    import torch

    import negvocab
    import negvocab.vlm.images as images_mod

    vision = dict(image_size=224, patch_size=16, width=256, layers=2, head_width=64)
    text = dict(context_length=77, vocab_size=49408, width=64, heads=2, layers=1)
    torch.manual_seed(0)
    model = open_clip.CLIP(embed_dim=512, vision_cfg=vision, text_cfg=text).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    vlm = negvocab.VLM.from_model(model, tokenizer, name="vit-2layer-p16", random_weights=True, device="cpu",
                                  cache_dir=cache, cache=variant == "negvocab")  # fmt: skip
    files = images_mod.list_images(folder)
    vlm.encode_images(files[:2], num_workers=0)  # warm up the runtime before the baseline size
    with PeakRSS(anonymous=True) as rss:
        t = time.perf_counter()
        if variant == "negvocab":
            local = vlm.encode_images(files, local_features=True, progress=False).local
        else:
            images_mod.LOCAL_RAM_BYTES = 1 << 62
            parts = [
                vlm.encode_images(files[i : i + 64], local_features=True, progress=False).local
                for i in range(0, len(files), 64)
            ]
            local = np.concatenate(parts)
            del parts
        secs = time.perf_counter() - t
        checksum = float(np.sum(local, dtype=np.float64))
    print(json.dumps({"variant": variant, "images": len(files), "seconds": secs, "runtime_gib": rss.start,
                      "above_gib": rss.peak - rss.start,
                      "features_gib": local.nbytes / 2**30, "memmap": isinstance(local, np.memmap),
                      "checksum": checksum}))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=4000)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        make_images(Path(tmp) / "images", args.images)
        runs = {}
        for variant in ("negvocab", "baseline"):
            cmd = [sys.executable, __file__, "--child", variant, f"{tmp}/images", f"{tmp}/cache-{variant}"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[variant] = json.loads(out.strip().splitlines()[-1])
    ours, base = runs["negvocab"], runs["baseline"]
    same = (
        "same features"
        if abs(ours["checksum"] - base["checksum"]) <= 1e-6 * max(1.0, abs(base["checksum"]))
        else "FEATURES DIFFER"
    )
    print(
        f"GL-MCM patch features of {ours['images']} images, 196 x "
        f"512 each ({ours['features_gib']:.2f} GiB float32), {same}"
    )
    print(f"  negvocab: peak anonymous RSS {ours['above_gib']:.2f} GiB above "
          f"the {ours['runtime_gib']:.2f} GiB runtime, {ours['seconds']:.0f} s"
          f" (memory-mapped: {ours['memmap']}; cache written)")  # fmt: skip
    print(f"  baseline (list + concatenate in RAM): {base['above_gib']:.2f} "
          f"GiB above the runtime, {base['seconds']:.0f} s"
          f"  -> {base['above_gib'] / max(ours['above_gib'], 1e-9):.1f}x ours")  # fmt: skip
    real = REAL_IMAGES * 196 * 512 * 4 / 2**30
    print(
        f"  50,000 ViT-B/16 images hold {real:.1f} GiB of them: the "
        "baseline needs that in RAM (twice while concatenating)"
    )


if __name__ == "__main__":
    main()
