"""OOD-subsampling at N = 100,000 OOD images and 1,000 draws: ``negvocab.subsample`` beside the plain
numpy loop a user would write (one ``rng.choice(N, n, replace=False)`` per draw, FPR of each size as
the mean of the fixed per-image indicators), time (best of two interleaved runs) and peak memory, in
one run; for the small case (draws of 655 images, one detector) and for four sizes up to N.

Peak memory is the highest traced allocation (``tracemalloc``, which numpy reports to) in a second,
untimed pass of each; the timed pass runs without tracing.

    PYTHONPATH=$PWD python3 benchmarks/bench_subsample.py
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import numpy as np

import negvocab
from negvocab.scoring import metrics as M

N_ID, N_OOD, DRAWS = 10_000, 100_000, 1000
CASES = {"655 of 100,000, 1 detector": ([655], 1), "100 ... 100,000, 2 detectors": ([100, 1000, 10_000, 100_000], 2)}


def plain_loop(s_id: dict, s_ood: dict, sizes: list[int]) -> dict[str, np.ndarray]:
    """The baseline: a Python loop over draws, numpy inside; [draws, sizes] FPRs per detector."""
    rng = np.random.default_rng(0)
    hits = {k: s_ood[k] >= M._paper_threshold(s_id[k], 0.95) for k in s_id}
    out = {k: np.empty((DRAWS, len(sizes))) for k in s_id}
    for r in range(DRAWS):
        p = rng.choice(N_OOD, max(sizes), replace=False)
        for k in s_id:
            for j, n in enumerate(sizes):
                out[k][r, j] = hits[k][p[:n]].mean()
    return out


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak traced allocation of one call of ``fn``, in MiB."""
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return peak


def best_times(fns: list[Callable[[], object]], rounds: int = 2) -> list[float]:
    """The best of ``rounds`` timings of each, interleaved (a shared machine's load hits both)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    negvocab.subsample(rng.normal(1, 1, 50), rng.normal(0, 1, 50), sizes=[10], draws=2)  # imports before timing
    for name, (sizes, detectors) in CASES.items():
        s_id = {f"det{k}": rng.normal(1, 1, N_ID) for k in range(detectors)}
        s_ood = {f"det{k}": rng.normal(0.1 * k, 1, N_OOD) for k in range(detectors)}
        fns = [
            lambda a=s_id, b=s_ood, n=sizes: negvocab.subsample(a, b, sizes=n, draws=DRAWS, seed=0),
            lambda a=s_id, b=s_ood, n=sizes: plain_loop(a, b, n),
        ]
        times = best_times(fns)
        ours, base = (times[0], peak_mib(fns[0])), (times[1], peak_mib(fns[1]))
        print(f"subsample: {name}; N_ood={N_OOD:,}, N_id={N_ID:,}, {DRAWS} draws x sizes {sizes}")
        print(f"  {'':<34}{'time':>9}{'peak memory':>16}")
        print(f"  {'negvocab.subsample':<34}{ours[0]:8.2f}s{ours[1]:12.1f} MiB")
        print(f"  {'plain loop of rng.choice':<34}{base[0]:8.2f}s{base[1]:12.1f} MiB")
        print(f"  ratio ours / loop: time {ours[0] / base[0]:.2f}, memory {ours[1] / base[1]:.2f}")


if __name__ == "__main__":
    main()
