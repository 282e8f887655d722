"""Which ImageNet-1k classes an LLM run asks about: all, the first K, or a file or list of wnids or
names; and the chunks of classes that EOE far/fine requests list. A label space of its own (CUB-200's
names mapped to WordNet, an ImageNet-1k subset, ...) is kept whole in the run's settings
(:func:`label_space_record`), so that the run rebuilds from its folder (``vocabulary_from_journal``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.imagenet import IdClasses, imagenet1k

__all__ = [
    "ClassesSpec",
    "chunks_of",
    "label_space_from_record",
    "label_space_record",
    "own_label_space",
    "select_classes",
    "selection_record",
]

#: which ID classes an LLM run asks about: all (None), the first K, a file of wnids or names, or a list
ClassesSpec: TypeAlias = int | str | os.PathLike[str] | Sequence[str] | None


def select_classes(classes: ClassesSpec = None, id_classes: IdClasses | None = None) -> IdClasses:
    """The ID classes to ask about: all (``None``), the first ``K`` (an int, or a string of digits),
    the wnids or names in a file (one a line, ``#`` comments), or a list of wnids/names.

    A name that two classes share (``missile``, ``sunglasses``) selects both.
    """
    if id_classes is None:
        id_classes = imagenet1k()
    if classes is None:
        return id_classes
    if isinstance(classes, int) or (isinstance(classes, str) and classes.strip().isdigit()):
        k = int(classes)
        if not 1 <= k <= len(id_classes):
            raise InputError(f"classes={k}: choose between 1 and {len(id_classes)} classes", param="classes")
        return id_classes.subset(list(id_classes.wnids[:k]))
    if isinstance(classes, (str, os.PathLike)):
        path = Path(classes)
        lines = read_text(path, "class file", " (give a number K or a file of wnids or names)").splitlines()
        entries = [s.strip() for s in lines if s.strip() and not s.strip().startswith("#")]
        where = str(path)
    else:
        entries = [str(s).strip() for s in classes]
        where = "classes"
    if not entries:
        raise InputError(f"{where}: no classes listed")
    by_name: dict[str, list[str]] = {}
    for wnid, name in zip(id_classes.wnids, id_classes.names, strict=True):
        by_name.setdefault(name.lower(), []).append(wnid)
    known = set(id_classes.wnids)
    chosen: dict[str, None] = {}
    unknown = []
    for e in entries:
        if e in known:
            chosen.setdefault(e, None)
        elif e.lower() in by_name:
            for w in by_name[e.lower()]:
                chosen.setdefault(w, None)
        else:
            unknown.append(e)
    if unknown:
        raise InputError(f"{where}: {len(unknown)} entries are neither wnids nor class names, e.g. {unknown[:3]}")
    order = {w: i for i, w in enumerate(id_classes.wnids)}
    return id_classes.subset(sorted(chosen, key=order.__getitem__))


def chunks_of(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def selection_record(classes: ClassesSpec, chosen: IdClasses) -> int | list[str] | None:
    """The class selection as JSON (kept in a run's manifest so the run can be rebuilt from its folder):
    None (all), K (the first K) or the chosen wnids."""
    if classes is None:
        return None
    if isinstance(classes, int) or (isinstance(classes, str) and classes.strip().isdigit()):
        return int(classes)
    return list(chosen.wnids)


def own_label_space(id_classes: IdClasses | None) -> bool:
    """Whether ``id_classes`` is a label space other than ImageNet-1k (None: ImageNet-1k): one an LLM run asks
    about with its own prompt, filters against and keeps in its settings."""
    return id_classes is not None and id_classes != imagenet1k()


def label_space_record(id_classes: IdClasses | None) -> dict[str, Any] | None:
    """An ID label space other than ImageNet-1k as a run's settings keep it (JSON): its name, wnids, names,
    synonyms and whether its senses were mapped, all that the requests and the synonym filter read; None for
    ImageNet-1k (the settings of those runs are as before)."""
    if id_classes is None or not own_label_space(id_classes):
        return None
    return {
        "dataset": id_classes.dataset,
        "wnids": list(id_classes.wnids),
        "names": list(id_classes.names),
        "synonyms": [list(s) for s in id_classes.synonyms],
        "mapped": id_classes.mapped,
    }


def label_space_from_record(record: object, where: str) -> IdClasses:
    """The label space :func:`label_space_record` kept, validated: one :class:`InputError` naming ``where``
    and the key otherwise."""
    hint = "a label space as negvocab writes it (dataset, wnids, names, synonyms, mapped)"
    if not isinstance(record, dict):
        raise InputError(f"{where}: 'id_classes' must be {hint}, got {type(record).__name__}")
    for key in ("wnids", "names"):
        value = record.get(key)
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise InputError(f"{where}: id_classes.{key} must be a list of strings")
    synonyms = record.get("synonyms")
    if not isinstance(synonyms, list) or not all(
        isinstance(x, list) and all(isinstance(y, str) for y in x) for x in synonyms
    ):
        raise InputError(f"{where}: id_classes.synonyms must be a list of lists of strings")
    if not isinstance(record.get("dataset"), str) or not isinstance(record.get("mapped"), bool):
        raise InputError(f"{where}: id_classes.dataset must be a string and id_classes.mapped true or false")
    try:
        return IdClasses(
            tuple(record["wnids"]),
            tuple(record["names"]),
            tuple(tuple(x) for x in synonyms),
            dataset=record["dataset"],
            mapped=record["mapped"],
        )
    except InputError as e:
        raise InputError(f"{where}: id_classes: {e}") from None
