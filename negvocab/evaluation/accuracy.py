"""ID accuracy beside the OOD metrics: zero-shot top-1 of the ID images with the ID prompts (the class whose
prompt embedding is nearest), as OpenOOD reports ``ACC`` in every table. Computed where the ID set's labels
name the ID classes (wnids, class indices as OpenOOD's image lists give them, or class names); else None.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from negvocab.labels.imagenet import IdClasses

__all__ = ["class_indices", "id_accuracy", "zero_shot_top1"]


def _norm(name: str) -> str:
    return " ".join(name.replace("_", " ").lower().split())


def class_indices(labels: Sequence[str], id_classes: IdClasses) -> tuple[np.ndarray, str] | None:
    """Each label's position in ``id_classes`` and how labels were read: ``wnid`` (every label a class's
    wnid), ``index`` (every label an integer in [0, C): OpenOOD's lists), ``name`` (every label a class
    name, case and ``_`` aside); None when the labels are none of these (then there is no accuracy)."""
    if not labels:
        return None
    index = id_classes._index()
    if all(x in index for x in labels):
        return np.array([index[x] for x in labels], dtype=np.int64), "wnid"
    if all(x.strip().lstrip("-").isdigit() for x in labels):
        ints = np.array([int(x) for x in labels], dtype=np.int64)
        return (ints, "index") if ints.min() >= 0 and ints.max() < len(id_classes) else None
    names = {_norm(n): i for i, n in enumerate(id_classes.names)}
    if all(_norm(x) in names for x in labels):
        return np.array([names[_norm(x)] for x in labels], dtype=np.int64), "name"
    return None


def zero_shot_top1(id_emb: np.ndarray, class_emb: np.ndarray, targets: np.ndarray) -> float:
    """The fraction of images whose nearest class prompt (largest cosine; unit rows) is their class."""
    pred = np.argmax(np.asarray(id_emb, dtype=np.float32) @ np.asarray(class_emb, dtype=np.float32).T, axis=1)
    return float(np.mean(pred == targets))


def id_accuracy(
    id_set: Any, id_images: Sequence[tuple[str, str]], id_emb: np.ndarray, class_emb: np.ndarray, id_classes: IdClasses
) -> Mapping[str, Any] | None:
    """``{"top1", "n", "labels"}`` of the encoded ID images (``id_images``: (id, path) rows aligned with
    ``id_emb``), with the labels of ``id_set`` (an ImageSet); None where its labels name no ID class."""
    labels = getattr(id_set, "labels", None)
    if not labels or not len(id_images):
        return None
    by_id = dict(zip(id_set.ids, labels, strict=True))
    row_labels = [by_id.get(i) for i, _ in id_images]
    if any(x is None for x in row_labels):
        return None
    read = class_indices(row_labels, id_classes)  # type: ignore[arg-type]
    if read is None:
        return None
    targets, how = read
    return {"top1": zero_shot_top1(id_emb, class_emb, targets), "n": len(targets), "labels": how}
