"""Named OOD benchmarks as data: each names its ID set, its OOD sets and each set's group (near-,
far- or other OOD) within that benchmark, and where under a data root each set lives.

Built in (open with :func:`open_benchmark` or ``--ood NAME=ROOT``):

- ``openood-near``, ``openood-far``, ``openood``: OpenOOD v1.5's ImageNet-1k splits (near: SSB-hard,
  NINCO; far: iNaturalist, Textures, OpenImage-O) from its ``benchmark_imglist/imagenet/test_*.txt``
  lists (``path label`` lines) under a root that also holds ``images_largescale/`` (and
  ``images_classic/`` for Textures), as OpenOOD's download script leaves them; the ID set is the
  ``test_imagenet.txt`` list.
- ``mos``: the four far-OOD sets of MOS (Huang & Li, CVPR 2021), as MCM and NegLabel read them:
  ``iNaturalist/``, ``SUN/``, ``Places/`` (each an ``images/`` folder) and ``dtd/images/<class>/``;
  the ID set ``ImageNet/val`` as MCM lays it out.
- ``imagenet-o``: ImageNet-O (Hendrycks et al., CVPR 2021), ``imagenet-o/<wnid>/*.jpg``.
- ``fi-imagenet-1k``: OOD images inside the ImageNet-1k validation set (:mod:`negvocab.data.fi_imagenet`),
  a *carve* benchmark: its ID and OOD sets are carved from one folder (the root is the validation
  folder) by a function named as a ``"pkg.module:fn"`` target, with the lists as its inputs.

- ``openood-cifar10``, ``openood-cifar100``, ``openood-fs`` (full-spectrum: covariate-shifted ID sets
  joined to the ID set), ``imagenet10-vs-imagenet20``, ``imagenet20-vs-imagenet10``,
  ``imagenet100-vs-imagenet10`` (MCM's hard-OOD splits) and ``ninco-all``: given as data in
  ``negvocab/resources/benchmarks.toml``, with their ID class lists (``resources/classes/``).

More are added as data: :func:`register_benchmark` takes a :class:`Benchmark`, a dict (the shape of
:func:`benchmark_from_dict`) or a lazy ``"pkg.module:attr"`` target; :func:`load_benchmarks` reads
TOML, YAML or JSON files of them. Results carry ``near-ood`` and ``far-ood`` mean rows beside
``mean`` when the OOD sets span both groups; the groups are those of the benchmark a set came from
(a user's own folder has none). No OOD set may take a name of :data:`RESERVED_SET_NAMES`.
"""

from __future__ import annotations

import json
import os
import tomllib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, check_now, resolve_target
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
    "OpenedSets",
    "REGISTRY",
    "benchmark_from_dict",
    "benchmark_set",
    "benchmark_table",
    "get_benchmark",
    "list_benchmarks",
    "load_benchmarks",
    "ood_group",
    "open_benchmark",
    "open_id_set",
    "classes_file",
    "id_classes_of",
    "register_benchmark",
    "set_groups",
    "unregister_benchmark",
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
    ``other`` or None (an ID set, or a set in no group)."""

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
        return _tagged(images, self) if tag else images


def _tagged(images: ImageSet, spec: BenchmarkSet) -> ImageSet:
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
    ``validation``: its tuning split (an ID set and OOD sets, never the test lists) where it declares one."""

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


def _check_entry(name: str, entry: object) -> Benchmark:
    """A lazily registered entry once imported: a :class:`Benchmark` or a dict of one."""
    if isinstance(entry, Mapping):
        entry = benchmark_from_dict({"name": name, **entry})
    if not isinstance(entry, Benchmark):
        raise InputError(f"benchmark {name!r}: the target is a {type(entry).__name__}, not a Benchmark or a dict")
    return entry


#: every benchmark by name (built-ins below; :func:`register_benchmark` adds more)
REGISTRY: Registry[Benchmark] = Registry("benchmark", check=_check_entry)


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


