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

from negvocab.core.errors import InputError
from negvocab.core.extras import require
from negvocab.core.types import Embeddings

__all__ = [
    "GPU_FAISS_MAX_K",
    "INDEX_KINDS",
    "STORAGES",
    "StreamingSearch",
    "as_matrix",
    "have_faiss",
    "have_faiss_gpu",
    "knn",
    "merge_topk",
    "recall_at_k",
]

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
    queries: Embeddings,
    keys: Embeddings,
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


def _knn_faiss(
    q: np.ndarray, x: np.ndarray, k: int, device: str | None, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    import faiss

    index: Any = faiss.IndexFlatIP(x.shape[1])
    want_gpu = device is not None and str(device).startswith("cuda")
    gpu_ok = have_faiss_gpu() and k <= GPU_FAISS_MAX_K
    if want_gpu and not gpu_ok:
        log.info(
            "faiss cannot search on the GPU here (no GPU support, or k > %d); searching on the CPU", GPU_FAISS_MAX_K
        )
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


def _knn_torch(
    q: np.ndarray, x: np.ndarray, k: int, device: str | None, batch_size: int
) -> tuple[np.ndarray, np.ndarray]:
    require("torch")  # where the [vlm] extra is missing: one line naming it
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


# -- keys that arrive in chunks: exact merge or an approximate index ---------------------------
INDEX_KINDS = ("exact", "ivf", "hnsw")
STORAGES = ("fp32", "fp16", "sq8")


def merge_topk(D: np.ndarray, I: np.ndarray, d: np.ndarray, i: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` of two per-row result lists (each descending): ``(D, I)`` so far and ``(d, i)``
    from the next chunk of keys. Ties keep the earlier list's entries first (stable sort)."""
    DD = np.concatenate([D, d], axis=1)
    II = np.concatenate([I, i], axis=1)
    order = np.argsort(-DD, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(DD, order, axis=1), np.take_along_axis(II, order, axis=1)


class StreamingSearch:
    """Top-``k`` inner products of fixed ``queries`` against keys added chunk by chunk.

    ``index="exact"`` searches each chunk with :func:`knn` and merges the running top-k
    (:func:`merge_topk`): memory is one chunk of keys plus ``n_queries x k`` results, whatever
    the number of keys. ``"ivf"`` (an inverted file, trained on the first ``train_size`` keys, then
    searched over ``nprobe`` of its ``nlist`` lists) and ``"hnsw"`` (a graph, ``efSearch``
    ``ef_search``) are approximate FAISS indexes for pools of millions, storing the keys as
    ``storage`` (fp32, fp16 or sq8: 4, 2 or 1 bytes a dimension). For them the recall@k against
    exact search is measured on ``recall_sample`` queries (exact top-k of those queries kept as the
    chunks pass, so the pool is read once) and reported as :attr:`recall`. ``nlist`` defaults to
    ``sqrt(expected_keys)`` (the keys held at training when not given), ``nprobe`` to ``nlist / 8``;
    the IVF lists are trained on the first keys, so a pool sorted by topic trains worse than a shuffled one.
    An HNSW graph built with several threads can differ slightly from run to run (IVF's k-means is
    seeded; exact search is exact).
    """

    def __init__(
        self,
        queries: Embeddings,
        k: int,
        *,
        index: str = "exact",
        storage: str = "fp16",
        nlist: int | None = None,
        nprobe: int | None = None,
        hnsw_m: int = 32,
        ef_search: int | None = None,
        train_size: int = 65536,
        recall_sample: int = 256,
        expected_keys: int | None = None,
        seed: int = 0,
    ) -> None:
        if index not in INDEX_KINDS:
            raise InputError(f"unknown index {index!r}; choose one of {', '.join(INDEX_KINDS)}")
        if storage not in STORAGES:
            raise InputError(f"unknown index storage {storage!r}; choose one of {', '.join(STORAGES)}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"k must be an integer >= 1, got {k!r}")
        if index != "exact" and not have_faiss():
            raise InputError(f"index={index!r} needs faiss (pip install faiss-cpu)")
        self.queries = as_matrix(queries, "queries")
        self.k, self.kind, self.storage = int(k), index, storage
        self.nlist, self.nprobe, self.hnsw_m, self.ef_search = nlist, nprobe, hnsw_m, ef_search
        self.train_size = max(1, train_size)
        self.expected = expected_keys
        self.n_keys = 0
        n, self.dim = self.queries.shape
        self._D = np.full((n, 0), -np.inf, dtype=np.float32)
        self._I = np.full((n, 0), -1, dtype=np.int64)
        self._index: Any = None
        self._pending: list[np.ndarray] = []
        self.sample = np.empty(0, dtype=np.int64)
        if index != "exact":
            rng = np.random.default_rng(seed)
            self.sample = np.sort(rng.choice(n, size=min(recall_sample, n), replace=False)) if n else self.sample
            self._sD = np.full((len(self.sample), 0), -np.inf, dtype=np.float32)
            self._sI = np.full((len(self.sample), 0), -1, dtype=np.int64)
        self.recall: float | None = None

    def add(self, keys: Embeddings) -> None:
        """Take the next chunk of keys (rows numbered on from the keys added before)."""
        x = as_matrix(keys, "keys")
        if x.shape[1] != self.dim:
            raise InputError(f"keys have dimension {x.shape[1]} but queries {self.dim}")
        if len(x) == 0:
            return
        if self.kind == "exact":
            self._D, self._I = self._exact(self.queries, x, self._D, self._I)
        else:
            if len(self.sample):
                self._sD, self._sI = self._exact(self.queries[self.sample], x, self._sD, self._sI)
            self._add_approx(x)
        self.n_keys += len(x)

    def _exact(self, q: np.ndarray, x: np.ndarray, D: np.ndarray, I: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(q) == 0:
            return D, I
        d, i = knn(q, x, min(self.k, len(x)), backend="faiss" if have_faiss() else "torch")
        return merge_topk(D, I, d, i + self.n_keys, self.k)

    def _add_approx(self, x: np.ndarray) -> None:
        if self._index is None:
            self._pending.append(x.copy())
            if sum(len(p) for p in self._pending) >= self.train_size:
                self._build()
        else:
            self._index.add(x)

    def _build(self) -> None:
        """Make and train the index on the keys held so far, then add them."""
        import faiss

        held = np.concatenate(self._pending) if self._pending else np.empty((0, self.dim), np.float32)
        self._pending = []
        qt = {"fp16": faiss.ScalarQuantizer.QT_fp16, "sq8": faiss.ScalarQuantizer.QT_8bit}.get(self.storage)
        index = self._make_ivf(held, qt) if self.kind == "ivf" else self._make_hnsw(held, qt)
        if len(held):
            index.add(held)
        self._index = index

    def _make_ivf(self, held: np.ndarray, qt: int | None) -> Any:
        """An IVF index (flat, or scalar-quantised by ``qt``) trained on ``held``; sets nlist and nprobe."""
        import faiss

        ip = faiss.METRIC_INNER_PRODUCT
        total = max(len(held), 1)
        nlist = min(self.nlist or max(1, min(int(np.sqrt(self.expected or total)), total // 39 or 1)), total)
        quantizer = faiss.IndexFlatIP(self.dim)
        index: faiss.IndexIVFFlat | faiss.IndexIVFScalarQuantizer = (
            faiss.IndexIVFFlat(quantizer, self.dim, nlist, ip)
            if qt is None
            else faiss.IndexIVFScalarQuantizer(quantizer, self.dim, nlist, qt, ip)
        )
        index.cp.seed = 1234
        index.train(held)
        index.nprobe = min(nlist, self.nprobe or max(1, nlist // 8))
        self.nlist, self.nprobe = nlist, int(index.nprobe)
        index.quantizer_trains_alone = "\x00"  # a C++ char: 0, the quantizer is the index of the k-means
        self._quantizer = quantizer  # kept alive: the index does not own it
        return index

    def _make_hnsw(self, held: np.ndarray, qt: int | None) -> Any:
        """An HNSW index (flat, or scalar-quantised by ``qt`` and trained on ``held``); sets ef_search."""
        import faiss

        ip = faiss.METRIC_INNER_PRODUCT
        index: faiss.IndexHNSWFlat | faiss.IndexHNSWSQ = (
            faiss.IndexHNSWFlat(self.dim, self.hnsw_m, ip)
            if qt is None
            # faiss's stub says a ScalarQuantizer; the constructor takes its QuantizerType (an int)
            else faiss.IndexHNSWSQ(self.dim, qt, self.hnsw_m, ip)  # type: ignore[arg-type]
        )
        if qt is not None:
            index.train(held)
        index.hnsw.efSearch = self.ef_search or max(64, 2 * self.k)
        self.ef_search = int(index.hnsw.efSearch)
        return index

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """``(D, I)`` [n_queries, min(k, keys added)], descending; approximate indexes also set :attr:`recall`."""
        if self.n_keys == 0:
            raise InputError("no keys were added to search")
        k = min(self.k, self.n_keys)
        if self.kind == "exact":
            return self._D[:, :k], self._I[:, :k]
        if self._index is None:
            self._build()
        D, I = self._index.search(self.queries, k)
        if len(self.sample):
            self.recall = recall_at_k(I[self.sample], self._sI[:, :k])
        return D, I

    def describe(self) -> dict[str, Any]:
        """The index settings (and measured recall) for a vocabulary's provenance."""
        out: dict[str, Any] = {"kind": self.kind, "k": self.k, "keys": self.n_keys}
        if self.kind == "ivf":
            out.update(storage=self.storage, nlist=self.nlist, nprobe=self.nprobe)
        elif self.kind == "hnsw":
            out.update(storage=self.storage, M=self.hnsw_m, ef_search=self.ef_search)
        if self.kind != "exact":
            out.update(
                recall_at_k=None if self.recall is None else round(self.recall, 4), recall_queries=len(self.sample)
            )
        return out


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Share of the exact top-k neighbours (row-wise) that ``found`` also holds; -1 entries are
    no neighbour. 1.0 when there is nothing to find."""
    hits = total = 0
    for f, e in zip(found, exact, strict=True):
        want = set(e[e >= 0].tolist())
        total += len(want)
        hits += len(want & set(f[f >= 0].tolist()))
    return hits / total if total else 1.0
