"""Marginal gains of 500 candidate labels vs one NegLabel run and vs a full rescore per label.

10,000 ID + 2,000 OOD images, 1,000 ID classes, 10,000 negatives, 500 candidates (512-dim synthetic
unit vectors). Target: all 500 marginal gains (FPR@95 and AUROC) in <= 2x the time of one NegLabel
run. The baseline, a full rescore of the vocabulary plus each candidate, is timed on a few
candidates and extrapolated to 500 (said so in the output).

Usage::

    python benchmarks/bench_marginal_gains.py            # full sizes
    python benchmarks/bench_marginal_gains.py --quick    # 10x fewer images and negatives
    python benchmarks/bench_marginal_gains.py --method neglabel_eoe
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from bench_scoring import best_of, unit

import negvocab
from negvocab import metrics as M


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--method", default="neglabel", choices=["neglabel", "eoe", "neglabel_eoe"])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rescored", type=int, default=3, help="candidates rescored in full for the baseline")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    n_id, n_ood, m, c = 10_000 // scale, 2_000 // scale, 10_000 // scale, 500
    id_img, ood_img, idt, neg, cand = unit(n_id, 0), unit(n_ood, 1), unit(1000, 2), unit(m, 3), unit(c, 4)
    images = np.concatenate([id_img, ood_img])
    kw = {"device": args.device}

    def one_run() -> None:
        s = negvocab.score(args.method, images, idt, neg, **kw)
        M.fpr_at_tpr(s[:n_id], s[n_id:])
        M.auroc(s[:n_id], s[n_id:])

    def gains() -> None:
        negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method=args.method, **kw)

    def rescores() -> None:
        for j in range(args.rescored):
            s = negvocab.score(args.method, images, idt, np.concatenate([neg, cand[j : j + 1]]), **kw)
            M.fpr_at_tpr(s[:n_id], s[n_id:])
            M.auroc(s[:n_id], s[n_id:])

    t_one = best_of(one_run, args.repeat)
    t_gain = best_of(gains, args.repeat)
    t_re = best_of(rescores, 1) / args.rescored * c
    out = {
        "method": args.method,
        "images": f"{n_id} ID + {n_ood} OOD",
        "negatives": m,
        "candidates": c,
        "one_run_s": round(t_one, 3),
        "marginal_gains_s": round(t_gain, 3),
        "ratio_to_one_run": round(t_gain / t_one, 2),
        "target": "<= 2x one run",
        f"full_rescore_baseline_s (timed on {args.rescored}, extrapolated to {c})": round(t_re, 1),
        "speed_up_over_rescoring": round(t_re / t_gain, 1),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
