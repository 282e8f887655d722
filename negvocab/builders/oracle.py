"""Oracle vocabulary: the OOD benchmark's own labels as negatives.

NegLabel with the benchmark's OOD class names as negatives gives an empirical lower bound on FPR@95
(docs/methods.md#oracle): it knows the answer, so it is NOT a deployable detector. The vocabulary says so in
its settings (``caveats: {"oracle": ...}``, ``oracle: true, deployable: false``), every vocabulary
derived from it keeps the caveat (:attr:`negvocab.Vocabulary.caveats`), and every table marks it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, Union

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.data.fi_imagenet import FiImageNet, read_id_list
from negvocab.data.imagenet import VAL_ID
from negvocab.data.images import ImageSet, class_folders
from negvocab.labels.clean import clean_label, clean_labels_report
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vocab import ORACLE_CAVEAT, Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.synonyms import SynonymFilter

logger = logging.getLogger(__name__)

ORACLE_NOTE = "oracle: the OOD benchmark's own labels; a lower bound on FPR@95, not a deployable detector"

__all__ = ["ORACLE_NOTE", "build_oracle_vocabulary", "oracle_labels_from"]


#: an OOD set's labels: label strings (one per image or per class), an ImageSet with labels, a
#: FiImageNet (its OOD set), a folder of class folders, or a labels or list file
OracleLabels: TypeAlias = Union[Iterable[str], ImageSet, FiImageNet, str, "os.PathLike[str]"]


def oracle_labels_from(source: OracleLabels) -> tuple[list[str], dict[str, Any]]:
    """The labels of an OOD set, with provenance.

    ``source``: an iterable of label strings (one per image or one per class), an ``ImageSet`` with
    labels, a ``FiImageNet`` (its OOD set), a folder of class folders (NINCO layout), or a file: a
    Fi-ImageNet-1k list with labels (ids + label columns), or one label a line.
    """
    if isinstance(source, FiImageNet):
        source = source.ood
    if isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser()
        if path.is_dir():
            source = class_folders(path)
        elif path.is_file():
            text = read_text(path, "labels file", "; save the labels as UTF-8, one a line")

            if VAL_ID.search(text):
                per_image = [lab for lab in read_id_list(path).values() if lab]
                if not per_image:
                    raise InputError(f"{path}: the image list has no label column; the oracle needs the OOD labels")
                return per_image, {"from": str(path), "kind": "image list"}
            lines = [ln.strip() for ln in text.splitlines()]
            return [ln for ln in lines if ln and not ln.startswith("#")], {"from": str(path), "kind": "labels file"}
        else:
            raise InputError(f"{path}: no such labels file or class folder")
    if isinstance(source, ImageSet):
        if source.labels is None:
            raise InputError(f"{source.name}: the image set has no labels; the oracle needs the OOD labels")
        return [lab for lab in source.labels if lab], {
            "from": source.name,
            "kind": "image set",
            **{k: v for k, v in source.info.items() if k in ("root", "list")},
        }
    if isinstance(source, str) or not isinstance(source, Iterable):
        raise InputError(f"cannot read oracle labels from {type(source).__name__}")
    return [str(x) for x in source], {"kind": "labels"}


def build_oracle_vocabulary(
    labels: OracleLabels,
    *,
    synonym_filter: SynonymFilter | bool = True,
    name: str | None = None,
) -> Vocabulary:
    """An oracle vocabulary (``source="oracle"``) from the OOD set's labels.

    Parameters
    ----------
    labels : labels, an ImageSet/FiImageNet, a class-folder folder, or a labels/list file
        See :func:`oracle_labels_from`. Labels are cleaned by the one normaliser
        (:func:`negvocab.clean_label`: underscores -> spaces, lower case, notes cut; what changed is
        in ``settings["label_cleaning"]``) and de-duplicated, keeping first appearance; ``meta``
        counts the images of each label.
    synonym_filter : SynonymFilter or bool, default True
        Remove labels that name an ImageNet-1k class or a WordNet synonym of one
        (``negvocab.SynonymFilter``; True builds the default one, False keeps every label).
    name : str, optional
        Benchmark name recorded in the settings.

    Returns
    -------
    Vocabulary
        ``settings`` carry ``oracle: True``, ``deployable: False`` and a note saying why.
    """
    raw, provenance = oracle_labels_from(labels)
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for lab in raw:
        clean = clean_label(lab)
        if not clean:
            continue
        key = clean.casefold()
        first.setdefault(key, clean)
        counts[key] = counts.get(key, 0) + 1
    if not first:
        raise InputError(f"no oracle labels found in {provenance.get('from', 'the input')}")
    ordered = list(first.values())
    vocab = Vocabulary.from_labels(
        ordered,
        source="oracle",
        meta={first[k]: {"images": n} for k, n in counts.items()},
        settings={
            "oracle": True,
            "deployable": False,
            "caveats": {"oracle": ORACLE_CAVEAT},
            "note": ORACLE_NOTE,
            "benchmark": name,
            **provenance,
            "n_labels_in": len(raw),
            "label_cleaning": clean_labels_report(dict.fromkeys(raw)).to_settings(),
        },
    )
    if synonym_filter is False:
        return vocab
    if synonym_filter is True:
        synonym_filter = SynonymFilter()
    filtered = synonym_filter.apply(vocab)
    removed = len(vocab) - len(filtered)
    if removed:
        logger.info("oracle: the synonym filter removed %d of %d labels", removed, len(vocab))
    return filtered
