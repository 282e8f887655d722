"""The demo: the whole pipeline on a handful of images shipped with negvocab.

A TOY split, honestly labelled: "ID" are natural photographs (grace_hopper.jpg, china.jpg and
flower.jpg, plus fixed crops of each), "OOD" are synthetic graphics (logos, plots, a cartoon). The
ten files come from matplotlib, scikit-learn, sympy and scipy, copied byte for byte into
``negvocab/resources/demo/`` (``NOTICE.md`` there gives each one's source and licence), so that the
demo's inputs need none of those packages. It shows every step (WordNet vocabulary, synonym filtering, NegLabel and
MCM scores, metrics, a sweep over the vocabulary size M), not a benchmark result.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from negvocab.builders.wordnet import build_wordnet_vocabulary
from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError, ResourceError
from negvocab.data.images import image_folder
from negvocab.labels.candidates import sample_pool
from negvocab.labels.imagenet import imagenet1k
from negvocab.report.results import write_results, write_sweep

if TYPE_CHECKING:
    from negvocab.evaluation.evaluate import Evaluation
    from negvocab.evaluation.sweeps import SweepResult
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

# the shipped sample images: natural photographs and synthetic graphics (resources/demo/NOTICE.md)
_PHOTOS = ["grace_hopper.jpg", "china.jpg", "flower.jpg"]
_GRAPHICS = [
    "sample_data_logo2.png",
    "sample_data_Minduka_Present_Blue_Pack.png",
    "images_matplotlib_large.png",
    "tests_test_region_and.png",
    "tests_test_region_or.png",
    "tests_test_region_xor.png",
    "tests_dots.png",
]
SPLIT_NOTE = "toy split: ID = natural photographs (and crops), OOD = synthetic graphics; not a benchmark"

__all__ = ["DemoResult", "SPLIT_NOTE", "check_demo_sizes", "prepare_sample_images", "run_demo"]


def _sample_file(kind: str, name: str) -> Path | None:
    """A shipped sample image (``kind`` is ``photos`` or ``graphics``), or None where it is missing."""
    from importlib import resources

    path = Path(str(resources.files("negvocab").joinpath("resources", "demo", kind, name)))
    return path if path.is_file() else None


def prepare_sample_images(folder: str | os.PathLike[str], *, crops: int = 3) -> tuple[Path, Path]:
    """Write the toy ID/OOD images into ``folder/id`` and ``folder/ood``; return both folders.

    ID: each photograph plus ``crops`` fixed crops of it (corners and centre); OOD: the graphics,
    RGB on white. Raises :class:`ResourceError` if fewer than 2 photographs or graphics are found.
    """
    from PIL import Image

    root = Path(folder)
    id_dir, ood_dir = root / "id", root / "ood"
    id_dir.mkdir(parents=True, exist_ok=True)
    ood_dir.mkdir(parents=True, exist_ok=True)
    photos = [p for p in (_sample_file("photos", x) for x in _PHOTOS) if p]
    graphics = [p for p in (_sample_file("graphics", x) for x in _GRAPHICS) if p]
    if len(photos) < 2 or len(graphics) < 2:
        raise ResourceError(
            "the demo's sample images were not found in negvocab/resources/demo (an incomplete install?); "
            "pass your own with negvocab score"
        )
    boxes = [(0.0, 0.0, 0.7, 0.7), (0.3, 0.3, 1.0, 1.0), (0.15, 0.15, 0.85, 0.85)][:crops]
    for p in photos:
        with Image.open(p) as opened:
            im = opened.convert("RGB")
            im.save(id_dir / f"{p.stem}.png")
            w, h = im.size
            for j, (a, b, c, d) in enumerate(boxes):
                im.crop((int(a * w), int(b * h), int(c * w), int(d * h))).save(id_dir / f"{p.stem}_crop{j}.png")
    for p in graphics:
        with Image.open(p) as im:
            rgba = im.convert("RGBA")
            canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            canvas.alpha_composite(rgba)
            canvas.convert("RGB").save(ood_dir / f"{p.stem}.png")  # <folder>_<name>, as it always was
    return id_dir, ood_dir


def check_demo_sizes(n_candidates: int, size: int | None) -> None:
    """Reject a number of candidates or a vocabulary size the demo cannot use (before any model is loaded)."""
    if n_candidates < 2:
        raise InputError(f"n_candidates must be >= 2 WordNet candidates, got {n_candidates}", param="n_candidates")
    if size is not None and not 1 <= size <= n_candidates:
        raise InputError(
            f"size M must be between 1 and the number of candidates ({n_candidates}), got {size}", param="size"
        )


@dataclass
class DemoResult:
    """What the demo made: the vocabulary, the evaluation, the sweep, and where they were written."""

    vocabulary: Vocabulary
    evaluation: Evaluation
    sweep: SweepResult
    output: Path


@renamed_kwargs(pool="n_candidates")
def run_demo(
    vlm: VLM,
    output: str | os.PathLike[str],
    *,
    n_candidates: int = 1000,
    size: int | None = None,
    templates: str = "single",
    id_classes: IdClasses | None = None,
    methods: tuple[str, ...] = ("neglabel", "mcm"),
    n_boot: int = 200,
    progress: bool = False,
    overwrite: bool = False,
) -> DemoResult:
    """Run the pipeline on the sample images: WordNet vocabulary (``n_candidates`` candidates, the farthest
    ``size``, synonym-filtered), NegLabel and MCM scores, metrics, a sweep plot; write everything
    under ``output`` (images/, vocab.json, results/, sweep/); an earlier demo's results are
    replaced only with ``overwrite``."""
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from negvocab.evaluation.sweeps import sweep_vocabulary

    check_demo_sizes(n_candidates, size)
    out = Path(output)
    id_dir, ood_dir = prepare_sample_images(out / "images")
    id_set = image_folder(id_dir, name="toy ID (photographs)")
    ood_set = image_folder(ood_dir, name="toy OOD (graphics)")
    classes = id_classes if id_classes is not None else imagenet1k()
    vocab = build_wordnet_vocabulary(
        vlm, None, candidates=sample_pool(n_candidates), templates=templates, id_classes=classes, progress=progress
    )
    if size is not None and size > len(vocab):
        raise InputError(f"size M = {size} exceeds the {len(vocab)} labels left after the synonym filter")
    size = size or max(1, len(vocab) // 2)
    head = vocab.head(size)
    head.save(out / "vocab.json")
    ev = evaluate_vocabularies(
        vlm, id_set, ood_set, {"wordnet": head}, methods, id_classes=classes, templates=templates,
        params={"groups": min(100, size)}, n_boot=n_boot, progress=progress,
    )  # fmt: skip
    ev.meta["split"] = SPLIT_NOTE
    write_results(ev, out / "results", overwrite=overwrite)
    sizes = sorted({max(1, size // 8), max(1, size // 4), max(1, size // 2), size})
    sw = sweep_vocabulary(
        vlm, id_set, ood_set, head, sizes, id_classes=classes, templates=templates,
        params={"groups": min(100, sizes[0])}, n_boot=n_boot, progress=progress,
    )  # fmt: skip
    sw.meta["split"] = SPLIT_NOTE
    write_sweep(sw, out / "sweep", overwrite=overwrite)
    return DemoResult(head, ev, sw, out)
