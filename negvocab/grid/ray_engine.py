"""The Ray engine of ``negvocab grid run --engine ray`` (``pip install 'negvocab[ray]'``).

A grid's missing work is split into units below the model (:mod:`negvocab.grid.units`: image
shards, each model's text, each model's scoring from the cache). Image and text units run on model
workers, Ray actors that keep the model they loaded, as many as the cluster holds (each asking for
its kind's ``[resources]``: ``num_gpus``, default 1 when the cluster has GPUs, ``num_cpus``,
``memory``; at most ``workers``), so every GPU is busy even with one model. The two kinds share
one pool of workers when they ask for the same, else each has its own. The driver hands a free
worker a unit of the model it holds when there is one, else a unit of the model held by the fewest
workers, so a model is loaded once per worker at most; a worker with nothing left to run is
retired. Score units load no model: each is a Ray task asking for ``[resources.score]`` (default
1 CPU, no GPU), submitted once its model's other units are done. The driver shows units done /
total, images per second and an ETA (a bar on a terminal, a line every 30 s in the log, also while
a unit runs) and logs the warnings each unit's worker logged.

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
import errno
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import DiskFullError, ResourceError
from negvocab.core.paths import cache_dir
from negvocab.grid.units import ModelHost, Unit, gather, plan_units, score_unit, unit_progress
from negvocab.grid.work import merge_stats

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
            raise ResourceError(
                f"this process is already connected to the Ray cluster at {other}, "
                f"not {address}: call ray.shutdown() first, or leave out --ray-address"
            )
        return False
    try:
        _init(ray, address)
    except Exception as e:
        where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
        causes: list[BaseException] = [e]
        while causes[-1].__cause__ is not None and len(causes) < 8:
            causes.append(causes[-1].__cause__)
        if any(type(c).__name__ == "AuthenticationError" for c in causes):
            raise ResourceError(
                f"could not connect to {where}: it uses token authentication; set RAY_AUTH_MODE=token "
                "with the cluster's token in ~/.ray/auth_token or $RAY_AUTH_TOKEN, and run again"
            ) from e
        reason = connection_reason(e)
        if address and address.startswith("ray://") and "timeout" in reason and not _token_mode():
            # a token cluster's Ray Client server ignores a client without its token: it times out
            reason += (
                " (nothing answered there, or the cluster uses token authentication: then set "
                "RAY_AUTH_MODE=token, with its token in ~/.ray/auth_token or $RAY_AUTH_TOKEN, and run again)"
            )
        raise ResourceError(f"could not connect to {where}: {reason}") from e
    return True


# what a Ray Client server says when the per-client server it forks did not come up. Its proxy
# forks that server while its own gRPC threads run, and the child dies or hangs now and then (a
# known Ray bug, ray-project/ray issue 63202; seen here under load, 2 runs in 5): transient, a new
# connection usually gets past it
_CLIENT_SERVER_DIED = ("Starting Ray client server failed", "Proxy failed to Connect to backend", "ZombieProcess")
CLIENT_ATTEMPTS = 3


def _init(ray: Any, address: str | None) -> None:
    """``ray.init`` for ``address``; a Ray Client connection whose per-client server died at
    start-up is tried again (up to ``CLIENT_ATTEMPTS`` in all), with a warning."""
    if not address:
        ray.init(log_to_driver=False)
        return
    for attempt in range(1, CLIENT_ATTEMPTS + 1):
        try:
            ray.init(address=address, log_to_driver=False)
            return
        except Exception as e:
            died = any(text in str(e) for text in _CLIENT_SERVER_DIED)
            if not address.startswith("ray://") or not died or attempt == CLIENT_ATTEMPTS:
                raise
            logger.warning(
                "the Ray Client server at %s could not start a server for this client (attempt %d of %d); "
                "connecting again",
                address,
                attempt,
                CLIENT_ATTEMPTS,
            )
            if ray.is_initialized():
                ray.shutdown()
            time.sleep(2.0 * attempt)


def _token_mode() -> bool:
    """Whether this driver sends a Ray token (``RAY_AUTH_MODE=token`` in its environment)."""
    return os.environ.get("RAY_AUTH_MODE", "").lower() == "token"


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
    return (
        f"{head} (no reason given; see the ray_client_server*.log files in "
        "the head node's Ray log folder, e.g. /tmp/ray/session_latest/logs)"
    )


def _request(ray: Any, cfg: GridConfig, kind: str) -> dict[str, Any]:
    """Ray's options for a unit of ``kind`` (``num_gpus`` left unset: 1 when the cluster has GPUs)."""
    req = cfg.resources.unit(kind)
    gpus = req.num_gpus if req.num_gpus is not None else (cfg.ray_num_gpus if kind != "score" else None)
    if gpus is None:
        gpus = 1.0 if kind != "score" and ray.cluster_resources().get("GPU", 0) > 0 else 0.0
    opts: dict[str, Any] = {"num_gpus": float(gpus), "num_cpus": req.cpus}
    if req.memory:
        opts["memory"] = req.memory
    return opts


