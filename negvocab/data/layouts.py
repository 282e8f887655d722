"""Opening an image set by layout: a plain folder, class folders, ImageNet-1k validation or a list file.

:func:`open_image_set` picks the layout (or takes the one named) and hands over to the reader of that
layout in :mod:`negvocab.data.images` or :mod:`negvocab.data.imagenet`.
"""

from __future__ import annotations

import os
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.data.imagenet import imagenet_val, looks_like_imagenet_val
from negvocab.data.images import ImageSet, class_folders, image_folder, image_list, is_image, require_dir

__all__ = ["open_image_set"]


def open_image_set(
    root: str | os.PathLike[str],
    *,
    layout: str = "auto",
    name: str | None = None,
    image_root: str | os.PathLike[str] | None = None,
    allow_outside_root: bool = False,
) -> ImageSet:
    """Open ``root`` as an image set.

    ``layout``: ``"folder"`` (all images, no labels), ``"classes"`` (class folders, labels from
    names), ``"imagenet"`` (ImageNet-1k validation, see :func:`negvocab.data.imagenet.imagenet_val`),
    ``"list"`` (a list file, see :func:`image_list`; ``image_root`` resolves its relative paths and
    ``allow_outside_root`` lets them leave it) or
    ``"auto"``: a list when ``root`` is a file; ImageNet layout when the sub-folders are wnids or the
    files are ``ILSVRC2012_val_*``; class folders when every image sits in a sub-folder; else a
    plain folder.

    Parameters
    ----------
    root : str or PathLike
        The folder, or a list file.
    layout : str, default "auto"
        ``"folder"``, ``"classes"``, ``"imagenet"``, ``"list"`` or ``"auto"``.
    name : str, optional
        The set's name.
    image_root : str or PathLike, optional
        Where a list's relative paths resolve.
    allow_outside_root : bool, default False
        Accept listed paths that leave the root.
    """
    if layout == "list" or (layout == "auto" and Path(root).expanduser().is_file()):
        if is_image(Path(root).expanduser()):
            raise InputError(f"{root} is one image; give a folder of images or an image list (.csv or .txt)")
        return image_list(root, root=image_root, name=name, allow_outside_root=allow_outside_root)
    path = require_dir(root, "image")
    if layout == "folder":
        return image_folder(path, name=name)
    if layout == "classes":
        return class_folders(path, name=name)
    if layout == "imagenet":
        return imagenet_val(path, name=name or path.name)
    if layout != "auto":
        raise InputError(f"unknown image-set layout {layout!r}; choose auto, folder, classes, imagenet or list")
    if looks_like_imagenet_val(path):
        return imagenet_val(path, name=name or path.name)
    has_subdirs = any(p.is_dir() for p in path.iterdir())
    has_top_images = any(is_image(p) for p in path.iterdir())
    if has_subdirs and not has_top_images:
        return class_folders(path, name=name)
    return image_folder(path, name=name)
