"""What a results or vocabulary file records so that a reader can trace how it was made.

:func:`record` gives the versions of negvocab and the libraries that decide the numbers (torch,
open_clip, numpy, faiss), the command line (secrets masked by :func:`negvocab.core.redact.redact_argv`) and
the time. The CLI tells it the command it runs (:func:`set_command`); a library call records the
process's own ``sys.argv``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from negvocab.core.redact import redact_argv

__all__ = ["command_line", "file_sha256", "negvocab_version", "record", "set_command", "versions"]

#: distribution names of the libraries whose versions decide the numbers
_PACKAGES = {
    "negvocab": ("negvocab",),
    "torch": ("torch",),
    "open_clip": ("open_clip_torch",),
    "numpy": ("numpy",),
    "faiss": ("faiss-cpu", "faiss-gpu", "faiss"),
}
_command: list[str] | None = None


@functools.cache
def versions() -> dict[str, str | None]:
    """Installed versions (None where a package is missing); read from package metadata, no imports."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for key, dists in _PACKAGES.items():
        out[key] = None
        for dist in dists:
            try:
                out[key] = version(dist)
                break
            except PackageNotFoundError:
                continue
    if out["negvocab"] is None:
        out["negvocab"] = negvocab_version()
    return out


def negvocab_version() -> str:
    """negvocab's installed version, ``0+unknown`` in a source tree that is not installed."""
    try:
        return version("negvocab")
    except PackageNotFoundError:
        return "0+unknown"


def set_command(argv: Sequence[str] | None) -> None:
    """Record the command line the CLI is running (``None`` forgets it)."""
    global _command
    _command = None if argv is None else [str(a) for a in argv]


def command_line() -> list[str]:
    """The command being run, secrets masked: the CLI's, else ``sys.argv``."""
    argv = _command if _command is not None else [os.path.basename(sys.argv[0]) if sys.argv else "", *sys.argv[1:]]
    return redact_argv(argv)


def record() -> dict[str, Any]:
    """Versions, command line and UTC time, for a file's provenance."""
    return {
        "versions": versions(),
        "command": command_line(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (e.g. the candidate file a vocabulary was ranked from)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
