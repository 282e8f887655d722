"""Which ImageNet-1k classes an LLM run asks about: all, the first K, or a file or list of wnids or
names; and the chunks of classes that EOE far/fine requests list."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias

from negvocab.errors import InputError
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.textfiles import read_text

__all__ = ["ClassesSpec", "chunks_of", "select_classes", "selection_record"]

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
