"""Output files of the CLI commands: checked before the work starts, write errors as one line."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from negvocab.errors import InputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: Path, *, inputs: Iterable[Path | None] = (), others: Iterable[Path | None] = ()) -> None:
    """Fail early (before a long run) when ``path`` cannot become a file: a folder, a file where a
    folder should be, a folder without write permission, one of the command's ``inputs`` (which it
    would overwrite) or another of its outputs (``others``). Creates nothing."""
    for source in inputs:
        if source is not None and (_same_file(path, source) or path.absolute() == source.absolute()):
            raise InputError(f"cannot write {path}: it is an input of this command; choose another output file")
    for other in others:
        if other is not None and path.absolute() == other.absolute():
            raise InputError(f"cannot write two outputs to {path}; give each its own file")
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder; give a file name")
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: no permission to write in {parent}")


def check_results_folder(folder: Path, marker: str, *, overwrite: bool) -> None:
    """:func:`check_output` for ``folder / marker``, and refuse to replace an earlier run's results
    there unless ``overwrite``: a re-run with other vocabularies must not silently erase a comparison."""
    check_output(folder / marker)
    if (folder / marker).exists() and not overwrite:
        raise InputError(f"{folder} holds the results of an earlier run ({marker}); give another -o, or --overwrite to replace them")


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failed (atomic) write into one error line naming the file."""
    try:
        yield
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e
