"""Results read back: ``scores.npz`` and ``results.json`` of a ``negvocab score`` folder, validated on read.

A results folder is an input of later commands (``subsample``, ``report``), and a file in it may
be truncated, bit-flipped, hand-edited or written by something else. Both readers check what
those commands rely on before any of it is used (keys, types, shapes, dtypes; never a pickle:
``allow_pickle=False``) and raise :class:`~negvocab.core.errors.InputError` with one line naming the
file, what is wrong and what to do; nothing else escapes them (no ``BadZipFile``, ``KeyError`` or
``AttributeError`` traceback).

- :func:`read_scores_npz` -> :class:`StoredScores`: per-image scores by key (``id/<key>`` and
  ``ood/<key>``: 1-D real arrays, every ID array one length, every OOD array another), the image
  ids, paths and OOD-set names when stored (string arrays of those lengths), ``random_weights``
  and ``model``.
- :func:`read_results_json` -> the document: a JSON object whose ``rows`` is a list of objects,
  each with a string ``method``, numbers (or null) for the metrics it holds and for its intervals
  (``fpr_ci_low``/``fpr_ci_high``; an older file's ``fpr_ci`` pairs).
- :func:`read_grid_cells` -> the stored rows of a grid's ``cells/`` and its failed cells.
- :func:`read_results` -> the rows of any results folder (``score``, ``sweep`` or grid) as
  :class:`~negvocab.evaluation.row.ResultRow` records, whatever the version that wrote them.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.npyio import NpzFile

from negvocab.core.errors import InputError
from negvocab.evaluation.row import INTERVAL_METRICS, ResultRow

__all__ = [
    "METRIC_FIELDS",
    "RESULTS_INPUTS",
    "StoredScores",
    "check_row",
    "read_grid_cells",
    "read_grid_means",
    "read_results",
    "read_results_json",
    "read_scores_npz",
    "read_sweep_json",
]

#: what the readers of a results folder read in it (files, and folders of files): the inputs a
#: command writing into such a folder must never replace
RESULTS_INPUTS = (
    "results.json",
    "scores.npz",
    "sweep.json",
    "coverage.json",
    "coverage_images.json",
    "grid.json",
    "scores_index.json",
    "cells",
    "means",
    "scores",
)
SCORES_HINT = "re-run `negvocab score` into a new folder to write it again"
#: numbers (or null) wherever a results row holds them
METRIC_FIELDS = (
    "fpr",
    "auroc",
    "aupr_in",
    "aupr_out",
    "tpr",
    *(f"{m}_ci_{end}" for m in INTERVAL_METRICS for end in ("low", "high")),
    "n_id",
    "n_ood",
)
#: string arrays that describe the images, and the split whose length they have
_IMAGE_ARRAYS = {"id_image_ids": "id", "id_paths": "id", "ood_image_ids": "ood", "ood_paths": "ood", "ood_sets": "ood"}


@dataclass(frozen=True)
class StoredScores:
    """The per-image scores of a results folder (see the module docstring)."""

    path: Path
    id: dict[str, np.ndarray]  # key -> float64 [n_id]
    ood: dict[str, np.ndarray]  # key -> float64 [n_ood]
    images: dict[str, np.ndarray] = field(default_factory=dict)  # id_paths, ood_paths, ood_sets, ... (str)
    random_weights: bool = False
    model: str = ""

    @property
    def keys(self) -> list[str]:
        return list(self.id)


def _bad(path: Path, what: str, hint: str = SCORES_HINT) -> InputError:
    return InputError(f"{path}: {what}; {hint}")


def _load_arrays(file: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, decompressed and checked here (no pickles)."""
    # zipfile says NotImplementedError for an unknown compression method and RuntimeError for an entry
    # flagged encrypted: both are what a flipped bit of a header gives
    failures = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, UnicodeError)
    zip_refusals = (NotImplementedError, RuntimeError)
    try:
        data = np.load(file, allow_pickle=False)
        if not isinstance(data, NpzFile):
            raise _bad(file, f"a single .npy array ({data.dtype}, shape {data.shape}), not a scores.npz archive")
        with data:
            return {k: np.asarray(data[k]) for k in data.files}
    except InputError:
        raise
    except (*failures, *zip_refusals) as e:
        reason = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        raise _bad(file, f"not a readable scores.npz ({reason})") from None


def _score_array(file: Path, name: str, a: np.ndarray) -> np.ndarray:
    if a.ndim != 1 or a.dtype.kind not in "fiu":
        raise _bad(file, f"{name!r} must be a 1-D array of numbers, got {a.dtype} of shape {a.shape}")
    return a.astype(np.float64)


