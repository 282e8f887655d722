"""Paired comparisons on a paper-sized grid slice: one VLM, 5 vocabularies (10 pairs), 13 OOD sets
and 1,000 bootstrap draws, FPR@95 (paper convention) and AUROC on the mean over the sets, as
``negvocab table --compare`` runs them. Ours (:func:`negvocab.report.tables.comparisons`: each
vocabulary's draws once, vectorised over the draws) beside a plain numpy loop per pair (per draw:
the ID threshold once, then each set; AUROC by the library's per-draw function), time and peak
memory in one run; the two give the same draws (checked). The paper's grid has 8 VLMs: x8.

    PYTHONPATH=$PWD python3 benchmarks/bench_compare.py            # N_ID=5000, 13 x 1000 OOD
    PYTHONPATH=$PWD python3 benchmarks/bench_compare.py --small    # a quick look
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from itertools import combinations

import numpy as np

from negvocab.evaluation.compare import paired_bootstrap
from negvocab.report.tables import comparisons
from negvocab.scoring import metrics as M

SMALL = "--small" in sys.argv
N_ID, N_OOD, SETS, VOCABS, DRAWS = (1000, 300, 4, 3, 200) if SMALL else (5000, 1000, 13, 5, 1000)


def data(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Per vocabulary: ID scores and the OOD sets' scores (the same images, scored differently)."""
    base_id, base_ood = rng.normal(1, 1, N_ID), {f"set{j:02d}": rng.normal(0.2, 1, N_OOD) for j in range(SETS)}
    return {
        f"vocab{k}": (
            base_id + rng.normal(0, 0.3, N_ID),
            {s: v + rng.normal(0.05 * k, 0.3, N_OOD) for s, v in base_ood.items()},
        )
        for k in range(VOCABS)
    }


def plain_loop(scores: dict, metric: str) -> dict[tuple[str, str], np.ndarray]:
    """The baseline: per pair, a Python loop over draws, numpy inside."""
    out = {}
    for a, b in combinations(scores, 2):
        (ai, ao), (bi, bo) = scores[a], scores[b]
        rng = np.random.default_rng(0)
        d = np.empty(DRAWS)
        for r in range(DRAWS):
            i = rng.integers(0, N_ID, N_ID)
            js = [rng.integers(0, N_OOD, N_OOD) for _ in range(SETS)]
            if metric == "fpr":
                ta, tb = np.quantile(ai[i], 0.05), np.quantile(bi[i], 0.05)
                va = np.mean([np.mean(s[j] >= ta) for s, j in zip(ao.values(), js, strict=True)])
                vb = np.mean([np.mean(s[j] >= tb) for s, j in zip(bo.values(), js, strict=True)])
            else:
                va = np.mean([M.auroc(ai[i], s[j]) for s, j in zip(ao.values(), js, strict=True)])
                vb = np.mean([M.auroc(bi[i], s[j]) for s, j in zip(bo.values(), js, strict=True)])
            d[r] = va - vb
        out[(a, b)] = d
    return out


def ours(scores: dict, metric: str) -> list[str]:
    rows = [
        {
            "model": "VLM",
            "vocabulary": v,
            "method": "neglabel",
            "convention": "paper",
            "tpr": 0.95,
            "ood_set": "mean",
            metric: 0.0,
            "deployable": True,
        }
        for v in scores
    ]
    return comparisons(rows, lambda m, v, meth: scores[v], metric=metric, n_boot=DRAWS, seed=0)


def measure(fn) -> tuple[float, float]:
    t0 = time.perf_counter()
    fn()
    took = time.perf_counter() - t0
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return took, peak


def main() -> None:
    scores = data(np.random.default_rng(0))
    print(f"paired comparisons: 1 VLM x {VOCABS} vocabularies ({VOCABS * (VOCABS - 1) // 2} pairs) x {SETS} OOD sets "
          f"(N_ID={N_ID:,}, {N_OOD:,} OOD each), {DRAWS} draws, mean over the sets")  # fmt: skip
    for metric in ("fpr", "auroc"):
        loop = plain_loop(scores, metric)
        a, b = next(iter(loop))
        got = paired_bootstrap(*scores[a], *scores[b], metric=metric, n_boot=DRAWS, seed=0).draws
        assert np.allclose(got, loop[(a, b)], rtol=0, atol=1e-12), "not the same draws"
        t_ours, m_ours = measure(lambda metric=metric: ours(scores, metric))
        t_loop, m_loop = measure(lambda metric=metric: plain_loop(scores, metric))
        print(f"  {metric:<6}{'':<30}{'time':>9}{'peak memory':>16}{'x8 VLMs':>10}")
        print(f"  {'':<6}{'negvocab (table --compare)':<30}{t_ours:8.2f}s{m_ours:12.1f} MiB{8 * t_ours:9.0f}s")
        print(f"  {'':<6}{'plain numpy loop per pair':<30}{t_loop:8.2f}s{m_loop:12.1f} MiB{8 * t_loop:9.0f}s")
        print(f"  {'':<6}ratio ours / loop: time {t_ours / t_loop:.2f}, memory {m_ours / m_loop:.2f}")


if __name__ == "__main__":
    main()
