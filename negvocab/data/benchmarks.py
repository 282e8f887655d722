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
  joined to the ID set), ``imagenet10-vs-imagenet20``, ``imagenet20-vs-imagenet10`` (MCM's hard-OOD
  splits), ``imagenet100-vs-imagenet10`` and ``imagenet10-vs-imagenet100`` (OpenOOD-VLM's pairings of
  MCM's class lists) and ``ninco-all``: given as data in ``negvocab/resources/benchmarks.toml``, with
  their ID class lists (``resources/classes/``; MCM's own class names for the hard-OOD splits are the
  lists ``imagenet10_mcm``, ``imagenet20_mcm`` and ``imagenet100_mcm``, for ``--id-classes``).

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, check_now, resolve_callable
from negvocab.core.textfiles import read_text
from negvocab.data.benchmark_types import (
    GROUPS,
    KINDS,
    LAYOUTS,
    MEAN,
    RESERVED_SET_NAMES,
    SET_GROUPS,
    Benchmark,
    BenchmarkSet,
    benchmark_from_dict,
    classes_file,
    tagged,
)
from negvocab.data.images import ImageSet
from negvocab.labels.imagenet import IdClasses, read_id_classes

__all__ = [
    "GROUPS", "KINDS", "LAYOUTS", "MEAN", "RESERVED_SET_NAMES", "SET_GROUPS", "Benchmark", "BenchmarkSet",
    "OpenedSets", "REGISTRY", "benchmark_from_dict", "benchmark_set", "benchmark_table", "get_benchmark",
    "list_benchmarks", "load_benchmarks", "ood_group", "open_benchmark", "open_id_set", "classes_file",
    "id_classes_of", "id_split_name", "register_benchmark", "set_groups", "unregister_benchmark",
]  # fmt: skip


def _check_entry(name: str, entry: object) -> Benchmark:
    """A lazily registered entry once imported: a :class:`Benchmark` or a dict of one."""
    if isinstance(entry, Mapping):
        entry = benchmark_from_dict({"name": name, **entry})
    if not isinstance(entry, Benchmark):
        raise InputError(f"benchmark {name!r}: the target is a {type(entry).__name__}, not a Benchmark or a dict")
    return entry


#: every benchmark by name (built-ins below; :func:`register_benchmark` adds more)
REGISTRY: Registry[Benchmark] = Registry("benchmark", check=_check_entry)


def register_benchmark(
    entry: Benchmark | Mapping[str, Any] | str, *, name: str | None = None, replace: bool = False
) -> Benchmark | str:
    """Add a benchmark: a :class:`Benchmark`, a dict (:func:`benchmark_from_dict`) or a lazy
    ``"pkg.module:attr"`` target (a Benchmark or a dict, imported on first use; ``name`` needed).
    A taken name is :class:`InputError` unless ``replace``; a target not in negvocab is imported now. Returns it.

    Parameters
    ----------
    entry : Benchmark, mapping or str
        The benchmark, its dict, or a lazy ``"pkg.module:attr"`` target.
    name : str, optional
        The benchmark's name (needed for a target).
    replace : bool, default False
        Replace a registered benchmark of the same name instead of refusing it.
    """
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
    """Remove benchmark ``name`` (a test or a notebook that registered a temporary one).

    Parameters
    ----------
    name : str
        The benchmark's name.
    """
    REGISTRY.unregister(name)


def load_benchmarks(path: str | os.PathLike[str], *, replace: bool = False) -> list[Benchmark]:
    """Register the benchmarks of a data file (``.toml``, ``.yaml``/``.yml`` or ``.json``): one
    benchmark as the whole document, or several as ``[[benchmark]]`` tables (a ``benchmark`` list).

    Parameters
    ----------
    path : str or PathLike
        The data file.
    replace : bool, default False
        Replace a registered benchmark of the same name instead of refusing it.
    """
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
    """The benchmark ``name`` (case-insensitive) or :class:`InputError` listing the known ones.

    Parameters
    ----------
    name : str
        A registered benchmark's name.
    """
    return REGISTRY.get(name)


def list_benchmarks() -> list[str]:
    """The registered benchmark names, in registration order."""
    return REGISTRY.names()


# -- opening ---------------------------------------------------------------------------------------
@dataclass
class OpenedSets(Mapping[str, ImageSet]):
    """OOD sets by name (a mapping, in order), with the ID set where one was opened, each set's group
    (``near``, ``far``, ``other`` or None) and the benchmark it came from ("" for a user's own set).

    Parameters
    ----------
    ood : dict name -> ImageSet
        The OOD sets, in order.
    id : ImageSet, optional
        The ID set, where one was opened.
    groups : dict name -> str or None, default {}
        Each set's group.
    benchmarks : dict name -> str, default {}
        Each set's benchmark.
    """

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
    ``open_benchmark("fi-imagenet-1k", VAL, ood_list=..., ambiguous_list=...)``.

    Parameters
    ----------
    name : str
        A registered benchmark's name.
    root : str or PathLike
        The data root: the folder holding the benchmark's sets (a carve benchmark: the folder it carves).
    ground_truth : str or PathLike, optional
        Labels of the ID set's images where its folder is a flat ImageNet val folder.
    with_id : bool, optional
        True opens the ID set, False leaves it out, None opens it where its files are.
    **inputs
        A carve benchmark's input files by name; a benchmark of sets takes none.
    """
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
    ood = {s.name: _of(s.open(base), bench) for s in bench.sets}
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
            id_split_name(bench),
            [*images.paths, *(x for _, p in parts for x in p.paths)],
            [*images.ids, *(f"{n}/{i}" for n, p in parts for i in p.ids)],
            [*(images.labels or []), *(x for _, p in parts for x in p.labels or [])] if labelled else None,
            {**images.info, "csid": {n: len(p) for n, p in parts}},
        )
    if bench.classes:
        images.info["id_classes"] = bench.classes
    return _of(images, bench)


def id_split_name(bench: Benchmark) -> str:
    """The name of a benchmark's ID split as results record it: its ID set's, with its covariate-shifted
    ID sets joined ("" where it has no ID set of its own). Published figures are matched on it."""
    if bench.id is None:
        return ""
    return bench.id.name + (f" + {', '.join(s.name for s in bench.csid)}" if bench.csid else "")


def _of(images: ImageSet, bench: Benchmark) -> ImageSet:
    """``images`` with the benchmark it was opened from in its ``info`` (results record it per set)."""
    images.info["benchmark"] = bench.name
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
    return _of(spec.open(base), bench)


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
    fn: Callable[..., Any] = resolve_callable(bench.carve, what=f"benchmark {bench.name!r} carve")
    id_set, sets = fn(base, ground_truth=ground_truth, **given)
    spec = {s.name: s for s in bench.sets}
    ood = {n: tagged(s, spec[n]) if n in spec else s for n, s in sets.items()}
    return OpenedSets(ood, id_set, {n: bench.group_of(n) for n in ood}, dict.fromkeys(ood, bench.name))


def set_groups(sets: Mapping[str, Any]) -> dict[str, str | None]:
    """Each OOD set's group as its benchmark gave it (``info["ood_group"]`` of a set opened from a
    benchmark, or the ``groups`` of :class:`OpenedSets`); None for a user's own set.

    Parameters
    ----------
    sets : mapping name -> set
        The OOD sets by name, or an :class:`OpenedSets`.
    """
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
