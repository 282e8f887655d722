"""Atomic file writes: a reader sees the old file or the complete new one, never a torn one.

A regular file (or a new one) is written to a temporary file in the destination folder, fsynced and
renamed over the target (``os.replace`` is atomic on POSIX and Windows within one file system).
Everything else is written where it is, since replacing it would break it: ``-`` means standard
output, a device (``/dev/null``) or a FIFO is written in place, and a symbolic link keeps its link
while the file it points to is replaced. A full disk is one error line naming the file, the free
space and the space needed (:class:`~negvocab.core.errors.DiskFullError`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from negvocab.core.errors import DiskFullError

__all__ = [
    "STDOUT",
    "atomic_path",
    "disk_full_error",
    "is_stdout",
    "is_stream",
    "write_bytes",
    "write_json",
    "write_text",
]

STDOUT = "-"  # the output name that means standard output

_UMASK = os.umask(0o022)  # read the process umask once (os.umask can only read by setting)
os.umask(_UMASK)


def is_stdout(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``-`` (standard output)."""
    return os.fspath(path) == STDOUT


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written in place, not replaced: ``-``, a device, a FIFO or a socket
    (after following symbolic links)."""
    if is_stdout(path):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` replaces: the end of a chain of symbolic links (which stay)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def disk_full_error(path: str | os.PathLike[str], needed: int | None = None, *, what: str = "") -> DiskFullError:
    """A one-line :class:`~negvocab.core.errors.DiskFullError` for ENOSPC/EDQUOT while writing ``path``:
    which file system, how much is free and (when known) how much was needed."""
    folder = Path(path).absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = f"{_size(shutil.disk_usage(folder).free)} free"
    except OSError:
        free = "free space unknown"
    need = f", about {_size(needed)} needed" if needed else ""
    thing = f" ({what})" if what else ""
    return DiskFullError(
        errno.ENOSPC,
        f"cannot write {path}{thing}: the disk is full ({free} in {folder}{need}); free some space or write elsewhere",
    )


def _size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TB"  # pragma: no cover


_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")  # numpy's tofile on a full disk (no errno)


def _is_disk_full(e: BaseException) -> bool:
    """ENOSPC/EDQUOT, or the short write numpy's ``tofile`` (``np.save``) reports without an errno."""
    return (
        isinstance(e, OSError)
        and not isinstance(e, DiskFullError)
        and (e.errno in (errno.ENOSPC, errno.EDQUOT) or (e.errno is None and bool(_SHORT_WRITE.search(str(e)))))
    )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path for ``path``; on success it becomes ``path``.

    For writers that want a file name (``np.save``, ``savefig``). ``suffix`` keeps an extension
    that such writers look at. On an exception the temporary file is removed and ``path`` is
    untouched. A stream target (``-``, device, FIFO) gets the temporary file's bytes copied in.
    """
    if is_stream(path):
        with tempfile.TemporaryDirectory(prefix="negvocab-out-") as tmpdir:
            tmp = Path(tmpdir) / f"out{suffix}"
            yield tmp
            _write_in_place(path, tmp.read_bytes())
        return
    target = _target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_name: str | None = None
    try:  # from the temporary file's creation on: a Ctrl-C anywhere leaves no file behind
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
        tmp = Path(tmp_name)
        os.close(fd)
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; give the file a normal file's mode
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        if tmp_name is None:
            raise
        tmp = Path(tmp_name)
        short = _SHORT_WRITE.search(str(e)) if isinstance(e, OSError) else None
        size = (tmp.stat().st_size if tmp.exists() else 0) + (int(short.group(1)) - int(short.group(2)) if short else 0)
        tmp.unlink(missing_ok=True)
        if _is_disk_full(e):
            raise disk_full_error(path, size or None) from e
        raise


def _write_in_place(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to standard output, a device or a FIFO without replacing it."""
    try:
        if is_stdout(path):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        with open(path, "wb") as fh:  # a device or FIFO: opened and written, never renamed over
            fh.write(data)
    except OSError as e:
        if _is_disk_full(e):
            raise disk_full_error(path, len(data)) from e
        raise


def _mode_for(target: Path) -> int:
    """The permission bits ``target`` keeps (if it exists) or a new file gets under the umask."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        return 0o666 & ~_UMASK


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (streams in place) and return the path."""
    if is_stream(path):
        _write_in_place(path, data)
        return Path(path)
    try:
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
    except DiskFullError as e:
        raise disk_full_error(path, len(data)) from e.__cause__
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically and return the path."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2) -> Path:
    """Write ``obj`` as JSON (UTF-8, keys in insertion order) atomically and return the path."""
    return write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")
