"""Work units below the model, run by model workers that load each model once.

A grid model's missing work is split into units: ``image`` units (one shard of one image set,
``[resources] shard_images`` images, a whole number of batches), one ``text`` unit (its ID class
names and every vocabulary's labels, builders included) and one ``score`` unit (its missing score
files, from the embedding cache the other units filled; it waits for them). Each unit writes into
the embedding cache (each shard once) or the score files, so a lost unit is simply run again.

A :class:`ModelHost` runs units; it keeps the last model it loaded and loads another only when a
unit of another model comes (``loads`` counts the loads). The local engine runs every unit through
one host in this process (:func:`run_units_here`); the Ray engine makes a host per worker slot (an
actor per GPU or per ``num_cpus`` CPUs) and hands each free host a unit of the model it holds when
there is one (:mod:`negvocab.grid.ray_engine`).

Deterministic mode (``--deterministic``, ``[grid] deterministic = true``): every model in fp32,
``torch.use_deterministic_algorithms``, torch's threads fixed to the unit's ``num_cpus``, and the
same shards and batches on both engines, so their score files hold bit-identical scores on CPU.
Every score file records who made it (:func:`score_meta`: engine, device, dtype, versions).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.errors import NegvocabError
from negvocab.grid import work as W
from negvocab.grid.config import GridConfig
from negvocab.progress import Progress

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.grid.work import ModelWork
    from negvocab.vlm.model import VLM

logger = logging.getLogger(__name__)

__all__ = ["ModelHost", "Unit", "deterministic_config", "plan_units", "run_units_here", "score_meta", "unit_progress"]


@dataclass(frozen=True)
class Unit:
    """One piece of a model's work: an image shard ``[start, stop)`` of ``set_name``, its text, or its scoring."""

    kind: str  # "image", "text" or "score"
    model: str
    set_name: str = ""
    start: int = 0
    stop: int = 0
    local: bool = False  # GL-MCM patch features too

    @property
    def images(self) -> int:
        return self.stop - self.start if self.kind == "image" else 0

    def __str__(self) -> str:
        where = f" {self.set_name}[{self.start}:{self.stop}]" if self.kind == "image" else ""
        return f"{self.model}: {self.kind}{where}"


def deterministic_config(cfg: GridConfig) -> GridConfig:
    """``cfg`` with every model in fp32 (so the digests name the precision actually used)."""
    return dataclasses.replace(cfg, deterministic=True, models=[dataclasses.replace(m, precision="fp32") for m in cfg.models])


def _needs(cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet]) -> tuple[list[str], bool]:
    names = sorted({s for _, _, s in work.missing.values()}, key=list(sets).index)
    return names, any(W.method_spec(cfg, m).name == "glmcm" for _, m, _ in work.missing.values())


def plan_units(cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet]) -> list[Unit]:
    """The units of every model with missing score files, in a fixed order (model, set, shard)."""
    size = cfg.resources.shard_size(cfg.batch_size)
    units: list[Unit] = []
    for work in works:
        if not work.missing:
            continue
        names, local = _needs(cfg, work, sets)
        model = work.spec.display
        for name in names:
            n = len(sets[name])
            units += [Unit("image", model, name, a, min(a + size, n), local) for a in range(0, n, size)]
        units += [Unit("text", model), Unit("score", model)]
    return units


def score_meta(vlm: VLM, engine: str, deterministic: bool) -> dict[str, Any]:
    """What a score file records about who made it: engine, device, dtype, library versions."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy
    import open_clip
    import torch

    try:
        ours = version("negvocab")
    except PackageNotFoundError:
        ours = None
    versions = {"negvocab": ours, "torch": torch.__version__, "open_clip": open_clip.__version__, "numpy": numpy.__version__}
    return {
        "engine": engine,
        "device": str(vlm.device),
        "dtype": vlm.precision,
        "deterministic": deterministic,
        "python": platform.python_version(),
        "versions": versions,
    }


class _Collect(logging.Handler):
    """Warnings logged while a unit runs in a worker, handed back to the driver's log."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@contextlib.contextmanager
def _deterministic(on: bool, threads: float) -> Iterator[None]:
    if not on:
        yield
        return
    import torch

    before = (torch.are_deterministic_algorithms_enabled(), torch.get_num_threads())
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(max(1, int(threads)))
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0])
        torch.set_num_threads(before[1])


