"""The CSP builder's time against the WordNet builder's, side by side in one run, on the same candidates and model.

Two parts:

1. Whole builds (encode + rank + filter) with one random-weight open_clip model (no embedding cache,
   so every build encodes all its texts): ``build_wordnet_vocabulary`` (templates ``paper8``), and
   ``build_csp_vocabulary`` with CSP's own templates (``csp``: 8 noun, 4 adjective templates) and with
   ``paper8`` (the same prompts per label as the WordNet build), over the same WordNet candidates
   (spread over CSP's pool) and the same ID classes (the first N of ImageNet-1k).
2. The selection alone on the same random unit embeddings: ``farthest_first`` (WordNet) against
   ``csp_distances`` + its argsort (CSP), n candidates x C ID classes.

Writes the table (Markdown) to stdout and to ``--out``.

    python benchmarks/bench_csp.py                                   # 1,000 candidates, 100 ID classes
    python benchmarks/bench_csp.py --candidates 400 --id-classes 50 --out csp_bench.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def timed(fn):
    """``(result, wall seconds, process CPU seconds)`` of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--candidates", type=int, default=1000, help="WordNet candidates (spread over CSP's pool).")
    ap.add_argument("--id-classes", type=int, default=100, help="the first N ImageNet-1k classes")
    ap.add_argument("--select-n", type=int, default=70_000, help="candidates of the selection-only part")
    ap.add_argument("--select-c", type=int, default=1000, help="ID classes of the selection-only part")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here (Markdown)")
    args = ap.parse_args()

    import torch

    import negvocab
    from negvocab.builders.csp import build_csp_vocabulary, csp_distances, csp_pool
    from negvocab.builders.wordnet import build_wordnet_vocabulary, farthest_first
    from negvocab.labels.candidates import sample_pool

    vlm = negvocab.VLM(args.model, random_weights=True, device="cpu", cache=False)
    cands = sample_pool(args.candidates, csp_pool())
    full = negvocab.imagenet1k()
    ids = negvocab.IdClasses.from_names(full.names[: args.id_classes], dataset=f"imagenet1k[:{args.id_classes}]")
    common = {"candidates": cands, "id_classes": ids, "progress": False}
    rows = []
    runs = [
        ("wordnet (paper8)", lambda: build_wordnet_vocabulary(vlm, templates="paper8", **common)),
        ("csp (csp templates)", lambda: build_csp_vocabulary(vlm, templates="csp", **common)),
        ("csp (paper8)", lambda: build_csp_vocabulary(vlm, templates="paper8", **common)),
    ]
    for name, fn in runs:
        vocab, wall, cpu = timed(fn)
        rows.append((f"build: {name}", f"{len(cands):,} x {len(ids)}", wall, cpu, len(vocab)))
        print(f"  {rows[-1][0]:34s} wall {wall:7.1f} s  cpu {cpu:7.1f} s  {len(vocab):,} labels", flush=True)

    rng = np.random.default_rng(0)
    emb = unit(rng.standard_normal((args.select_n, args.dim)))
    id_emb = unit(rng.standard_normal((args.select_c, args.dim)))
    shape = f"{args.select_n:,} x {args.select_c:,}"
    (order_w, _), wall, cpu = timed(lambda: farthest_first(emb, id_emb, 0.95))
    rows.append(("select: wordnet farthest_first", shape, wall, cpu, len(order_w)))
    order_c, wall, cpu = timed(lambda: np.argsort(csp_distances(emb, id_emb, 0.95), kind="stable"))
    rows.append(("select: csp_distances + argsort", shape, wall, cpu, len(order_c)))
    assert np.array_equal(order_w, order_c), "with no near-copy of an ID class the two rankings are the same"

    threads = torch.get_num_threads()
    lines = [
        f"CSP builder vs WordNet builder: {args.model} with RANDOM weights on the CPU ({threads} torch threads), "
        "no embedding cache",
        "",
        "| what | candidates x ID classes | wall s | CPU s | labels |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {n} | {s} | {w:.2f} | {c:.2f} | {k:,} |" for n, s, w, c, k in rows],
    ]
    table = "\n".join(lines) + "\n"
    print()
    print(table)
    if args.out:
        args.out.write_text(table, encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
