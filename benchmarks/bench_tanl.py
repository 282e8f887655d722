"""TANL's cost per image on one stream, beside plain NegLabel on the same images and TANL's authors'
code (tests/reference/tanl.py, float64) on the same stream: K = 1000 ID prompts, a corpus of N
labels (NegLabel scores its first M = 10,000, TANL chooses 1,000 of all N per batch), d = 512,
batches of 256 (their script's test batch size), defaults of their official.sh. The scores of
negvocab's TANL and of their code are checked equal; NegLabel's are a different method, timed only.

    PYTHONPATH=$PWD python3 benchmarks/bench_tanl.py            # N = 70,000 (the WordNet corpus), 4,096 images
    PYTHONPATH=$PWD python3 benchmarks/bench_tanl.py --small    # N = 20,000, 1,024 images

On this project's loaded 2-core CPU machine (--small, 2026-12-02): negvocab's TANL 23.4 ms/image
(set-up included), their code in float64 491 ms/image (its activation-aware score is one softmax
per prefix: 1,000 per batch; negvocab reads every prefix off one logcumsumexp), max |difference|
5e-15; NegLabel with M = 10,000: 5.7 ms/image.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

import negvocab
from negvocab.scoring.stream import make_stream, run_stream
from tests.reference import tanl as ref

SMALL = "--small" in sys.argv
K, D, BATCH = 1000, 512, 256
N, IMAGES = (20_000, 1024) if SMALL else (70_000, 4096)


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    ids, corpus, noise = unit(rng.normal(size=(K, D))), unit(rng.normal(size=(N, D))), unit(rng.normal(size=(15, D)))
    half = IMAGES // 2
    x = unit(
        np.concatenate([ids[rng.integers(0, K, half)] + 0.7 * rng.normal(size=(half, D)), rng.normal(size=(half, D))])
    )

    t0 = time.perf_counter()
    method = make_stream("tanl").setup(ids, corpus, noise_images=noise)
    ours = run_stream(method, x, stream_batch=BATCH, order="given").scores
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    for i in range(0, IMAGES, BATCH):
        negvocab.score("neglabel", x[i : i + BATCH], ids, corpus[:10_000], device="cpu")
    t_neglabel = time.perf_counter() - t0

    t = {k: torch.from_numpy(v) for k, v in {"ids": ids, "corpus": corpus, "noise": noise, "x": x}.items()}
    net = ref.Net(K, torch.cat([t["ids"], t["corpus"][:10_000]]).T, torch.cat([t["ids"], t["corpus"]]).T, t["noise"])
    args = {"beta": 1000, "gamma": 1, "alpha": 0.0, "memleng": 300, "gap": 0.5, "thres": 0.5, "in_score": "sum"}
    pp = ref.ActivatedNegPostprocessor({**args, "cossim": False})
    torch.manual_seed(0)
    t0 = time.perf_counter()
    theirs = torch.cat([pp.postprocess(net, t["x"][i : i + BATCH])[1] for i in range(0, IMAGES, BATCH)]).numpy()
    t_theirs = time.perf_counter() - t0

    per = 1e3 / IMAGES
    print(f"K={K} N={N:,} d={D} images={IMAGES:,} batch={BATCH}, torch threads {torch.get_num_threads()}")
    print(f"negvocab TANL      {t_ours:7.2f} s  {t_ours * per:7.2f} ms/image (set-up included)")
    diff = np.abs(ours - theirs).max()
    print(f"their code (f64)   {t_theirs:7.2f} s  {t_theirs * per:7.2f} ms/image  max |diff| {diff:.1e}")
    print(f"NegLabel, M=10,000 {t_neglabel:7.2f} s  {t_neglabel * per:7.2f} ms/image")


if __name__ == "__main__":
    main()
