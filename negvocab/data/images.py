"""Image sets: a list of image files with optional labels, from a folder, class folders or a list file.

An :class:`ImageSet` is what the scoring commands take as ID or OOD data: aligned ``paths``,
``ids`` (file stems, e.g. ``ILSVRC2012_val_00000293``) and optional ``labels`` (a wnid for ImageNet,
the folder name for class folders such as NINCO, the open-world label for Fi-ImageNet-1k).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text

logger = logging.getLogger(__name__)

__all__ = [
    "IMAGE_EXTENSIONS",
    "ImageSet",
    "class_folders",
    "image_folder",
    "image_list",
    "is_image",
    "list_images",
    "listed_paths",
    "require_dir",
    "walk_images",
]

IMAGE_EXTENSIONS = frozenset(
    {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".jfif"}
)
LIST_PATH_COLUMNS = ("path", "image", "file", "filename")


def is_image(path: Path) -> bool:
    """True for a regular file with an image extension (case-insensitive)."""
    return path.suffix.lower() in IMAGE_EXTENSIONS and path.is_file()


@dataclass(frozen=True)
class ImageSet:
    """Images with ids and optional labels, aligned.

    Attributes
    ----------
    name : a short name for tables ("ImageNet-1k val", the folder name, ...).
    paths : image file paths.
    ids : one id per image (the file stem unless the layout says otherwise).
    labels : one label per image, or None when the set has no labels.
    info : provenance (root folder, layout, ground-truth file, ids not found, ...).
    """

    name: str
    paths: list[str]
    ids: list[str]
    labels: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.paths) or (self.labels is not None and len(self.labels) != len(self.paths)):
            raise ValueError("ImageSet: paths, ids and labels must be aligned")

    def __len__(self) -> int:
        return len(self.paths)

    def label_names(self) -> list[str]:
        """The distinct labels in order of first appearance (empty without labels)."""
        return list(dict.fromkeys(self.labels or []))

    def select(self, keep: Sequence[int], *, name: str | None = None, **info: Any) -> ImageSet:
        """The images at positions ``keep`` (in that order)."""
        return replace(
            self,
            name=name or self.name,
            paths=[self.paths[i] for i in keep],
            ids=[self.ids[i] for i in keep],
            labels=None if self.labels is None else [self.labels[i] for i in keep],
            info={**self.info, **info},
        )

    def verify(self) -> tuple[ImageSet, list[tuple[str, str]]]:
        """Open every image with PIL; return (the readable subset, [(path, reason)] of the others)."""
        from PIL import Image

        keep, bad = [], []
        for i, path in enumerate(self.paths):
            try:
                with Image.open(path) as im:
                    im.verify()
            except Exception as e:
                bad.append((path, f"{type(e).__name__}: {e}"))
            else:
                keep.append(i)
        if bad:
            logger.warning("%s: %d of %d images cannot be read (first: %s)", self.name, len(bad), len(self), bad[0][0])
        return self.select(keep), bad


def require_dir(root: str | os.PathLike[str], what: str) -> Path:
    """``root`` as a Path; a one-line InputError when it is missing or is a file, naming ``what``."""
    path = Path(root).expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such {what} folder")
    if not path.is_dir():
        raise InputError(f"{path}: expected a folder of images ({what}), found a file")
    return path


def walk_images(root: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """Every image file under ``root`` (recursive, sorted; symlinked folders not followed) and what
    could not be looked at, as (path, reason): sub-folders that cannot be listed and image links
    whose target is gone. These are reported (``ImageSet.info["skipped"]``, a warning, and the
    ``failed_images`` of results), never silently left out of the set."""
    found: list[Path] = []
    skipped: list[tuple[str, str]] = []

    def unreadable(e: OSError) -> None:
        if Path(e.filename) == root:
            raise InputError(f"{root}: cannot read the folder ({e.strerror or e})")
        skipped.append((str(e.filename), f"unreadable folder ({e.strerror or e}): the images in it are not in the set"))

    for folder, _, files in os.walk(root, onerror=unreadable):
        for f in files:
            p = Path(folder) / f
            if p.suffix.lower() not in IMAGE_EXTENSIONS:
                continue
            if p.is_file():
                found.append(p)
            elif p.is_symlink() and not p.exists():
                skipped.append((str(p), f"dangling symbolic link (its target {os.readlink(p)} is missing)"))
    if skipped:
        logger.warning(
            "%s: %d unreadable folders or broken links skipped (first: %s: %s)", root, len(skipped), *skipped[0]
        )
    return sorted(found), sorted(skipped)


def list_images(folder: str | os.PathLike[str]) -> list[str]:
    """Image files under ``folder`` (recursive, by extension), sorted as strings: the one folder walk
    (:func:`walk_images`), so unreadable sub-folders and broken links are reported here too."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"{root}: no such folder")
    files, _ = walk_images(root)
    return sorted(str(p) for p in files)