_KEYS = (("num_gpus", "GPU"), ("num_cpus", "CPU"), ("memory", "memory"))


def _fits(have: Mapping[str, float], opts: Mapping[str, Any]) -> int:
    """How many units asking for ``opts`` the resources ``have`` hold at once."""
    n = [int(have.get(res, 0) / opts[key] + 1e-9) for key, res in _KEYS if opts.get(key)]  # 1.0 GPU / 0.1: 10, not 9
    return min(n) if n else 1 << 20


def _describe(have: Mapping[str, float]) -> str:
    return f"{have.get('CPU', 0):g} CPUs, {have.get('GPU', 0):g} GPUs, {have.get('memory', 0) / 2**30:.1f} GiB"


def _take(have: dict[str, float], opts: Mapping[str, Any], n: int) -> None:
    """Count ``n`` workers asking for ``opts`` out of ``have`` (a negative ``n`` gives them back)."""
    for key, res in _KEYS:
        if opts.get(key):
            have[res] = have.get(res, 0) - n * opts[key]


def _pools(
    ray: Any, cfg: GridConfig, units: list[Unit]
) -> tuple[list[tuple[frozenset[str], dict[str, Any], int]], dict[str, float]]:
    """The model-worker pools: (kinds they run, Ray options, workers), and the resources left over.
    Image and text units share one pool when they ask for the same; otherwise the text pool (at
    most one worker per model) is sized first, leaving room for one image worker, and the image
    pool gets what remains (a retired text worker's share goes to image workers later:
    :meth:`_Workers.grow`); at most ``[resources] workers`` each."""
    have = {k: float(v) for k, v in ray.cluster_resources().items()}
    cap = cfg.resources.workers or 1 << 20
    img, txt = _request(ray, cfg, "image"), _request(ray, cfg, "text")
    groups = (
        [(frozenset({"image", "text"}), img)]
        if img == txt
        else [(frozenset({"text"}), txt), (frozenset({"image"}), img)]
    )
    for kinds, opts in groups:
        if any(u.kind in kinds for u in units) and _fits(have, opts) < 1:
            memory = f", {opts['memory'] / 2**30:.1f} GiB" if opts.get("memory") else ""
            raise ResourceError(
                f"the Ray cluster ({_describe(have)}) cannot hold "
                f"one model worker for {'/'.join(sorted(kinds))} units asking for "
                f"{opts['num_gpus']:g} GPUs, {opts['num_cpus']:g} CPUs{memory}; "
                "lower [resources] num_gpus / num_cpus / memory"
            )
    pools = []
    for i, (kinds, opts) in enumerate(groups):
        want = sum(1 for u in units if u.kind in kinds)
        room = dict(have)
        if i + 1 < len(groups) and any(u.kind in groups[-1][0] for u in units):
            _take(room, groups[-1][1], 1)  # one image worker must fit beside the text workers
        n = min(max(_fits(room, opts), 1), cap, want)
        _take(have, opts, n)
        if want:
            pools.append((kinds, opts, n))
    return pools, have


