"""What a benchmark is: its sets (where each lives under a data root, how it opens), the checks on a
benchmark given as data, and reading one from a dict (a table of a TOML/YAML/JSON file).

The registry of named benchmarks and the built-in ones are in :mod:`negvocab.data.benchmarks`, which
re-exports every name here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.data.annotations import TableSpec, table_images, table_spec
from negvocab.data.imagenet import imagenet_val
from negvocab.data.images import ImageSet, class_folders, image_folder, image_list
from negvocab.data.layouts import open_image_set
from negvocab.labels.imagenet import IdClasses, read_id_classes

__all__ = [
    "GROUPS",
    "KINDS",
    "LAYOUTS",
    "MEAN",
    "RESERVED_SET_NAMES",
    "SET_GROUPS",
    "Benchmark",
    "BenchmarkSet",
    "benchmark_from_dict",
    "classes_file",
    "tagged",
]


#: the groups whose sets get a mean row, and the name of that row in results
GROUPS: dict[str, str] = {"near": "near-ood", "far": "far-ood"}
#: the groups an OOD set of a benchmark may be put in (``other``: in no group mean)
SET_GROUPS: tuple[str, ...] = ("near", "far", "other")
#: the ood_set of the rows averaging every OOD set
MEAN = "mean"
#: the names of summary rows (results of ``score``, ``sweep`` and grids): no OOD set may take one
RESERVED_SET_NAMES: tuple[str, ...] = (MEAN, *GROUPS.values())
#: how a set is opened under a data root (``auto``: as :func:`negvocab.data.layouts.open_image_set` guesses)
LAYOUTS: tuple[str, ...] = ("list", "folder", "classes", "imagenet", "auto", "table")
#: ``sets``: every set opened under the root by its layout; ``carve``: a function carves ID and OOD from the root
KINDS: tuple[str, ...] = ("sets", "carve")


@dataclass(frozen=True)
class BenchmarkSet:
    """One set of a benchmark: its table name, group and where under the data root it lives.

    ``layout``: ``list`` (``where`` is an image list, ``image_dir`` the folder its paths start
    from), ``folder`` (every image below ``where``), ``classes`` (class folders in ``where``),
    ``imagenet`` (an ImageNet-1k validation folder), ``table`` (``where`` is a dataset's annotation table,
    read as ``read`` says: :mod:`negvocab.data.annotations`) or ``auto``. ``group``: ``near``, ``far``,
    ``other`` or None (an ID set, or a set in no group).

    Parameters
    ----------
    name : str
        The set's table name.
    group : str or None
        ``near``, ``far``, ``other`` or None.
    layout : str
        How the set lives under the data root (see above).
    where : str
        Its path under the data root.
    image_dir : str, default ""
        The folder a list's paths start from.
    source : str, default ""
        Where the set comes from.
    read : TableSpec, optional
        How a ``table`` layout's annotation table is read.
    """

    name: str
    group: str | None
    layout: str
    where: str
    image_dir: str = ""
    source: str = ""
    read: TableSpec | None = None

    def expects(self) -> str:
        """Where the set's files are expected, relative to the data root, in words."""
        if self.layout in ("list", "table"):
            return f"{self.where} (paths from {self.image_dir or '.'}/)"
        if self.layout == "carve":
            return self.where
        tail = {"classes": "<class>/*", "imagenet": "<wnid>/*.JPEG or ILSVRC2012_val_*"}.get(self.layout, "**/*")
        return f"{self.where}/{tail}" if self.where else tail

    def needs(self) -> tuple[str, ...]:
        """What the set reads under the data root: ``where``, and a table's joined tables and class names."""
        if self.read is None:
            return (self.where,)
        return (
            self.where,
            *(f for f, _ in self.read.join),
            *([self.read.label_names] if self.read.label_names else []),
        )

    def open(self, root: Path, *, ground_truth: str | os.PathLike[str] | None = None, tag: bool = True) -> ImageSet:
        """The set's images under ``root`` (:class:`InputError` naming the missing file or folder);
        ``tag`` records the set's name and group in its ``info`` (OOD sets)."""
        where = root / self.where
        if self.layout in ("list", "table"):
            if not where.is_file():
                raise InputError(
                    f"{self.name}: no image list {where} (expected under the data root {root}: {self.expects()})"
                )
            if self.read is not None:
                images = table_images(where, self.read, root / self.image_dir, root, name=self.name)
            else:
                images = image_list(where, root=root / self.image_dir, name=self.name)
        else:
            if not where.is_dir():
                raise InputError(
                    f"{self.name}: no folder {where} (expected under the data root {root}: {self.expects()})"
                )
            if self.layout == "imagenet":
                images = imagenet_val(where, name=self.name, ground_truth=ground_truth)
            elif self.layout == "auto":
                images = open_image_set(where, name=self.name)
            else:
                images = (class_folders if self.layout == "classes" else image_folder)(where, name=self.name)
        return tagged(images, self) if tag else images


