"""The arithmetic a scoring method cannot avoid, timed the way the benchmarks time the method.

A method's *floor* is one matmul of the images against the labels it scores with and one softmax
over those logits, stream batch by stream batch, in the method's dtype and on its device: every
method that scores with a softmax over ID and negative labels does at least that. The stream
benchmarks print each method's time beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch


def timed(fn: Callable[[], object], repeat: int = 1) -> float:
    """Best of ``repeat`` runs: wall time on CUDA; on the CPU, process CPU time / threads, which
    stays meaningful on a machine shared with other jobs (wall time there measures the neighbours)."""
    cuda = torch.cuda.is_available()
    best = float("inf")
    for _ in range(repeat):
        if cuda:
            torch.cuda.synchronize()
        w, c = time.perf_counter(), time.process_time()
        fn()
        if cuda:
            torch.cuda.synchronize()
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        best = min(best, wall if cuda else cpu / torch.get_num_threads())
    return best


def floor(
    images: np.ndarray | torch.Tensor,
    labels: np.ndarray | torch.Tensor,
    batch: int,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
) -> Callable[[], None]:
    """One matmul + softmax of ``images`` (n, d) against ``labels`` (L, d) per batch: the callable to time."""
    x = torch.as_tensor(images).to(device, dtype)
    t = torch.as_tensor(labels).to(device, dtype)

    def run() -> None:
        for i in range(0, len(x), batch):
            torch.softmax(100.0 * x[i : i + batch] @ t.T, dim=1)

    return run