def image_folder(root: str | os.PathLike[str], *, name: str | None = None) -> ImageSet:
    """Every image under ``root`` (recursive, sorted), without labels: any folder as an OOD set."""
    path = require_dir(root, "image")
    files, skipped = walk_images(path)
    if not files:
        raise InputError(f"{path}: no image files found (looked for {', '.join(sorted(IMAGE_EXTENSIONS))})")
    return ImageSet(
        name=name or path.name,
        paths=[str(p) for p in files],
        ids=[str(p.relative_to(path).with_suffix("")) for p in files],
        info={"root": str(path), "layout": "folder", **({"skipped": skipped} if skipped else {})},
    )


def class_folders(root: str | os.PathLike[str], *, name: str | None = None) -> ImageSet:
    """Images in class folders (``root/<label>/*.jpg``, the NINCO layout): labels from folder names.

    Folder names are used as labels with underscores turned into spaces. Images directly under
    ``root`` or nested deeper keep the label of their top-level folder; empty folders are skipped.
    """
    path = require_dir(root, "class")
    paths, ids, labels = [], [], []
    try:
        subdirs = sorted(p for p in path.iterdir() if p.is_dir())
    except OSError as e:
        raise InputError(f"{path}: cannot read the folder ({e.strerror or e})") from e
    skipped: list[tuple[str, str]] = []
    for sub in subdirs:
        label = sub.name.replace("_", " ").strip()
        try:
            files, bad = walk_images(sub)
        except InputError:  # the class folder itself cannot be listed
            files, bad = [], [(str(sub), "unreadable folder: the images in it are not in the set")]
            logger.warning("%s: cannot read the class folder; its images are not in the set", sub)
        skipped += bad
        for p in files:
            paths.append(str(p))
            ids.append(str(p.relative_to(path).with_suffix("")))
            labels.append(label)
    if not paths:
        raise InputError(f"{path}: no images in class folders (expected {path}/<class name>/<image>.jpg)")
    stray = [p for p in path.iterdir() if is_image(p)]
    if stray:
        logger.warning("%s: %d images outside class folders ignored", path, len(stray))
    info = {"root": str(path), "layout": "class-folders", **({"skipped": skipped} if skipped else {})}
    return ImageSet(name=name or path.name, paths=paths, ids=ids, labels=labels, info=info)


def _resolve(base: Path, file: str) -> Path:
    listed = Path(file).expanduser()
    return listed if listed.is_absolute() else base / listed


def _read_list_rows(path: Path) -> list[tuple[int, str, str | None]]:
    """(line number, image path, label or None) rows of a CSV with a header, or of a text list."""
    import csv

    text = read_text(path, "image list")
    out: list[tuple[int, str, str | None]] = []
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        header = [h.strip().lower() for h in reader.fieldnames or []]
        column = next((c for c in LIST_PATH_COLUMNS if c in header), None)
        if column is None:
            raise InputError(
                f"{path}: a CSV image list needs a header with a '{LIST_PATH_COLUMNS[0]}' column, found {header}"
            )
        for row in reader:
            if None in row:  # csv puts the fields beyond the header under None
                raise InputError(f"{path}:{reader.line_num}: more fields than the header's {len(header)}")
            fields = {k.strip().lower(): (v or "").strip() for k, v in row.items()}
            if fields[column]:
                out.append((reader.line_num, fields[column], fields.get("label") or None))
        return out
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "\t" in line:
            file, label = (part.strip() for part in line.split("\t", 1))
        else:  # "path" or "path label" (OpenOOD image lists); a path or a label may itself hold spaces
            ends = [m.end() for m in re.finditer(r"\S+", line) if Path(m.group()).suffix.lower() in IMAGE_EXTENSIONS]
            if ends:  # the path ends at the last word with an image extension: "sp/g0.png kite string"
                file, label = line[: ends[-1]], line[ends[-1] :].strip()
            else:
                parts = line.rsplit(None, 1)
                file, label = (line, "") if len(parts) == 1 else (parts[0], parts[1])
        out.append((lineno, file, label or None))
    return out


