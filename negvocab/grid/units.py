"""Work units below the model, run by model workers that load each model once.

A grid model's missing work is split into units: ``image`` units (one shard of one image set,
``[resources] shard_images`` images, a whole number of batches), one ``text`` unit (its ID class
names and every vocabulary it still needs, builders included) and one ``score`` unit (its missing
score files; it waits for the others). Image units write into the embedding cache (each shard
once); the text unit hands its embeddings to the score unit; the score unit loads no model: it
reads the image rows from the cache (leaving out the images the image units could not read) and
stores the score files, so on Ray it runs as a cheap task asking for ``[resources.score]`` (default
1 CPU, no GPU), on the CPU unless that asks for a GPU. A score unit that finds rows missing (a
cache that could not be written) is run by a model worker with its model instead. A lost unit is
simply run again.

A :class:`ModelHost` runs image and text units; it keeps the last model it loaded and loads
another only when a unit of another model comes (``loads`` counts the loads). The local engine
runs every unit in this process, through one host (:func:`run_units_here`); the Ray engine makes
hosts per worker slot (an actor per GPU or per ``num_cpus`` CPUs) and hands each free host a unit
of the model it holds when there is one (:mod:`negvocab.grid.ray_engine`).

Deterministic mode (``--deterministic``, ``[grid] deterministic = true``): every model in fp32,
``torch.use_deterministic_algorithms`` (under which text is encoded in fixed chunks:
:func:`negvocab.vlm.text.encode_labels`), torch's threads fixed to the unit kind's ``num_cpus``,
and the same shards and batches on both engines, so their score files hold bit-identical scores
on CPU (docs/howto/grids.md). Every score file records who made it
(:func:`negvocab.grid.work.score_meta`: engine, device, dtype, versions; ``score_device``: where the
scores were computed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import DiskFullError, NegvocabError
from negvocab.core.plugins import load_plugins
from negvocab.core.progress import Progress
from negvocab.grid import work as W
from negvocab.grid.config import GridConfig
from negvocab.grid.stream_cells import stream_setup
from negvocab.scoring.methods import get_method
from negvocab.vlm.cache import EmbeddingStore
from negvocab.vlm.images import file_key
from negvocab.vlm.pairs import pair_inputs

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.grid.work import ModelWork
    from negvocab.vlm.model import VLM

logger = logging.getLogger(__name__)

__all__ = [
    "CacheMiss", "ModelHost", "NeedsModel", "Unit", "deterministic_config", "gather", "plan_units", "run_units_here",
    "score_unit", "unit_progress",
]  # fmt: skip


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
    return dataclasses.replace(
        cfg, deterministic=True, models=[dataclasses.replace(m, precision="fp32") for m in cfg.models]
    )


def _needs(cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet]) -> tuple[list[str], bool]:
    names = sorted({s for _, _, s in work.missing.values()}, key=list(sets).index)
    return names, W.needs_local(cfg, work)


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


class _Collect(logging.Handler):
    """Warnings logged while a unit runs in a worker, handed back to the driver's log."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@contextlib.contextmanager
