"""NegLabel per stream batch against its floor, in one run.

N images in batches of 256, K = 1000 ID classes, M = 10,000 negatives, d = 512, float32 on the CPU:
``negvocab.score("neglabel", ...)`` batch by batch with 100 stratified groups (the default) and with
AdaNeg's 5 groups in NegLabel's own grouping, and the kernel (``neglabel_pass``, the scores alone, as
``negvocab.score`` runs it) on inputs prepared once. Beside them the floor: one float32 matmul +
softmax over ID + negatives per batch (benchmarks/_floors.py). Median of 7 interleaved runs, process
CPU time / threads (a shared machine's neighbours do not count); the ratios are the figure.

    PYTHONPATH=$PWD python3 benchmarks/bench_neglabel_batch.py            # N = 1024
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
from _floors import floor, timed

import negvocab
from negvocab.scoring.inputs import prepare
from negvocab.scoring.neglabel import neglabel_pass

N = int(os.environ.get("BENCH_N", "1024"))
K, M, D, BATCH = 1000, 10_000, 512, 256
REPEAT = int(os.environ.get("BENCH_REPEAT", "7"))


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    a = rng.normal(size=(n, D))
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    rng = np.random.default_rng(0)
    z, t, n = _unit(rng, N), _unit(rng, K), _unit(rng, M)
    v, tt, nn = prepare(z, t, n, "cpu", need_neg=True, method="neglabel")

    def per_batch(**kw: object) -> Callable[[], object]:
        return lambda: [
            negvocab.score("neglabel", z[i : i + BATCH], t, n, device="cpu", **kw) for i in range(0, N, BATCH)
        ]

    def kernel() -> object:
        kw = {"tau": 0.01, "groups": 100, "grouping": "stratified", "seed": 0, "chunk_size": None, "penalties": False}
        return [neglabel_pass(v[i : i + BATCH], tt, nn, [M], **kw) for i in range(0, N, BATCH)]  # type: ignore[arg-type]

    runs = {
        "floor: matmul + softmax, ID + negatives": floor(z, np.concatenate([t, n]), BATCH),
        "negvocab.score, 100 stratified groups": per_batch(),
        'negvocab.score, 5 groups, grouping="neglabel"': per_batch(groups=5, grouping="neglabel"),
        "kernel neglabel_pass, 100 stratified groups": kernel,
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(REPEAT):  # interleaved: a shared machine's load hits all
        for name, fn in runs.items():
            times[name].append(timed(fn))
    med = {name: float(np.median(x)) for name, x in times.items()}
    base = next(iter(med.values()))
    for name, sec in med.items():
        print(f"{name:48s} {sec:.3f} s  {sec / base:.2f}x floor")


if __name__ == "__main__":
    main()
