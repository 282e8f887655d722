"""Straightforward float64 numpy implementations of the scores (docs/methods.md#scores), written independently
of negvocab.scoring.scores: explicit exponentials and sums, no log-sum-exp tricks (the test inputs
keep logits small enough for float64)."""

from __future__ import annotations

import numpy as np


def unit(rng: np.random.Generator, n: int, d: int, dtype: str = "float32") -> np.ndarray:
    x = rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype)


def f64(*xs: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(x, dtype=np.float64) for x in xs]


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def mcm(img, idt, T=1.0):
    img, idt = f64(img, idt)
    return softmax(img @ idt.T / T).max(1)


def glmcm(img, idt, local, lam=1.0, T=1.0):
    img, idt, local = f64(img, idt, local)
    glob = softmax(img @ idt.T / T).max(1)
    loc = np.array([softmax(z @ idt.T / T).max(1).max() for z in local])
    return glob + lam * loc


def eoe(img, idt, neg, beta=0.25, T=1.0):
    img, idt, neg = f64(img, idt, neg)
    p = softmax(np.concatenate([img @ idt.T, img @ neg.T], 1) / T)
    k = idt.shape[0]
    return p[:, :k].max(1) - beta * p[:, k:].max(1)


def groups_of(m, g, grouping="stratified", seed=0):
    g = min(g, m)
    if grouping == "stratified":
        return [[r for r in range(m) if r % g == j] for j in range(g)]
    perm = np.random.default_rng(seed).permutation(m)
    # near-equal contiguous pieces, the first m % g one longer
    sizes = [m // g + (1 if j < m % g else 0) for j in range(g)]
    out, start = [], 0
    for s in sizes:
        out.append(list(perm[start : start + s]))
        start += s
    return out


def neglabel(img, idt, neg, tau=0.01, groups=100, grouping="stratified", seed=0):
    img, idt, neg = f64(img, idt, neg)
    pos = np.exp(img @ idt.T / tau).sum(1)
    per = []
    for members in groups_of(len(neg), groups, grouping, seed):
        negs = np.exp(img @ neg[members].T / tau).sum(1)
        per.append(pos / (pos + negs))
    return np.mean(per, 0)


def neglabel_eoe(img, idt, neg, tau=0.01, groups=100, grouping="stratified", seed=0, beta=0.25, penalty_T=None):
    T = tau if penalty_T is None else penalty_T
    img64, idt64, neg64 = f64(img, idt, neg)
    p = softmax(np.concatenate([img64 @ idt64.T, img64 @ neg64.T], 1) / T)
    return neglabel(img, idt, neg, tau, groups, grouping, seed) - beta * p[:, idt.shape[0] :].max(1)


def logits(img, idt, logit_scale=100.0):
    img, idt = f64(img, idt)
    return logit_scale * (img @ idt.T)


def msp(img, idt, logit_scale=100.0):
    z = logits(img, idt, logit_scale)
    z = z - z.max(1, keepdims=True)  # a shift softmax ignores; exp(100 x cosine) would overflow float64 otherwise
    return softmax(z).max(1)


def maxlogit(img, idt, logit_scale=100.0):
    return logits(img, idt, logit_scale).max(1)


def energy(img, idt, logit_scale=100.0):
    z = logits(img, idt, logit_scale)
    top = z.max(1)
    return top + np.log(np.exp(z - top[:, None]).sum(1))


def gen(img, idt, logit_scale=100.0, gamma=0.1, top_classes=100):
    """OpenOOD's GEN postprocessor (generalized_entropy): the M largest probabilities, summed, negated."""
    z = logits(img, idt, logit_scale)
    p = softmax(z - z.max(1, keepdims=True))
    top = np.sort(p, axis=1)[:, -top_classes:]
    return -np.sum(top**gamma * (1 - top) ** gamma, axis=1)
