"""What each work unit of a grid asks for: the ``[resources]`` table of a grid file.

::

    [resources]
    num_gpus = 1          # GPUs per model worker (default: 1 when the Ray cluster has GPUs, else 0)
    num_cpus = 4          # CPUs per model worker (default 1); its image loader gets num_cpus - 1 processes
    memory = "16GiB"      # memory per model worker (Ray's scheduler; a number of bytes or "<n>GiB/MiB")
    workers = 8           # at most this many model workers (default: as many as the cluster holds)
    shard_images = 4096   # images per image unit (rounded up to whole batches)

Every unit below the model (an image shard, a model's text, a model's scoring from the cache) runs
on a *model worker* (a Ray actor, or this process on the local engine) that loads a model once and
keeps it; the metrics of cells are computed by the driver. The local engine reads the same table:
``num_cpus`` (capped at this machine's CPUs; unset: the loader's default) sets its loader
processes, and the GPU/memory requests are Ray's only. Every problem is one line naming the key (:class:`InputError`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from negvocab.errors import InputError

__all__ = ["DEFAULT_SHARD_IMAGES", "Resources", "parse_resources"]

DEFAULT_SHARD_IMAGES = 4096
_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9}


@dataclass(frozen=True)
class Resources:
    """Requests of one model worker and the size of image units (see the module docstring)."""

    num_gpus: float | None = None
    num_cpus: float | None = None  # None: 1 on Ray; the local engine's loader keeps its own default
    memory: int | None = None
    workers: int | None = None
    shard_images: int = DEFAULT_SHARD_IMAGES

    @property
    def cpus(self) -> float:
        """CPUs a model worker asks Ray for (and torch's threads in deterministic mode)."""
        return 1.0 if self.num_cpus is None else self.num_cpus

    def loader_workers(self, local: bool = False) -> int | None:
        """Image-loader processes of a unit: the CPUs it was given less the one running the model
        (``None`` on the local engine without ``num_cpus``: the loader's default, min(8, CPUs))."""
        if self.num_cpus is None and local:
            return None
        cpus = min(self.cpus, os.cpu_count() or 1) if local else self.cpus
        return max(0, int(cpus) - 1)

    def shard_size(self, batch_size: int | None) -> int:
        """Images per shard, a whole number of batches (256 when the batch size is left to the
        device: a multiple of both the CPU and GPU defaults), so a sharded set meets the model in
        the same batches as an unsharded one."""
        batch = batch_size or 256
        return max(batch, -(-self.shard_images // batch) * batch)


def _number(value: Any, where: str, *, integer: bool = False, zero: bool = True) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value >= 0 if zero else value > 0)
    if not ok or (integer and not float(value).is_integer()):
        kind = "a whole number" if integer else "a number"
        raise InputError(f"[resources] {where} must be {kind} {'>= 0' if zero else '> 0'}, got {value!r}")
    return float(value)


def _memory(value: Any) -> int:
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*", value.lower())
        if m:
            return int(float(m.group(1)) * _UNITS[m.group(2) or ""])
        raise InputError(f"[resources] memory must be bytes or e.g. \"16GiB\", \"512MiB\", got {value!r}")
    return int(_number(value, "memory", integer=True, zero=False))


def parse_resources(doc: Any) -> Resources:
    """A :class:`Resources` from the ``[resources]`` table (empty: the defaults)."""
    if not isinstance(doc, Mapping):
        raise InputError("[resources] must be a table, e.g. num_gpus = 1")
    known = {"num_gpus", "num_cpus", "memory", "workers", "shard_images"}
    unknown = set(doc) - known
    if unknown:
        raise InputError(f"[resources]: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    return Resources(
        num_gpus=_number(doc["num_gpus"], "num_gpus") if "num_gpus" in doc else None,
        num_cpus=_number(doc["num_cpus"], "num_cpus", zero=False) if "num_cpus" in doc else None,
        memory=_memory(doc["memory"]) if "memory" in doc else None,
        workers=int(_number(doc["workers"], "workers", integer=True, zero=False)) if "workers" in doc else None,
        shard_images=int(_number(doc.get("shard_images", DEFAULT_SHARD_IMAGES), "shard_images", integer=True, zero=False)),
    )
