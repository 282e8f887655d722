"""OOD (and ID) sets from the specs ``negvocab score --ood`` takes: ``NAME=PATH``, a bare path, or
``BENCHMARK=ROOT`` (every set of a registered benchmark, with its groups and its ID set).

>>> sets = open_ood_sets(["openood=/data/openood", "mine=/data/my_folder"])  # doctest: +SKIP
>>> sets.id, sets.groups  # doctest: +SKIP
(ImageSet('ImageNet-1k (OpenOOD test)', ...), {'ssb-hard': 'near', ..., 'mine': None})

The library names its parameters in errors (``ood``, ``id_path``); the CLI passes ``cli=True`` to
name its flags (``--ood``, ``--id``) instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import (
    GROUPS,
    MEAN,
    REGISTRY,
    RESERVED_SET_NAMES,
    OpenedSets,
    open_benchmark,
    open_id_set,
)
from negvocab.data.imagenet import imagenet_val
from negvocab.data.images import ImageSet
from negvocab.data.layouts import open_image_set

__all__ = ["OodSpecs", "benchmark_typo", "open_ood_sets", "parse_ood_specs"]

_FLAGS = {"ood": "--ood", "id_path": "--id", "image_root": "--image-root"}

Spec = str | os.PathLike[str]


class OodSpecs:
    """Parsed OOD specs: ``sets`` (a user's own sets, name -> path, in order), ``benchmarks``
    ((benchmark, root) pairs, in order) and ``named`` (the names of ``sets`` given as NAME=PATH)."""

    def __init__(self, sets: dict[str, Path], benchmarks: list[tuple[str, str]], named: tuple[str, ...] = ()) -> None:
        self.sets = sets
        self.benchmarks = benchmarks
        self.named = named


def _name(param: str, cli: bool) -> str:
    return _FLAGS.get(param, param) if cli else param


def reserved_message(name: str) -> str:
    """Why ``name`` (one of :data:`RESERVED_SET_NAMES`) cannot name an OOD set."""
    group = next((g for g, row in GROUPS.items() if row == name), None)
    which = "the OOD sets" if name == MEAN or group is None else f"the {group}-OOD sets"
    return f"{name!r} names the average over {which}; give the set another name (NAME=PATH)"


def parse_ood_specs(values: Sequence[Spec] | Mapping[str, Spec] | None, *, cli: bool = False) -> OodSpecs:
    """OOD specs by kind: ``BENCHMARK=ROOT`` when BENCHMARK is registered (and no file or folder is
    literally called ``value``); else ``NAME=PATH``, or a bare path named after its folder (a list
    file: after its stem). A mapping gives names directly. Names must be unique and not reserved
    (:data:`RESERVED_SET_NAMES`); an empty path (``a=``, an unset shell variable) is refused, never
    read as the working folder."""
    flag = _name("ood", cli)
    items: list[tuple[str | None, str, str]] = []  # (name or None, path, the value as given)
    if isinstance(values, Mapping):
        items = [(str(k), os.fspath(v), f"{k}={os.fspath(v)}") for k, v in values.items()]
    else:
        for value in (os.fspath(v) for v in values or []):
            key, eq, rest = value.partition("=")
            named = bool(eq) and key.strip() and "/" not in key and "\\" not in key and not Path(value).exists()
            items.append((key.strip() if named else None, rest if named else value, value))
    sets: dict[str, Path] = {}
    benchmarks: list[tuple[str, str]] = []
    named_sets = tuple(name for name, _, _ in items if name is not None and name.lower() not in REGISTRY)
    for name, given, value in items:
        if name is not None and name.lower() in REGISTRY:
            if not given.strip():
                raise InputError(
                    f"{flag} {value!r}: an empty data root (an unset shell variable?); give {flag} {name}=ROOT"
                )
            benchmarks.append((REGISTRY.canonical(name), given))
            continue
        if not given.strip():
            raise InputError(f"{flag} {value!r}: an empty path (an unset shell variable?); give {flag} NAME=FOLDER")
        path = Path(given).expanduser()
        if name is None:
            name = (path.stem if path.is_file() else path.name) or str(path)
        if name in RESERVED_SET_NAMES:
            raise InputError(f"{flag} {value}: {reserved_message(name)}")
        if name in sets:
            raise InputError(
                f"{flag}: two OOD sets are named {name!r} ({sets[name]} and {path}); name them: {flag} NAME=PATH"
            )
        sets[name] = path
    return OodSpecs(sets, benchmarks, named_sets)


def benchmark_typo(specs: OodSpecs, *, cli: bool = False, id_given: bool = False) -> str | None:
    """The line for an OOD spec that looks like a benchmark given wrongly, else None: a bare path that
    does not exist named like a registered benchmark (``--ood openod``, ``--ood openood``: did you mean
    openood? given as BENCHMARK=ROOT), or, where no spec names a benchmark and no ID set is given
    (``id_given``), the first ``NAME=ROOT`` (ROOT a folder) whose NAME is close to one (``openod=ROOT``).
    Read as a set of the user's, the first is no folder and the second has no ID set."""
    flag = _name("ood", cli)
    for name, path in specs.sets.items():
        near = REGISTRY.did_you_mean(path.name) if name not in specs.named and not path.exists() else ""
        if near:
            return f"{flag} {path}: no such image folder; {near} (a benchmark is given as {flag} BENCHMARK=ROOT)"
    if specs.benchmarks or id_given:
        return None
    for name in specs.named:
        near = REGISTRY.did_you_mean(name)
        if near and specs.sets[name].is_dir():
            return (
                f"{flag} {name}={specs.sets[name]}: unknown benchmark {name!r}; {near} "
                f"(as a set of your own it needs {_name('id_path', cli)})"
            )
    return None


def open_ood_sets(
    ood: Sequence[Spec] | Mapping[str, Spec] | None,
    *,
    id_path: Spec | None = None,
    image_root: Spec | None = None,
    allow_outside_root: bool = False,
    ground_truth: Spec | None = None,
    inputs: Mapping[str, Mapping[str, Spec | None]] | None = None,
    cli: bool = False,
) -> OpenedSets:
    """The OOD sets that ``ood`` specs name (:func:`parse_ood_specs`), each with its group (that of
    the benchmark it came from; None for a user's own set) and the ID set.

    The ID set: ``id_path`` opened (``ground_truth``: labels of a flat ImageNet val folder), else
    the ID set of the benchmarks given (they must agree; a carve benchmark carves its own), else
    None. ``image_root`` and ``allow_outside_root`` apply to image lists given by path; ``inputs``
    gives a carve benchmark its files: ``{"fi-imagenet-1k": {"ood_list": ..., "ambiguous_list": ...}}``.

    Parameters
    ----------
    ood : sequence or mapping of specs, optional
        ``BENCHMARK=ROOT``, ``NAME=PATH`` or bare paths (:func:`parse_ood_specs`), or a mapping name -> path.
    id_path : spec, optional
        The ID set's path.
    image_root : spec, optional
        Where image lists given by path resolve their relative paths.
    allow_outside_root : bool, default False
        Accept listed paths that leave the root.
    ground_truth : spec, optional
        Labels of a flat ImageNet val folder.
    inputs : mapping, optional
        A carve benchmark's files, by benchmark.
    cli : bool, default False
        Name the parameters in error messages as the CLI's flags.
    """
    specs = parse_ood_specs(ood, cli=cli)
    if not specs.sets and not specs.benchmarks:
        raise InputError(f"{_name('ood', cli)}: no OOD set given (NAME=PATH, a path or BENCHMARK=ROOT)")
    paths = [Path(id_path).expanduser()] if id_path is not None else []
    if image_root is not None and not any(p.is_file() for p in [*paths, *specs.sets.values()]):
        raise InputError(
            f"{_name('image_root', cli)} applies to image lists only: give {_name('id_path', cli)} or "
            f"{_name('ood', cli)} as a list file"
        )
    kw: dict[str, Any] = {"image_root": image_root, "allow_outside_root": allow_outside_root}
    out = OpenedSets({name: open_image_set(path, **kw) for name, path in specs.sets.items()})
    out.groups = dict.fromkeys(out.ood)
    out.benchmarks = dict.fromkeys(out.ood, "")
    carved: list[tuple[str, str, ImageSet | None]] = []
    for bench, root in specs.benchmarks:
        carves = REGISTRY.get(bench).kind == "carve"
        if carves and id_path is not None:
            raise InputError(
                f"{_name('ood', cli)} {bench}={root}: it carves its own ID set; give no {_name('id_path', cli)}"
            )
        gt = ground_truth if carves else None
        opened = open_benchmark(bench, root, ground_truth=gt, with_id=False, **dict((inputs or {}).get(bench, {})))
        for name, images in opened.items():
            if name in out.ood:
                raise InputError(
                    f"{_name('ood', cli)} {bench}={root}: its set {name!r} is given twice "
                    f"(another {_name('ood', cli)} has that name)"
                )
            out.ood[name], out.groups[name], out.benchmarks[name] = images, opened.groups.get(name), bench
        if carves:
            carved.append((bench, root, opened.id))
    out.id = _id_set(id_path, specs.benchmarks, carved, ground_truth, kw, cli)
    return out


def _id_set(
    id_path: Spec | None,
    benchmarks: list[tuple[str, str]],
    carved: list[tuple[str, str, ImageSet | None]],
    ground_truth: Spec | None,
    kw: Mapping[str, Any],
    cli: bool,
) -> ImageSet | None:
    """The ID set: the one given, else the one a carve benchmark carved, else the one the benchmarks
    agree on (the same ID spec under the same root), else None."""
    if id_path is not None:
        if ground_truth is not None:
            return imagenet_val(id_path, ground_truth=ground_truth)
        return open_image_set(id_path, **kw)
    wanted: dict[tuple[Any, ...], tuple[str, str]] = {}
    for bench, root in benchmarks:
        b = REGISTRY.get(bench)
        if b.id is not None and b.kind != "carve":
            wanted.setdefault((b.id, b.csid, b.classes, Path(root).expanduser().resolve()), (bench, root))
    if len(carved) + len(wanted) > 1:
        named = [f"{b}={r}" for b, r, _ in carved] + [f"{b}={r}" for b, r in wanted.values()]
        raise InputError(
            f"{_name('ood', cli)}: {named[0]} and {named[1]} have "
            f"different ID sets; give one with {_name('id_path', cli)}"
        )
    if carved:
        return carved[0][2]
    if not wanted:
        return None
    (*_, id_root), (bench, given) = next(iter(wanted.items()))
    try:
        return open_id_set(REGISTRY.get(bench), id_root, ground_truth=ground_truth)
    except InputError as e:
        raise InputError(f"{bench}={given}: its ID set: {e}; or give {_name('id_path', cli)}") from None
