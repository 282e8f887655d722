"""The images of the report's cards, found wherever the report is built.

A ``score`` run stores each image's path as it was given, relative to the folder where it ran; a
report built from another folder would not find them. :class:`Thumbnails` looks a relative path up
as given (the working directory), then against the results folder and each folder above it, and
counts the images it found nowhere, so that the report says so instead of showing empty cards.
"""

from __future__ import annotations

import base64
import io
import logging
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = ["THUMB_PX", "Thumbnails"]

THUMB_PX = 96


class Thumbnails:
    """Small JPEGs (base64) of the images, by path as stored; ``base`` is the results folder being
    read (set per folder); ``missing`` maps a results folder to the paths found nowhere."""

    def __init__(self) -> None:
        self.base: Path | None = None
        self.missing: dict[Path, list[str]] = {}
        self._cache: dict[tuple[str, Path | None], str | None] = {}

    def where(self, path: str) -> Path | None:
        """The file ``path`` names: as given, else against the results folder or a folder above it."""
        given = Path(path)
        tries = [given] if given.is_absolute() or self.base is None else [
            given, *((p / given) for p in (self.base, *self.base.parents))
        ]  # fmt: skip
        return next((p for p in tries if p.is_file()), None)

    def __call__(self, path: str) -> str | None:
        key = (path, self.base)
        if key not in self._cache:
            found = self.where(path)
            self._cache[key] = _jpeg(found) if found is not None else None
            if found is None and self.base is not None:
                self.missing.setdefault(self.base, []).append(path)
        return self._cache[key]

    def note(self, folder: Path) -> str | None:
        """One line on the images of ``folder`` found nowhere (logged as a warning too), or None."""
        lost = list(dict.fromkeys(self.missing.get(folder, [])))
        if not lost:
            return None
        line = (
            f"{len(lost)} image(s) not found (e.g. {lost[0]}): looked for as given, against {folder} and "
            "each folder above it; build the report where the run was made, or keep the images in place"
        )
        logger.warning("%s", line)
        return line


def _jpeg(path: Path) -> str | None:
    """A small JPEG of the image as base64, or None when it cannot be read."""
    from PIL import Image

    try:
        with Image.open(path) as opened:
            im = opened.convert("RGB")
            im.thumbnail((THUMB_PX, THUMB_PX))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=70)
            return base64.b64encode(buf.getvalue()).decode("ascii")
    except Exception as e:  # an unreadable image: the card says so
        logger.info("no thumbnail for %s: %s", path, e)
        return None
