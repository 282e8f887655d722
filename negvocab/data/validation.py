"""Validation (tuning) splits of the benchmarks, as data.

OpenOOD v1.5 keeps a validation ID list and a validation OOD list beside each benchmark's test lists
(``val_imagenet.txt`` against ``val_openimage_o.txt``; ``val_cifar10.txt`` against ``val_tin.txt``) for its
automatic parameter search. ``negvocab/resources/validation.toml`` names them for the built-in benchmarks,
each split in the shape of a benchmark's sets (:func:`negvocab.data.benchmarks.benchmark_from_dict` reads
and checks it); a user's benchmark declares its own as ``[validation]``. :func:`open_validation` opens a
benchmark's split under its data root, which ``negvocab score --tune-ood BENCHMARK=ROOT`` tunes on.
"""

from __future__ import annotations

import os
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import Benchmark, benchmark_from_dict, get_benchmark
from negvocab.data.images import ImageSet

__all__ = ["open_validation", "validation_split", "validation_splits"]


@cache
def validation_splits() -> dict[str, Benchmark]:
    """Benchmark name -> its validation split (an ID set and OOD sets), from the shipped data file."""
    doc = tomllib.loads(resources.files("negvocab").joinpath("resources", "validation.toml").read_text("utf-8"))
    out: dict[str, Benchmark] = {}
    for i, split in enumerate(doc.get("split", [])):
        names = split.get("benchmarks", [])
        body = {k: v for k, v in split.items() if k != "benchmarks"}
        parsed = benchmark_from_dict(
            {"name": f"validation-{i}", "title": f"validation split of {', '.join(names)}", **body}
        )
        out.update(dict.fromkeys(names, parsed))
    return out


def validation_split(benchmark: str) -> Benchmark | None:
    """The validation split of ``benchmark`` (any of its names): the one it declares (``validation``,
    :func:`negvocab.data.benchmarks.benchmark_from_dict`), else the shipped one; None where neither is."""
    bench = get_benchmark(benchmark)
    return bench.validation if bench.validation is not None else validation_splits().get(bench.name)


def open_validation(benchmark: str, root: str | os.PathLike[str]) -> tuple[ImageSet, dict[str, ImageSet]]:
    """The validation ID set and OOD sets of ``benchmark`` under its data ``root`` (never its test lists);
    one :class:`InputError` where it has none or a list is missing."""
    split = validation_split(benchmark)
    if split is None or split.id is None:
        with_split = ", ".join(sorted(validation_splits()))
        raise InputError(
            f"benchmark {benchmark!r} names no validation split (those that do: {with_split}, and a benchmark "
            "file's [validation] table); give the tuning split's ID and OOD images yourself"
        )
    base = Path(root).expanduser()
    if not base.is_dir():
        raise InputError(f"{benchmark}={root}: no such data root (a folder holding {split.id.expects()}, ...)")
    return split.id.open(base, tag=False), {s.name: s.open(base, tag=False) for s in split.sets}
