"""Image sets read from a dataset's own annotation tables (the benchmark layout ``table``).

Fine-grained datasets ship their test splits as tables rather than folders or ``path label`` lists:
CUB-200-2011's ``images.txt`` joined with ``image_class_labels.txt`` and ``train_test_split.txt``,
Food-101's ``meta/test.txt`` (``class/image`` lines), Oxford-IIIT Pet's ``annotations/test.txt``
(``image class species breed``), Stanford Cars' ``cars_test_annos_withlabels.mat`` (a struct array)
and Waterbirds' ``metadata.csv``. A :class:`TableSpec`, given as data (a benchmark set's ``read``
table), says how to read one: which column names the image, which gives the label and how, which
tables to join and which rows to keep. Labels come out as class indices (``"0"``...) into the
benchmark's class list, as OpenOOD's lists give them.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from negvocab.core.errors import InputError
from negvocab.core.extras import require
from negvocab.core.textfiles import read_text
from negvocab.data.images import ImageSet, listed_paths

__all__ = ["TABLE_KEYS", "TableSpec", "table_images", "table_spec"]

#: the keys of a ``read`` table, each a field of :class:`TableSpec`
TABLE_KEYS: tuple[str, ...] = (
    "file", "columns", "struct", "suffix", "label", "label_folder", "label_base", "label_names", "join", "keep",
)  # fmt: skip

#: one table row: (its line in the file, or its index in a .mat struct array; column -> value)
_Row = tuple[int, dict[str, str]]


@dataclass(frozen=True)
class TableSpec:
    """How a dataset's annotation table lists its images.

    ``file``: the column naming each image (relative to the set's image root), ``suffix`` added to it
    (Pets and Food-101 list names without ``.jpg``). ``columns``: the names of a text table's
    whitespace-separated fields (a ``.csv`` names them in its header, a ``.mat`` struct array in its
    fields; ``struct``: the ``.mat`` variable holding it). ``label``: the column giving each image's
    class, an integer counted from ``label_base`` unless ``label_names`` (a file under the data root,
    one name a line) names the classes in order; ``label_folder``: the class is the listed path's first
    folder instead. ``join``: more text tables ``(file, columns)`` whose first column keys the rows;
    ``keep``: ``(column, value)`` pairs a row must match (a split)."""

    file: str
    columns: tuple[str, ...] = ()
    struct: str = ""
    suffix: str = ""
    label: str = ""
    label_folder: bool = False
    label_base: int = 0
    label_names: str = ""
    join: tuple[tuple[str, tuple[str, ...]], ...] = ()
    keep: tuple[tuple[str, str], ...] = ()


def _names(where: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or not all(isinstance(x, str) and x for x in value):
        raise InputError(f"{where}: read: {key} must be a list of column names, got {value!r}")
    return tuple(value)


def table_spec(doc: object, where: str) -> TableSpec:
    """A :class:`TableSpec` from data (a ``read`` table); each problem is one :class:`InputError`
    naming ``where``, the key, the value and what is allowed."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: read must be a table ({', '.join(TABLE_KEYS)})")
    unknown = sorted(set(doc) - set(TABLE_KEYS))
    if unknown:
        raise InputError(f"{where}: read: unknown key {unknown[0]!r}; known: {', '.join(TABLE_KEYS)}")
    for key in ("file", "struct", "suffix", "label", "label_names"):
        if not isinstance(doc.get(key, ""), str):
            raise InputError(f"{where}: read: {key} must be a string, got {doc[key]!r}")
    if not doc.get("file"):
        raise InputError(f"{where}: read: file must name the column that gives each image")
    base = doc.get("label_base", 0)
    if not isinstance(base, int) or isinstance(base, bool) or base < 0:
        raise InputError(f"{where}: read: label_base must be an integer >= 0, got {base!r}")
    if not isinstance(doc.get("label_folder", False), bool):
        raise InputError(f"{where}: read: label_folder must be true or false, got {doc['label_folder']!r}")
    if doc.get("label") and doc.get("label_folder"):
        raise InputError(f"{where}: read: give label (a column) or label_folder = true, not both")
    join, keep = doc.get("join", {}), doc.get("keep", {})
    if not isinstance(join, Mapping) or not isinstance(keep, Mapping):
        raise InputError(f"{where}: read: join and keep must be tables (file = [columns], column = value)")
    return TableSpec(
        file=doc["file"],
        columns=_names(where, "columns", doc.get("columns", [])) if "columns" in doc else (),
        struct=doc.get("struct", ""),
        suffix=doc.get("suffix", ""),
        label=doc.get("label", ""),
        label_folder=doc.get("label_folder", False),
        label_base=base,
        label_names=doc.get("label_names", ""),
        join=tuple((str(f), _names(where, f"join.{f}", cols)) for f, cols in join.items()),
        keep=tuple((str(c), str(v)) for c, v in keep.items()),
    )


def _read_rows(path: Path, columns: Sequence[str], struct: str) -> tuple[list[_Row], tuple[str, ...]]:
    """The rows of a table (a ``.csv`` with a header, a ``.mat`` struct array or a whitespace text
    table with ``columns``) and its column names."""
    suffix = path.suffix.lower()
    if suffix == ".mat":
        return _read_mat(path, struct)
    text = read_text(path, "annotation table")
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        header = tuple(h.strip() for h in reader.fieldnames or [])
        rows = [
            (reader.line_num, {k.strip(): (v or "").strip() for k, v in r.items() if k is not None}) for r in reader
        ]
        return rows, header
    if not columns:
        raise InputError(f"{path}: read: columns must name the fields of this text table")
    out: list[_Row] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != len(columns):
            raise InputError(f"{path}:{lineno}: {len(fields)} fields, expected {len(columns)} ({' '.join(columns)})")
        out.append((lineno, dict(zip(columns, fields, strict=True))))
    return out, tuple(columns)


