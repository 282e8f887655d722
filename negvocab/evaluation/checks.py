"""Warnings for common mistakes, said before the long part of a run starts.

:func:`common_mistakes` looks for inputs that make the numbers meaningless or the run surprisingly
long, and logs one line for each: an ID set that shares images with the OOD set (the same files,
or files with identical content), a vocabulary holding ID class names (NegLabel counts them
against ID images), and, for a huge vocabulary, an estimate of how long its text encoding takes
(measured on its first labels, which are cached, so nothing is encoded twice).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["HUGE_VOCABULARY", "ID_NAMES_CAVEAT", "common_mistakes", "id_names_in", "shared_images"]

#: the caveat a grid row carries for a vocabulary holding ID class names (``n``, ``size``, ``names``)
ID_NAMES_CAVEAT = (
    "{n} of {size} labels are ID class names ({names}), which NegLabel counts against ID images "
    "(remove them with `negvocab filter`)"
)

HUGE_VOCABULARY = 100_000  # labels; above this the text encoding time is estimated up front
PROBE_LABELS = 512  # labels encoded to measure the rate
ESTIMATE_FROM_S = 60.0  # estimates shorter than this are not worth a line
MAX_HASHED = 20_000  # files hashed at most when sizes collide between the sets


def common_mistakes(
    vlm: Any,
    id_set: Any,
    ood_sets: Mapping[str, Any],
    vocabs: Mapping[str, Vocabulary],
    id_classes: IdClasses,
    templates: Any,
) -> list[str]:
    """Log (warning) and return one line per common mistake found in a run's inputs (``ood_sets``:
    the OOD sets by name)."""
    notes: list[str] = []
    n_id = len(_paths(id_set))
    for name, ood_set in ood_sets.items():
        shared = shared_images(_paths(id_set), _paths(ood_set))
        if shared:
            same = (
                "are the same images"
                if len(shared) == n_id == len(_paths(ood_set))
                else f"share {len(shared)} of {n_id} ID images"
            )
            notes.append(
                f"the ID set and the OOD set {name} {same} (same files or "
                f"identical content, e.g. {os.path.basename(shared[0])}): "
                "an OOD set must not hold ID images; these AUROC/FPR numbers do not measure OOD detection"
            )
    for name, vocab in vocabs.items():
        hits = id_names_in(vocab.labels, id_classes.names)
        if hits:
            notes.append(
                f"vocabulary {name}: {len(hits)} of {len(vocab)} labels are ID class names (e.g. {hits[0]!r}); "
                "NegLabel counts them against ID images: remove them with `negvocab filter`"
            )
    notes += _time_estimates(vlm, vocabs, templates)
    for note in notes:
        logger.warning(note)
    return notes


def _paths(images: Any) -> Sequence[str]:
    return list(getattr(images, "paths", []) or [])


def id_names_in(labels: Sequence[str], id_names: Sequence[str]) -> list[str]:
    """The ``labels`` that are ID class names (case and surrounding spaces ignored), in order."""
    names = {n.strip().casefold() for n in id_names}
    return [label for label in labels if label.strip().casefold() in names]


def shared_images(id_paths: Sequence[str], ood_paths: Sequence[str]) -> list[str]:
    """OOD image paths that are also ID images: the same file (after links), or identical bytes.

    Only files whose sizes collide between the sets are hashed (at most ``MAX_HASHED``)."""

    def real(p: str) -> str:
        return os.path.realpath(p)

    id_real = {real(p) for p in id_paths}
    shared = [p for p in ood_paths if real(p) in id_real]
    rest = [p for p in ood_paths if real(p) not in id_real]
    by_size: dict[int, list[str]] = defaultdict(list)
    for p in id_paths:
        size = _size(p)
        if size is not None:
            by_size[size].append(p)
    candidates = [p for p in rest if _size(p) in by_size][:MAX_HASHED]
    if candidates:
        id_hashes = {_digest(q) for p in candidates for q in by_size[_size(p)]}  # type: ignore[index]
        shared += [p for p in candidates if _digest(p) in id_hashes]
    return shared


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _time_estimates(vlm: Any, vocabs: Mapping[str, Vocabulary], templates: Any) -> list[str]:
    """For each huge vocabulary: encode its first labels, time them, and say how long all take."""
    notes = []
    for name, vocab in vocabs.items():
        if len(vocab) < HUGE_VOCABULARY:
            continue
        probe = list(vocab.labels[:PROBE_LABELS])
        pos = vocab.parts_of_speech(probe)  # the probe's only: the timing is of the encoding, not of this
        t0 = time.perf_counter()
        vlm.encode_text(probe, templates, pos=pos, progress=False)
        rate = len(probe) / max(time.perf_counter() - t0, 1e-6)
        eta = len(vocab) / rate
        if eta >= ESTIMATE_FROM_S:
            notes.append(
                f"vocabulary {name}: {len(vocab):,} labels; encoding them takes about {_duration(eta)} on "
                f"{getattr(vlm, 'device', 'this device')} ({rate:,.0f} labels/s measured; cached for the next runs)"
            )
    return notes


def _duration(seconds: float) -> str:
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