def _running(cfg: GridConfig, unit: Unit, collect: bool = True) -> Iterator[dict[str, Any]]:
    """The result of running ``unit`` in the block: its time, the warnings logged meanwhile
    (``collect``), its process, and ``"error"`` for a user-facing failure (the block stops there)."""
    handler = _Collect()
    root = logging.getLogger("negvocab")
    if collect:
        root.addHandler(handler)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"unit": unit, "stats": {}}
    try:
        with _deterministic(cfg.deterministic, cfg.resources.unit(unit.kind).cpus):
            yield result
    except NegvocabError as e:
        result["error"] = str(e)
        result["disk_full"] = isinstance(e, DiskFullError)  # not the model's fault: the driver stops the run
    finally:
        root.removeHandler(handler)
        result |= {"seconds": time.perf_counter() - t0, "warnings": handler.lines, "pid": os.getpid()}


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

    def __init__(
        self, cfg: GridConfig, works: Mapping[str, ModelWork], sets: Mapping[str, ImageSet], out: str, engine: str
    ) -> None:
        load_plugins(cfg.plugins)  # a Ray actor is a fresh process: the grid's plug-in methods first
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

    def run(self, unit: Unit, collect: bool = True, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one unit: ``{"unit", "seconds", "stats", "warnings", "loads"}`` (a text unit adds
        ``"text"``: what its model's score unit needs) or, for a user-facing failure (a model that
        cannot load, an unreadable set), ``"error"``. A score unit scores from the cache with
        ``given`` (:func:`score_unit`) and, when the cache lacks rows, with this worker's model."""
        with _running(self.cfg, unit, collect) as result:
            if unit.kind == "score" and given is not None:
                try:
                    result["stats"] = _score(self.cfg, self.works[unit.model], self.sets, self.out, given)
                    given = None
                except NeedsModel as e:
                    logger.info("%s: %s", unit, e)
                except CacheMiss as e:
                    logger.warning("%s: %s; embedding them again with the model", unit, e)
            if unit.kind != "score" or given is not None or not result["stats"]:
                self._run(unit, self._model(unit.model), result)
        return result | {"loads": dict(self.loads)}

    def _run(self, unit: Unit, vlm: VLM, result: dict[str, Any]) -> None:
        cfg, work, stats = self.cfg, self.works[unit.model], result["stats"]
        if unit.kind == "image":
            paths = list(self.sets[unit.set_name].paths[unit.start : unit.stop])
            emb = vlm.encode_images(paths, local_features=unit.local, batch_size=cfg.batch_size, progress=False)
            stats["failed_images"] = {unit.set_name: [path for path, _ in emb.failed]}
        elif unit.kind == "text":
            class_emb, neg_emb, infos = W.text_inputs(cfg, work, vlm, {})
            stores = {k: (str(vlm.store(k).folder), vlm.store(k).key_doc) for k in ("image", "image-local")}
            meta = W.score_meta(vlm, self.engine, cfg.deterministic)
            result["text"] = {
                "class_emb": class_emb,
                "neg_emb": neg_emb,
                "infos": infos,
                "stores": stores,
                "meta": meta,
                "logit_scale": vlm.logit_scale,
                "setup": stream_setup(cfg.methods, vlm),  # what the stream methods need a model for
            }
        else:  # scoring with the model: the cache lacked rows (an unwritable cache)
            stats["embed_calls"] = {}
            pairs = pair_texts(cfg, work, vlm, stats.setdefault("_files", {}))
            W.score_model(cfg, work, self.sets, self.out, vlm, stats, self.engine, pairs)
            stats.pop("_files", None)


class CacheMiss(NegvocabError):
    """The embedding cache lacks image rows a score unit needs (an unwritable cache): scored with the model instead."""


class NeedsModel(CacheMiss):
    """A missing cell's method embeds texts as it scores (NegRefine's pairs): its score unit runs with the model."""


def pair_methods(cfg: GridConfig, work: ModelWork) -> list[str]:
    """The methods of ``work``'s missing cells that embed a text per image and ID class (``pair_texts``)."""
    names = {W.method_spec(cfg, meth).name for _, meth, _ in work.missing.values()}
    return sorted(n for n in names if "pair_texts" in get_method(n).inputs)


def pair_texts(cfg: GridConfig, work: ModelWork, vlm: VLM, files: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """NegRefine's pair texts (``{"pair_texts": PairTexts}``, embedded with ``vlm`` as the method asks)
    for each vocabulary a missing cell of a pair method scores, by vocabulary name."""
    wanted = set(pair_methods(cfg, work))
    names = {v for v, meth, _ in work.missing.values() if v and W.method_spec(cfg, meth).name in wanted}
    if not names:
        return {}
    classes = W.id_classes(cfg)
    vocabs = W.resolve_vocabularies(cfg, vlm, files, names)
    return {n: pair_inputs(("pair_texts",), vlm, cfg.templates, classes.names, vocabs[n].labels) for n in names}


def _score(
    cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], out: Path, given: Mapping[str, Any]
) -> dict[str, Any]:
    """A score unit without a model: each needed set's image rows read from the cache (the images
    the image units could not read left out), the text from its text unit; the score files stored."""
    if found := pair_methods(cfg, work):
        raise NeedsModel(f"{', '.join(found)} embeds a text per image and ID class as it scores: scored with the model")
    text, failed = given["text"], given.get("failed", {})
    names, local = _needs(cfg, work, sets)
    kinds = ["image", "image-local"] if local else ["image"]
    stores = [EmbeddingStore(Path(text["stores"][k][0]), text["stores"][k][1]) for k in kinds]
    images: dict[str, tuple[Any, Any]] = {}
    calls, ids = {}, []
    for name in names:
        skip = set(failed.get(name, []))
        keys = []
        for image_id, path in zip(sets[name].ids, sets[name].paths, strict=True):
            if str(path) not in skip:
                try:
                    keys.append(file_key(path))
                except OSError:
                    continue  # gone since its image unit: as the image units would have skipped it
                ids += [image_id] if name == "ID" else []
        rows = [store.get(keys) for store in stores]
        missing = sum(int((~found).sum()) for found, _ in rows)
        if missing or not keys:
            raise CacheMiss(f"{missing} image rows of {name} are not in the embedding cache ({stores[0].folder})")
        images[name] = (rows[0][1], rows[1][1] if local else None)
        calls[(work.spec.display, name)] = 1
    device = W.score_device(cfg, text["meta"].get("engine", "ray"))
    meta = {**text["meta"], "score_device": device}
    facts = W.id_facts(cfg, sets["ID"], ids, images["ID"][0], text["class_emb"]) if "ID" in images else {}
    seconds = W.score_files(
        cfg,
        work,
        out,
        images,
        text["class_emb"],
        text["neg_emb"],
        text["infos"],
        device,
        meta,
        text.get("logit_scale"),
        text.get("setup"),
        facts=facts,
    )
    return {"embed_calls": calls, "vocabularies": {work.spec.display: dict(text["infos"])}, "score_seconds": seconds}


def score_unit(
    cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], out: str, given: Mapping[str, Any]
) -> dict[str, Any]:
    """A score unit as a Ray task (no model): as :meth:`ModelHost.run`'s result; ``"cache_miss"``
    when the cache lacks rows (the driver then gives the unit to a model worker)."""
    load_plugins(cfg.plugins)  # a Ray task is a fresh process: the grid's plug-in methods first
    with _running(cfg, Unit("score", work.spec.display)) as result:
        try:
            result["stats"] = _score(cfg, work, sets, Path(out), given)
        except NeedsModel as e:
            result["needs_model"] = str(e)
        except CacheMiss as e:
            result["cache_miss"] = str(e)
    return result | {"loads": {}}