def register_benchmark(
    entry: Benchmark | Mapping[str, Any] | str, *, name: str | None = None, replace: bool = False
) -> Benchmark | str:
    """Add a benchmark: a :class:`Benchmark`, a dict (:func:`benchmark_from_dict`) or a lazy
    ``"pkg.module:attr"`` target (a Benchmark or a dict, imported on first use; ``name`` needed).
    A taken name is :class:`InputError` unless ``replace``; a target not in negvocab is imported now. Returns it."""
    if isinstance(entry, str):
        if not name:
            raise InputError(f"register_benchmark({entry!r}): a target needs name=")
        return REGISTRY.register(name, entry, replace=replace)
    bench = benchmark_from_dict(entry) if isinstance(entry, Mapping) else entry
    if not isinstance(bench, Benchmark):
        raise InputError(f"register_benchmark: a Benchmark, a dict or a target, not a {type(entry).__name__}")
    if name and name != bench.name:
        raise InputError(f"register_benchmark: name={name!r} differs from the benchmark's own {bench.name!r}")
    check_now(bench.carve, what=f"benchmark {bench.name!r} carve")
    REGISTRY.register(bench.name, bench, aliases=bench.aliases, replace=replace)
    return bench


def unregister_benchmark(name: str) -> None:
    """Remove benchmark ``name`` (a test or a notebook that registered a temporary one)."""
    REGISTRY.unregister(name)


def load_benchmarks(path: str | os.PathLike[str], *, replace: bool = False) -> list[Benchmark]:
    """Register the benchmarks of a data file (``.toml``, ``.yaml``/``.yml`` or ``.json``): one
    benchmark as the whole document, or several as ``[[benchmark]]`` tables (a ``benchmark`` list)."""
    p = Path(path).expanduser()
    text = read_text(p, "benchmark file")
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise InputError(f"{p}: a benchmark file is .toml, .yaml, .yml or .json")
    try:
        if suffix == ".toml":
            doc: Any = tomllib.loads(text)
        elif suffix == ".json":
            doc = json.loads(text)
        else:
            import yaml  # optional: pip install pyyaml

            doc = yaml.safe_load(text)
    except ImportError as e:
        raise InputError(f"{p}: reading YAML needs pyyaml (pip install pyyaml); or give the file as TOML") from e
    except Exception as e:  # tomllib, json and yaml each raise their own parse error
        raise InputError(f"{p}: not a readable {suffix[1:].upper()} file ({e})") from e
    docs = doc.get("benchmark") if isinstance(doc, Mapping) and "benchmark" in doc else [doc]
    if not isinstance(docs, list):
        raise InputError(f"{p}: benchmark must be a list of tables ([[benchmark]])")
    try:
        return [register_benchmark(d, replace=replace) for d in docs]  # type: ignore[misc]
    except InputError as e:
        raise InputError(f"{p}: {e}") from None