def _read_mat(path: Path, struct: str) -> tuple[list[_Row], tuple[str, ...]]:
    """The rows of the struct array ``struct`` of a MATLAB file (Stanford Cars' annotations)."""
    import numpy as np

    loadmat = require("scipy.io").loadmat  # a missing scipy names its extra in one line
    if not path.is_file():
        raise InputError(f"{path}: no such annotation table")
    try:
        doc = loadmat(path, squeeze_me=True)
    except Exception as e:  # scipy raises several kinds for a file that is not MATLAB's
        raise InputError(f"{path}: not a readable .mat file ({e})") from e
    known = sorted(k for k in doc if not k.startswith("__"))
    if not struct or struct not in doc:
        raise InputError(f"{path}: read: struct {struct!r} is not a variable of the file; known: {', '.join(known)}")
    arr = np.atleast_1d(doc[struct])
    fields = tuple(arr.dtype.names or ())
    if not fields:
        raise InputError(f"{path}: read: struct {struct!r} is not a struct array (no fields)")

    def text(v: object) -> str:
        return str(v.item() if isinstance(v, np.ndarray | np.generic) else v)

    return [(i, {f: text(rec[f]) for f in fields}) for i, rec in enumerate(arr, 1)], fields


def _joined(
    path: Path, rows: list[_Row], cols: tuple[str, ...], spec: TableSpec, data_root: Path
) -> tuple[list[_Row], tuple[str, ...]]:
    """The rows joined with ``spec.join``'s tables, then those ``spec.keep`` keeps, and every column."""
    for file, join_cols in spec.join:
        other, _ = _read_rows(data_root / file, join_cols, "")
        key = join_cols[0]
        if key not in cols:
            raise InputError(
                f"{data_root / file}: read: join key {key!r} is not a column of {path} ({', '.join(cols)})"
            )
        by_key = {r[key]: r for _, r in other}
        for lineno, row in rows:
            if row[key] not in by_key:
                raise InputError(f"{data_root / file}: no row for {key} {row[key]!r} (named on {path}:{lineno})")
            row.update(by_key[row[key]])
        cols = (*cols, *join_cols[1:])
    for key, column in [("file", spec.file), ("label", spec.label), *(("keep", c) for c, _ in spec.keep)]:
        if column and column not in cols:
            raise InputError(f"{path}: read: {key} names column {column!r}; the columns: {', '.join(cols)}")
    return [(n, r) for n, r in rows if all(r[c] == v for c, v in spec.keep)], cols


def _label(path: Path, lineno: int, row: dict[str, str], listed: str, spec: TableSpec, names: dict[str, int]) -> str:
    """The row's class index (as text) into the benchmark's class list."""
    if spec.label_folder:
        parts = PurePosixPath(listed).parts
        if len(parts) < 2:
            raise InputError(f"{path}:{lineno}: {listed!r} has no class folder (read: label_folder = true)")
        value = parts[0]
    else:
        value = row[spec.label]
    if names:
        if value not in names:
            raise InputError(f"{path}:{lineno}: class {value!r} is not in {spec.label_names} (read: label_names)")
        return str(names[value])
    try:
        index = int(value) - spec.label_base
    except ValueError:
        raise InputError(f"{path}:{lineno}: label {value!r} is not an integer (read: label = {spec.label!r})") from None
    if index < 0:
        raise InputError(f"{path}:{lineno}: label {value} is below label_base {spec.label_base}")
    return str(index)


def table_images(
    path: str | Path, spec: TableSpec, image_root: str | Path, data_root: str | Path, *, name: str | None = None
) -> ImageSet:
    """The images a dataset's annotation table ``path`` lists as ``spec`` reads it, resolved against
    ``image_root``; joined tables and ``label_names`` are found under ``data_root``. Every kept image
    must exist, once (:func:`negvocab.data.images.listed_paths`)."""
    path, base, root = Path(path), Path(image_root), Path(data_root)
    rows, _ = _joined(path, *_read_rows(path, spec.columns, spec.struct), spec, root)
    if not rows:
        raise InputError(f"{path}: no images to read (keep: {dict(spec.keep)})")
    names: dict[str, int] = {}
    if spec.label_names:
        lines = read_text(root / spec.label_names, "class-name list").splitlines()
        names = {n: i for i, n in enumerate(x.strip() for x in lines if x.strip() and not x.startswith("#"))}
    files = [(n, r[spec.file] + spec.suffix) for n, r in rows]
    paths = listed_paths(path, base, files)
    labels = None
    if spec.label or spec.label_folder:
        labels = [_label(path, n, r, f, spec, names) for (n, r), (_, f) in zip(rows, files, strict=True)]
    return ImageSet(
        name=name or path.stem,
        paths=[str(p) for p in paths],
        ids=[str(PurePosixPath(f).with_suffix("")) for _, f in files],
        labels=labels,
        info={"list": str(path), "root": str(base), "layout": "table"},
    )