def read_scores_npz(path: str | os.PathLike[str]) -> StoredScores:
    """The validated per-image scores of ``path`` (a results folder or its ``scores.npz``)."""
    given = Path(path)
    file = given / "scores.npz" if given.is_dir() else given
    if not file.is_file():
        raise InputError(f"{file}: no scores file; give a results folder of `negvocab score` or its scores.npz")
    arrays = _load_arrays(file)
    keys = [k[3:] for k in arrays if k.startswith("id/") and "/" not in k[3:]]
    if not keys:
        raise _bad(file, "holds no per-image scores (no id/<method> arrays)")
    s_id, s_ood = {}, {}
    for k in keys:
        if f"ood/{k}" not in arrays:
            raise _bad(file, f"has ID scores for {k!r} but no OOD scores ('ood/{k}')")
        s_id[k] = _score_array(file, f"id/{k}", arrays[f"id/{k}"])
        s_ood[k] = _score_array(file, f"ood/{k}", arrays[f"ood/{k}"])
    sizes = {"id": {len(v) for v in s_id.values()}, "ood": {len(v) for v in s_ood.values()}}
    for split, n in sizes.items():
        if len(n) > 1:
            raise _bad(file, f"its {split} score arrays differ in length ({', '.join(map(str, sorted(n)))})")
        if n == {0}:
            raise _bad(file, f"holds no {split.upper()} images (empty {split}/ arrays)")
    images = {}
    for name, split in _IMAGE_ARRAYS.items():
        if name in arrays:
            a = arrays[name]
            if a.ndim != 1 or a.dtype.kind != "U" or len(a) != next(iter(sizes[split])):
                raise _bad(
                    file,
                    f"{name!r} must be {next(iter(sizes[split]))} strings (one "
                    f"per {split.upper()} image), got {a.dtype} of shape {a.shape}",
                )
            images[name] = a
    random, model = arrays.get("random_weights", np.array(False)), arrays.get("model", np.array(""))
    if random.shape != () or random.dtype.kind not in "bi":
        raise _bad(file, f"'random_weights' must be one boolean, got {random.dtype} of shape {random.shape}")
    if model.shape != () or model.dtype.kind != "U":
        raise _bad(file, f"'model' must be one string, got {model.dtype} of shape {model.shape}")
    return StoredScores(file, s_id, s_ood, images, bool(random), str(model))