class _Dispatch:
    """Which free model worker runs which unit; a model's score unit is ready once its other units are done."""

    def __init__(self, units: list[Unit]) -> None:
        self.queue = [u for u in units if u.kind != "score"]
        self.scores = [u for u in units if u.kind == "score"]
        self.left = {u.model: sum(1 for v in units if v.model == u.model and v.kind != "score") for u in units}
        self.holding: dict[int, str | None] = {}
        self.failed: set[str] = set()

    def ready_scores(self) -> list[Unit]:
        """Score units whose model's image and text units are all done (taken off the list)."""
        ready = [u for u in self.scores if self.left[u.model] == 0 and u.model not in self.failed]
        self.scores = [u for u in self.scores if u not in ready and u.model not in self.failed]
        return ready

    @staticmethod
    def _runs(kinds: frozenset[str], u: Unit) -> bool:
        return u.kind in kinds or (
            u.kind == "score" and "image" in kinds
        )  # a score unit the cache failed: with the model

    def wants(self, kinds: frozenset[str]) -> bool:
        return self.waiting(kinds) > 0

    def waiting(self, kinds: frozenset[str]) -> int:
        """Units not yet handed out that a worker running ``kinds`` could run."""
        return sum(1 for u in self.queue if u.model not in self.failed and self._runs(kinds, u))

    def next_for(self, actor: int, kinds: frozenset[str]) -> Unit | None:
        self.queue = [u for u in self.queue if u.model not in self.failed]
        ready = [u for u in self.queue if self._runs(kinds, u)]
        if not ready:
            return None
        mine = [u for u in ready if u.model == self.holding.get(actor)]
        if not mine:
            held = {m: list(self.holding.values()).count(m) for m in {u.model for u in ready}}
            model = min(held, key=lambda m: (held[m], [u.model for u in ready].index(m)))
            mine = [u for u in ready if u.model == model]
        unit = mine[0]
        self.queue.remove(unit)
        self.holding[actor] = unit.model
        return unit

    def done(self, unit: Unit) -> None:
        if unit.kind != "score":
            self.left[unit.model] -= 1


class _Workers:
    """The model workers of each pool: started up front, retired once their pool has nothing left
    to run (so other pools and the score tasks get their share), started again for a score unit
    the cache failed."""

    def __init__(
        self,
        ray: Any,
        pools: list[tuple[frozenset[str], dict[str, Any], int]],
        args: tuple[Any, ...],
        spare: Mapping[str, float],
        cap: int = 1 << 20,
    ) -> None:
        self.ray, self.pools, self.args, self.cap = ray, pools, args, cap
        self.spare = dict(spare)  # what no worker of ours holds (score tasks take theirs from Ray as they come)
        self.actors: dict[int, tuple[Any, frozenset[str]]] = {}
        self.pool_of: dict[int, int] = {}
        self._next = 0
        for i, (_, opts, n) in enumerate(pools):
            _take(self.spare, opts, -n)  # counted out by _pools; start() counts each worker out again
            for _ in range(n):
                self.start(i)

    def start(self, pool: int) -> None:
        kinds, opts, _ = self.pools[pool]
        _take(self.spare, opts, 1)
        host = self.ray.remote(ModelHost).options(**opts, max_restarts=MAX_RETRIES, max_task_retries=MAX_RETRIES)
        self.actors[self._next] = (host.remote(*self.args), kinds)
        self.pool_of[self._next] = pool
        self._next += 1

    def ensure_image_worker(self) -> None:
        if not any("image" in kinds for _, kinds in self.actors.values()):
            self.start(next(i for i, (kinds, _, _) in enumerate(self.pools) if "image" in kinds))

    def retire(self, a: int) -> None:
        self.ray.kill(self.actors.pop(a)[0])
        _take(self.spare, self.pools[self.pool_of.pop(a)][1], -1)

    def grow(self, waiting: Any) -> list[int]:
        """Start workers where a pool has more units waiting (``waiting(kinds)``) than workers and
        retired workers left room (a text pool's GPUs go to image shards); the new workers' ids."""
        new = []
        for i, (kinds, opts, _) in enumerate(self.pools):
            mine = sum(1 for a in self.pool_of.values() if a == i)
            n = min(waiting(kinds) - mine, _fits(self.spare, opts), self.cap - mine)
            for _ in range(max(n, 0)):
                new.append(self._next)
                self.start(i)
        return new

    def close(self) -> None:
        for a in list(self.actors):
            self.ray.kill(self.actors.pop(a)[0])


def _result(ray: Any, ref: Any) -> dict[str, Any]:
    try:
        return dict(ray.get(ref))
    except Exception as e:  # a worker lost after its restarts (worker crash, node gone)
        return {"error": f"Ray worker failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"}


