"""Mining at scale: 1,000,000 candidate labels x 50,000 images (embeddings, d=512), bounded memory.

Runs ``negvocab.builders.mined.mine_evidence`` (the embedding-level mining step) with the pool streamed
in chunks, exact and approximate side by side, against the baseline that holds every candidate
embedding in memory and runs one exact k-NN search (``negvocab.knn``). Prints time, peak resident
memory, recall@k of each index against exact search (over every OOD-looking image, and as the
index itself estimates it on its sample), and how much of the exact top-M mined vocabulary each
approximate run recovers.

Embeddings are generated chunk by chunk from a seeded generator (never the whole pool at once):
``--data random`` (unit Gaussian vectors: the default and the worst case for approximate
search, every neighbour nearly as far as any other) or ``--data clustered`` (candidates around
topic centres, images near candidates: closer to real CLIP embeddings).

    python benchmarks/bench_mined.py                       # 1,000,000 x 50,000 (slow on 2 cores)
    python benchmarks/bench_mined.py --scale 0.1           # 100,000 x 5,000
    python benchmarks/bench_mined.py --scale 0.1 --data clustered --index ivf,hnsw
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _rss import PeakRSS


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class Data:
    """Seeded synthetic embeddings: the pool is produced in chunks, identically every time."""

    def __init__(self, kind: str, n_cand: int, n_img: int, n_id: int, d: int, chunk: int, seed: int = 0) -> None:
        self.kind, self.n_cand, self.d, self.chunk, self.seed = kind, n_cand, d, chunk, seed
        rng = np.random.default_rng(seed)
        self.ids = unit(rng.standard_normal((n_id, d)))
        self.centres = unit(rng.standard_normal((max(1, n_cand // 50), d)))  # topics of ~50 labels
        if kind == "random":
            self.images = unit(rng.standard_normal((n_img, d)))
        else:  # images near random candidates (regenerated from their chunk seeds), some near ID classes
            pick = np.sort(rng.choice(n_cand, size=n_img, replace=False))
            base = self._rows(pick)
            near_id = rng.random(n_img) < 0.5
            base[near_id] = self.ids[rng.integers(0, n_id, int(near_id.sum()))]
            self.images = unit(base + 0.5 / np.sqrt(d) * rng.standard_normal((n_img, d)).astype(np.float32))

    def _chunk(self, j: int) -> np.ndarray:
        rng = np.random.default_rng((self.seed, j))
        n = min(self.chunk, self.n_cand - j * self.chunk)
        x = rng.standard_normal((n, self.d), dtype=np.float32)
        if self.kind == "clustered":
            topic = rng.integers(0, len(self.centres), n)
            x = self.centres[topic] + 0.6 / np.sqrt(self.d) * x
        return unit(x)

    def _rows(self, idx: np.ndarray) -> np.ndarray:
        out = np.empty((len(idx), self.d), dtype=np.float32)
        for j in np.unique(idx // self.chunk):
            sel = idx // self.chunk == j
            out[sel] = self._chunk(int(j))[idx[sel] - j * self.chunk]
        return out

    def chunks(self) -> Iterator[np.ndarray]:
        for j in range((self.n_cand + self.chunk - 1) // self.chunk):
            yield self._chunk(j)


def run(label: str, fn, threads: int) -> tuple[object, float, float]:
    """``fn()``, its CPU time divided by ``threads`` (other load on a shared machine does not count;
    wall time is printed too) and its peak resident memory above the start."""
    t0, c0 = time.perf_counter(), time.process_time()
    with PeakRSS() as mem:
        out = fn()
    wall, cpu = time.perf_counter() - t0, (time.process_time() - c0) / threads
    print(
        f"  {label:40s} cpu/threads {cpu:8.1f} s  wall {wall:8.1f} s  "
        f"peak RSS {mem.peak:6.2f} GiB (+{mem.peak - mem.start:5.2f})",
        flush=True,
    )
    return out, cpu, mem.peak - mem.start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=1_000_000)
    ap.add_argument("--images", type=int, default=50_000)
    ap.add_argument("--scale", type=float, default=1.0, help="Multiply both sizes (e.g. 0.1 on a small machine).")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--id-classes", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--data", choices=("random", "clustered"), default="random")
    ap.add_argument(
        "--index", default="ivf,hnsw", help="Approximate indexes to compare with exact (comma-separated; '' for none)."
    )
    ap.add_argument("--storage", default="fp16", choices=("fp32", "fp16", "sq8"))
    ap.add_argument("--nprobe", type=int, default=None)
    ap.add_argument(
        "--size", type=int, default=None, help="M of the mined vocabulary compared (default: candidates / 100)."
    )
    ap.add_argument("--no-baseline", action="store_true", help="Skip the in-memory baseline (it holds the whole pool).")
    ap.add_argument("--threads", type=int, default=None, help="FAISS/BLAS threads (default: all cores).")
    args = ap.parse_args()

    import faiss

    from negvocab.builders.mined import mine_evidence
    from negvocab.vocab.index import knn, recall_at_k

    if args.threads:
        faiss.omp_set_num_threads(args.threads)
    n_cand, n_img = int(args.candidates * args.scale), int(args.images * args.scale)
    size = args.size or max(1, n_cand // 100)
    data = Data(args.data, n_cand, n_img, args.id_classes, args.dim, args.chunk)
    print(
        f"mining {n_cand:,} candidates x {n_img:,} images, d={args.dim}, k={args.k}, {args.data} data, "
        f"{faiss.omp_get_max_threads()} threads (scale {args.scale}); pool streamed in chunks of {args.chunk:,}"
    )
    print(f"  whole pool as float32 would be {n_cand * args.dim * 4 / 2**30:.2f} GiB")

    threads = faiss.omp_get_max_threads()
    exact, t_exact, m_exact = run(
        "exact, streamed (negvocab)", lambda: mine_evidence(data.images, data.ids, data.chunks(), top_k=args.k), threads
    )
    voters = np.flatnonzero(exact.weights > 0)
    top_exact = exact.ranking()[:size]
    print(f"    {len(voters):,} images look OOD; {int((exact.votes > 0).sum()):,} candidates got votes")

    I_exact = exact.neighbours
    if not args.no_baseline:

        def baseline():
            pool = np.concatenate(list(data.chunks()))
            return knn(data.images[voters], pool, args.k)

        (_, I_base), t_base, m_base = run("exact, whole pool in memory (baseline)", baseline, threads)
        assert recall_at_k(I_base, I_exact) > 0.999, "the streamed exact search must equal the baseline"

    rows = [("exact, streamed (negvocab)", t_exact, m_exact, 1.0, None, 1.0)]
    if not args.no_baseline:
        rows.append(("exact, in memory (baseline)", t_base, m_base, 1.0, None, 1.0))
    for kind in [x for x in args.index.split(",") if x]:
        opts = {"storage": args.storage, "recall_sample": 1000}
        if args.nprobe and kind == "ivf":
            opts["nprobe"] = args.nprobe

        def approx(kind=kind, opts=opts):
            return mine_evidence(
                data.images, data.ids, data.chunks(), top_k=args.k, index=kind, expected_candidates=n_cand, **opts
            )

        found, t, m = run(f"{kind} ({args.storage}), streamed", approx, threads)
        top = found.ranking()[:size]
        overlap = len(set(top.tolist()) & set(top_exact.tolist())) / max(1, len(top_exact))
        full = recall_at_k(found.neighbours, I_exact)  # over every OOD-looking image
        rows.append(
            (f"{kind} ({args.storage}) {_params(found.index)}", t, m, full, found.index.get("recall_at_k"), overlap)
        )

    print()
    print(f"{'search':40s}{'cpu s':>9s}{'+RSS GiB':>10s}{'recall@k':>10s}{'(sample)':>10s}{'top-M kept':>12s}")
    for name, t, m, rec, sample, ov in rows:
        print(f"{name:40s}{t:9.1f}{m:10.2f}{rec:10.3f}{'' if sample is None else f'{sample:.3f}':>10s}{ov:12.3f}")
    print(f"(cpu s: process CPU time / {threads} threads; top-M kept: share of the exact mined vocabulary's")
    print(f" first M={size:,} labels that the run also puts in its first M)")


def _params(desc: dict) -> str:
    if desc["kind"] == "ivf":
        return f"nlist={desc['nlist']} nprobe={desc['nprobe']}"
    if desc["kind"] == "hnsw":
        return f"M={desc['M']} ef={desc['ef_search']}"
    return ""


if __name__ == "__main__":
    main()
