"""Exact inner-product k-nearest-neighbour search over embeddings (FAISS, with a torch fallback).

A thin layer in the style of ``faiss.contrib.exhaustive_search``: plain functions over numpy arrays
returning ``(D, I)``. Queries are searched in batches against an exact ``IndexFlatIP``, on the GPU
when faiss-gpu and CUDA are present; without FAISS an exact torch matmul + top-k gives the same
neighbours (up to the order of exact ties).
"""

from __future__ import annotations

import functools
import logging
import operator
import time
from typing import Any

import numpy as np

from negvocab.errors import InputError

log = logging.getLogger(__name__)

GPU_FAISS_MAX_K = 2048  # faiss GPU indexes search at most this many neighbours (older releases)


def have_faiss() -> bool:
    """True when the ``faiss`` package can be imported."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def have_faiss_gpu() -> bool:
    """True when faiss is installed, was built with GPU support and sees a GPU."""
    if not have_faiss():
        return False
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


@functools.cache
def _gpu_resources(gpu_id: int) -> Any:
    """One faiss ``StandardGpuResources`` per GPU for the process: each one pins host memory and
    reserves scratch memory on the device, too costly to make for every search."""
    import faiss

    return faiss.StandardGpuResources()


def _gpu_id(device: str | None) -> int:
    return int(str(device).split(":")[1]) if device and ":" in str(device) else 0


def as_matrix(x: Any, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 [n, d] array; a one-line InputError if not 2-d or not finite.

    A NaN row would otherwise rank anywhere (FAISS returns index -1 for it).
    """
    arr = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-d array [n, d], got shape {arr.shape}")
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise InputError(
            f"{name}: {bad.size} of {len(arr)} rows contain NaN or inf (first: row {bad[0]}); re-encode them"
        )
    return arr


def knn(
    queries: Any,
    keys: Any,
    k: int,
    *,
    device: str | None = None,
    batch_size: int = 65536,
    backend: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner products of each query with ``keys``.

    Parameters
    ----------
    queries : array-like, float [n, d]
    keys : array-like, float [m, d]
    k : int
        Neighbours per query, 1 <= k <= m.
    device : str or None
        ``"cuda"`` to search on the GPU (faiss-gpu, else torch), ``"cpu"``, or None / ``"auto"``:
        the GPU when faiss-gpu and CUDA are both available, else FAISS on the CPU.
    batch_size : int
        Queries per search call (bounds memory: ``batch_size * m`` scores at a time for torch).
    backend : {"auto", "faiss", "torch"}
        "auto" uses FAISS when installed, else torch.

    Returns
    -------
    D : ndarray, float32 [n, k]
        Inner products, descending along each row.
    I : ndarray, int64 [n, k]
        Row indices into ``keys``.

    Examples
    --------
    >>> import numpy as np
    >>> D, I = knn(np.eye(3), np.eye(3), k=1)
    >>> I.ravel().tolist(), D.ravel().tolist()
    ([0, 1, 2], [1.0, 1.0, 1.0])
    """
    if device is not None and str(device) == "auto":
        device = None
    q = as_matrix(queries, "queries")
    x = as_matrix(keys, "keys")
    if q.shape[1] != x.shape[1]:
        raise InputError(f"queries have dimension {q.shape[1]} but keys {x.shape[1]}")
    try:
        k = operator.index(k)  # ints and numpy integers; not 2.5 or "2"
    except TypeError:
        raise InputError(f"k must be an integer, got {k!r}") from None
    if not 1 <= k <= x.shape[0]:
        raise InputError(f"k must be between 1 and the number of keys ({x.shape[0]}), got {k}")
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    if backend not in ("auto", "faiss", "torch"):
        raise InputError(f"unknown knn backend {backend!r}; choose auto, faiss or torch")
    want_gpu = device is not None and str(device).startswith("cuda")
    # auto: FAISS, except that an explicit CUDA device goes to torch on that device when faiss has
    # no GPU support or k is beyond what GPU faiss searches
    gpu_faiss_ok = have_faiss_gpu() and k <= GPU_FAISS_MAX_K
    use_faiss = backend == "faiss" or (backend == "auto" and have_faiss() and not (want_gpu and not gpu_faiss_ok))
    if backend == "faiss" and not have_faiss():
        raise InputError("backend='faiss' but faiss is not installed (pip install faiss-cpu)")
    t0 = time.perf_counter()
    if use_faiss:
        D, I = _knn_faiss(q, x, k, device, batch_size)
        how = "faiss"
    else:
        D, I = _knn_torch(q, x, k, device, batch_size)
        how = "torch"
    log.info("knn: %d queries x %d keys, k=%d (%s) in %.2f s", q.shape[0], x.shape[0], k, how, time.perf_counter() - t0)
    return D, I


def _knn_faiss(q: np.ndarray, x: np.ndarray, k: int, device: str | None, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    import faiss

    index: Any = faiss.IndexFlatIP(x.shape[1])
    want_gpu = device is not None and str(device).startswith("cuda")
    gpu_ok = have_faiss_gpu() and k <= GPU_FAISS_MAX_K
    if want_gpu and not gpu_ok:
        log.info("faiss cannot search on the GPU here (no GPU support, or k > %d); searching on the CPU", GPU_FAISS_MAX_K)
    if (want_gpu or device is None) and gpu_ok:
        index = faiss.index_cpu_to_gpu(_gpu_resources(_gpu_id(device)), _gpu_id(device), index)
    index.add(x)
    D = np.empty((q.shape[0], k), dtype=np.float32)
    I = np.empty((q.shape[0], k), dtype=np.int64)
    for start in range(0, q.shape[0], batch_size):
        d, i = index.search(q[start : start + batch_size], k)
        D[start : start + batch_size] = d
        I[start : start + batch_size] = i
    return D, I


def _knn_torch(q: np.ndarray, x: np.ndarray, k: int, device: str | None, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    import torch

    dev = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if device is None else device)
    keys = torch.from_numpy(x).to(dev)
    D = np.empty((q.shape[0], k), dtype=np.float32)
    I = np.empty((q.shape[0], k), dtype=np.int64)
    step = max(1, min(batch_size, (1 << 28) // max(1, x.shape[0])))  # at most ~1 GB of scores
    with torch.inference_mode():
        for start in range(0, q.shape[0], step):
            sims = torch.from_numpy(q[start : start + step]).to(dev) @ keys.T
            d, i = torch.topk(sims, k, dim=1, largest=True, sorted=True)
            D[start : start + step] = d.cpu().numpy()
            I[start : start + step] = i.cpu().numpy()
    return D, I