def tagged(images: ImageSet, spec: BenchmarkSet) -> ImageSet:
    """``images`` with the benchmark set's name and group in its ``info`` (an OOD set of a benchmark)."""
    return ImageSet(
        images.name,
        images.paths,
        images.ids,
        images.labels,
        {**images.info, "benchmark_set": spec.name, "ood_group": spec.group},
    )


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark: its OOD sets (each with its group), its ID set and where it comes from.

    ``id``: how the ID set is opened under the data root (None: the benchmark has no ID set of its
    own; give one). ``kind="carve"``: ``carve`` (a function or a ``"pkg.module:fn"`` target) is
    called as ``carve(root, ground_truth=..., **inputs)`` and returns ``(id_set, {name: ood_set})``;
    ``inputs`` names the files it needs, ``options`` those it may take; ``sets`` then describe the
    sets it returns (their groups). ``given_as``: how a user gives it, in words (the CLI's listing).
    ``classes``: the ID label space (:meth:`id_classes`; "": ImageNet-1k). ``csid``: covariate-shifted ID
    sets (full-spectrum OOD: ImageNet-V2, -R, ... count as ID), opened with the ID set and joined to it.
    ``validation``: its tuning split (an ID set and OOD sets, never the test lists) where it declares one.

    Parameters
    ----------
    name : str
        The benchmark's name.
    title : str
        Its title.
    sets : tuple of BenchmarkSet
        Its OOD sets.
    id : BenchmarkSet, optional
        How the ID set is opened.
    source : str, default ""
        Where it comes from.
    kind : str, default "sets"
        ``"sets"`` or ``"carve"``.
    carve : str or callable, optional
        A carve benchmark's function, or its ``"pkg.module:fn"`` target.
    inputs : tuple of str, default ()
        The files a carve benchmark needs.
    options : tuple of str, default ()
        The files a carve benchmark may take.
    given_as : str, default ""
        How a user gives it, in words.
    aliases : tuple of str, default ()
        Other names of the benchmark.
    classes : str, default ""
        The ID label space ("": ImageNet-1k).
    csid : tuple of BenchmarkSet, default ()
        Covariate-shifted ID sets.
    validation : Benchmark, optional
        Its tuning split.
    """

    name: str
    title: str
    sets: tuple[BenchmarkSet, ...]
    id: BenchmarkSet | None = None
    source: str = ""
    kind: str = "sets"
    carve: str | Callable[..., Any] | None = None
    inputs: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    given_as: str = ""
    aliases: tuple[str, ...] = field(default=(), compare=False)
    classes: str = ""
    csid: tuple[BenchmarkSet, ...] = ()
    validation: Benchmark | None = None

    def __post_init__(self) -> None:
        _check_benchmark(self)

    def id_classes(self) -> IdClasses | None:
        """The ID label space the benchmark names (``classes``: a class list shipped in negvocab, or a
        file of wnids or class names), or None: the caller's default (ImageNet-1k)."""
        if not self.classes:
            return None
        return read_id_classes(classes_file(self.classes))

    def classes_source(self) -> str:
        """Where the ID class list comes from: the comment lines heading its file ("" without one)."""
        if not self.classes:
            return ""
        head = []
        for line in read_text(classes_file(self.classes), "ID classes file").splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("#").strip())
        return " ".join(head)

    @property
    def id_set(self) -> str:
        """The ID set in words (older name of what :attr:`id` describes)."""
        if self.id is None:
            return "none of its own: give --id (id_path=)"
        if self.kind == "carve":
            return f"the rest of ROOT ({self.id.expects()}) once the OOD sets are carved out"
        return f"ROOT/{self.id.expects()}" if self.id.where else f"ROOT ({self.id.expects()})"

    def group_of(self, set_name: str) -> str | None:
        """The group of this benchmark's set ``set_name`` (None: not one of its sets, or in no group)."""
        return next((s.group for s in self.sets if s.name == set_name), None)


