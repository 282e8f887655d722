"""Fi-ImageNet-1k: OOD images from inside the ImageNet-1k validation set.

The benchmark (Rozumnyi et al., "Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k
Validation Set", arXiv:2609.01027) lists 655 validation images whose content lies outside the 1000
classes, each with an open-world label, and 980 further images judged ambiguous. The ID set is the
validation set minus both lists (48,365 images).

List files: any text, CSV or TSV file in which each relevant line holds an image id
``ILSVRC2012_val_XXXXXXXX`` somewhere (a bare id, a file name or a path) and optionally a label in
another column (CSV/TSV) or in the rest of the line (plain text, commas included). Lines without
an id (headers, comments) are skipped.
"""

from __future__ import annotations

import csv
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.data.imagenet import N_VAL, VAL_ID, imagenet_val
from negvocab.data.images import ImageSet

logger = logging.getLogger(__name__)

__all__ = ["PAPER_SPLIT", "FiImageNet", "carve", "fi_imagenet", "read_id_list"]

PAPER_SPLIT = {
    "ood": 655,
    "ambiguous": 980,
    "id": 48_365,
}  # docs/methods.md#the-benchmark-and-reference-numbers, on the 50,000 val images


LABEL_COLUMNS = ("label", "ood_label", "open_world_label", "name", "class_name", "class", "category")
_METADATA = re.compile(r"n\d{8}|[-+]?\d+(\.\d+)?")  # wnids and numbers beside a label are not part of it
_SEPARATOR_AFTER_ID = re.compile(VAL_ID.pattern + r"[^\s,;\t|]*\s*(?P<sep>[,;\t|])")


def _delimiter(path: Path, lines: list[str]) -> str | None:
    """The column delimiter of a list file: a tab for ``.tsv``; else the one separator that follows
    the id on every id line (``,`` by default for ``.csv``); ``None`` for plain text."""
    if path.suffix.lower() == ".tsv":
        return "\t"
    found = [_SEPARATOR_AFTER_ID.search(line) for line in lines]
    seps = {m.group("sep") for m in found if m}
    if all(found) and len(seps) == 1:
        return seps.pop()
    return "," if path.suffix.lower() == ".csv" else None


def _label_column(header: str | None, delimiter: str | None) -> tuple[int, int] | None:
    """(the label column's index, the number of columns) of a header, or None."""
    if header is None or delimiter is None:
        return None
    names = [f.strip().lower() for f in next(csv.reader([header], delimiter=delimiter))]
    index = next((names.index(c) for c in LABEL_COLUMNS if c in names), None)
    return None if index is None else (index, len(names))


def _label(line: str, image_id: str, delimiter: str | None, column: tuple[int, int] | None) -> str | None:
    if delimiter is None:
        # plain text: the label is what follows the id and its file extension ("sea cucumber, holothurian")
        rest = line[line.index(image_id) + len(image_id) :]
        rest = re.sub(r"^\.[A-Za-z0-9]+", "", rest)
        return rest.strip(" \t:;|,-") or None
    fields = [f.strip() for f in next(csv.reader([line], delimiter=delimiter))]
    if column is not None and column[0] < len(fields):
        index, width = column
        extra = len(fields) - width  # an unquoted delimiter inside the label made more fields
        if extra > 0 and index == width - 1:  # empty or metadata fields (wnids, scores) are not label words
            words = [f for f in (fields[index], *(f for f in fields[index + 1 :] if not _METADATA.fullmatch(f))) if f]
            return (", " if delimiter == "," else delimiter).join(words) or None
        return fields[index] or None
    others = [f for f in fields if f and image_id not in f and not _METADATA.fullmatch(f)]
    return ", ".join(others) or None  # an unquoted comma inside a label splits it into fields


def read_id_list(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """Image ids (in file order) -> label (or None) from a Fi-ImageNet-1k style list file.

    Columns: a ``.tsv`` file, or one whose id lines all have the same separator (``, ; tab |``)
    right after the id (``.csv`` defaults to a comma). The label is the header's ``label`` (or
    ``name``, ``class``, ...) column when there is a header, else the other fields that are not a
    wnid or a number. In plain text the label is what follows the id and its file extension,
    commas and all ("sea cucumber, holothurian"). Raises :class:`InputError` for a
    missing or unreadable file or one without any ``ILSVRC2012_val_XXXXXXXX`` id. A repeated id
    keeps its first label (conflicts are logged).
    """
    p = Path(path).expanduser()
    text = read_text(p, "image-list file")
    lines = [line.strip() for line in text.splitlines()]
    found = [
        (lineno, line, m.group(0))
        for lineno, line in enumerate(lines, 1)
        if not line.startswith("#") and (m := VAL_ID.search(line))
    ]
    if not found:
        raise InputError(f"{p}: no image ids found (expected ILSVRC2012_val_XXXXXXXX on each line)")
    delimiter = _delimiter(p, [line for _, line, _ in found])
    header = next((ln for ln in lines[: found[0][0] - 1] if ln and not ln.startswith("#")), None)
    column = _label_column(header, delimiter)
    out: dict[str, str | None] = {}
    for lineno, line, image_id in found:
        label = _label(line, image_id, delimiter, column)
        if image_id in out:
            if out[image_id] != label:
                logger.warning(
                    "%s:%d: %s listed again with another label (%r); keeping %r",
                    p,
                    lineno,
                    image_id,
                    label,
                    out[image_id],
                )
            continue
        out[image_id] = label
    return out


@dataclass(frozen=True)
class FiImageNet:
    """The Fi-ImageNet-1k split of a validation folder.

    Attributes
    ----------
    id : the validation images minus the OOD and ambiguous lists (labels: wnids when known).
    ood : the listed OOD images found in the folder (labels: their open-world labels, if listed).
    ambiguous : ids of the ambiguous images that were found (excluded from both sets).
    not_found : listed ids (OOD or ambiguous) that are not in the validation folder.
    """

    id: ImageSet
    ood: ImageSet
    ambiguous: list[str] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)


