"""ImageNet-1k validation set (the ID set): class-folder or flat layout, with ground truth.

Layouts:

- class folders: ``val/n01440764/ILSVRC2012_val_00000293.JPEG`` (labels = folder wnids);
- flat: ``val/ILSVRC2012_val_00000001.JPEG`` ..., labelled by an optional ground-truth file:
  ``LOC_val_solution.csv`` (Kaggle: ``ImageId,PredictionString``; the first wnid is the label), or a
  text file with one class index a line (line i is image ``ILSVRC2012_val_{i:08d}``; index in the
  standard sorted-wnid order, 0-based unless ``index_base=1``), or lines ``<file> <index>``.

Images are identified by their id ``ILSVRC2012_val_XXXXXXXX`` (the file stem).
"""

from __future__ import annotations

import csv
import logging
import os
import re
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet, is_image, require_dir
from negvocab.labels.imagenet import WNID, imagenet1k

logger = logging.getLogger(__name__)

VAL_ID = re.compile(r"ILSVRC2012_val_(\d{8})")
N_VAL = 50_000

__all__ = ["VAL_ID", "imagenet_val", "looks_like_imagenet_val", "read_ground_truth"]


def looks_like_imagenet_val(root: Path) -> bool:
    """True when ``root`` has wnid sub-folders or ``ILSVRC2012_val_*`` image files."""
    for p in root.iterdir():
        if p.is_dir() and WNID.match(p.name):
            return True
        if is_image(p) and VAL_ID.search(p.name):
            return True
    return False


def _standard_wnids() -> list[str]:
    return list(imagenet1k().wnids)


#: the ILSVRC2012 devkit's ground truth: class ids in the devkit's own order, not the standard one
DEVKIT_GROUND_TRUTH = "ILSVRC2012_validation_ground_truth.txt"


def read_ground_truth(path: str | os.PathLike[str], *, index_base: int = 0) -> dict[str, str]:
    """Map validation image ids to wnids from ``LOC_val_solution.csv`` or an index-per-line file."""
    gt = Path(path).expanduser()
    if not gt.is_file():
        raise InputError(f"{gt}: no such ground-truth file (LOC_val_solution.csv or one class index a line)")
    text = gt.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise InputError(f"{gt}: the ground-truth file is empty")
    if _is_loc_csv(lines[0]):
        return _read_loc_csv(gt, text)
    if gt.name == DEVKIT_GROUND_TRUTH:
        raise InputError(
            f"{gt}: the devkit's file numbers classes by its own ILSVRC2012_ID, not the standard order; "
            "use LOC_val_solution.csv (or a file of standard 0-999 indices or wnids)"
        )
    return _read_index_lines(gt, text.splitlines(), index_base)


def _is_loc_csv(first: str) -> bool:
    """A Kaggle LOC_val_solution.csv header, or a first row ``ILSVRC2012_val_X,n0... x y x y``."""
    if "PredictionString" in first:
        return True
    parts = first.split(",")
    tokens = parts[1].split() if len(parts) > 1 else []
    return bool(VAL_ID.search(parts[0])) and bool(tokens) and bool(WNID.match(tokens[0]))


def _read_loc_csv(gt: Path, text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for row in csv.reader(text.splitlines()):
        if len(row) < 2 or not VAL_ID.search(row[0]):
            continue
        tokens = row[1].split()
        if not tokens or not WNID.match(tokens[0]):
            raise InputError(f"{gt}: row for {row[0]} has no wnid in PredictionString")
        out[VAL_ID.search(row[0]).group(0)] = tokens[0]  # type: ignore[union-attr]
    if not out:
        raise InputError(f"{gt}: no ILSVRC2012_val_* rows found")
    return out


def _read_index_lines(gt: Path, lines: list[str], index_base: int) -> dict[str, str]:
    if index_base not in (0, 1):
        raise InputError(f"index_base must be 0 or 1, got {index_base}")
    wnids = _standard_wnids()
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    out: dict[str, str] = {}
    for lineno, line in enumerate(lines, 1):
        parts = line.replace(",", " ").split()
        m = VAL_ID.search(line)
        if not parts:
            # in a bare-index file line i is image i: a blank line would shift every later label
            raise InputError(f"{gt}:{lineno}: blank line; in a one-index-a-line file line i labels image i, remove it")
        image_id = m.group(0) if m else f"ILSVRC2012_val_{lineno:08d}"
        token = parts[-1]
        if WNID.match(token):
            out[image_id] = token
            continue
        try:
            idx = int(token) - index_base
        except ValueError:
            raise InputError(f"{gt}:{lineno}: expected a class index or wnid, got {token!r}") from None
        if not 0 <= idx < len(wnids):
            hint = (
                " (the devkit's ILSVRC2012_validation_ground_truth.txt "
                "uses its own class ids; use LOC_val_solution.csv)"
            )
            raise InputError(f"{gt}:{lineno}: class index {token} out of range for index_base={index_base}{hint}")
        out[image_id] = wnids[idx]
    return out


def imagenet_val(
    root: str | os.PathLike[str],
    *,
    ground_truth: str | os.PathLike[str] | None = None,
    index_base: int = 0,
    name: str = "ImageNet-1k val",
) -> ImageSet:
    """The ImageNet-1k validation images under ``root`` (class-folder or flat layout).

    Labels are wnids: the folder names, or the ``ground_truth`` file's labels for a flat folder
    (``root/LOC_val_solution.csv`` is used when present). Without ground truth a flat folder is
    returned unlabelled (enough for OOD scoring). Raises :class:`InputError` for a missing folder,
    no validation images, or images absent from the ground truth.
    """
    path = require_dir(root, "ImageNet validation")
    paths, ids, labels = [], [], []
    class_dirs = sorted(p for p in path.iterdir() if p.is_dir() and WNID.match(p.name))
    if class_dirs:
        layout = "class-folders"
        for d in class_dirs:
            for p in sorted(q for q in d.iterdir() if is_image(q)):
                paths.append(str(p))
                ids.append(p.stem)
                labels.append(d.name)
    else:
        layout = "flat"
        for p in sorted(q for q in path.iterdir() if is_image(q)):
            paths.append(str(p))
            ids.append(p.stem)
    if not paths:
        raise InputError(
            f"{path}: no ImageNet validation images (expected {path}/n01440764/ILSVRC2012_val_*.JPEG or a flat folder)"
        )
    odd = [i for i in ids if not VAL_ID.fullmatch(i)]
    if odd:
        logger.warning("%s: %d images are not named ILSVRC2012_val_XXXXXXXX (e.g. %s)", path, len(odd), odd[0])
    info = {"root": str(path), "layout": layout}
    if layout == "flat":
        if ground_truth is None and (path / "LOC_val_solution.csv").is_file():
            ground_truth = path / "LOC_val_solution.csv"
        if ground_truth is not None:
            gt = read_ground_truth(ground_truth, index_base=index_base)
            missing = [i for i in ids if i not in gt]
            if missing:
                raise InputError(f"{ground_truth}: no label for {len(missing)} images (e.g. {missing[0]})")
            labels = [gt[i] for i in ids]
            info["ground_truth"] = str(ground_truth)
    if len(set(ids)) != len(ids):
        raise InputError(f"{path}: the same image id appears twice; ids must be unique")
    return ImageSet(name=name, paths=paths, ids=ids, labels=labels or None, info=info)
