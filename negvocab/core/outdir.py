"""Results folders: claimed for a run's lifetime, written whole, an earlier run kept unless replaced.

A command that writes a folder of files (``score``, ``sweep``) claims the folder when it starts
(:func:`claim_folder`: an exclusive ``flock`` on the folder, held until the run ends), so a second
run into the same folder refuses at once instead of mixing its files with the first one's. The
files are written into a staging folder inside it and moved in only when all of them are complete
(:func:`staged_folder`): a run that fails half-way (a full disk, an error, Ctrl-C) leaves the earlier
run's files as they were. The commit point is one rename: the complete staging folder, with the list
of its files, becomes ``.negvocab-commit``; the files are then moved in (the earlier run's marker
file, ``results.json``, goes first, the new one comes last). A run killed during those moves leaves
``.negvocab-commit`` behind, and the next claim of the folder finishes the moves before anything
else (roll forward), so the folder is always one run's complete output or, after a kill, becomes
one. Any earlier output file, not only the marker, counts as an earlier run: it is replaced only
with ``overwrite``.

The lock dies with the run that took it: a process forked while a folder is claimed (an image
loader's worker) closes its copy of the lock at once, so a run killed with SIGKILL frees its folder
for the next run immediately, not when its orphaned workers notice. The temporary files of atomic
writes a killed run left (``.*.tmp``, in the folder and in the ``work_dirs`` it names) are removed
when the folder is claimed again.

A command that writes one file (``build mined``) claims that file (:func:`claim_file`): a lock file
beside it (``.NAME.negvocab-lock``, gone when the run ends), so a second run writing the same file
refuses at once; the file itself is written atomically (:mod:`negvocab.core.atomic`).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows: no advisory locks; folders are still written whole)
    fcntl = None  # type: ignore[assignment]

from negvocab.core.atomic import disk_full_error, is_stdout, is_stream
from negvocab.core.errors import InputError

__all__ = ["FolderClaim", "claim_file", "claim_folder", "staged_folder"]

STAGING_PREFIX = ".negvocab-staging-"
COMMIT_DIR = ".negvocab-commit"  # a staged run past its commit point, its files not all moved in yet
COMMIT_LIST = ".negvocab-files.json"  # in COMMIT_DIR: what the commit moves, and its marker
LOCK_SUFFIX = ".negvocab-lock"  # beside a single output file: .NAME.negvocab-lock, held for the run


@dataclass
class FolderClaim:
    """A results folder this process holds: the locked folder descriptor and how often it is held."""

    folder: Path
    fd: int
    created: bool
    depth: int = 1
    key: str = (
        ""  # where :data:`_held` keeps it: fixed at the claim (a relative folder's real path changes with the cwd)
    )

    def release(self) -> None:
        """Let go of one hold; the last one unlocks (and removes the folder if this run created it
        and left nothing in it)."""
        self.depth -= 1
        if self.depth > 0:
            return
        _forget(self)
        if self.created:
            with contextlib.suppress(OSError):
                Path(
                    self.key
                ).rmdir()  # only when empty: nothing of this run to keep (the real path: the cwd may have changed)
        os.close(self.fd)  # closing the descriptor drops the lock


_held: dict[str, FolderClaim] = {}


def _forget(claim: FolderClaim) -> None:
    """Drop ``claim`` from :data:`_held` before its descriptor is closed (a closed descriptor's number
    is soon reused; a forked child closing it would close something else: a loader worker's pipe)."""
    if _held.get(claim.key) is claim:
        del _held[claim.key]


def _forget_in_child() -> None:
    """In a forked child: close the claimed folders' descriptors (a ``flock`` is shared by every copy
    of its descriptor, so a child keeping one would hold the folder after its parent died)."""
    for claim in _held.values():
        with contextlib.suppress(OSError):
            os.close(claim.fd)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _key(folder: Path) -> str:
    return os.path.realpath(folder)


def claim_folder(
    folder: str | os.PathLike[str],
    outputs: Sequence[str],
    *,
    overwrite: bool,
    option: str = "-o",
    work_dirs: Sequence[str] = (),
) -> FolderClaim:
    """Claim ``folder`` for this run: refuse a folder another run is writing (one line), and one
    holding any of ``outputs`` from an earlier run unless ``overwrite``. Creates the folder.
    A claim this process already holds is shared (the count goes up). ``work_dirs``: subfolders a
    run writes file by file (a grid's ``cells``), cleared of a killed run's temporary files too."""
    path = Path(folder)
    if is_stdout(path):
        raise InputError(f"{option} -: this command writes a folder of files, not one stream; give a folder")
    if is_stream(path) or (path.exists() and not path.is_dir()):
        raise InputError(f"cannot write into {path}: it is not a folder; give a folder")
    parent = path.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"cannot write into {path}: {parent} is not a folder")
    held = _held.get(_key(path)) if path.exists() else None
    if held is not None:
        held.depth += 1
        return held
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise InputError(f"cannot write into {path}: {e.strerror or e}") from e
    claim = FolderClaim(path, fd, created, key=_key(path))
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise InputError(
                f"{path} is being written by another negvocab run; wait for it to finish or give another {option}"
            ) from None
        raise InputError(f"cannot lock {path}: {e.strerror or e}") from e
    try:
        _roll_forward(path)  # a run killed while moving its files in: finish its commit first
        earlier = [name for name in outputs if (path / name).exists()]
        if earlier and not overwrite:
            raise InputError(
                f"{path} holds the results of an earlier run ({', '.join(earlier)}); "
                f"give another {option}, or overwrite=True to replace them",
                param="overwrite",
            )
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"cannot write into {path}: no permission")
        for stale in path.glob(f"{STAGING_PREFIX}*"):  # a killed run's; ours are made after the lock
            shutil.rmtree(stale, ignore_errors=True)
        # atomic writes a killed run left half-done (negvocab.core.atomic names them .NAME.XXXX.tmp): of our
        # own outputs only in the folder the user chose, any in the folders the run owns (work_dirs)
        patterns = [f".{glob.escape(name)}.*.tmp" for name in outputs] + [
            f"{glob.escape(sub)}/.*.tmp" for sub in work_dirs
        ]
        for tmp in {t for pattern in patterns for t in path.glob(pattern)}:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except BaseException:
        claim.release()
        raise
    _held[claim.key] = claim
    return claim


