"""Start-up of the ``negvocab`` command beside the bare interpreter: ``negvocab --version``, ``--help`` and
an unknown ``--method`` value, each against ``python -c pass`` (the median of N runs of each, in fresh
processes, interleaved so that a loaded machine slows both alike), the CPU time of each (user + system: less
moved by a loaded machine than the wall clock), and the modules ``--version`` imports.

    python benchmarks/bench_startup.py [--runs 7]

Goal: ``--help`` and ``--version`` under 0.5 s.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "negvocab --version": [sys.executable, "-c", "from negvocab.cli import main; main()", "--version"],
    "negvocab --help": [sys.executable, "-c", "from negvocab.cli import main; main()", "--help"],
    "negvocab score --method nosuch": [
        sys.executable, "-c", "from negvocab.cli import main; main()", "score", "--method", "nosuch",
        "--id", ".", "--ood", ".", "-o", "/nonexistent/x",
    ],
}  # fmt: skip


def _once(cmd: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    cpu: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            wall, used = _once(cmd)
            times[name].append(wall)
            cpu[name].append(used)
    base = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{name:<34} median {med:6.3f} s  (+{med - base:6.3f} s over the interpreter; min {min(ts):.3f} s; "
            f"CPU {statistics.median(cpu[name]):.3f} s)"
        )
    heavy_names = ("numpy", "torch", "pydantic", "openai", "sklearn", "open_clip")
    probe = (
        "import sys; from negvocab.cli import app; print(len(sys.modules)); "
        f"print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {heavy_names!r})))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False).stdout.split("\n")
    heavy = sorted({m.split(".")[0] for m in out[1].split()}) if len(out) > 1 else []
    print(f"modules after importing the CLI: {out[0]}; heavy packages among them: {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
