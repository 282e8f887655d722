"""Output files of the CLI commands: checked before the work starts, write errors as one line.

The one overwrite rule (docs/outputs.md, "Outputs: one rule for every command"): a command never
replaces an existing output (a file, or a results folder holding any earlier output) unless
``--overwrite`` is given. Streams are not replaced but written: ``-o -`` (standard output), a device
such as ``/dev/null`` and a FIFO need no ``--overwrite``; a symbolic link keeps its link and the file
it points to is the output.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import typer

from negvocab.core.atomic import disk_full_error, is_stdout, is_stream
from negvocab.core.errors import InputError, NegvocabError
from negvocab.core.outdir import claim_file, claim_folder
from negvocab.evaluation.records import RANDOM_WEIGHTS_WARNING
from negvocab.evaluation.stored import RESULTS_INPUTS
from negvocab.report.html import write_report

__all__ = [
    "check_output",
    "check_results_folder",
    "claim_output_file",
    "claim_results_folder",
    "messages_to_stderr",
    "release_claims",
    "warn_random",
    "write_folder_report",
    "writing",
]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _read_in(folder: Path, path: Path) -> bool:
    """Whether ``path`` is a file that a reader of the results folder ``folder`` reads (its
    results.json, scores.npz, cells/, ...: :data:`~negvocab.evaluation.stored.RESULTS_INPUTS`)."""
    if not folder.is_dir():
        return False
    try:
        inside = Path(os.path.realpath(path)).relative_to(os.path.realpath(folder))
    except ValueError:
        return False
    return bool(inside.parts) and inside.parts[0] in RESULTS_INPUTS


def check_output(
    path: Path,
    *,
    inputs: Iterable[Path | None] = (),
    others: Iterable[Path | None] = (),
    overwrite: bool = False,
) -> None:
    """Fail early (before a long run) when ``path`` cannot become a file: a folder, a file where a
    folder should be, a folder without write permission, one of the command's ``inputs`` (which it
    would overwrite), another of its outputs (``others``), or an existing file without
    ``overwrite``. ``-``, devices and FIFOs are written in place and always pass. Creates nothing."""
    for other in others:
        if other is not None and path.absolute() == other.absolute():
            raise InputError(f"cannot write two outputs to {path}; give each its own file")
    if is_stream(path):
        return
    for source in inputs:
        if source is not None and (
            _same_file(path, source) or path.absolute() == source.absolute() or _read_in(source, path)
        ):
            raise InputError(f"cannot write {path}: it is an input of this command; choose another output file")
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a folder; give a file name")
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; give --overwrite to replace it, or another output file")
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    parent = target.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {path}: no permission to write in {parent}")


def claim_results_folder(folder: Path, outputs: tuple[str, ...], *, overwrite: bool) -> None:
    """Claim a results folder for the whole command (:func:`negvocab.core.outdir.claim_folder`): a
    second run into it refuses at once; one holding earlier outputs needs ``overwrite``. Released
    when the command ends, however it ends."""
    _claims.append(claim_folder(folder, outputs, overwrite=overwrite))


_claims: list[Any] = []


def claim_output_file(path: Path) -> None:
    """Claim a single output file for the whole command (:func:`negvocab.core.outdir.claim_file`; streams
    need none): a second run writing it refuses at once. Released when the command ends."""
    if not is_stream(path):
        _claims.append(claim_file(path))


def release_claims() -> None:
    """Release every folder claimed by :func:`claim_results_folder` (the CLI calls this when a
    command ends, however it ends)."""
    while _claims:
        _claims.pop().release()


def check_results_folder(folder: Path, marker: str, *, overwrite: bool) -> None:
    """:func:`claim_results_folder` for a folder whose earlier run ``marker`` names."""
    claim_results_folder(folder, (marker,), overwrite=overwrite)


@contextlib.contextmanager
def messages_to_stderr(*outputs: Path | None) -> Iterator[None]:
    """Print a command's summary lines on stderr when one of its outputs is ``-`` (standard
    output), so that they never mix with the data written there."""
    if any(o is not None and is_stdout(o) for o in outputs):
        with contextlib.redirect_stdout(sys.stderr):
            yield
    else:
        yield


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn a failed (atomic) write into one error line naming the file."""
    try:
        yield
    except OSError as e:
        if isinstance(e, NegvocabError):  # a full disk, already one line
            raise
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full_error(path) from e
        raise InputError(f"cannot write {path}: {e.strerror or e}") from e


def write_folder_report(folder: Path) -> None:
    """The report of a results folder a command just wrote (score, sweep, coverage)."""
    with writing(folder / "report.html"):
        out = write_report(folder)
    typer.echo(f"wrote {out}")


def warn_random(random_weights: bool) -> None:
    """The random-weights warning, once, in red, beside the results."""
    if random_weights:
        typer.secho(f"WARNING: {RANDOM_WEIGHTS_WARNING}", fg="red", bold=True)  # once, with the results
