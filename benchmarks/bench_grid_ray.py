"""The example grid (examples/grid.toml, random weights) on the local engine and on a local 2-CPU
Ray cluster, with image sets split into shards and without (one unit per set), side by side: wall
time, units, model loads, and whether the score files hold the same scores bit for bit
(``--deterministic``). Each run starts from an empty cache and output folder.

The baseline is the local engine (one process, one model at a time). On 2 shared CPUs Ray pays for
starting its workers (seconds) and runs two model workers on one CPU each, so it is not expected to
win here; the point is the count of model loads (at most one per worker and model) and the equal
scores. The figures are CPU figures of RANDOM-weight models: about speed, never about accuracy.

Ray Data is not in the table: it was slower than plain tasks on this grid (each model x image set
a serial pass that reloaded the model: 160 s against 83 s), so no grid goes through it any more;
every set, small or large, is split into shards run by the model workers (plain actor calls), and
``[grid] ray_data_min_images`` is ignored with a warning.

    PYTHONPATH=$PWD python3 benchmarks/bench_grid_ray.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import negvocab

ROOT = Path(__file__).resolve().parents[1]


def _scores(out: Path) -> dict[str, bytes]:
    got = {}
    for p in sorted((out / "scores").glob("*.npz")):
        with np.load(p) as z:
            got[p.name] = z["scores"].tobytes()
    return got


def _run(folder: Path, name: str, engine: str, shard_images: int) -> dict:
    toml = folder / f"{name}.toml"
    text = (
        (folder / "grid.toml")
        .read_text()
        .replace('cache_dir = "grid-cache"', f'cache_dir = "cache-{name}"\nbatch_size = 8')
    )
    toml.write_text(text + f"\n[resources]\nshard_images = {shard_images}\nnum_cpus = 1\n")
    t0 = time.perf_counter()
    res = negvocab.run_grid(toml, folder / f"out-{name}", engine=engine, random_weights=True, deterministic=True)
    wall = time.perf_counter() - t0
    return {
        "name": name,
        "wall": wall,
        "loads": res.stats.get("model_loads", {}),
        "cells": len(res.rows),
        "scores": _scores(folder / f"out-{name}"),
    }


def main() -> None:
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(ROOT / "examples" / "grid.toml", folder / "grid.toml")
        shutil.copy(ROOT / "examples" / "grid_data.py", folder / "grid_data.py")
        subprocess.run([sys.executable, "grid_data.py"], cwd=folder, check=True, capture_output=True)
        runs = [_run(folder, "local", "local", 8)]
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            runs.append(_run(folder, "ray-unsharded", "ray", 1_000_000))
            runs.append(_run(folder, "ray-sharded", "ray", 8))  # shards of one batch: each set over both workers
        finally:
            ray.shutdown()
        base = runs[0]
        print(f"example grid, random weights, 2 CPUs, --deterministic: {base['cells']} cells")
        print(f"{'engine':<16}{'wall s':>9}  {'model loads (all workers)':<40}{'same scores as local'}")
        for r in runs:
            same = r["scores"] == base["scores"]
            loads = ", ".join(f"{k}: {v}" for k, v in sorted(r["loads"].items()))
            print(f"{r['name']:<16}{r['wall']:>9.1f}  {loads:<40}{'yes (bit for bit)' if same else 'NO'}")
        print("Ray Data: not used (slower than plain tasks here; every set runs as shards on the model workers)")


if __name__ == "__main__":
    main()