def get_benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (case-insensitive) or :class:`InputError` listing the known ones."""
    return REGISTRY.get(name)


def list_benchmarks() -> list[str]:
    """The registered benchmark names, in registration order."""
    return REGISTRY.names()


# -- opening ---------------------------------------------------------------------------------------
@dataclass
class OpenedSets(Mapping[str, ImageSet]):
    """OOD sets by name (a mapping, in order), with the ID set where one was opened, each set's group
    (``near``, ``far``, ``other`` or None) and the benchmark it came from ("" for a user's own set)."""

    ood: dict[str, ImageSet]
    id: ImageSet | None = None
    groups: dict[str, str | None] = field(default_factory=dict)
    benchmarks: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ImageSet:
        return self.ood[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.ood)

    def __len__(self) -> int:
        return len(self.ood)


def open_benchmark(
    name: str,
    root: str | os.PathLike[str],
    *,
    ground_truth: str | os.PathLike[str] | None = None,
    with_id: bool | None = None,
    **inputs: str | os.PathLike[str] | None,
) -> OpenedSets:
    """Every OOD set of benchmark ``name`` under the data ``root`` by set name (in the benchmark's
    order, a mapping), its ID set (``.id``) and each set's group. ``with_id``: True opens the ID set
    (an error where it is missing), False leaves it out, None (default) opens it where its files are.

    A carve benchmark takes its ``inputs`` (and ``options``) as keywords, e.g.
    ``open_benchmark("fi-imagenet-1k", VAL, ood_list=..., ambiguous_list=...)``."""
    bench = get_benchmark(name)
    base = Path(root).expanduser()
    if not base.is_dir():
        first = bench.sets[0].expects() if bench.kind == "sets" else "the folder it carves"
        raise InputError(f"{bench.name}={root}: no such data root (a folder holding {first}, ...)")
    given = {k: v for k, v in inputs.items() if v is not None}
    if bench.kind == "carve":
        return _carve(bench, base, given, ground_truth)
    if given:
        raise InputError(f"{bench.name}: takes no inputs ({', '.join(given)}); only a data root")
    ood = {s.name: s.open(base) for s in bench.sets}
    id_set = None
    if bench.id is not None and (with_id or (with_id is None and (base / bench.id.where).exists())):
        id_set = open_id_set(bench, base, ground_truth=ground_truth)
    return OpenedSets(ood, id_set, {s.name: s.group for s in bench.sets}, dict.fromkeys(ood, bench.name))


def open_id_set(bench: Benchmark, root: Path, *, ground_truth: str | os.PathLike[str] | None = None) -> ImageSet:
    """The benchmark's ID set under ``root``, joined with its covariate-shifted ID sets (``csid``; each
    image's id prefixed with its set's name, ``info["csid"]`` their sizes), tagged with its label space."""
    assert bench.id is not None
    images = bench.id.open(root, ground_truth=ground_truth, tag=False)
    parts = [(s.name, s.open(root, tag=False)) for s in bench.csid]
    if parts:
        labelled = images.labels is not None and all(p.labels is not None for _, p in parts)
        images = ImageSet(
            f"{images.name} + {', '.join(n for n, _ in parts)}",
            [*images.paths, *(x for _, p in parts for x in p.paths)],
            [*images.ids, *(f"{n}/{i}" for n, p in parts for i in p.ids)],
            [*(images.labels or []), *(x for _, p in parts for x in p.labels or [])] if labelled else None,
            {**images.info, "csid": {n: len(p) for n, p in parts}},
        )
    if bench.classes:
        images.info["id_classes"] = bench.classes
    return images


def id_classes_of(images: object) -> IdClasses | None:
    """The ID label space that a benchmark's ID set names (its ``info["id_classes"]``, set by
    :func:`open_id_set`), or None (a user's own set; embeddings): the caller's default applies."""
    classes = (getattr(images, "info", None) or {}).get("id_classes")
    return read_id_classes(classes_file(classes)) if classes else None


def benchmark_set(benchmark: str, name: str, root: str | os.PathLike[str]) -> ImageSet:
    """One OOD set ``name`` of the benchmark (kind ``sets``) under its data ``root``, tagged with its group."""
    bench = get_benchmark(benchmark)
    spec = next((s for s in bench.sets if s.name == name), None)
    if spec is None or bench.kind != "sets":
        raise InputError(
            f"benchmark {bench.name!r} has no set {name!r} to open "
            f"alone; its sets: {', '.join(s.name for s in bench.sets)}"
        )
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InputError(f"{bench.name}={root}: no such data root (a folder holding {spec.expects()}, ...)")
    return spec.open(base)


def _carve(
    bench: Benchmark, base: Path, given: Mapping[str, Any], ground_truth: str | os.PathLike[str] | None
) -> OpenedSets:
    missing = [k for k in bench.inputs if k not in given]
    if missing:
        how = f" ({bench.given_as})" if bench.given_as else ""
        raise InputError(f"{bench.name} carves its ID and OOD sets from {base} and needs {', '.join(missing)}{how}")
    unknown = sorted(set(given) - {*bench.inputs, *bench.options})
    if unknown:
        raise InputError(
            f"{bench.name}: unknown input {unknown[0]!r}; known: {', '.join([*bench.inputs, *bench.options])}"
        )
    fn = (
        resolve_target(bench.carve, what=f"benchmark {bench.name!r} carve")
        if isinstance(bench.carve, str)
        else bench.carve
    )
    if not callable(fn):
        raise InputError(f"benchmark {bench.name!r}: carve {bench.carve!r} is not a function")
    id_set, sets = fn(base, ground_truth=ground_truth, **given)
    spec = {s.name: s for s in bench.sets}
    ood = {n: _tagged(s, spec[n]) if n in spec else s for n, s in sets.items()}
    return OpenedSets(ood, id_set, {n: bench.group_of(n) for n in ood}, dict.fromkeys(ood, bench.name))


def set_groups(sets: Mapping[str, Any]) -> dict[str, str | None]:
    """Each OOD set's group as its benchmark gave it (``info["ood_group"]`` of a set opened from a
    benchmark, or the ``groups`` of :class:`OpenedSets`); None for a user's own set."""
    if isinstance(sets, OpenedSets):
        return {n: sets.groups.get(n) for n in sets}
    return {str(n): (getattr(s, "info", None) or {}).get("ood_group") for n, s in sets.items()}


def ood_group(set_name: str) -> str | None:
    """``near`` or ``far`` for a set named as in a built-in benchmark (first match), else None.

    A catalogue lookup only: results take each set's group from the benchmark it was opened from
    (:func:`set_groups`), so a user's own ``textures`` folder is in no group."""
    key = set_name.strip().lower()
    for bench in map(get_benchmark, list_benchmarks()):
        group = bench.group_of(key)
        if group is not None:
            return group
    return None


def benchmark_table() -> list[Mapping[str, str]]:
    """One row per benchmark set: benchmark, set, group, where, ID set, source (carve benchmarks last)."""
    rows: list[Mapping[str, str]] = []
    benches = [get_benchmark(n) for n in list_benchmarks()]
    for b in sorted(benches, key=lambda b: b.kind == "carve"):
        for s in b.sets:
            rows.append(
                {
                    "benchmark": b.name,
                    "set": s.name,
                    "group": s.group or "-",
                    "expects": b.given_as if b.kind == "carve" and b.given_as else s.expects(),
                    "id": b.id_set,
                    "source": s.source or b.source,
                }
            )
    return rows


# -- the built-in benchmarks -------------------------------------------------------------------------
_LISTS = "benchmark_imglist/imagenet"
_OPENOOD = "Zhang et al., OpenOOD v1.5, 2023"
# fmt: off
_SSB = BenchmarkSet("ssb-hard", "near", "list", f"{_LISTS}/test_ssb_hard.txt", "images_largescale",
                    "Vaze et al., ICLR 2022 (OpenOOD v1.5)")
_NINCO = BenchmarkSet("ninco", "near", "list", f"{_LISTS}/test_ninco.txt", "images_largescale",
                      "Bitterwolf et al., ICML 2023 (OpenOOD v1.5)")
_INAT = BenchmarkSet("inaturalist", "far", "list", f"{_LISTS}/test_inaturalist.txt", "images_largescale",
                     "Huang & Li, CVPR 2021 (OpenOOD v1.5)")
_TEXTURES = BenchmarkSet("textures", "far", "list", f"{_LISTS}/test_textures.txt", "images_classic",
                         "Cimpoi et al., CVPR 2014 (OpenOOD v1.5)")
_OPENIMAGE_O = BenchmarkSet("openimage-o", "far", "list", f"{_LISTS}/test_openimage_o.txt", "images_largescale",
                            "Wang et al., CVPR 2022 (OpenOOD v1.5)")
# fmt: on
_OPENOOD_ID = BenchmarkSet(
    "ImageNet-1k (OpenOOD test)", None, "list", f"{_LISTS}/test_imagenet.txt", "images_largescale"
)
_VAL_ID = BenchmarkSet("ImageNet-1k val", None, "imagenet", "ImageNet/val")
_MOS = "Huang & Li, MOS: Towards scaling out-of-distribution detection for large semantic space, CVPR 2021"

for _b in (
    Benchmark("openood-near", "OpenOOD v1.5 ImageNet-1k near-OOD", (_SSB, _NINCO), _OPENOOD_ID, _OPENOOD),
    Benchmark("openood-far", "OpenOOD v1.5 ImageNet-1k far-OOD", (_INAT, _TEXTURES, _OPENIMAGE_O),
              _OPENOOD_ID, _OPENOOD),
    Benchmark("openood", "OpenOOD v1.5 ImageNet-1k, near and far", (_SSB, _NINCO, _INAT, _TEXTURES, _OPENIMAGE_O),
              _OPENOOD_ID, _OPENOOD),
    Benchmark("mos", "The MOS four (iNaturalist, SUN, Places, Textures)", (
        BenchmarkSet("inaturalist", "far", "folder", "iNaturalist", source=_MOS),
        BenchmarkSet("sun", "far", "folder", "SUN", source=_MOS),
        BenchmarkSet("places", "far", "folder", "Places", source=_MOS),
        BenchmarkSet("textures", "far", "classes", "dtd/images", source="Cimpoi et al., CVPR 2014 (as MOS)"),
    ), _VAL_ID, _MOS),
    Benchmark("imagenet-o", "ImageNet-O",
              (BenchmarkSet("imagenet-o", "far", "classes", "imagenet-o", source="Hendrycks et al., CVPR 2021"),),
              _VAL_ID, "Hendrycks et al., Natural adversarial examples, CVPR 2021"),
    Benchmark(
        "fi-imagenet-1k", "Fi-ImageNet-1k (OOD images inside the ImageNet-1k validation set)",
        (BenchmarkSet("fi-imagenet-1k", "near", "carve", "ILSVRC2012_val_* ids of the lists",
                      source="Rozumnyi et al., arXiv:2609.01027"),),
        BenchmarkSet("Fi-ImageNet-1k ID", None, "imagenet", ""), "Rozumnyi et al., arXiv:2609.01027",
        kind="carve", carve="negvocab.data.fi_imagenet:carve", inputs=("ood_list",), options=("ambiguous_list",),
        given_as="--id IMAGENET_VAL --fi-ood fi_ood.txt [--fi-ambiguous fi_ambiguous.txt]: "
                 "the lists name ILSVRC2012_val_* ids",
    ),
):  # fmt: skip
    REGISTRY.register(_b.name, _b)
# the hard-OOD, CIFAR, full-spectrum and NINCO benchmarks, as data (negvocab/resources/benchmarks.toml)
for _doc in tomllib.loads(resources.files("negvocab").joinpath("resources", "benchmarks.toml").read_text("utf-8"))[
    "benchmark"
]:
    register_benchmark(_doc)


def __getattr__(name: str) -> Any:
    """The older names, kept one release with a DeprecationWarning."""
    if name == "BENCHMARKS":  # a dict of the benchmarks opened from a root alone (carve ones are not)
        warnings.warn(
            "negvocab.data.benchmarks.BENCHMARKS is deprecated: use list_benchmarks() and get_benchmark()",
            DeprecationWarning,
            stacklevel=2,
        )
        return {n: b for n in list_benchmarks() if (b := get_benchmark(n)).kind == "sets"}
    if name == "FI_IMAGENET":
        warnings.warn(
            "negvocab.data.benchmarks.FI_IMAGENET is deprecated: use get_benchmark('fi-imagenet-1k')",
            DeprecationWarning,
            stacklevel=2,
        )
        b = get_benchmark("fi-imagenet-1k")
        return {"name": b.name, "title": b.title, "group": "near", "expects": b.given_as, "source": b.source}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
