"""The Ray engine of ``negvocab grid run --engine ray`` (``pip install 'negvocab[ray]'``).

Each model's work (embed its image sets and label lists, build its vocabularies, score its missing
(vocabulary, method, image set) combinations) is one Ray task asking for ``num_gpus`` GPUs
(``[grid] ray_num_gpus``; default 1 when the cluster has GPUs, else 0), so the models of a grid
run side by side on a cluster. An image set of at least ``[grid] ray_data_min_images`` images
(default 20,000) is first embedded through Ray Data (``map_batches`` with actors that each hold
the model), so many GPUs on many machines embed one set; the model's task then finds it in the
embedding cache.

Results travel through the filesystem: the embedding cache (``[grid] cache_dir``) and the grid's
output folder must be on a filesystem every node sees (NFS, a cluster file system; on one machine
any folder), at the same path; the driver sends its workers absolute paths and, when ``cache_dir``
is unset, its own default cache folder (a worker's default may differ). Cache shards and score files are written atomically, so a worker
killed midway leaves no torn entry; Ray retries its task (``max_retries``), which reads back what
was cached and computes only the rest. The driver computes the metrics from the stored scores, as
the local engine does, so the results do not depend on the engine.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.errors import NegvocabError, ResourceError
from negvocab.grid.work import compute_model, load_model, method_spec
from negvocab.paths import cache_dir

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.grid.config import GridConfig, ModelSpec
    from negvocab.grid.work import ModelWork

logger = logging.getLogger(__name__)

__all__ = ["run_models_on_ray"]

DEFAULT_RAY_DATA_MIN_IMAGES = 20_000
MAX_RETRIES = 3


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
    have = ray.get_runtime_context().gcs_address
    try:  # Ray's own spelling of an address ("127.0.0.1:6379" -> "<node ip>:6379")
        from ray._private.services import canonicalize_bootstrap_address

        want = canonicalize_bootstrap_address(address) or address
    except Exception:  # a private helper: fall back to the address as given
        want = address
    return None if have in (want, address) else str(have)


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
        raise ResourceError(f"could not connect to {where}: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}") from e
    return True


class _Embedder:
    """A Ray Data actor holding one model; each batch of image paths is embedded into the cache."""

    def __init__(self, cfg: GridConfig, spec: ModelSpec) -> None:
        self.vlm = load_model(cfg, spec)
        self.batch_size = cfg.batch_size

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        import numpy as np

        paths = [str(p) for p in batch["path"]]
        emb = self.vlm.encode_images(paths, batch_size=self.batch_size)
        return {"n": np.array([len(emb)])}


def _embed_large_sets(ray: Any, cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], num_gpus: float, min_images: int) -> None:
    """Ray Data pass over each of the model's image sets with ``min_images`` images or more."""
    names = sorted({s for _, _, s in work.missing.values() if len(sets[s]) >= min_images})
    if not names or any(method_spec(cfg, m).name == "glmcm" for _, m, _ in work.missing.values()):
        return  # (patch features are embedded by the model's task itself)
    import ray.data

    actors = max(1, int(ray.cluster_resources().get("GPU", 0) // num_gpus) if num_gpus else int(ray.cluster_resources().get("CPU", 1)) // 2)
    for name in names:
        ds = ray.data.from_items([{"path": p} for p in sets[name].paths])
        out = ds.map_batches(
            _Embedder,
            fn_constructor_kwargs={"cfg": cfg, "spec": work.spec},
            batch_size=max(64, cfg.batch_size or 256),
            concurrency=max(1, min(actors, math.ceil(len(sets[name]) / 256))),
            num_gpus=num_gpus,
        )
        n = sum(int(x) for x in out.to_pandas()["n"]) if hasattr(out, "to_pandas") else 0
        logger.info("%s: %s embedded through Ray Data (%d images)", work.spec.display, name, n)


def _model_task(cfg: GridConfig, work: ModelWork, sets: Mapping[str, ImageSet], out: str) -> dict[str, Any] | str:
    """One model's work in a Ray worker: its stats, or the one-line error of a user-facing failure."""
    try:
        return compute_model(cfg, work, sets, Path(out))
    except NegvocabError as e:
        return str(e)


def run_models_on_ray(
    cfg: GridConfig, works: list[ModelWork], sets: Mapping[str, ImageSet], out: Path, *, ray_address: str | None = None
) -> dict[str, dict[str, Any] | str]:
    """Run every model's missing work as Ray tasks; ``{model: stats or error line}``."""
    ray = _ray()
    started = _start(ray, ray_address)
    # Workers run in another folder and environment (on a cluster: another machine), so they get
    # absolute paths and this driver's cache folder, not their own default one.
    out = out.absolute()
    if cfg.cache_dir is None:
        cfg = dataclasses.replace(cfg, cache_dir=str((cache_dir() / "embeddings").absolute()))
    else:
        cfg = dataclasses.replace(cfg, cache_dir=str(Path(cfg.path(cfg.cache_dir)).absolute()))
    try:
        gpus = cfg.ray_num_gpus if cfg.ray_num_gpus is not None else (1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0)
        min_images = cfg.ray_data_min_images or DEFAULT_RAY_DATA_MIN_IMAGES
        for work in works:
            _embed_large_sets(ray, cfg, work, sets, gpus, min_images)
        task = ray.remote(max_retries=MAX_RETRIES)(_model_task)
        refs = {w.spec.display: task.options(num_gpus=gpus, name=f"negvocab-grid:{w.spec.display}").remote(cfg, w, sets, str(out)) for w in works}
        results: dict[str, dict[str, Any] | str] = {}
        for name, ref in refs.items():
            try:
                results[name] = ray.get(ref)
            except Exception as e:  # a task that failed after its retries (worker lost, crash)
                results[name] = f"Ray task failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}"
        return results
    finally:
        if started:
            ray.shutdown()