def _check_benchmark(b: Benchmark) -> None:
    """One line per problem in a benchmark given as data."""
    where = f"benchmark {b.name!r}"
    if not str(b.name).strip() or "=" in b.name or "/" in b.name:
        raise InputError(f"benchmark name {b.name!r}: must be non-empty, without '=' or '/'")
    if b.kind not in KINDS:
        raise InputError(f"{where}: kind {b.kind!r} is not allowed; choose one of {', '.join(KINDS)}")
    if b.kind == "carve" and b.carve is None:
        raise InputError(f"{where}: kind 'carve' needs carve = 'pkg.module:function'")
    if b.kind == "sets" and b.carve is not None:
        raise InputError(f"{where}: carve is for kind = 'carve' only")
    if not b.sets:
        raise InputError(f"{where}: no OOD sets; give at least one")
    names = [s.name for s in b.sets]
    for s in b.sets:
        if not s.name.strip() or s.name in RESERVED_SET_NAMES:
            raise InputError(
                f"{where}: set name {s.name!r} is not allowed (non-empty, not {', '.join(RESERVED_SET_NAMES)})"
            )
        if names.count(s.name) > 1:
            raise InputError(f"{where}: two sets are named {s.name!r}")
        if s.group is not None and s.group not in SET_GROUPS:
            raise InputError(f"{where}: set {s.name!r}: group {s.group!r}; choose one of {', '.join(SET_GROUPS)}")
        if b.kind == "sets" and s.layout not in LAYOUTS:
            raise InputError(f"{where}: set {s.name!r}: layout {s.layout!r}; choose one of {', '.join(LAYOUTS)}")
    if b.csid and b.id is None:
        raise InputError(f"{where}: csid sets join an ID set; give id too")
    for s in b.csid:
        if s.layout not in LAYOUTS:
            raise InputError(f"{where}: csid {s.name!r}: layout {s.layout!r}; choose one of {', '.join(LAYOUTS)}")
    if b.id is not None and b.id.layout not in LAYOUTS:
        raise InputError(f"{where}: id: layout {b.id.layout!r}; choose one of {', '.join(LAYOUTS)}")
    for s in (*b.sets, *b.csid, *([b.id] if b.id is not None else [])):
        if (s.layout == "table") != (s.read is not None):
            raise InputError(f"{where}: set {s.name!r}: layout 'table' and read (a TableSpec) go together")


# -- benchmarks given as data --------------------------------------------------------------------
_SET_KEYS = {"name", "group", "layout", "path", "where", "image_root", "image_dir", "source", "read"}
_KEYS = {
    "name", "title", "source", "kind", "carve", "inputs", "options", "given_as", "aliases", "id", "ood", "sets",
    "classes", "csid", "validation",
}  # fmt: skip


def _set_from(where: str, doc: Any, *, name: str | None = None, ood: bool = True) -> BenchmarkSet:
    if isinstance(doc, str):
        doc = {"path": doc}
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: must be a table (name, group, layout, path, image_root) or a path")
    unknown = sorted(set(doc) - _SET_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(_SET_KEYS))}")
    set_name = str(doc.get("name", name or ("ID" if not ood else "")))
    path = doc.get("path", doc.get("where"))
    if not isinstance(path, str):
        raise InputError(f"{where}: path must be a path relative to the data root ('' for the root itself)")
    group = doc.get("group")
    if not ood and group is not None:
        raise InputError(f"{where}: an ID set has no group")
    if (doc.get("layout") == "table") != ("read" in doc):
        raise InputError(f"{where}: layout 'table' and a read table (how to read it) go together")
    return BenchmarkSet(
        name=set_name,
        group=None if group is None else str(group),
        layout=str(doc.get("layout", "auto")),
        where=path,
        image_dir=str(doc.get("image_root", doc.get("image_dir", ""))),
        source=str(doc.get("source", "")),
        read=table_spec(doc["read"], where) if "read" in doc else None,
    )


