"""A grid's ID label space: ``[grid] id_classes`` (ImageNet-1k, a class file or a benchmark's name), its
class names mapped to WordNet unless ``map_classes = false`` (with ``hints``), as ``build wordnet``
maps an ``--id-classes`` file (:func:`negvocab.data.label_space.open_label_space`).

The label space enters a cell's identity only where it can change the result: in the vocabulary of a
builder that takes the ``IdClasses`` (:func:`mapping_doc`; its synonym filter reads the senses, an LLM
builder asks about its classes). The
ID classes' file digest is in every cell's identity as before, and the class names (all that scoring
embeds) are the same mapped or not, so a grid of file vocabularies, of ImageNet-1k or of wnids keeps
its digests.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from negvocab.builders.registry import get_builder
from negvocab.core.errors import InputError
from negvocab.data.label_space import OpenedLabelSpace, label_space_file, open_label_space
from negvocab.grid.config import GridConfig
from negvocab.labels.imagenet import imagenet1k

__all__ = ["LABEL_SPACE_REVISION", "id_classes", "id_classes_file", "mapping_doc", "open_id_classes"]


def id_classes(cfg: GridConfig, *, mapped: bool = False) -> Any:
    """The grid's ID label space (:func:`open_id_classes`): mapped to WordNet only for a builder that takes
    it (``mapped``); scoring and the ID accuracy read the class names as ``negvocab score`` does, so a
    grid's units never load WordNet (nor install it into a worker's cache) for that."""
    return imagenet1k() if cfg.id_classes == "imagenet1k" else open_id_classes(cfg, mapped=mapped).classes


def id_classes_file(cfg: GridConfig) -> str:
    """The file ``[grid] id_classes`` names: relative to the grid file, else a benchmark's or shipped class list."""
    path = cfg.path(cfg.id_classes)
    if not Path(path).exists():
        other = label_space_file(cfg.id_classes)
        if other != Path(cfg.id_classes).expanduser():
            return str(other)
    return path


def open_id_classes(cfg: GridConfig, *, mapped: bool = True) -> OpenedLabelSpace:
    """``[grid] id_classes`` opened, its class names mapped to WordNet (with ``mapped``) unless
    ``map_classes = false`` (with ``hints``); once per process and file content (every model and cell reads it)."""
    path = id_classes_file(cfg)
    try:
        stamp: tuple[int, int] | None = (Path(path).stat().st_mtime_ns, Path(path).stat().st_size)
    except OSError:
        stamp = None  # the reader says what is wrong
    mapping = mapped and cfg.map_classes
    key = (path, stamp, mapping, cfg.hints)
    if key not in _OPENED:
        opened = open_label_space(path, map_wordnet=mapping, hints=cfg.hints if mapping else ())
        if mapping and cfg.hints and opened.mapping is None:
            raise InputError(f"{cfg.source or 'grid'}: grid.hints: {cfg.id_classes} has no class names to map")
        _OPENED[key] = opened
    return _OPENED[key]


_OPENED: dict[tuple[Any, ...], OpenedLabelSpace] = {}


#: how builders take a grid's own label space, in the identity of their vocabularies: bumped when that changes
#: what they build (2: the LLM builders filter against it and ask with the label-space prompt; CHANGELOG), so
#: a resumed grid rebuilds those vocabularies instead of mixing them with an older release's
LABEL_SPACE_REVISION = 2


def mapping_doc(cfg: GridConfig, builder_name: str | None) -> dict[str, Any] | None:
    """The ID label space in the identity of a builder's vocabulary, where the builder takes it (an
    ``IdClasses``): :data:`LABEL_SPACE_REVISION` and the digest of its WordNet mapping (``wordnet``; absent
    with ``map_classes = false`` or no name mapped). None for ImageNet-1k and where the builder reads the
    file itself: there, and in every file vocabulary's cells, the digests are as before."""
    if cfg.id_classes == "imagenet1k":
        return None
    builder = get_builder(builder_name or "")
    if not builder.accepts("id_classes", open_id_classes(cfg, mapped=False).classes):
        return None  # the builder reads the file itself: no mapping made, none paid for
    doc: dict[str, Any] = {"revision": LABEL_SPACE_REVISION}
    opened = open_id_classes(cfg) if cfg.map_classes else None
    if opened is not None and opened.mapping is not None:
        doc["wordnet"] = hashlib.sha256(opened.mapping.pinned_text().encode()).hexdigest()
    return doc
