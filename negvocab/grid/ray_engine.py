"""The Ray engine of ``negvocab grid run --engine ray`` (``pip install 'negvocab[ray]'``).

A grid's missing work is split into units below the model (:mod:`negvocab.grid.units`: image
shards, each model's text, each model's scoring from the cache). Model workers are Ray actors,
one per slot the cluster holds (``[resources]``: ``num_gpus`` each, default 1 when the cluster has
GPUs, else ``num_cpus`` CPUs each; at most ``workers``), so every GPU is busy even with one model.
An actor keeps the model it loaded; the driver hands a free actor a unit of the model it holds
when there is one, else a unit of the model held by the fewest actors, so a model is loaded once
per actor at most. The driver shows units done / total, images per second and an ETA (a bar on a
terminal, a line every 30 s in the log) and logs the warnings each unit's worker logged.

Results travel through the filesystem: the embedding cache (``[grid] cache_dir``) and the grid's
output folder must be on a filesystem every node sees (NFS, a cluster file system; on one machine
any folder), at the same path; the driver sends its workers absolute paths and, when ``cache_dir``
is unset, its own default cache folder (a worker's default may differ). Cache shards and score
files are written atomically, so a worker killed midway leaves no torn entry; Ray restarts the
actor and retries its unit (``max_restarts``, ``max_task_retries``), which reads back what was
cached and computes only the rest. The driver computes the metrics from the stored scores, as the
local engine does, so the results do not depend on the engine.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.errors import ResourceError
from negvocab.grid.units import ModelHost, Unit, plan_units, unit_progress
from negvocab.grid.work import merge_stats
from negvocab.paths import cache_dir

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.grid.config import GridConfig
    from negvocab.grid.work import ModelWork

logger = logging.getLogger(__name__)

__all__ = ["connection_reason", "run_models_on_ray"]

MAX_RETRIES = 3
WAIT_S = 1.0  # how often the driver looks up from waiting (progress lines, dispatch)


def _ray() -> Any:
    try:
        import ray
    except ModuleNotFoundError as e:
        raise ResourceError("the ray engine needs Ray: pip install 'negvocab[ray]' (or use --engine local)") from e
    return ray


def _connected_elsewhere(ray: Any, address: str) -> str | None:
    """The address of the cluster this process is already connected to when it is not
    ``address`` (``None`` when it is, or when that cannot be told: ``auto``, ``ray://``)."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return None
    have = str(ray.get_runtime_context().gcs_address)
    return None if have in (address, _bootstrap_address(ray, address)) else have


def _bootstrap_address(ray: Any, address: str) -> str:
    """``address`` as Ray spells a cluster's address: ``<node ip>:port``, a local name
    (``localhost``, ``127.0.0.1``) as this node's IP, a host name resolved (public API only)."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep:
        return address
    try:
        if host in ("localhost", "127.0.0.1", "::1", ""):
            host = ray.util.get_node_ip_address()
        else:
            host = socket.gethostbyname(host)
    except (OSError, ValueError):
        return address
    return f"{host}:{port}"


def _start(ray: Any, address: str | None) -> bool:
    """Connect to ``address`` or start a local cluster; True when this call started it (and so
    shuts it down). An already connected driver (a notebook, a test) is used as it is, unless
    ``address`` names another cluster."""
    if ray.is_initialized():
        other = _connected_elsewhere(ray, address) if address else None
        if other:
            raise ResourceError(f"this process is already connected to the Ray cluster at {other}, not {address}: call ray.shutdown() first, or leave out --ray-address")
        return False
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(log_to_driver=False)
    except Exception as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
        causes = [e]
        while causes[-1].__cause__ is not None and len(causes) < 8:
            causes.append(causes[-1].__cause__)
        if any(type(c).__name__ == "AuthenticationError" for c in causes):
            raise ResourceError(
                f"could not connect to {where}: it uses token authentication; set RAY_AUTH_MODE=token "
                "with the cluster's token in ~/.ray/auth_token or $RAY_AUTH_TOKEN, and run again"
            ) from e
        raise ResourceError(f"could not connect to {where}: {connection_reason(e)}") from e
    return True


def connection_reason(e: BaseException) -> str:
    """Why a connection failed, in one line. Ray Client puts the server's reason (often a
    traceback) after ``Initialization failure from server:`` on the next lines: its last line is
    the reason; an empty one says where the server's log is."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    if not lines:
        return type(e).__name__
    head = lines[0][:200]
    if not head.endswith(":"):
        return head
    if len(lines) > 1:
        return f"{head} {lines[-1][:300]}"
    return f"{head} (no reason given; see the ray_client_server*.log files in the head node's Ray log folder, e.g. /tmp/ray/session_latest/logs)"


