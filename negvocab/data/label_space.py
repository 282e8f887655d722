"""The ID label space a command names: a class file, a benchmark's class list or ImageNet-1k, mapped to WordNet.

``--id-classes`` of ``filter`` and the builders takes a file, or the name of a benchmark (its class
list, as ``score`` reads it from the benchmark: :meth:`~negvocab.data.benchmarks.Benchmark.id_classes`)
or of a class list shipped in negvocab (``cifar100``). :func:`open_label_space` reads it and, when
asked, maps its plain class names to WordNet synsets (:func:`negvocab.labels.labelspace.map_label_space`,
with the hints and pins its file's header names), so that the synonym filter knows their synonyms, hypernyms
and hyponyms. A label space whose classes all have wnids (ImageNet-1k, a subset, a pinned file) is
returned as it is: mapping changes nothing there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import classes_file, get_benchmark
from negvocab.labels.imagenet import WNID, IdClasses, imagenet1k, read_id_classes
from negvocab.labels.labelspace import (
    LabelSpaceMap,
    class_file_hints,
    class_file_pins,
    class_file_qualifiers,
    map_label_space,
)

__all__ = ["OpenedLabelSpace", "label_space_file", "open_label_space"]


@dataclass(frozen=True)
class OpenedLabelSpace:
    """A label space as a command opened it: the classes, the file they came from and, when mapped, the report."""

    classes: IdClasses
    file: Path | None  # None: ImageNet-1k
    mapping: LabelSpaceMap | None = None


def label_space_file(value: str | os.PathLike[str]) -> Path:
    """The class file ``value`` names: an existing file, else a benchmark's class list (by the benchmark's
    name or alias), else a class list shipped in negvocab; a missing file is returned as given (its
    reader says so)."""
    path = Path(value).expanduser()
    text = str(value)
    if path.exists() or "/" in text or "\\" in text or path.suffix:
        return path
    if _is_benchmark(text):
        bench = get_benchmark(text)
        if not bench.classes:
            raise InputError(
                f"id_classes: benchmark {bench.name!r} names no class list of its own (its ID classes are "
                "ImageNet-1k's: leave id_classes out)",
                param="id_classes",
            )
        return classes_file(bench.classes)
    try:
        return classes_file(text)
    except InputError:
        return path  # neither a benchmark nor a shipped list: the file reader says it does not exist


def open_label_space(
    value: str | os.PathLike[str] | None,
    *,
    map_wordnet: bool = False,
    hints: Sequence[str] = (),
    reader: Callable[[Path], IdClasses] = read_id_classes,
) -> OpenedLabelSpace:
    """The ID label space ``value`` names (None or ``imagenet1k``: ImageNet-1k; see :func:`label_space_file`).

    ``map_wordnet``: map the plain class names to WordNet synsets (hints: ``hints`` and the file's
    ``# hint:`` header lines); a space whose classes all have wnids is returned unmapped (nothing to map).
    ``reader``: how the file is read (``build siblings`` takes any WordNet noun wnid on a line).

    Parameters
    ----------
    value : str or PathLike, optional
        A label space's name or file (None or ``imagenet1k``: ImageNet-1k).
    map_wordnet : bool, default False
        Map the plain class names to WordNet synsets.
    hints : sequence of str, default ()
        Hints for the mapping, beside the file's ``# hint:`` lines.
    reader : callable, default read_id_classes
        How the file is read.
    """
    if value is None or str(value) == "imagenet1k":
        return OpenedLabelSpace(imagenet1k(), None)
    path = label_space_file(value)
    classes = reader(path)
    if not map_wordnet or all(WNID.match(w) for w in classes.wnids):
        return OpenedLabelSpace(classes, path)
    mapping = map_label_space(
        classes,
        hints=(*class_file_hints(path), *hints),
        pins=class_file_pins(path),
        qualifiers=class_file_qualifiers(path),
    )
    return OpenedLabelSpace(mapping.classes, path, mapping)


def _is_benchmark(name: str) -> bool:
    try:
        get_benchmark(name)
    except InputError:
        return False
    return True
