"""The files a grid stores in its output folder: score files (``scores/``: a cell's per-image scores and,
beside them, what its row needs of its vocabulary and ID images), cell rows with their checksum and the
failure marks (``cells/``). Written atomically and byte for byte the same for the same content; a reader
names a damaged file in one line and the grid computes it again (:mod:`negvocab.grid.work`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.atomic import atomic_path, write_json

if TYPE_CHECKING:
    from negvocab.grid.work import Cell

logger = logging.getLogger(__name__)

__all__ = [
    "load_score_file", "load_scores", "read_cell", "read_failure", "read_scores", "stored_facts", "stored_json",
    "write_failure",
]  # fmt: skip


def _save_scores(path: Path, scores: np.ndarray, meta: Mapping[str, Any]) -> None:
    """A score file: the scores (float64) and, beside them, what a cell row needs of its vocabulary
    (``meta``, JSON), so a resumed grid reports exactly what a clean one does. Written atomically and
    byte for byte the same for the same content (no time stamps in the zip members)."""
    members = {"scores": np.asarray(scores, dtype=np.float64), "meta": np.array(json.dumps(meta, sort_keys=True))}
    with atomic_path(path, suffix=".npz") as tmp, zipfile.ZipFile(tmp, "w") as zf:
        for name, arr in members.items():
            with zf.open(zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0)), "w") as fh:
                np.lib.format.write_array(fh, arr, allow_pickle=False)


def load_score_file(path: Path) -> tuple[np.ndarray, dict[str, Any]] | None:
    """The scores and vocabulary facts of a score file, or None when it is missing, torn, bit-flipped
    (the zip's CRC), of another shape or dtype, or of an older format (one line is logged; the caller
    computes it again)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            scores, meta = z["scores"], json.loads(str(z["meta"][()]))
        if scores.ndim != 1 or scores.dtype != np.float64 or not len(scores) or not isinstance(meta, dict):
            raise ValueError("not a 1-D float64 score array with its facts")
        return scores, meta
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        logger.warning(
            "%s: not a valid score file (%s); computing it again",
            path,
            str(e).splitlines()[0] if str(e) else type(e).__name__,
        )
        path.unlink(missing_ok=True)
        return None


def _made_by(path: Path) -> dict[str, Any]:
    """What a score file records about who made it; empty when it records nothing or cannot be read."""
    made = stored_facts(path).get("made_by")
    return made if isinstance(made, dict) else {}


def stored_facts(path: Path) -> dict[str, Any]:
    """What a score file records beside its scores (empty: nothing, or unreadable); never removes it."""
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"][()]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return {}
    return meta if isinstance(meta, dict) else {}


def load_scores(path: Path) -> np.ndarray | None:
    """The scores of a score file (see :func:`load_score_file`)."""
    got = load_score_file(path)
    return None if got is None else got[0]


def read_scores(path: Path) -> np.ndarray | None:
    """The scores of a score file for a reader (tables, comparisons), or None when it is missing or
    unreadable (one line logged). Unlike :func:`load_score_file`, which a resuming grid uses, it needs
    only the ``scores`` array (a file of an older format, without the vocabulary facts, still serves)
    and never removes the file: reading results must not destroy them."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            scores = z["scores"]
        if scores.ndim != 1 or not len(scores) or not np.issubdtype(scores.dtype, np.floating):
            raise ValueError("not a 1-D float score array")
        return scores.astype(np.float64, copy=False)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        logger.warning(
            "%s: not a readable score file (%s); its comparisons are left out",
            path,
            str(e).splitlines()[0] if str(e) else type(e).__name__,
        )
        return None


def _checked(row: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True, allow_nan=True).encode()).hexdigest()


def stored_json(path: Path) -> tuple[bool, Any]:
    """``(True, document)`` of a stored JSON file, ``(True, None)`` when it is there but unreadable
    or not JSON (the caller names it in one line and computes it again), ``(False, None)`` when absent."""
    try:
        return True, json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return False, None
    except (OSError, ValueError):
        return True, None


def read_cell(out: Path, cell: Cell, *, drop: bool = True) -> dict[str, Any] | None:
    """The stored row of ``cell``, or None when it is not stored; a file that is not this cell's
    (garbage, a list, a flipped bit caught by its checksum, another digest) is logged in one line
    and (``drop``) removed, to be computed again."""
    path = out / "cells" / f"{cell.digest}.json"
    there, doc = stored_json(path)
    if not there:
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("row"), dict) and doc.get("digest") == cell.digest
    if not ok or doc.get("sha256") != _checked(doc["row"]):
        logger.warning(
            "%s: a damaged cell file (unreadable, not this cell's "
            "row, or its checksum differs); the cell is computed again",
            path,
        )
        if drop:
            path.unlink(missing_ok=True)
        return None
    return doc["row"]


def _write_cell(out: Path, cell: Cell, row: Mapping[str, Any]) -> None:
    write_json(
        out / "cells" / f"{cell.digest}.json", {"row": dict(row), "digest": cell.digest, "sha256": _checked(row)}
    )
    (out / "cells" / f"{cell.digest}.failed.json").unlink(missing_ok=True)


def write_failure(out: Path, cell: Cell, error: str) -> None:
    """Mark ``cell`` failed with its one-line reason."""
    write_json(out / "cells" / f"{cell.digest}.failed.json", {"cell": list(cell.key()), "error": error})


def read_failure(out: Path, cell: Cell, *, drop: bool = True) -> str | None:
    """The reason ``cell`` failed, or None when it is not marked failed (a damaged mark counts as
    none and, with ``drop``, is removed)."""
    path = out / "cells" / f"{cell.digest}.failed.json"
    there, doc = stored_json(path)
    if not there:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("error"), str):
        logger.warning("%s: a damaged failure mark; the cell counts as pending", path)
        if drop:
            path.unlink(missing_ok=True)
        return None
    return doc["error"]