def _drive(
    ray: Any, workers: _Workers, units: list[Unit], score: Any
) -> tuple[dict[str, dict[str, Any] | str], dict[str, int]]:  # long: one loop, dispatch and results
    """Run ``units``: image and text units on the model workers, score units as tasks (``score(model, given)``
    submits one); ``({model: stats or error}, {model: loads over all workers})``."""
    plan, results = _Dispatch(units), {}
    given: dict[str, dict[str, Any]] = {}
    inflight: dict[Any, tuple[int | None, Unit]] = {}
    loads: dict[int, dict[str, int]] = {}
    with unit_progress(units) as progress:
        while True:
            busy, retired = {a for a, _ in inflight.values()}, False
            for a, (actor, kinds) in list(workers.actors.items()):
                if a in busy:
                    continue
                if (unit := plan.next_for(a, kinds)) is not None:
                    inflight[actor.run.remote(unit)] = (a, unit)
                elif not plan.wants(kinds):
                    workers.retire(a)
                    retired = True
            if retired and (grown := workers.grow(plan.waiting)):
                for a in grown:
                    logger.info(
                        "worker %d started: a retired worker left room and %s units wait",
                        a,
                        "/".join(sorted(workers.actors[a][1])),
                    )
                continue  # hand the new workers their units
            for unit in plan.ready_scores():  # the driver keeps a model's text only until its score task has it
                inflight[score(unit.model, given.pop(unit.model, {}))] = (None, unit)
            if not inflight:
                break
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=WAIT_S)
            progress.tick()
            for ref in ready:
                held, unit = inflight.pop(ref)
                r = _result(ray, ref)
                where = f"worker {held}" if held is not None else "a score task"
                for line in r.get("warnings", []):
                    logger.warning("%s, %s: %s", where, unit, line)
                if held is not None:
                    loads[held] = r.get("loads", loads.get(held, {}))
                pid = r.get("pid", 0)
                logger.info(
                    "%s done on %s (pid %d) in %.1fs",
                    unit,
                    where,
                    pid,
                    r.get("seconds", 0.0),
                    extra={"worker_pid": pid},
                )
                if "cache_miss" in r or "needs_model" in r:  # scored by a model worker instead
                    if "cache_miss" in r:  # an unwritable cache
                        logger.warning("%s: %s; scoring it with the model", unit, r["cache_miss"])
                    else:  # a method that embeds texts as it scores (NegRefine)
                        logger.info("%s: %s", unit, r["needs_model"])
                    plan.queue.append(unit)
                    workers.ensure_image_worker()
                    continue
                progress.update(1, extra=unit.images)
                if r.get("disk_full"):  # the run stops, a rerun resumes where it stopped
                    raise DiskFullError(errno.ENOSPC, r["error"])
                if "error" in r:
                    logger.error("%s: %s", unit, r["error"])
                    results[unit.model] = r["error"]
                    plan.failed.add(unit.model)
                    continue
                plan.done(unit)
                gather(given, r)
                if not isinstance(results.get(unit.model), str):
                    merge_stats(results.setdefault(unit.model, {"embed_calls": {}}), r["stats"])
    total: dict[str, int] = {}
    for per in loads.values():
        for m, n in per.items():
            total[m] = total.get(m, 0) + n
    return results, total


def run_models_on_ray(
    cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet], out: Path, *, ray_address: str | None = None
) -> dict[str, dict[str, Any] | str]:
    """Run every model's missing work as units on Ray (model workers for image and text units,
    tasks for score units); ``{model: stats or error line}`` (a model's stats carry
    ``model_loads``: how many times its model was loaded, over all workers)."""
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
        logger.warning(
            "[grid] ray_data_min_images is no longer used: every "
            "image set is split into shards ([resources] shard_images)"
        )
    try:
        units = plan_units(cfg, works, sets)
        pools, spare = _pools(ray, cfg, units)
        sets_ref = ray.put(dict(sets))
        by_model = {w.spec.display: w for w in works}
        asks, have = _request(ray, cfg, "score"), {k: float(v) for k, v in ray.cluster_resources().items()}
        if any(u.kind == "score" for u in units) and _fits(have, asks) < 1:  # else the task would wait for ever
            raise ResourceError(
                f"the Ray cluster ({_describe(have)}) cannot run a score task asking for {asks['num_gpus']:g} GPUs and "
                f"{asks['num_cpus']:g} CPUs; lower [resources.score] num_gpus / num_cpus / memory"
            )
        task = ray.remote(score_unit).options(**asks, max_retries=MAX_RETRIES)
        workers = _Workers(
            ray, pools, (cfg, by_model, sets_ref, str(out), "ray"), spare, cfg.resources.workers or 1 << 20
        )
        for kinds, opts, n in pools:
            logger.info(
                "%d model workers for %s units (%g GPUs, %g CPUs each)",
                n,
                "/".join(sorted(kinds)),
                opts["num_gpus"],
                opts["num_cpus"],
            )
        try:
            results, loads = _drive(
                ray, workers, units, lambda model, given: task.remote(cfg, by_model[model], sets_ref, str(out), given)
            )
        finally:
            workers.close()
        for name, n in loads.items():
            if isinstance(results.get(name), dict):
                results[name]["model_loads"] = {name: n}  # type: ignore[index]
        return results
    finally:
        if started:
            ray.shutdown()
