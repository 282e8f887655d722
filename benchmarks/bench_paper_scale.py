"""Every scoring method of the registry over the MOS-four protocol at full size, against the
arithmetic each cannot avoid, from synthetic seeded embeddings (speed does not depend on the values).

The protocol: 50,000 ImageNet-1k validation images (K = 1,000 ID prompts) and the four OOD sets at
their sizes (iNaturalist 10,000, SUN 10,000, Places 10,000, Textures 5,640), d = 512, float32.
A batch method scores the ID images once and each OOD set once (M = 10,000 negatives where it takes
them); a test-time method scores one stream per OOD set (the ID images and that set's, shuffled,
stream batch 256), for each of three stream seeds: AdaNeg with the M = 10,000 negatives, TANL with
its whole corpus (~72,000 labels; float64, its precision). Per method: wall time, CPU time / threads,
peak memory above the start (RSS on the CPU, allocated CUDA memory on a GPU) and the ratio to its
floor: one matmul + softmax over the labels it scores with, for every image it scores (twice for
AdaNeg: raw and proxy logits; TANL's floor in float64 and float32). GL-MCM (patch features) and
NegRefine (encoded label pairs) take inputs beyond the embeddings and are not run here.

    PYTHONPATH=$PWD python3 benchmarks/bench_paper_scale.py --scale 0.05    # small, a few minutes on 2 cores
    PYTHONPATH=$PWD python3 benchmarks/bench_paper_scale.py --device cuda   # full size on a GPU
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch
from _floors import floor
from _rss import PeakRSS

import negvocab
from negvocab.scoring.methods import METHODS
from negvocab.scoring.stream import make_stream, run_stream

K, D, BATCH, SEEDS = 1000, 512, 256, (0, 1, 2)
ID_IMAGES, M, CORPUS = 50_000, 10_000, 72_000
OOD_SETS = {"iNaturalist": 10_000, "SUN": 10_000, "Places": 10_000, "Textures": 5_640}
NOT_RUN = {"glmcm": "needs patch features", "negrefine": "needs encoded label pairs"}


def unit(n: int, seed: int, device: str) -> torch.Tensor:
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((n, D), dtype=np.float32))
    return (x / x.norm(dim=1, keepdim=True)).to(device)


def measure(fn: Callable[[], object], device: str) -> tuple[float, float, float]:
    """Wall s, CPU s / threads, peak memory above the start in GiB."""
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    w, c = time.perf_counter(), time.process_time()
    with PeakRSS() as rss:
        fn()
        if cuda:
            torch.cuda.synchronize()
    wall, cpu = time.perf_counter() - w, (time.process_time() - c) / torch.get_num_threads()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30 if cuda else rss.peak - rss.start
    return wall, cpu, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of every size (images, M, corpus)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--methods", default="", help="comma-separated subset (default: all)")
    a = ap.parse_args()
    size = lambda n: max(1, round(n * a.scale))  # noqa: E731
    dev = a.device
    ids, negs, corpus = unit(K, 1, dev), unit(size(M), 2, dev), unit(size(CORPUS), 3, dev)
    id_x = unit(size(ID_IMAGES), 4, dev)
    ood = {name: unit(size(n), 5 + i, dev) for i, (name, n) in enumerate(OOD_SETS.items())}
    noise = unit(15, 9, dev)
    n_batch = len(id_x) + sum(len(x) for x in ood.values())  # images a batch method scores
    n_stream = len(SEEDS) * sum(len(id_x) + len(x) for x in ood.values())  # image scorings of the streams
    images = torch.cat([id_x, *ood.values()])
    streamed = torch.cat([torch.cat([id_x, x]) for x in ood.values()] * len(SEEDS))  # as the streams see them
    wanted = [m for m in (a.methods.split(",") if a.methods else METHODS) if m not in NOT_RUN]

    def batch_run(name: str) -> Callable[[], object]:
        neg = negs if METHODS[name].needs_negatives else None
        extra = {} if neg is None else {"neg_emb": neg}
        return lambda: [negvocab.score(name, x, ids, device=dev, **extra) for x in (id_x, *ood.values())]

    def stream_run(name: str) -> Callable[[], object]:
        m = make_stream(name)
        m.setup(ids, corpus, noise_images=noise) if name == "tanl" else m.setup(ids, negs)
        return lambda: [
            run_stream(m, torch.cat([id_x, x]), stream_batch=BATCH, seed=s) for s in SEEDS for x in ood.values()
        ]

    print(
        f"scale {a.scale}: {len(id_x):,} ID + {', '.join(f'{k} {len(v):,}' for k, v in ood.items())}; "
        f"K={K}, M={len(negs):,}, TANL corpus {len(corpus):,}, d={D}, device {dev}, {torch.get_num_threads()} threads"
    )
    floors: dict[str, float] = {}
    for key, x, labels, dtype in (
        ("ID", images, ids, torch.float32),
        ("ID+M", images, torch.cat([ids, negs]), torch.float32),
        ("stream ID+M", streamed, torch.cat([ids, negs]), torch.float32),
        ("stream ID+corpus f64", streamed, torch.cat([ids, corpus]), torch.float64),
        ("stream ID+corpus f32", streamed, torch.cat([ids, corpus]), torch.float32),
    ):
        if key.startswith("stream ID+corpus") and "tanl" not in wanted:
            continue
        floors[key] = measure(floor(x, labels, BATCH if key.startswith("stream") else 4096, dtype, dev), dev)[1]
        print(
            f"floor {key:<22} {floors[key]:9.2f} s CPU/thread"
            if dev == "cpu"
            else f"floor {key:<22} {floors[key]:9.2f} s"
        )
    rows = []
    for name in wanted:
        spec = METHODS[name]
        stream = spec.kind == "stream"
        fn = stream_run(name) if stream else batch_run(name)
        wall, cpu, peak = measure(fn, dev)
        t = wall if dev != "cpu" else cpu
        if name == "tanl":
            ratio = f"{t / floors['stream ID+corpus f64']:.2f}x (f64), {t / floors['stream ID+corpus f32']:.2f}x (f32)"
        elif stream:
            ratio = f"{t / (2 * floors['stream ID+M']):.2f}x (2 matmuls)"
        else:
            ratio = f"{t / floors['ID+M' if spec.needs_negatives else 'ID']:.2f}x"
        rows.append((name, spec.kind, n_stream if stream else n_batch, wall, cpu, peak, ratio))
    print()
    print("| method | kind | image scorings | wall s | CPU s / thread | peak GiB | x floor |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, kind, n, wall, cpu, peak, ratio in rows:
        print(f"| {name} | {kind} | {n:,} | {wall:.1f} | {cpu:.1f} | {peak:.2f} | {ratio} |")
    for name, why in NOT_RUN.items():
        print(f"| {name} | batch | not run: {why} | | | | |")
    print("test-time results depend on the stream (order, stream batch, seed); the floors are timed like the methods")


if __name__ == "__main__":
    main()