def benchmark_from_dict(doc: Mapping[str, Any]) -> Benchmark:
    """A :class:`Benchmark` from data (a dict, or a table of a TOML/YAML/JSON file)::

        name = "toy"
        title = "A toy benchmark"
        id = { layout = "classes", path = "val" }        # optional: the ID set under the root
        [ood.ninco]                                      # or [[ood]] tables with name = ...
        group = "near"                                   # near, far or other (optional)
        layout = "list"                                  # list, folder, classes, imagenet, auto
        path = "lists/ninco.txt"                         # relative to the data root
        image_root = "images"                            # lists: where their paths start

    A tuning split: ``[validation]`` with its own ``id`` and ``[validation.ood.NAME]`` tables. A carve
    benchmark: ``kind = "carve"``, ``carve = "pkg.module:fn"``, ``inputs = ["ood_list"]``, ``options = [...]``,
    its sets as ``[ood.NAME]`` tables with a ``group`` (paths unused). Each
    problem is one :class:`InputError` naming the key."""
    if not isinstance(doc, Mapping):
        raise InputError(f"a benchmark must be a table (dict), got {type(doc).__name__}")
    name = str(doc.get("name", "")).strip()
    where = f"benchmark {name!r}"
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(_KEYS))}")
    kind = str(doc.get("kind", "sets"))
    items = _set_items(where, "ood", doc.get("ood", doc.get("sets")))
    csid = [
        _set_from(f"{where}: csid.{n}", v, name=n, ood=False) for n, v in _set_items(where, "csid", doc.get("csid", {}))
    ]
    classes = doc.get("classes", "")
    if not isinstance(classes, str):
        raise InputError(f"{where}: classes must be the name of a shipped class list or a file path")
    sets = []
    for set_name, value in items:
        if kind == "carve" and isinstance(value, Mapping) and "path" not in value:
            value = {**value, "path": "", "layout": "carve"}
        sets.append(_set_from(f"{where}: ood.{set_name}", value, name=set_name))
    id_doc = doc.get("id")
    carve = doc.get("carve")
    if carve is not None and not isinstance(carve, str):
        raise InputError(f"{where}: carve must be a target 'package.module:function'")
    val = doc.get("validation")
    if val is not None and (
        not isinstance(val, Mapping) or "id" not in val or not {"ood", "sets"} & set(val) or "validation" in val
    ):
        raise InputError(f"{where}: validation must be a table with id and ood (the tuning split's sets)")
    lists = {k: doc.get(k, ()) for k in ("inputs", "options", "aliases")}
    for key, value in lists.items():
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{where}: {key} must be a list of names")
    return Benchmark(
        name=name,
        title=str(doc.get("title", name)),
        sets=tuple(sets),
        id=None if id_doc is None else _set_from(f"{where}: id", id_doc, ood=False),
        source=str(doc.get("source", "")),
        kind=kind,
        carve=carve,
        inputs=tuple(lists["inputs"]),
        options=tuple(lists["options"]),
        given_as=str(doc.get("given_as", "")),
        aliases=tuple(lists["aliases"]),
        classes=classes,
        csid=tuple(csid),
        validation=None if val is None else benchmark_from_dict({"name": f"{name} [validation]", **val}),
    )


def _set_items(where: str, key: str, raw: Any) -> list[tuple[str, Any]]:
    """(name, table) pairs of a table of sets or a list of them."""
    if isinstance(raw, Mapping):
        return [(str(k), v) for k, v in raw.items()]
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        return [(str(v.get("name", "")) if isinstance(v, Mapping) else "", v) for v in raw]
    raise InputError(f"{where}: {key} must be a table of sets (name = {{group, layout, path}}) or a list of them")


def classes_file(classes: str) -> Path:
    """The file a benchmark's ``classes`` names: a class list shipped in negvocab (``cifar10``, ...:
    one ``.txt`` file each in ``negvocab/resources/classes/``, naming its source) or a path."""
    if "/" not in classes and "\\" not in classes and not classes.endswith(".txt"):
        shipped = Path(str(resources.files("negvocab").joinpath("resources", "classes", f"{classes}.txt")))
        if not shipped.is_file():
            known = sorted(p.stem for p in shipped.parent.glob("*.txt"))
            raise InputError(f"classes {classes!r}: no such class list shipped; known: {', '.join(known)}")
        return shipped
    return Path(classes).expanduser()
