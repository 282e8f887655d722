"""Fi-ImageNet-1k: OOD images from inside the ImageNet-1k validation set.

The benchmark (Rozumnyi et al., "Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k
Validation Set", arXiv:2609.01027) lists 655 validation images whose content lies outside the 1000
classes, each with an open-world label, and 980 further images judged ambiguous. The ID set is the
validation set minus both lists (48,365 images).

List files: any text, CSV or TSV file in which each relevant line holds an image id
``ILSVRC2012_val_XXXXXXXX`` somewhere (a bare id, a file name or a path) and optionally a label in
another column (CSV/TSV) or in the rest of the line (plain text). Lines without an id (headers,
comments) are skipped.
"""

from __future__ import annotations

import csv
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from negvocab.data.imagenet import VAL_ID, imagenet_val
from negvocab.data.images import ImageSet
from negvocab.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["FiImageNet", "fi_imagenet", "read_id_list"]


def _label_from_line(line: str, match_text: str) -> str | None:
    if "\t" in line or "," in line:
        delim = "\t" if "\t" in line else ","
        fields = next(csv.reader([line], delimiter=delim))
        others = [f.strip() for f in fields if match_text not in f and f.strip()]
        return others[0] if others else None
    rest = line.replace(match_text, " ", 1)
    # drop the rest of a file name or path around the id (".JPEG", "val/")
    tokens = [t for t in rest.split() if not (t.startswith(".") or t.endswith("/"))]
    label = " ".join(tokens).strip(" :;|")
    return label or None


def read_id_list(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """Image ids (in file order) -> label (or None) from a Fi-ImageNet-1k style list file.

    Raises :class:`InputError` for a missing or unreadable file or one without any
    ``ILSVRC2012_val_XXXXXXXX`` id. A repeated id keeps its first label (conflicts are logged).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(f"{p}: no such image-list file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{p}: cannot read the image list ({e})") from e
    out: dict[str, str | None] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        m = VAL_ID.search(line)
        if not m:
            continue
        image_id = m.group(0)
        # the token that holds the id (maybe a file name or a path) is not part of the label
        token = next(t for t in line.replace(",", " ").replace("\t", " ").split() if image_id in t)
        label = _label_from_line(line.strip(), token)
        if image_id in out:
            if out[image_id] != label:
                logger.warning("%s:%d: %s listed again with another label (%r); keeping %r", p, lineno, image_id, label, out[image_id])
            continue
        out[image_id] = label
    if not out:
        raise InputError(f"{p}: no image ids found (expected ILSVRC2012_val_XXXXXXXX on each line)")
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
    """
    val = imagenet_val(val_root, ground_truth=ground_truth)
    ood_ids = read_id_list(ood_list)
    amb_ids = read_id_list(ambiguous_list) if ambiguous_list is not None else {}
    position = {image_id: i for i, image_id in enumerate(val.ids)}
    not_found = [i for i in [*ood_ids, *amb_ids] if i not in position]
    if not_found:
        logger.warning(
            "%d listed ids are not in %s (e.g. %s); they are left out", len(not_found), val.info.get("root"), not_found[0]
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
    return FiImageNet(id=id_set, ood=ood_set, ambiguous=amb_found, not_found=not_found)