def _number_or_null(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


#: the fields that are fractions in [0, 1] (NaN or null where undefined)
FRACTION_FIELDS = tuple(k for k in METRIC_FIELDS if k not in ("n_id", "n_ood"))


def _fraction(file: Path, where: str, v: Any, hint: str) -> None:
    if v is not None and not math.isnan(v) and not 0.0 <= v <= 1.0:
        raise _bad(file, f"{where}: {v!r} is out of range [0, 1] (metrics are fractions, not percents)", hint)


def check_row(file: Path, where: str, row: Any, hint: str) -> Mapping[str, Any]:
    """``row`` (at ``where`` in ``file``) as a results row: an object with a string ``method``, strings
    for its axes, numbers or null for its metrics (fractions in [0, 1]) and [low, high] intervals."""
    if not isinstance(row, Mapping):
        raise _bad(file, f"{where} must be an object, got {type(row).__name__}", hint)
    if not isinstance(row.get("method"), str):
        raise _bad(file, f"{where}['method'] must be a string, got {type(row.get('method')).__name__}", hint)
    for key in ("vocabulary", "ood_set", "convention", "model"):
        if row.get(key) is not None and not isinstance(row[key], str):
            raise _bad(file, f"{where}[{key!r}] must be a string, got {type(row[key]).__name__}", hint)
    for key in METRIC_FIELDS:
        if key in row and not _number_or_null(row[key]):
            raise _bad(file, f"{where}[{key!r}] must be a number or null, got {type(row[key]).__name__}", hint)
        if key in row and key in FRACTION_FIELDS:
            _fraction(file, f"{where}[{key!r}]", row[key], hint)
    for key in (f"{m}_ci" for m in INTERVAL_METRICS):
        pair = row.get(key)
        if pair is not None and not (isinstance(pair, list) and len(pair) == 2 and all(map(_number_or_null, pair))):
            raise _bad(file, f"{where}[{key!r}] must be [low, high] (numbers or null), got {pair!r:.40}", hint)
        for v in pair or ():
            _fraction(file, f"{where}[{key!r}]", v, hint)
    return row


def _read_json_object(file: Path, what: str, hint: str, holds: str = "a JSON object") -> dict[str, Any]:
    """The JSON object in ``file`` (a ``what``), or one line saying why it is not one."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: no {what}; give a results folder of `negvocab score`") from None
    except OSError as e:
        raise InputError(f"{file}: cannot be read ({e.strerror or e}); check it is a readable file") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _bad(file, "not a UTF-8 JSON file", hint) from None
    except ValueError as e:
        raise _bad(file, f"not valid JSON ({str(e).splitlines()[0][:80]})", hint) from None
    if not isinstance(doc, dict):
        raise _bad(file, f"must hold {holds}, got a {type(doc).__name__}", hint)
    return doc


def read_results_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The validated ``results.json`` of ``path`` (a results folder or the file itself)."""
    given = Path(path)
    file = given / "results.json" if given.is_dir() else given
    hint = "re-run `negvocab score` into a new folder to write it again"
    doc = _read_json_object(file, "results.json", hint, "a JSON object with 'rows'")
    _check_rows(file, "rows", doc.get("rows"), hint)
    return doc


def _check_rows(file: Path, key: str, rows: Any, hint: str) -> None:
    """``rows`` (the document's ``key``) as a list of results rows (:func:`check_row`)."""
    if not isinstance(rows, list):
        raise _bad(file, f"{key!r} must be a list of result rows, got {type(rows).__name__}", hint)
    for i, row in enumerate(rows):
        check_row(file, f"{key}[{i}]", row, hint)


def read_sweep_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The validated ``sweep.json`` of ``path``: rows as in a results.json, each with its size ``M``
    (an integer >= 1), and ``references`` (a list of result rows)."""
    given = Path(path)
    file = given / "sweep.json" if given.is_dir() else given
    hint = "re-run `negvocab sweep` into a new folder to write it again"
    doc = read_results_json(file)
    for i, row in enumerate(doc["rows"]):
        m = row.get("M")
        if not isinstance(m, int) or isinstance(m, bool) or m < 1:
            raise _bad(file, f"rows[{i}]['M'] must be a size (an integer >= 1), got {m!r:.40}", hint)
    _check_rows(file, "references", doc.get("references") or [], hint)
    return doc


def read_grid_means(path: str | os.PathLike[str]) -> dict[str, float]:
    """A grid's stored interval of a mean (``means/<digest>.json``): an object of fractions."""
    file = Path(path)
    hint = "delete it and re-run `negvocab grid run` to compute it again"
    doc = _read_json_object(file, "stored interval", hint)
    for key, v in doc.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise _bad(file, f"{key!r} must be a number, got {type(v).__name__}", hint)
        _fraction(file, repr(key), v, hint)
    return doc


def read_grid_cells(folder: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """The rows stored in a grid's ``cells/`` (in file order), their cell digests, and the failed
    cells (``{"cell": key, "error": reason}``)."""
    rows, digests, failed = [], [], []
    for path in sorted((Path(folder) / "cells").glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: not a readable grid cell ({e})") from e
        if path.name.endswith(".failed.json"):
            failed.append({"cell": doc.get("cell", ["?"]), "error": doc.get("error", "")})
        elif isinstance(doc, dict) and isinstance(doc.get("row"), dict):
            rows.append(dict(check_row(path, "'row'", doc["row"], "delete it and re-run `negvocab grid run`")))
            digests.append(str(doc.get("digest", "")))
        else:
            raise InputError(f"{path}: key 'row' must hold the cell's results row")
    return rows, digests, failed


def read_results(folder: str | os.PathLike[str]) -> list[ResultRow]:
    """The result rows of a results folder as :class:`~negvocab.evaluation.row.ResultRow` records:
    a ``negvocab score`` folder (``results.json``), a ``negvocab sweep`` folder (``sweep.json``: the
    sizes, then the references) or a grid's output folder (``cells/``, failed cells left out), of
    this version or an older one (either interval shape); a results.json or sweep.json file also serves.

    Parameters
    ----------
    folder : str or PathLike
        A results, sweep or grid output folder, or a results.json or sweep.json file.
    """
    given = Path(folder)
    if given.is_file():
        given, name = given.parent, given.name
    else:
        name = next((n for n in ("results.json", "sweep.json") if (given / n).is_file()), "")
    if name == "results.json":
        return [ResultRow.from_dict(r) for r in read_results_json(given / name)["rows"]]
    if name == "sweep.json":
        doc = read_sweep_json(given / name)
        refs = doc.get("references") or []
        return [ResultRow.from_dict(r, "sweep") for r in doc["rows"]] + [
            ResultRow.from_dict(r, "reference") for r in refs
        ]
    if (given / "cells").is_dir():
        return [ResultRow.from_dict(r, "grid") for r in read_grid_cells(given)[0]]
    raise InputError(
        f"{given}: no results.json, sweep.json or grid cells/; give a folder of negvocab score, sweep or grid run"
    )
