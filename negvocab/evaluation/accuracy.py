"""ID accuracy beside the OOD metrics: zero-shot top-1 of the ID images with the ID prompts (the class whose
prompt embedding is nearest), as OpenOOD reports ``ACC`` in every table. Computed where the ID set's labels
name the ID classes (wnids, class indices as OpenOOD's image lists give them, or class names); else None.
On a full-spectrum ID set (ID joined with covariate-shifted ID sets) the same predictions give CCR at
OpenOOD's FPR levels (:func:`add_ccr`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from negvocab.labels.imagenet import IdClasses
from negvocab.scoring.metrics import CCR_FPRS, ccr_at_fpr, ccr_column

__all__ = [
    "accuracy_columns",
    "accuracy_summary",
    "add_ccr",
    "ccr_columns",
    "class_indices",
    "full_spectrum",
    "id_accuracy",
    "id_correct",
    "mean_ccr",
    "zero_shot_correct",
    "zero_shot_top1",
]


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


def zero_shot_correct(id_emb: np.ndarray, class_emb: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Whether each image's nearest class prompt (largest cosine; unit rows) is its class (bool per image)."""
    pred = np.argmax(np.asarray(id_emb, dtype=np.float32) @ np.asarray(class_emb, dtype=np.float32).T, axis=1)
    return np.asarray(pred == targets)


def zero_shot_top1(id_emb: np.ndarray, class_emb: np.ndarray, targets: np.ndarray) -> float:
    """The fraction of images whose nearest class prompt (largest cosine; unit rows) is their class."""
    return float(np.mean(zero_shot_correct(id_emb, class_emb, targets)))


def id_correct(
    id_set: Any, id_images: Sequence[tuple[str, str]], id_emb: np.ndarray, class_emb: np.ndarray, id_classes: IdClasses
) -> tuple[np.ndarray, str] | None:
    """Whether each encoded ID image (``id_images``: (id, path) rows aligned with ``id_emb``) is classified
    correctly, with how its label was read; None where the labels of ``id_set`` (an ImageSet) name no ID
    class. The same predictions give the ID accuracy and CCR (:func:`negvocab.scoring.metrics.ccr_at_fpr`)."""
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
    return zero_shot_correct(id_emb, class_emb, targets), how


def id_accuracy(
    id_set: Any, id_images: Sequence[tuple[str, str]], id_emb: np.ndarray, class_emb: np.ndarray, id_classes: IdClasses
) -> Mapping[str, Any] | None:
    """``{"top1", "n", "labels"}`` of the encoded ID images (``id_images``: (id, path) rows aligned with
    ``id_emb``), with the labels of ``id_set`` (an ImageSet); None where its labels name no ID class."""
    return accuracy_summary(id_correct(id_set, id_images, id_emb, class_emb, id_classes))


def accuracy_summary(correct: tuple[np.ndarray, str] | None) -> Mapping[str, Any] | None:
    """``{"top1", "n", "labels"}`` of :func:`id_correct`'s answer (None stays None)."""
    if correct is None:
        return None
    hits, how = correct
    return {"top1": float(np.mean(hits)), "n": len(hits), "labels": how}


def full_spectrum(id_set: object) -> bool:
    """Whether ``id_set`` is a full-spectrum ID set: a benchmark's ID set joined with its covariate-shifted ID
    sets (``info["csid"]``, :func:`negvocab.data.benchmarks.open_id_set`), where results carry CCR."""
    return bool((getattr(id_set, "info", None) or {}).get("csid"))


def add_ccr(
    rows: Sequence[dict[str, Any]],
    s_id: np.ndarray,
    s_ood: Mapping[str, np.ndarray],
    correct: np.ndarray,
    fprs: Sequence[float] = CCR_FPRS,
) -> None:
    """Add CCR at each of ``fprs`` (columns :func:`ccr_column`) to the rows of one (method, vocabulary):
    an OOD set's row from its own scores, a summary row (``mean``, ``near-ood``, ``far-ood``) the mean over
    its sets, as the other metrics are averaged. ``correct``: each ID image's zero-shot top-1 hit."""
    per_set = {n: ccr_columns(s_id, s, correct, fprs) for n, s in s_ood.items()}
    for r in rows:
        if r["ood_set"] in per_set:
            r.update(per_set[r["ood_set"]])
            continue
        members = r.get("ood_sets") or list(per_set)
        r.update(mean_ccr([per_set[n] for n in members], fprs))


def ccr_columns(
    s_id: np.ndarray, s_ood: np.ndarray, correct: np.ndarray, fprs: Sequence[float] = CCR_FPRS
) -> dict[str, float]:
    """CCR of one OOD set's scores against the ID scores at each of ``fprs``, by column (:func:`ccr_column`)."""
    return {ccr_column(f): ccr_at_fpr(s_id, s_ood, correct, f) for f in fprs}


def mean_ccr(members: Sequence[Mapping[str, float]], fprs: Sequence[float] = CCR_FPRS) -> dict[str, float]:
    """A summary row's CCR columns: the mean over its sets' (``members``: each set's :func:`ccr_columns`)."""
    return {ccr_column(f): float(np.mean([m[ccr_column(f)] for m in members])) for f in fprs}


def accuracy_columns(
    s_id: np.ndarray, s_ood: np.ndarray, correct: np.ndarray | None, ccr: bool, fprs: Sequence[float] = CCR_FPRS
) -> dict[str, float]:
    """What one OOD set's row adds from the ID images' zero-shot hits (``correct``, :func:`id_correct`'s
    array; None: the ID labels name no class): ``id_accuracy`` (:func:`accuracy_summary`'s top-1) and,
    with ``ccr`` (a full-spectrum ID set, :func:`full_spectrum`), the CCR columns (:func:`ccr_columns`)."""
    if correct is None:
        return {}
    summary = accuracy_summary((np.asarray(correct, dtype=bool), ""))
    assert summary is not None
    return {"id_accuracy": summary["top1"], **(ccr_columns(s_id, s_ood, correct, fprs) if ccr else {})}