def listed_paths(
    file: Path, base: Path, rows: Sequence[tuple[int, str]], allow_outside_root: bool = False
) -> list[Path]:
    """The images a list ``file`` names (``(line, path)`` rows), resolved against ``base``: each listed
    once, inside ``base`` (unless ``allow_outside_root``) and present, else :class:`InputError` naming
    the line or the first missing file (shared by :func:`image_list` and the dataset tables of
    :mod:`negvocab.data.annotations`)."""
    first_line: dict[str, int] = {}
    for lineno, listed in rows:
        if listed in first_line:  # scored twice, it would count twice in every metric
            raise InputError(
                f"{file}:{lineno}: {listed} is listed again (first on line {first_line[listed]}); list each image once"
            )
        first_line[listed] = lineno
    paths = [_resolve(base, p) for _, p in rows]
    if not allow_outside_root:
        inside = os.path.normpath(base.absolute())
        for (lineno, listed), p in zip(rows, paths, strict=True):
            if os.path.commonpath([inside, os.path.normpath(p.absolute())]) != inside:
                raise InputError(
                    f"{file}:{lineno}: {listed} leaves {base}, the folder the list's paths resolve against; give the "
                    "right root, or allow_outside_root=True if the list means it",
                    param=("root", "allow_outside_root"),
                )
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise InputError(
            f"{file}: {len(missing)} of {len(paths)} listed images do not exist (first: {missing[0]}); "
            f"relative paths resolve against {base}: pass the right root",
            param="root",
        )
    return paths


def image_list(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    name: str | None = None,
    allow_outside_root: bool = False,
) -> ImageSet:
    """The images a list file names, with their labels when it gives them.

    Formats: a ``.csv`` with a header holding a ``path`` (or ``image``, ``file``, ``filename``)
    column and an optional ``label`` column; or a text list, one image a line, optionally followed by
    a tab or a space and a label (OpenOOD's ``path label`` lists; a line whose last word ends in an
    image extension is all path). Blank lines and ``#`` comments are skipped. Relative paths resolve
    against ``root``, by default the list file's folder. Every listed file must exist, once: a wrong
    root is named rather than turned into a smaller set, a repeat rather than counted twice.
    A listed path that leaves the root (``../../etc/passwd``, an absolute path elsewhere) is refused
    unless ``allow_outside_root``: a list names images of one data set, not any file.

    Parameters
    ----------
    path : str or PathLike
        The list file.
    root : str or PathLike, optional
        Where relative paths resolve (default: the list file's folder).
    name : str, optional
        The set's name.
    allow_outside_root : bool, default False
        Accept listed paths that leave ``root``.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise InputError(f"{file}: no such image list")
    base = Path(root).expanduser() if root is not None else file.parent
    rows = _read_list_rows(file)
    if not rows:
        raise InputError(f"{file}: the image list names no images")
    paths = listed_paths(file, base, [(lineno, listed) for lineno, listed, _ in rows], allow_outside_root)
    labels = [label for _, _, label in rows]
    return ImageSet(
        name=name or file.stem,
        paths=[str(p) for p in paths],
        ids=[str(Path(p).with_suffix("")) for _, p, _ in rows],
        labels=None if all(label is None for label in labels) else [label or "" for label in labels],
        info={"list": str(file), "root": str(base), "layout": "list"},
    )
