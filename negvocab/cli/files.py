"""Output files of the CLI commands: checked before the work starts, write errors as one line."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from negvocab.errors import InputError


def check_output(path: Path) -> None:
    """Fail early (before a long run) when ``path`` cannot become a file: a folder, a file where a
    folder should be, or a folder without write permission. Creates nothing."""
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder; give a file name")
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: no permission to write in {parent}")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failed (atomic) write into one error line naming the file."""
    try:
        yield
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e