def _slots(ray: Any, cfg: GridConfig, n_units: int) -> tuple[int, float]:
    """(actors, GPUs per actor): as many as the cluster holds, at most ``workers`` and the units."""
    res, have = cfg.resources, ray.cluster_resources()
    gpus = res.num_gpus if res.num_gpus is not None else cfg.ray_num_gpus
    if gpus is None:
        gpus = 1.0 if have.get("GPU", 0) > 0 else 0.0
    slots = int(have.get("GPU", 0) // gpus) if gpus else int(have.get("CPU", 1) // res.cpus)
    if slots < 1:
        raise ResourceError(
            f"the Ray cluster ({have.get('CPU', 0):g} CPUs, {have.get('GPU', 0):g} GPUs) cannot hold one model worker "
            f"asking for {gpus:g} GPUs and {res.cpus:g} CPUs; lower [resources] num_gpus / num_cpus"
        )
    return max(1, min(slots, res.workers or slots, n_units)), float(gpus)


class _Dispatch:
    """Which free actor runs which ready unit (scoring waits for its model's other units)."""

    def __init__(self, units: list[Unit], n_actors: int) -> None:
        self.queue = list(units)
        self.left = {u.model: sum(1 for v in units if v.model == u.model and v.kind != "score") for u in units}
        self.holding: list[str | None] = [None] * n_actors
        self.failed: set[str] = set()

    def _ready(self, u: Unit) -> bool:
        return u.kind != "score" or self.left[u.model] == 0

    def next_for(self, actor: int) -> Unit | None:
        self.queue = [u for u in self.queue if u.model not in self.failed]
        ready = [u for u in self.queue if self._ready(u)]
        if not ready:
            return None
        mine = [u for u in ready if u.model == self.holding[actor]]
        if not mine:
            held = {m: self.holding.count(m) for m in {u.model for u in ready}}
            model = min(held, key=lambda m: (held[m], [u.model for u in ready].index(m)))
            mine = [u for u in ready if u.model == model]
        unit = mine[0]
        self.queue.remove(unit)
        self.holding[actor] = unit.model
        return unit

    def done(self, unit: Unit) -> None:
        if unit.kind != "score":
            self.left[unit.model] -= 1


def _drive(ray: Any, actors: list[Any], units: list[Unit]) -> tuple[dict[str, dict[str, Any] | str], dict[str, int]]:
    """Run ``units`` on ``actors``; ``({model: stats or error}, {model: loads over all actors})``."""
    plan, results = _Dispatch(units, len(actors)), {}
    inflight: dict[Any, tuple[int, Unit]] = {}
    loads: dict[int, dict[str, int]] = {}
    with unit_progress(units) as progress:
        while True:
            for a in range(len(actors)):
                if a not in {x for x, _ in inflight.values()} and (unit := plan.next_for(a)) is not None:
                    inflight[actors[a].run.remote(unit)] = (a, unit)
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=WAIT_S)
            progress.tick()
            for ref in ready:
                a, unit = inflight.pop(ref)
                try:
                    r = ray.get(ref)
                except Exception as e:  # an actor lost after its restarts (worker crash, node gone)
                    r = {"error": f"Ray worker failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}
                for line in r.get("warnings", []):
                    logger.warning("worker %d, %s: %s", a, unit, line)
                loads[a] = r.get("loads", loads.get(a, {}))
                pid = r.get("pid", 0)
                logger.info("%s done on worker %d (pid %d) in %.1fs", unit, a, pid, r.get("seconds", 0.0), extra={"worker_pid": pid})
                progress.update(1, extra=unit.images)
                if "error" in r:
                    logger.error("%s: %s", unit, r["error"])
                    results[unit.model] = r["error"]
                    plan.failed.add(unit.model)
                    continue
                plan.done(unit)
                if not isinstance(results.get(unit.model), str):
                    merge_stats(results.setdefault(unit.model, {"embed_calls": {}}), r["stats"])  # type: ignore[arg-type]
    total: dict[str, int] = {}
    for per in loads.values():
        for m, n in per.items():
            total[m] = total.get(m, 0) + n
    return results, total


def run_models_on_ray(
    cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet], out: Path, *, ray_address: str | None = None
) -> dict[str, dict[str, Any] | str]:
    """Run every model's missing work as units on Ray actors; ``{model: stats or error line}``
    (a model's stats carry ``model_loads``: how many times its model was loaded, over all actors)."""
    ray = _ray()
    started = _start(ray, ray_address)
    # Workers run in another folder and environment (on a cluster: another machine), so they get
    # absolute paths and this driver's cache folder, not their own default one.
    out = out.absolute()
    if cfg.cache_dir is None:
        cfg = dataclasses.replace(cfg, cache_dir=str((cache_dir() / "embeddings").absolute()))
    else:
        cfg = dataclasses.replace(cfg, cache_dir=str(Path(cfg.path(cfg.cache_dir)).absolute()))
    if cfg.ray_data_min_images:
        logger.warning("[grid] ray_data_min_images is no longer used: every image set is split into shards ([resources] shard_images)")
    try:
        units = plan_units(cfg, works, sets)
        n_actors, gpus = _slots(ray, cfg, len(units))
        opts: dict[str, Any] = {"num_gpus": gpus, "num_cpus": cfg.resources.cpus, "max_restarts": MAX_RETRIES, "max_task_retries": MAX_RETRIES}
        if cfg.resources.memory:
            opts["memory"] = cfg.resources.memory
        host = ray.remote(ModelHost).options(**opts)
        sets_ref = ray.put(dict(sets))
        by_model = {w.spec.display: w for w in works}
        actors = [host.remote(cfg, by_model, sets_ref, str(out), "ray") for _ in range(n_actors)]
        logger.info("%d units on %d model workers (%g GPUs, %g CPUs each)", len(units), n_actors, gpus, cfg.resources.cpus)
        try:
            results, loads = _drive(ray, actors, units)
        finally:
            for a in actors:
                ray.kill(a)
        for name, n in loads.items():
            if isinstance(results.get(name), dict):
                results[name]["model_loads"] = {name: n}  # type: ignore[index]
        return results
    finally:
        if started:
            ray.shutdown()