@dataclass
class FileClaim(FolderClaim):
    """A single output file this process holds: the descriptor of its lock file, removed on release."""

    lock: Path | None = None

    def release(self) -> None:
        self.depth -= 1
        if self.depth > 0:
            return
        _forget(self)
        if self.lock is not None:
            with contextlib.suppress(OSError):
                self.lock.unlink()  # before the unlock: a later run makes a fresh one
        os.close(self.fd)


def claim_file(path: str | os.PathLike[str], *, option: str = "-o") -> FolderClaim:
    """Claim the single output file ``path`` for this run (streams need none): refuse at once, in one
    line, when another run writes it. Release the claim when the run ends."""
    target = Path(path)
    lock = target.absolute().parent / f".{target.name}{LOCK_SUFFIX}"
    held = _held.get(str(lock))
    if held is not None:
        held.depth += 1
        return held
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)  # the write would make it too
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise InputError(f"cannot write {target}: {e.strerror or e}") from e
    claim = FileClaim(target, fd, created=False, key=str(lock), lock=lock)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino != os.stat(lock).st_ino:  # removed by the run that held it, after we opened it
            raise BlockingIOError(errno.EWOULDBLOCK, "lock replaced")
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EACCES, errno.ENOENT):
            raise InputError(
                f"{target} is being written by another negvocab run; wait for it to finish or give another {option}"
            ) from None
        raise InputError(f"cannot lock {target}: {e.strerror or e}") from e
    _held[claim.key] = claim
    return claim


@contextlib.contextmanager
def staged_folder(
    folder: str | os.PathLike[str], outputs: Sequence[str], marker: str, *, overwrite: bool
) -> Iterator[Path]:
    """Yield a staging folder for all of a run's files; on success move them into ``folder`` (the
    earlier run's ``outputs`` go, ``marker`` comes last). On an exception ``folder`` is untouched.
    Claims ``folder`` (:func:`claim_folder`) for the duration unless this process holds it."""
    claim = claim_folder(folder, outputs, overwrite=overwrite)
    try:
        stage = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=claim.folder))
        try:
            try:
                yield stage
            except OSError as e:
                if e.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise disk_full_error(claim.folder, what="results folder; the earlier files are kept") from (
                        e.__cause__ or e
                    )
                raise
            _commit(stage, claim.folder, outputs, marker)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    finally:
        claim.release()


def _commit(stage: Path, folder: Path, outputs: Sequence[str], marker: str) -> None:
    """Commit the staged files: one rename makes the staging folder the pending commit, then
    :func:`_roll_forward` moves its files in (the old marker first, the new marker last)."""
    new = sorted(p.name for p in stage.iterdir())
    (stage / COMMIT_LIST).write_text(
        json.dumps({"marker": marker, "files": new, "outputs": list(outputs)}), encoding="utf-8"
    )
    for fh in stage.iterdir():  # everything on disk before the commit point
        with open(fh, "rb") as f:
            os.fsync(f.fileno())
    pending = folder / COMMIT_DIR
    shutil.rmtree(pending, ignore_errors=True)  # claim_folder rolled any earlier one forward; this is debris
    os.replace(stage, pending)  # the commit point
    _fsync_dir(folder)
    _roll_forward(folder)


def _roll_forward(folder: Path) -> None:
    """Finish a pending commit in ``folder`` (idempotent: each step may have happened already)."""
    pending = folder / COMMIT_DIR
    try:
        plan = json.loads((pending / COMMIT_LIST).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or killed before its commit point: nothing was committed
        shutil.rmtree(pending, ignore_errors=True)
        return
    marker, new = plan["marker"], set(plan["files"])
    if (pending / marker).exists():  # the new marker not moved in yet: the old one must not vouch
        (folder / marker).unlink(missing_ok=True)
    for name in plan["outputs"]:  # an earlier run's file this run does not write must not stay beside it
        if name not in new:
            (folder / name).unlink(missing_ok=True)
    for name in sorted(new - {marker}):
        if (pending / name).exists():
            os.replace(pending / name, folder / name)
    if (pending / marker).exists():
        os.replace(pending / marker, folder / marker)
    _fsync_dir(folder)
    shutil.rmtree(pending, ignore_errors=True)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
