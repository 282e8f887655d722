"""Write the small offline data set of examples/grid.toml into examples/grid-data/ (no download).

ID: photographs shipped with installed packages (matplotlib, scikit-learn, ...) and crops of them;
OOD sets: those packages' graphics, random noise, and stripe patterns; plus a small hand-picked
vocabulary. A toy split to exercise the grid, not a benchmark.

    python examples/grid_data.py && negvocab grid run examples/grid.toml --random-weights
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from negvocab.demo import prepare_sample_images

HANDPICKED = """sofa
mountain
cloud
bridge
violin
spoon
carpet
lamp
river
castle
kettle
ladder
tower
glacier
piano
chair
comet
harbor
bicycle
umbrella
telescope
volcano
lighthouse
anchor
"""


def main(root: Path = Path(__file__).parent / "grid-data") -> None:
    prepare_sample_images(root, crops=3)  # root/id, root/ood (graphics)
    (root / "ood").rename(root / "graphics") if not (root / "graphics").exists() else None
    rng = np.random.default_rng(0)
    for name in ("noise", "stripes"):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(12):
            if name == "noise":
                arr = rng.integers(0, 255, (96, 96, 3), dtype=np.uint8)
            else:
                x = np.arange(96)
                band = ((x[None, :] + 7 * i * x[:, None] // 12) // (4 + i) % 2 * 255).astype(np.uint8)
                arr = np.stack([band, np.roll(band, i, 0), 255 - band], -1)
            Image.fromarray(arr).save(root / name / f"{name}{i:02d}.png")
    (root / "handpicked.txt").write_text(HANDPICKED)
    # a 100-class ImageNet-1k subset (every 10th class) keeps the offline run short
    from negvocab.labels.imagenet import imagenet1k

    (root / "classes100.txt").write_text("\n".join(imagenet1k().wnids[::10]) + "\n")
    print(f"wrote {root}")


if __name__ == "__main__":
    main()
