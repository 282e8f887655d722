"""Benchmark: a 10,000-request GPT-sibling run against a flaky server and a rate-limited one, in one invocation.

Two local fakes (tests.llm.fake_openai, each in its own process): one fails 15% of requests at random
(429 with Retry-After, OpenAI's 500, malformed JSON; seeded), one limits tokens per window as a rate-limited
account does (429 with ``retry-after-ms``). For each: the run must complete in one call (no request left for
a re-run), every answer journaled once and used once in the vocabulary (equal to the independent merge of
the fake's answers), and its wall time is printed beside the ideal (requests / concurrency x latency; for
the rate limit, also the tokens / budget bound). Not in the test suite: it takes minutes.

    python benchmarks/bench_llm_flaky.py                       # 1000 classes x 10 rounds, c=64, 20 ms
    python benchmarks/bench_llm_flaky.py --classes 100         # a quicker run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


#: tokens one answer costs at the fake (its usage: 50 + n prompt, 6 a label completion; the budget counts 50 + 6 n)
def _tokens(n: int) -> int:
    return 50 + 6 * n


def _serve(extra: list[str], latency: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.llm.fake_openai", "--latency", str(latency), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _one(name: str, extra: list[str], args: argparse.Namespace, bound: float | None) -> dict[str, object]:
    from negvocab import SynonymFilter, imagenet1k
    from negvocab.builders.llm import gpt_run, vocabulary_from_results
    from tests.llm.fake_openai import expected_merge

    proc, url = _serve(extra, args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run = gpt_run("bench-model", per_class=args.per_class, rounds=args.rounds, classes=args.classes,
                          run_dir=Path(tmp) / "run")  # fmt: skip
            n = len(run.requests)
            t0 = time.perf_counter()
            outcome = run.execute(base_url=url, api_key="sk-bench", concurrency=args.concurrency,
                                  client_options={"wait_base": args.wait_base})  # fmt: skip
            wall = time.perf_counter() - t0
            lines = [json.loads(x) for x in (Path(tmp) / "run" / "journal.jsonl").read_text().splitlines()]
            results = [r for r in lines if r.get("kind") == "result"]
            once = len(results) == n and len({r["custom_id"] for r in results}) == n
            ok = sum(r["status"] == "ok" for r in results)
            vocab = vocabulary_from_results(run, outcome.results, synonym_filter=SynonymFilter())
            wnids = list(imagenet1k().wnids[: args.classes])
            used = vocab.views == expected_merge(wnids, args.rounds, args.per_class)
    finally:
        proc.terminate()
        proc.wait()
    ideal = n / args.concurrency * args.latency
    return {"name": name, "n": n, "http": outcome.http_requests, "undone": len(outcome.undone), "once": once,
            "ok": ok, "used": used, "wall": wall, "ideal": ideal, "bound": bound}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=6)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--wait-base", type=float, default=0.05, help="the client's backoff base (default 1 s)")
    ap.add_argument("--tpm-per-s", type=float, default=800.0, help="answers per second the token budget allows")
    args = ap.parse_args()

    n = args.classes * args.rounds
    window = 1.0
    budget = int(args.tpm_per_s * window * _tokens(args.per_class) / 1)
    budget_bound = n * _tokens(args.per_class) / budget * window
    rows = [
        _one("15% flaky (429+Retry-After, 500, bad JSON)", ["--flaky", "0.15", "--retry-after", "0.05"], args, None),
        _one(f"rate limit {budget} tokens/s", ["--tpm", str(budget), "--tpm-window", str(window)], args, budget_bound),
    ]
    print(f"requests: {args.classes} classes x {args.rounds} rounds = {n}, latency {args.latency * 1000:.0f} ms, "
          f"concurrency {args.concurrency}, client backoff base {args.wait_base} s")  # fmt: skip
    head = ["server", "done in one run", "HTTP requests", "each answer once", "used once", "wall s", "ideal s",
            "ratio", "token bound s"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        bound = f"{r['bound']:.1f}" if r["bound"] else "-"
        cells = [r["name"], f"{'yes' if not r['undone'] else 'no'} ({r['ok']} ok)", str(r["http"]),
                 "yes" if r["once"] else "NO", "yes" if r["used"] else "NO", f"{r['wall']:.1f}",
                 f"{r['ideal']:.1f}", f"{r['wall'] / r['ideal']:.2f}", bound]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