def gather(given: dict[str, dict[str, Any]], result: Mapping[str, Any]) -> None:
    """Keep what a model's score unit needs from a finished unit: its text, its unreadable images."""
    per = given.setdefault(result["unit"].model, {"failed": {}})
    if "text" in result:
        per["text"] = result["text"]
    for name, paths in result.get("stats", {}).pop("failed_images", {}).items():
        per["failed"].setdefault(name, []).extend(paths)


def unit_progress(units: list[Unit]) -> Progress:
    """The driver's progress over ``units``: units done / total, images/s, ETA (bar and log lines)."""
    return Progress(len(units), "grid", "unit", extra="image")


def run_units_here(
    cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet], out: Path
) -> dict[str, dict[str, Any] | str]:
    """The local engine: every unit in this process, through one :class:`ModelHost`;
    ``{model: stats or error line}`` (as :func:`negvocab.grid.ray_engine.run_models_on_ray`)."""
    units = plan_units(cfg, works, sets)
    W.score_device(cfg, "local")  # a GPU asked for and none here: one line before any work
    host = ModelHost(cfg, {w.spec.display: w for w in works}, sets, str(out), "local")
    results: dict[str, dict[str, Any] | str] = {}
    given: dict[str, dict[str, Any]] = {}
    with unit_progress(units) as progress:
        for unit in units:
            if isinstance(results.get(unit.model), str):
                progress.update(1)  # the model failed: its other units are skipped
                continue
            r = host.run(
                unit, collect=False, given=given.pop(unit.model, None) if unit.kind == "score" else None
            )  # its text goes with it
            gather(given, r)
            progress.update(1, extra=unit.images)
            if r.get("disk_full"):
                raise DiskFullError(errno.ENOSPC, r["error"])
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
