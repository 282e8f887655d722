"""Benchmark: GPT-sibling run of C classes x R rounds against the local fake server with latency.

Prints our wall time next to the ideal one (requests x latency / concurrency; target: within
1.3x at concurrency 64), then the merge + synonym filter of the R rounds (target: under 5 s), with
the filter's one-off table building (cold) and without it (warm); the merge includes cleaning every
journaled label again (negvocab.labels.clean) and is timed in process CPU time, so that other load
on the machine does not count.

    python benchmarks/bench_llm.py                      # 1000 classes x 10 rounds, 300 ms, c=64
    python benchmarks/bench_llm.py --classes 200        # a quicker run

The fake server runs in its own process (stdlib ThreadingHTTPServer), the client is negvocab's
real path: openai SDK, tenacity, semaphore, fsynced journal, then merge and filter.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()

    from negvocab import SynonymFilter
    from negvocab.builders.llm import gpt_run, vocabulary_from_results

    server = subprocess.Popen(
        [sys.executable, "-m", "tests.llm.fake_openai", "--latency", str(args.latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            run = gpt_run(
                "bench-model",
                per_class=args.per_class,
                rounds=args.rounds,
                classes=args.classes,
                run_dir=Path(tmp) / "run",
            )
            n = len(run.requests)
            ideal = n * args.latency / args.concurrency
            t0 = time.perf_counter()
            outcome = run.execute(base_url=url, api_key="sk-bench", concurrency=args.concurrency)
            wall = time.perf_counter() - t0
            assert len(outcome.results) == n and outcome.sent == n

            t1 = time.process_time()
            cold = vocabulary_from_results(run, outcome.results, synonym_filter=SynonymFilter())
            merge_cold = time.process_time() - t1
            t2 = time.process_time()
            warm = vocabulary_from_results(run, outcome.results, synonym_filter=SynonymFilter())
            merge_warm = time.process_time() - t2
            t3 = time.process_time()
            kept, _ = SynonymFilter().split(
                list(dict.fromkeys(lab for r in outcome.results.values() for lab in r["labels"]))
            )
            split_warm = time.process_time() - t3
            assert warm.labels == cold.labels and set(kept) == set(cold.labels)
            stats = cold.settings["unique_per_key_stats"]
    finally:
        server.terminate()
        server.wait()

    print(
        f"requests: {args.classes} classes x {args.rounds} rounds = {n}, "
        f"latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}"
    )
    print(f"{'':28s}{'negvocab':>12s}{'ideal':>12s}{'ratio':>8s}{'target':>10s}")
    print(f"{'requests wall time (s)':28s}{wall:12.1f}{ideal:12.1f}{wall / ideal:8.2f}{'<= 1.3':>10s}")
    print(f"{'throughput (req/s)':28s}{n / wall:12.0f}{n / ideal:12.0f}")
    print(
        f"merge + filter of {args.rounds} rounds: {merge_cold:.2f} s cold (incl. the "
        f"SynonymFilter's first-use table build), {merge_warm:.2f} s warm (target < 5 s)"
    )
    print(f"  of which SynonymFilter.split of the unique labels (warm): {split_warm:.2f} s")
    print(
        f"vocabulary: {len(cold)} labels, {cold.settings['unique_labels']} unique before the "
        f"filter; per class unique min {stats['min']}, mean {stats['mean']}, max {stats['max']}"
    )


if __name__ == "__main__":
    main()
