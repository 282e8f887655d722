"""Text encoding speed: negvocab (sorted, context cut) vs open_clip's build_zero_shot_classifier.

Encodes WordNet labels with the paper8 templates on a random-weight ViT-B-32 on the CPU and prints
labels/s for both, in the same run, plus the max abs difference on the labels both encoded.
The baseline runs the full 77-token context, so its rate does not depend on which labels it gets;
``--baseline-labels`` caps its share to keep the run short. The two alternate in ``--rounds``
so that load from other processes affects both alike.

    python benchmarks/bench_text_encoding.py --labels 2000 --threads 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--labels", type=int, default=2000, help="WordNet labels for negvocab")
    ap.add_argument("--baseline-labels", type=int, default=200, help="labels for the open_clip baseline")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4, help="alternate the two methods this many times")
    ap.add_argument("--model", default="ViT-B-32")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    import torch
    from open_clip.zero_shot_classifier import build_zero_shot_classifier

    import negvocab
    from negvocab.vlm.templates import PAPER8

    torch.set_num_threads(args.threads)
    pool = [c.text for c in negvocab.wordnet_candidates()]
    step = max(1, len(pool) // args.labels)
    labels = pool[::step][: args.labels]  # spread over the pool: nouns and adjectives
    vlm = negvocab.VLM(args.model, random_weights=True, device=args.device, cache=False)
    print(
        f"{args.model} (random weights) on {vlm.device}, {torch.get_num_threads()} threads, "
        f"{len(PAPER8)} templates (paper8)"
    )

    vlm.encode_text(labels[:16], "paper8")  # warm-up
    base_labels = labels[: args.baseline_labels]
    # alternate the two in rounds, so that load from other processes hits both alike
    t_ours = t_base = 0.0
    ours_parts, ref_parts = [], []
    for r in range(args.rounds):
        part = labels[r * len(labels) // args.rounds : (r + 1) * len(labels) // args.rounds]
        t0 = time.perf_counter()
        ours_parts.append(vlm.encode_text(part, "paper8"))
        t_ours += time.perf_counter() - t0
        part = base_labels[r * len(base_labels) // args.rounds : (r + 1) * len(base_labels) // args.rounds]
        t0 = time.perf_counter()
        ref = build_zero_shot_classifier(vlm.model, vlm.tokenizer, part, list(PAPER8), device=vlm.device)
        t_base += time.perf_counter() - t0
        ref_parts.append(ref.T.float().cpu().numpy())
    ours = np.concatenate(ours_parts)
    ref = np.concatenate(ref_parts)

    rate_ours = len(labels) / t_ours
    rate_base = len(base_labels) / t_base
    diff = float(np.abs(ours[: len(base_labels)] - ref).max())
    print(f"{'':32s}{'labels':>8s}{'seconds':>10s}{'labels/s':>10s}")
    print(f"{'negvocab VLM.encode_text':32s}{len(labels):8d}{t_ours:10.1f}{rate_ours:10.1f}")
    print(f"{'open_clip build_zero_shot_cls':32s}{len(base_labels):8d}{t_base:10.1f}{rate_base:10.1f}")
    print(f"speed-up: {rate_ours / rate_base:.1f}x   max abs diff on the {len(base_labels)} shared labels: {diff:.2e}")


if __name__ == "__main__":
    main()