def fi_imagenet(
    val_root: str | os.PathLike[str],
    ood_list: str | os.PathLike[str],
    ambiguous_list: str | os.PathLike[str] | None = None,
    *,
    ground_truth: str | os.PathLike[str] | None = None,
) -> FiImageNet:
    """Split an ImageNet-1k validation folder into Fi-ImageNet-1k's ID and OOD sets.

    Ids of the lists that are not in ``val_root`` are reported (``not_found`` and a warning); an OOD
    list none of whose ids is found, or an empty remainder, raises :class:`InputError`.

    Parameters
    ----------
    val_root : str or PathLike
        The ImageNet-1k validation folder.
    ood_list : str or PathLike
        The ids of the OOD images.
    ambiguous_list : str or PathLike, optional
        The ids of the ambiguous images, left out of both sets.
    ground_truth : str or PathLike, optional
        Labels of a flat validation folder.
    """
    val = imagenet_val(val_root, ground_truth=ground_truth)
    ood_ids = read_id_list(ood_list)
    amb_ids = read_id_list(ambiguous_list) if ambiguous_list is not None else {}
    position = {image_id: i for i, image_id in enumerate(val.ids)}
    not_found = [i for i in [*ood_ids, *amb_ids] if i not in position]
    if not_found:
        logger.warning(
            "%d listed ids are not in %s (e.g. %s); they are left out",
            len(not_found),
            val.info.get("root"),
            not_found[0],
        )
    ood_found = [i for i in ood_ids if i in position]
    if not ood_found:
        raise InputError(f"{ood_list}: none of its {len(ood_ids)} ids is in {val.info.get('root')}")
    overlap = set(ood_found) & set(amb_ids)
    if overlap:
        logger.warning("%d ids are in both the OOD and the ambiguous list; treated as OOD", len(overlap))
    amb_found = [i for i in amb_ids if i in position and i not in overlap]
    excluded = set(ood_found) | set(amb_found)
    id_set = val.select(
        [i for i, image_id in enumerate(val.ids) if image_id not in excluded],
        name="Fi-ImageNet-1k ID",
        excluded_ood=len(ood_found),
        excluded_ambiguous=len(amb_found),
    )
    if len(id_set) == 0:
        raise InputError(f"{val_root}: no ID images left after removing the OOD and ambiguous lists")
    labels = [ood_ids[i] for i in ood_found]
    have = [lab is not None for lab in labels]
    if any(have) and not all(have):
        logger.warning("%s: %d of %d OOD ids have no label", ood_list, have.count(False), len(have))
    ood_set = ImageSet(
        name="Fi-ImageNet-1k OOD",
        paths=[val.paths[position[i]] for i in ood_found],
        ids=ood_found,
        labels=[lab or "" for lab in labels] if any(have) else None,
        info={
            "list": str(ood_list),
            "root": val.info.get("root"),
            "layout": "fi-imagenet",
            "ambiguous_list": None if ambiguous_list is None else str(ambiguous_list),
            "ambiguous_excluded": len(amb_found),
            "not_found": not_found,  # listed ids missing from the folder: recorded with every result
        },
    )
    split = {"ood": len(ood_set), "ambiguous": len(amb_found), "id": len(id_set)}
    if len(val) == N_VAL and split != PAPER_SPLIT:
        logger.warning(
            "this split has %(ood)d OOD, %(ambiguous)d ambiguous and %(id)d ID images; the published "
            "Fi-ImageNet-1k has 655, 980 and 48,365 (check the list files)",
            split,
        )
    return FiImageNet(id=id_set, ood=ood_set, ambiguous=amb_found, not_found=not_found)


def carve(
    root: str | os.PathLike[str],
    *,
    ood_list: str | os.PathLike[str],
    ambiguous_list: str | os.PathLike[str] | None = None,
    ground_truth: str | os.PathLike[str] | None = None,
) -> tuple[ImageSet, dict[str, ImageSet]]:
    """The ``fi-imagenet-1k`` entry of :mod:`negvocab.data.benchmarks`: (ID set, {"fi-imagenet-1k": OOD set})
    carved from the validation folder ``root`` by :func:`fi_imagenet` (ids not found are in the OOD
    set's ``info["not_found"]``)."""
    fi = fi_imagenet(root, ood_list, ambiguous_list, ground_truth=ground_truth)
    return fi.id, {"fi-imagenet-1k": fi.ood}