class ModelHost:
    """Runs units, keeping the last model it loaded (one model in memory at a time)."""

    def __init__(self, cfg: GridConfig, works: Mapping[str, ModelWork], sets: Mapping[str, ImageSet], out: str, engine: str) -> None:
        self.cfg, self.works, self.sets, self.out, self.engine = cfg, dict(works), sets, Path(out), engine
        self.vlm: VLM | None = None
        self.holding: str | None = None
        self.loads: dict[str, int] = {}

    def _model(self, name: str) -> VLM:
        if self.holding != name or self.vlm is None:
            self.vlm = None  # free the old one first
            self.vlm = W.load_model(self.cfg, self.works[name].spec)
            self.vlm.num_workers = self.cfg.resources.loader_workers(local=self.engine == "local")
            self.holding = name
            self.loads[name] = self.loads.get(name, 0) + 1
        return self.vlm

    def run(self, unit: Unit, collect: bool = True) -> dict[str, Any]:
        """Run one unit: ``{"unit", "seconds", "stats", "warnings", "loads"}`` or, for a
        user-facing failure (a model that cannot load, an unreadable set), ``"error"``."""
        handler = _Collect()
        root = logging.getLogger("negvocab")
        if collect:
            root.addHandler(handler)
        t0 = time.perf_counter()
        result: dict[str, Any] = {"unit": unit, "stats": {}}
        try:
            with _deterministic(self.cfg.deterministic, self.cfg.resources.cpus):
                vlm = self._model(unit.model)
                self._run(unit, vlm, result["stats"])
        except NegvocabError as e:
            result["error"] = str(e)
        finally:
            root.removeHandler(handler)
        result |= {"seconds": time.perf_counter() - t0, "warnings": handler.lines, "loads": dict(self.loads), "pid": os.getpid()}
        return result

    def _run(self, unit: Unit, vlm: VLM, stats: dict[str, Any]) -> None:
        cfg, work = self.cfg, self.works[unit.model]
        if unit.kind == "image":
            paths = list(self.sets[unit.set_name].paths[unit.start : unit.stop])
            vlm.encode_images(paths, local_features=unit.local, batch_size=cfg.batch_size, progress=False)
        elif unit.kind == "text":
            classes = W.id_classes(cfg)
            vlm.encode_text(list(classes.names), cfg.templates, pos="n", batch_size=cfg.batch_size, progress=False)
            needed = {v for v, _, _ in work.missing.values() if v}  # not the grid's bad vocabularies: their cells failed alone
            if needed:
                for v in W.resolve_vocabularies(cfg, vlm, {}, needed).values():
                    vlm.encode_text(list(v.labels), cfg.templates, pos=v.parts_of_speech(), batch_size=cfg.batch_size, progress=False)
        else:
            stats["embed_calls"] = {}
            W.score_model(cfg, work, self.sets, self.out, vlm, stats, score_meta(vlm, self.engine, cfg.deterministic))
            stats.pop("_files", None)


def unit_progress(units: list[Unit]) -> Progress:
    """The driver's progress over ``units``: units done / total, images/s, ETA (bar and log lines)."""
    return Progress(len(units), "grid", "unit", extra="image")


def run_units_here(cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet], out: Path) -> dict[str, dict[str, Any] | str]:
    """The local engine: every unit in this process, through one :class:`ModelHost`;
    ``{model: stats or error line}`` (as :func:`negvocab.grid.ray_engine.run_models_on_ray`)."""
    units = plan_units(cfg, works, sets)
    host = ModelHost(cfg, {w.spec.display: w for w in works}, sets, str(out), "local")
    results: dict[str, dict[str, Any] | str] = {}
    with unit_progress(units) as progress:
        for unit in units:
            if isinstance(results.get(unit.model), str):
                progress.update(1)  # the model failed: its other units are skipped
                continue
            r = host.run(unit, collect=False)
            progress.update(1, extra=unit.images)
            if "error" in r:
                logger.error("%s: %s", unit, r["error"])
                results[unit.model] = r["error"]
                continue
            stats = results.setdefault(unit.model, {"embed_calls": {}})
            assert isinstance(stats, dict)
            W.merge_stats(stats, r["stats"])
    for name, n in host.loads.items():
        if isinstance(results.get(name), dict):
            results[name]["model_loads"] = {name: n}  # type: ignore[index]
    return results
