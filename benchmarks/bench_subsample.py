"""OOD-subsampling at N = 100,000 OOD images and 1,000 draws: ``negvocab.subsample`` beside a plain
numpy loop over the draws (one ``rng.permutation`` per draw, FPR of each size as the mean of the
fixed per-image indicators), time (best of two interleaved runs) and peak memory, in one run.

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

N_ID, N_OOD, DRAWS, DETECTORS = 10_000, 100_000, 1000, 2
SIZES = [100, 1000, 10_000, 100_000]


def plain_loop(s_id: dict, s_ood: dict) -> dict[str, np.ndarray]:
    """The baseline: a Python loop over draws, numpy inside; [draws, sizes] FPRs per detector."""
    rng = np.random.default_rng(0)
    hits = {k: s_ood[k] >= M._paper_threshold(s_id[k], 0.95) for k in s_id}
    out = {k: np.empty((DRAWS, len(SIZES))) for k in s_id}
    for r in range(DRAWS):
        p = rng.permutation(N_OOD)[: max(SIZES)]
        for k in s_id:
            for j, n in enumerate(SIZES):
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
    s_id = {f"det{k}": rng.normal(1, 1, N_ID) for k in range(DETECTORS)}
    s_ood = {f"det{k}": rng.normal(0.1 * k, 1, N_OOD) for k in range(DETECTORS)}
    negvocab.subsample(
        {k: v[:50] for k, v in s_id.items()}, {k: v[:50] for k, v in s_ood.items()}, sizes=[10], draws=2
    )  # imports (scipy) before timing
    fns = [lambda: negvocab.subsample(s_id, s_ood, sizes=SIZES, draws=DRAWS, seed=0), lambda: plain_loop(s_id, s_ood)]
    times = best_times(fns)
    ours, base = (times[0], peak_mib(fns[0])), (times[1], peak_mib(fns[1]))
    rows = negvocab.subsample(s_id, s_ood, sizes=SIZES, draws=DRAWS, seed=0)
    print(
        f"subsample: N_ood={N_OOD:,}, N_id={N_ID:,}, {DRAWS} draws "
        f"x sizes {SIZES} x {DETECTORS} detectors ({len(rows)} rows)"
    )
    print(f"  {'':<34}{'time':>9}{'peak memory':>16}")
    print(f"  {'negvocab.subsample':<34}{ours[0]:8.2f}s{ours[1]:12.1f} MiB")
    print(f"  {'plain numpy loop over draws':<34}{base[0]:8.2f}s{base[1]:12.1f} MiB")
    print(f"  ratio ours / loop: time {ours[0] / base[0]:.2f}, memory {ours[1] / base[1]:.2f}")


if __name__ == "__main__":
    main()
