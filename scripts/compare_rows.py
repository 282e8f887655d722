"""Compare two results files row by row, whatever their row keys: each row read back with negvocab's one
reader (ResultRow.from_dict) and compared value for value, so a file whose keys were renamed or reordered
but whose numbers are the same compares equal. Everything else in a JSON document is compared as it is.

    python3 scripts/compare_rows.py OLD_FILE NEW_FILE   # exit 0: the same rows and values; 1: they differ

Used by scripts/compare_outputs.sh for results files (.json, .csv, .parquet) that are not byte-identical.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.evaluation.row import ResultRow

TIME_KEYS = ("seconds", "created", "time", "date")
#: a document's checksum of its own rows: it changes with their keys (the rows are compared instead)
CHECKSUM_KEYS = {"sha256"}
#: what each row says of its file's shape, not of its result: left out of the comparison
SHAPE_FIELDS = {"layout"}


def _cells(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its empty cells (a CSV writes a missing value as '')."""
    return {k: v for k, v in row.items() if v != ""}


def _is_row(obj: object) -> bool:
    if not isinstance(obj, dict):
        return False
    try:
        ResultRow.from_dict(_cells(obj))
    except (InputError, TypeError, ValueError):
        return False
    return True


def _norm(value: Any) -> Any:
    """A value in a form both files' encodings share (NaN, None and '' are all 'absent'; numbers as floats;
    a JSON-encoded mapping read as a mapping)."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        low = value.strip()
        if low in ("True", "true"):
            return True
        if low in ("False", "false"):
            return False
        try:
            return float(low)
        except ValueError:
            pass
        if low[:1] in "{[":
            try:
                return _norm(json.loads(low))
            except ValueError:
                return value
        return value
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def row_values(row: dict[str, Any]) -> dict[str, Any]:
    """Every field of a row as the one reader sees it (intervals flat, extras merged), normalised."""
    flat = ResultRow.from_dict(_cells(row)).flat_dict()
    return {k: _norm(v) for k, v in sorted(flat.items()) if k not in SHAPE_FIELDS and not k.endswith(TIME_KEYS)}


def _held(raw: dict[str, Any], key: str) -> bool:
    """Whether a raw row holds ``key`` itself (an interval bound also as ``<metric>_ci: [low, high]``)."""
    for end in ("_ci_low", "_ci_high"):
        if key.endswith(end) and key.removesuffix(end) + "_ci" in raw:
            return True
    return key in raw


def _split(doc: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A JSON document without its result rows, and the rows (each list of rows, in order)."""
    rows: list[dict[str, Any]] = []

    def walk(x: Any) -> Any:
        if isinstance(x, list) and x and all(_is_row(r) for r in x):
            rows.extend(x)
            return "<rows>"
        if _is_row(x):  # a grid cell file's one row
            rows.append(x)
            return "<row>"
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items() if not str(k).endswith(TIME_KEYS) and k not in CHECKSUM_KEYS}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(doc), rows


def _read(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    if path.suffix == ".json":
        return _split(json.loads(path.read_text()))
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        return None, rows if rows and all(_is_row(r) for r in rows) else []
    if path.suffix == ".parquet":
        import pandas as pd

        return None, pd.read_parquet(path).to_dict("records")
    raise SystemExit(f"{path}: not a results file (.json, .csv or .parquet)")


def main(old: str, new: str) -> int:
    (doc_a, rows_a), (doc_b, rows_b) = _read(Path(old)), _read(Path(new))
    if not rows_a and not rows_b:
        print(f"{new}: holds no result rows")
        return 1
    if _norm(doc_a) != _norm(doc_b):
        print(f"{new}: differs outside its rows")
        return 1
    if len(rows_a) != len(rows_b):
        print(f"{new}: {len(rows_b)} rows, {old}: {len(rows_a)}")
        return 1
    for i, (a, b) in enumerate(zip(rows_a, rows_b, strict=True)):
        va, vb = row_values(a), row_values(b)
        held = {k for k in va if _held(_cells(a), k)}  # what the old row said, not a reader's default
        diff = sorted(k for k in held & set(vb) if va[k] != vb[k] and va[k] is not None)
        # a value the old file did not have (an interval it did not compute, a provenance field it left out)
        gained = sorted(k for k in set(vb) if vb[k] is not None and (k not in held or va.get(k) is None))
        lost = sorted(k for k in set(va) - set(vb) if va[k] is not None)
        if diff or lost:
            print(f"{new}: row {i} differs in {diff or ''} lost {lost or ''}")
            return 1
        if gained and i == 0:
            print(f"{new}: rows gained {', '.join(gained)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
