"""A grid's image sets: each opened from its spec (a folder or list, a registered benchmark's ID or
OOD set, a part of the Fi-ImageNet-1k carve benchmark) and identified by its content."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import benchmark_set, get_benchmark, open_benchmark, open_id_set
from negvocab.data.layouts import open_image_set
from negvocab.grid.config import GridConfig, ImageSpec, spec_digest
from negvocab.vlm.images import file_key

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet

__all__ = ["labels_digest", "open_set", "open_sets", "set_digest"]


def open_set(cfg: GridConfig, spec: ImageSpec) -> ImageSet:
    """The :class:`ImageSet` of ``spec`` (paths relative to the grid file): a folder or list, a set
    of a registered benchmark, or a part of the ``fi-imagenet-1k`` carve benchmark."""
    if spec.fi_ood:
        amb = cfg.path(spec.fi_ambiguous) if spec.fi_ambiguous else None
        fi = open_benchmark("fi-imagenet-1k", cfg.path(spec.path), ood_list=cfg.path(spec.fi_ood), ambiguous_list=amb)
        return fi.id if spec.fi_part == "id" and fi.id is not None else fi["fi-imagenet-1k"]
    if spec.benchmark_id and spec.benchmark:
        return open_id_set(get_benchmark(spec.benchmark), _data_root(cfg.path(spec.path), spec.benchmark))
    if spec.benchmark:
        return benchmark_set(spec.benchmark, spec.name, cfg.path(spec.path))
    root = cfg.path(spec.image_root) if spec.image_root else None
    return open_image_set(cfg.path(spec.path), layout=spec.layout, name=spec.name, image_root=root)


def _data_root(path: str, benchmark: str) -> Path:
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{benchmark}={path}: no such data root")
    return root


def open_sets(cfg: GridConfig, errors: dict[str, str] | None = None) -> dict[str, ImageSet]:
    """Every image set of the grid by name (``"ID"`` first). With ``errors``, an OOD set that cannot
    be opened is left out and its one-line reason recorded there (only its cells fail)."""
    sets = {"ID": open_set(cfg, cfg.id_set)}
    for spec in cfg.ood_sets:
        try:
            sets[spec.name] = open_set(cfg, spec)
        except InputError as e:
            if errors is None:
                raise
            errors[spec.name] = f"ood.{spec.name}: {e}"
    return sets


def set_digest(s: ImageSet) -> str:
    """The content identity of an image set: its ids and each file's cache key (the embedding
    cache's: resolved path, size, modification time), so an image replaced in place changes it."""
    keys = []
    for path in s.paths:
        try:
            keys.append(file_key(path))
        except OSError:
            keys.append(f"{path}|unreadable")
    return spec_digest({"ids": s.ids, "files": keys})


def labels_digest(s: ImageSet) -> str:
    """The identity of an image set's labels by image id (None: unlabelled): the ID images' hits, and so the
    ID accuracy and CCR, depend on them beside the images (:func:`set_digest` covers the images only)."""
    return spec_digest({"ids": list(s.ids), "labels": None if s.labels is None else [str(x) for x in s.labels]})
