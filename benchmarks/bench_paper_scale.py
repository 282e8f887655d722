"""Every scoring method of the registry over the MOS-four protocol at full size, against the
arithmetic each cannot avoid, from synthetic seeded embeddings (speed does not depend on the values).

The protocol: 50,000 ImageNet-1k validation images (K = 1,000 ID prompts) and the four OOD sets at
their sizes (iNaturalist 10,000, SUN 10,000, Places 10,000, Textures 5,640), d = 512, float32.
The methods are read from the registry (``negvocab.list_methods()``, plug-ins included), each given
the inputs it declares (``Method.inputs``; a stream method's ``StreamMethod.inputs``), synthesized
seeded at their real shapes: GL-MCM's patch features ``local`` (196 patches per image, ViT-B/16's
14 x 14, drawn from a bank of unit vectors chunk by chunk: the full set is 34 GB of float32, so the
images are scored in chunks and only the scoring is timed), NegRefine's ``pair_texts`` (an embedder
of "<ID class> and <negative>" that returns the two embeddings' normalised sum: the text tower that
encodes them in a real run is not counted), TANL's 15 ``noise_images``. A method that declares an
input the benchmark cannot make is listed as not run.

A batch method scores the ID images once and each OOD set once (M = 10,000 negatives where it takes
them); a test-time method scores one stream per OOD set (the ID images and that set's, shuffled,
stream batch 256), for each of three stream seeds: TANL with its whole corpus (~72,000 labels;
float64, its precision), the others with the M = 10,000 negatives. Per method: wall time, CPU time /
threads, peak memory above the start (RSS on the CPU, allocated CUDA memory on a GPU) and the ratio
to its floor: one matmul + softmax over the labels it scores with, for every image it scores (twice
for AdaNeg: raw and proxy logits; GL-MCM's over its global and its patch features; TANL's in float64
and float32).

    PYTHONPATH=$PWD python3 benchmarks/bench_paper_scale.py --scale 0.05    # small, a few minutes on 2 cores
    PYTHONPATH=$PWD python3 benchmarks/bench_paper_scale.py --device cuda   # full size on a GPU
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from _floors import floor
from _rss import PeakRSS

import negvocab
from negvocab.scoring.methods import METHODS, Method
from negvocab.scoring.providers import get_input
from negvocab.scoring.stream import make_stream, run_stream, stream_class

K, D, BATCH, SEEDS = 1000, 512, 256, (0, 1, 2)
ID_IMAGES, M, CORPUS, PATCHES, NOISE = 50_000, 10_000, 72_000, 196, 15
OOD_SETS = {"iNaturalist": 10_000, "SUN": 10_000, "Places": 10_000, "Textures": 5_640}
CHUNK = 1024  # images per call where a per-image input is synthesized chunk by chunk (GL-MCM: 0.4 GB)
#: floors that are not one matmul + softmax over ID and the method's negatives (or ID alone)
STREAM_MATMULS = {"adaneg": 2}  # raw logits, then proxy logits


def unit(n: int, seed: int, device: str) -> torch.Tensor:
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal((n, D), dtype=np.float32))
    return (x / x.norm(dim=1, keepdim=True)).to(device)


@dataclass
class Cost:
    """Wall s, CPU s / threads and peak memory above the start (GiB), summed (peak: max) over timed blocks."""

    wall: float = 0.0
    cpu: float = 0.0
    peak: float = 0.0
    device: str = "cpu"
    _cuda: bool = field(init=False)

    def __post_init__(self) -> None:
        self._cuda = self.device.startswith("cuda")

    def time(self, fn: Callable[[], object]) -> Cost:
        if self._cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        w, c = time.perf_counter(), time.process_time()
        with PeakRSS() as rss:
            fn()
            if self._cuda:
                torch.cuda.synchronize()
        self.wall += time.perf_counter() - w
        self.cpu += (time.process_time() - c) / torch.get_num_threads()
        peak = (torch.cuda.max_memory_allocated() - base) / 2**30 if self._cuda else rss.peak - rss.start
        self.peak = max(self.peak, peak)
        return self

    @property
    def t(self) -> float:
        """The figure the ratios use: CPU time / threads on the CPU (neighbours do not count), wall on a GPU."""
        return self.cpu if not self._cuda else self.wall


class Protocol:
    """The synthetic embeddings of the protocol at ``scale`` and the inputs a method may declare."""

    def __init__(self, scale: float, device: str) -> None:
        size = lambda n: max(1, round(n * scale))  # noqa: E731
        self.device = device
        self.ids, self.negs, self.corpus = unit(K, 1, device), unit(size(M), 2, device), unit(size(CORPUS), 3, device)
        self.id_x = unit(size(ID_IMAGES), 4, device)
        self.ood = {name: unit(size(n), 5 + i, device) for i, (name, n) in enumerate(OOD_SETS.items())}
        self.bank = unit(8192, 10, device)  # patch features are drawn from it
        self.sets = (self.id_x, *self.ood.values())

    def local(self, n: int, seed: int) -> torch.Tensor:
        """Patch features (n, PATCHES, d): unit rows of the bank, seeded."""
        idx = torch.from_numpy(np.random.default_rng(seed).integers(0, len(self.bank), (n, PATCHES)))
        return self.bank[idx.to(self.device)]

    def pair_texts(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """NegRefine's pair embedder, synthetic: the normalised sum of the ID and the negative embedding."""
        t, n = self.ids.cpu().numpy(), self.negs.cpu().numpy()

        def embed(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            x = t[i] + n[j]
            return x / np.linalg.norm(x, axis=1, keepdims=True)

        return embed

    def setup_input(self, name: str) -> object:
        made = {"pair_texts": self.pair_texts, "noise_images": lambda: unit(NOISE, 9, self.device)}
        if name not in made:
            raise LookupError(name)
        return made[name]()

    def chunks(self) -> Iterator[tuple[int, torch.Tensor]]:
        """(seed, images) chunks of every image set, CHUNK images each."""
        for s, x in enumerate(self.sets):
            for i in range(0, len(x), CHUNK):
                yield 1000 * s + i, x[i : i + CHUNK]


def method_inputs(spec: Method) -> tuple[str, ...]:
    return stream_class(spec.name).inputs if spec.kind == "stream" else spec.inputs


def run_batch(p: Protocol, spec: Method, floors: dict[str, Cost]) -> tuple[Cost, float]:
    """Time a batch method over the ID set and each OOD set; returns its cost and its floor's time."""
    extra: dict[str, object] = {"neg_emb": p.negs} if spec.needs_negatives else {}
    extra |= {k: p.setup_input(k) for k in method_inputs(spec) if not get_input(k).per_image}
    per_image = [k for k in method_inputs(spec) if get_input(k).per_image]
    cost = Cost(device=p.device)
    if not per_image:
        cost.time(lambda: [negvocab.score(spec.name, x, p.ids, device=p.device, **extra) for x in p.sets])
        return cost, floors["ID+M" if spec.needs_negatives else "ID"].t
    if per_image != ["local"]:
        raise LookupError(", ".join(per_image))
    own = Cost(device=p.device)  # the floor over the global and the patch features, chunk by chunk
    for seed, x in p.chunks():
        z = p.local(len(x), seed)  # synthesized, not timed
        cost.time(lambda x=x, z=z: negvocab.score(spec.name, x, p.ids, device=p.device, local=z, **extra))
        labels = torch.cat([p.ids, p.negs]) if spec.needs_negatives else p.ids
        own.time(floor(torch.cat([x, z.reshape(-1, D)]), labels, 4096, device=p.device))
    return cost, own.t


def run_stream_method(p: Protocol, spec: Method, floors: dict[str, Cost]) -> tuple[Cost, str]:
    """Time a stream method over one stream per OOD set and stream seed; returns its cost and ratio text."""
    m = make_stream(spec.name)
    negs = p.corpus if spec.name == "tanl" else p.negs  # TANL chooses from its whole corpus
    m.setup(p.ids, negs, **{k: p.setup_input(k) for k in method_inputs(spec)})
    cost = Cost(device=p.device).time(
        lambda: [
            run_stream(m, torch.cat([p.id_x, x]), stream_batch=BATCH, seed=s) for s in SEEDS for x in p.ood.values()
        ]
    )
    if spec.name == "tanl":
        f64, f32 = floors["stream ID+corpus f64"].t, floors["stream ID+corpus f32"].t
        return cost, f"{cost.t / f64:.2f}x (f64), {cost.t / f32:.2f}x (f32)"
    k = STREAM_MATMULS.get(spec.name, 1)
    key = "stream ID+M" if spec.needs_negatives else "stream ID"
    return cost, f"{cost.t / (k * floors[key].t):.2f}x" + (f" ({k} matmuls)" if k > 1 else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of every size (images, M, corpus)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--methods", default="", help="comma-separated subset (default: every registered method)")
    ap.add_argument("--skip", default="", help="comma-separated methods left out")
    a = ap.parse_args()
    dev = a.device
    p = Protocol(a.scale, dev)
    skip = {METHODS[m].name for m in a.skip.split(",") if m}
    wanted = [m for m in ([METHODS[m].name for m in a.methods.split(",")] if a.methods else METHODS) if m not in skip]
    streams = [m for m in wanted if METHODS[m].kind == "stream"]
    n_batch = sum(len(x) for x in p.sets)  # images a batch method scores
    n_stream = len(SEEDS) * sum(len(p.id_x) + len(x) for x in p.ood.values())  # image scorings of the streams
    images = torch.cat(p.sets)
    streamed = torch.cat([torch.cat([p.id_x, x]) for x in p.ood.values()] * len(SEEDS))  # as the streams see them
    print(
        f"scale {a.scale}: {len(p.id_x):,} ID + {', '.join(f'{k} {len(v):,}' for k, v in p.ood.items())}; "
        f"K={K}, M={len(p.negs):,}, TANL corpus {len(p.corpus):,}, d={D}, device {dev}, "
        f"{torch.get_num_threads()} threads; methods: {', '.join(wanted)}"
    )
    floors: dict[str, Cost] = {}
    for key, x, labels, dtype, needed in (
        ("ID", images, p.ids, torch.float32, True),
        ("ID+M", images, torch.cat([p.ids, p.negs]), torch.float32, True),
        ("stream ID", streamed, p.ids, torch.float32, bool(streams)),
        ("stream ID+M", streamed, torch.cat([p.ids, p.negs]), torch.float32, bool(streams)),
        ("stream ID+corpus f64", streamed, torch.cat([p.ids, p.corpus]), torch.float64, "tanl" in wanted),
        ("stream ID+corpus f32", streamed, torch.cat([p.ids, p.corpus]), torch.float32, "tanl" in wanted),
    ):
        if not needed:
            continue
        floors[key] = Cost(device=dev).time(floor(x, labels, BATCH if key.startswith("stream") else 4096, dtype, dev))
        print(f"floor {key:<22} {floors[key].t:9.2f} s" + (" CPU/thread" if dev == "cpu" else ""), flush=True)
    for name in wanted:  # warm-up: imports, lazy kernels and the allocator, untimed
        if METHODS[name].kind == "batch" and not any(get_input(k).per_image for k in METHODS[name].inputs):
            try:
                extra = {k: p.setup_input(k) for k in METHODS[name].inputs}
            except LookupError:
                continue
            neg = {"neg_emb": p.negs} if METHODS[name].needs_negatives else {}
            negvocab.score(name, p.id_x[:64], p.ids, device=dev, **neg, **extra)
    rows = []
    for name in wanted:
        spec = METHODS[name]
        try:
            if spec.kind == "stream":
                cost, ratio = run_stream_method(p, spec, floors)
                n = n_stream
            else:
                cost, own = run_batch(p, spec, floors)
                ratio, n = f"{cost.t / own:.2f}x", n_batch
        except LookupError as e:
            rows.append(f"| {name} | {spec.kind} | not run: needs the input {e.args[0]} (not made here) | | | | |")
            continue
        rows.append(f"| {name} | {spec.kind} | {n:,} | {cost.wall:.1f} | {cost.cpu:.1f} | {cost.peak:.2f} | {ratio} |")
        print(rows[-1], flush=True)
    print()
    print("| method | kind | image scorings | wall s | CPU s / thread | peak GiB | x floor |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print("test-time results depend on the stream (order, stream batch, seed); the floors are timed like the methods")


if __name__ == "__main__":
    main()
