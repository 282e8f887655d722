"""What each work unit of a grid asks for: the ``[resources]`` table of a grid file.

::

    [resources]
    num_gpus = 1          # GPUs per model worker (default: 1 when the Ray cluster has GPUs, else 0)
    num_cpus = 4          # CPUs per model worker (default 1); its image loader gets num_cpus - 1 processes
    memory = "16GiB"      # memory per model worker (Ray's scheduler; a number of bytes or "<n>GiB/MiB")
    workers = 8           # at most this many model workers (default: as many as the cluster holds)
    shard_images = 4096   # images per image unit (rounded up to whole batches)

    [resources.text]      # per unit kind (image, text, score): what differs from the above
    num_cpus = 1
    [resources.score]     # scoring from the cache (no model): default 1 CPU, no GPU
    num_cpus = 2
    memory = "8GiB"

Image and text units run on *model workers* (Ray actors, or this process on the local engine)
that load a model once and keep it; a worker asks for its kind's request (``[resources.image]`` /
``[resources.text]``, each key defaulting to the table's top-level one). When the two kinds ask
for the same, one pool of workers runs both; otherwise each kind has its own pool. Score units
load no model: they read the cached embeddings and run as separate Ray tasks asking for
``[resources.score]`` (default 1 CPU, 0 GPUs). The local engine reads the same table: the image
units' ``num_cpus`` (capped at this machine's CPUs; unset: the loader's default) sets its loader
processes, the GPU and memory requests are Ray's only. Every key is checked by the grid file's
schema (:mod:`negvocab.grid.config`): a bad value is one line naming the key and what is allowed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

__all__ = [
    "DEFAULT_SHARD_IMAGES",
    "KINDS",
    "Resources",
    "ResourcesTable",
    "UnitRequest",
    "UnitTable",
    "parse_resources",
]

DEFAULT_SHARD_IMAGES = 4096
#: the unit kinds a ``[resources.KIND]`` table may name
KINDS = ("image", "text", "score")
_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_MEMORY = 'a number of bytes > 0 or a size such as "16GiB", "512MiB"'


def _memory(value: Any) -> Any:
    """A memory size in bytes from an integer or ``"<n>GiB"`` (anything else is left for the schema to refuse)."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b|b)?\s*", value.lower())
        if not m:
            raise ValueError(_MEMORY)
        return int(float(m.group(1)) * _UNITS[m.group(2) or ""])
    return value


Memory = Annotated[int, Field(gt=0), BeforeValidator(_memory)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class UnitTable(_Table):
    """``[resources.image]``, ``[resources.text]``, ``[resources.score]``: one kind's request."""

    num_gpus: float | None = Field(None, ge=0, description="a number >= 0 (GPUs per unit of this kind)")
    num_cpus: float | None = Field(None, gt=0, description="a number > 0 (CPUs per unit of this kind)")
    memory: Memory | None = Field(None, description=_MEMORY)


class ResourcesTable(UnitTable):
    """``[resources]``: the model workers' request, their number, the shard size, per-kind tables."""

    num_gpus: float | None = Field(None, ge=0, description="a number >= 0 (GPUs per model worker)")
    num_cpus: float | None = Field(None, gt=0, description="a number > 0 (CPUs per model worker)")
    workers: int | None = Field(None, gt=0, description="a whole number > 0 (model workers at most)")
    shard_images: int = Field(DEFAULT_SHARD_IMAGES, gt=0, description="a whole number > 0 (images per image unit)")
    image: UnitTable = Field(default_factory=UnitTable, description="a table of num_gpus, num_cpus, memory")
    text: UnitTable = Field(default_factory=UnitTable, description="a table of num_gpus, num_cpus, memory")
    score: UnitTable = Field(default_factory=UnitTable, description="a table of num_gpus, num_cpus, memory")


@dataclass(frozen=True)
class UnitRequest:
    """What one unit kind asks for: ``num_gpus`` None = decided by the cluster (1 with GPUs, else 0)."""

    num_gpus: float | None = None
    num_cpus: float | None = None  # None: 1 on Ray; the local loader keeps its own default
    memory: int | None = None

    @property
    def cpus(self) -> float:
        """CPUs a unit asks Ray for (and torch's threads in deterministic mode)."""
        return 1.0 if self.num_cpus is None else self.num_cpus

    def loader_workers(self, local: bool = False) -> int | None:
        """Image-loader processes of a unit: the CPUs it was given less the one running the model
        (``None`` on the local engine without ``num_cpus``: the loader's default, min(8, CPUs))."""
        if self.num_cpus is None and local:
            return None
        cpus = min(self.cpus, os.cpu_count() or 1) if local else self.cpus
        return max(0, int(cpus) - 1)


@dataclass(frozen=True)
class Resources:
    """Requests of the model workers and the size of image units (see the module docstring)."""

    num_gpus: float | None = None
    num_cpus: float | None = None
    memory: int | None = None
    workers: int | None = None
    shard_images: int = DEFAULT_SHARD_IMAGES
    kinds: tuple[tuple[str, UnitRequest], ...] = field(default=())  # the [resources.KIND] tables given

    def unit(self, kind: str) -> UnitRequest:
        """What a unit of ``kind`` asks for: its own table's keys, else the top-level ones (image
        and text), else the default (score: 1 CPU, no GPU, whatever the top level says)."""
        own = dict(self.kinds).get(kind, UnitRequest())
        if kind == "score":
            return UnitRequest(0.0 if own.num_gpus is None else own.num_gpus, own.num_cpus, own.memory)
        pick = lambda mine, top: top if mine is None else mine  # noqa: E731
        return UnitRequest(
            pick(own.num_gpus, self.num_gpus), pick(own.num_cpus, self.num_cpus), pick(own.memory, self.memory)
        )

    @property
    def cpus(self) -> float:
        """CPUs an image unit asks Ray for (and torch's threads in deterministic mode)."""
        return self.unit("image").cpus

    def loader_workers(self, local: bool = False) -> int | None:
        """Image-loader processes of an image unit (see :meth:`UnitRequest.loader_workers`)."""
        return self.unit("image").loader_workers(local)

    def shard_size(self, batch_size: int | None) -> int:
        """Images per shard, a whole number of batches (256 when the batch size is left to the
        device: a multiple of both the CPU and GPU defaults), so a sharded set meets the model in
        the same batches as an unsharded one."""
        batch = batch_size or 256
        return max(batch, -(-self.shard_images // batch) * batch)


def parse_resources(table: ResourcesTable | dict[str, Any] | None = None) -> Resources:
    """A :class:`Resources` from the checked ``[resources]`` table (None or empty: the defaults);
    a dict is checked first (a bad value raises pydantic's ``ValidationError``)."""
    t = table if isinstance(table, ResourcesTable) else ResourcesTable.model_validate(table or {})
    kinds = tuple(
        (k, UnitRequest(u.num_gpus, u.num_cpus, u.memory)) for k in KINDS if (u := getattr(t, k)).model_fields_set
    )
    return Resources(t.num_gpus, t.num_cpus, t.memory, t.workers, t.shard_images, kinds)
