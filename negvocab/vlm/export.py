"""Embeddings as plain files for your own analysis, verified when read back.

A folder holds ``embeddings.npy`` (float32 [n, d], L2-normalised), ``rows.csv`` (what each row is:
a label, or an image id and path) and ``manifest.json`` (the model identity, the templates, the
checksums of both files). Unlike the embedding cache, whose layout is internal, this layout is a
contract: ``np.load(folder / "embeddings.npy", mmap_mode="r")`` and any CSV reader work on it.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.core.atomic import atomic_path, write_json, write_text
from negvocab.core.errors import InputError
from negvocab.core.provenance import file_sha256

__all__ = [
    "EMBEDDINGS_FILE",
    "FORMAT",
    "MANIFEST_FILE",
    "ROWS_FILE",
    "check_export_folder",
    "load_embeddings",
    "save_embeddings",
]

FORMAT = "negvocab-embeddings/1"
EMBEDDINGS_FILE, ROWS_FILE, MANIFEST_FILE = "embeddings.npy", "rows.csv", "manifest.json"


def check_export_folder(folder: str | os.PathLike[str]) -> Path:
    """``folder`` if an export may be written there: missing, empty, or an earlier export.

    Anything else (another tool's files, another kind of manifest) is refused, so an export never
    overwrites files it did not write.
    """
    out = Path(folder).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"cannot write embeddings to {out}: it is a file; give a folder")
    if not out.is_dir():
        return out
    ours = {EMBEDDINGS_FILE, ROWS_FILE, MANIFEST_FILE}
    present = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    if not present:
        return out
    earlier = False
    if MANIFEST_FILE in present:
        try:
            earlier = json.loads((out / MANIFEST_FILE).read_text(encoding="utf-8")).get("format") == FORMAT
        except (OSError, ValueError, AttributeError):
            earlier = False
    if not earlier or present - ours:
        raise InputError(
            f"{out} is not empty and not an earlier embeddings export (holds {sorted(present - ours or present)[0]}); "
            "give a new or empty folder"
        )
    return out


def save_embeddings(
    folder: str | os.PathLike[str],
    embeddings: np.ndarray,
    rows: Sequence[Mapping[str, Any]],
    *,
    model: Mapping[str, Any],
    **info: Any,
) -> Path:
    """Write ``embeddings`` [n, d] with one ``rows`` entry per row and a manifest; return the folder.

    ``model`` is the model identity (:attr:`negvocab.VLM.identity`); ``info`` goes into the
    manifest as is (templates, source file, failed images, ...). The finished manifest is written
    last; until then the folder holds one saying the export is unfinished.

    Parameters
    ----------
    folder : str or PathLike
        The export folder.
    embeddings : ndarray, shape (n, d)
        The embeddings.
    rows : sequence of mappings
        One entry per row of ``embeddings``.
    model : mapping
        The model identity (:attr:`negvocab.VLM.identity`).
    **info
        Goes into the manifest as is.
    """
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or len(rows) != len(emb):
        raise InputError(f"embeddings of shape {emb.shape} do not match {len(rows)} rows")
    columns = list(dict.fromkeys(["row", *(k for r in rows for k in r)]))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows({"row": i, **r} for i, r in enumerate(rows))

    out = check_export_folder(folder)
    # first a manifest saying the export is unfinished: an interrupted one is known as ours (the
    # same command may write there again) and never read as finished
    write_json(out / MANIFEST_FILE, {"format": FORMAT, "complete": False})
    with atomic_path(out / EMBEDDINGS_FILE) as tmp, open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(emb, dtype=np.float32), allow_pickle=False)
    write_text(out / ROWS_FILE, buf.getvalue())
    manifest = {
        "format": FORMAT,
        "complete": True,
        "n": int(emb.shape[0]),
        "dim": int(emb.shape[1]),
        "dtype": "float32",
        "random_weights": bool(model.get("random_weights")),
        "model": dict(model),
        **info,
        "files": {name: file_sha256(out / name) for name in (EMBEDDINGS_FILE, ROWS_FILE)},
    }
    write_json(out / MANIFEST_FILE, json.loads(json.dumps(manifest, default=str)))
    return out


def load_embeddings(
    folder: str | os.PathLike[str], *, mmap: bool = False
) -> tuple[np.ndarray, list[dict[str, str]], dict[str, Any]]:
    """Read an export back as (embeddings, rows, manifest), after checking it is complete and intact.

    Parameters
    ----------
    folder : str or PathLike
        The export folder (:func:`save_embeddings`).
    mmap : bool, default False
        Memory-map the embeddings (read-only) instead of reading them into memory.
    """
    out = Path(folder).expanduser()
    manifest_path = out / MANIFEST_FILE
    if not manifest_path.is_file():
        raise InputError(f"{out}: no {MANIFEST_FILE}; not an embeddings export, or an unfinished one (export again)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{manifest_path}: unreadable manifest ({e}); export again") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"{manifest_path}: not a {FORMAT} manifest")
    if manifest.get("complete") is False:
        raise InputError(f"{out}: an unfinished export (it was interrupted); export again")
    files, n, dim = manifest.get("files"), manifest.get("n"), manifest.get("dim")
    if not (
        isinstance(files, dict)
        and {EMBEDDINGS_FILE, ROWS_FILE} <= set(files)
        and isinstance(n, int)
        and isinstance(dim, int)
    ):
        raise InputError(f"{manifest_path}: incomplete manifest (files, n, dim); export again")
    for name in (EMBEDDINGS_FILE, ROWS_FILE):
        if not (out / name).is_file() or file_sha256(out / name) != files[name]:
            raise InputError(f"{out / name}: missing or changed since the export (checksum mismatch); export again")
    emb = np.load(out / EMBEDDINGS_FILE, mmap_mode="r" if mmap else None, allow_pickle=False)
    with open(out / ROWS_FILE, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if emb.shape != (n, dim) or len(rows) != n:
        raise InputError(f"{out}: embeddings {emb.shape} and {len(rows)} rows disagree with the manifest")
    return emb, rows, manifest
