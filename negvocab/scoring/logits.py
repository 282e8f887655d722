r"""The logit-based zero-shot baselines: MSP, MaxLogit, Energy and GEN over the ID prompts.

A VLM's zero-shot classifier has logits :math:`z_i = s \cos(v, t_i)`, with ``s`` the model's logit
scale (CLIP learns ``s = 100``; the pipeline passes each model's own, ``VLM.logit_scale``, and these
functions take 100 when none is given). SigLIP's logit bias shifts every logit alike and changes no
ranking, so it is left out. A temperature ``T`` on the logits is the same as a logit scale ``s / T``,
so ``logit_scale`` is the one knob. Every score is high for ID, the sign of MCM and NegLabel
(pytorch-ood's detectors return the negative: docs/methods.md, "Score signs"). MSP at
``logit_scale = 1 / T`` is MCM at temperature ``T``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from negvocab.core.errors import InputError
from negvocab.core.types import Device, Embeddings
from negvocab.scoring.inputs import chunk_rows, join_chunks, positive, prepare

__all__ = ["CLIP_LOGIT_SCALE", "energy", "gen", "maxlogit", "msp"]

#: CLIP's learned logit scale: the scale where neither the caller nor a model gives one
CLIP_LOGIT_SCALE = 100.0


def _over_logits(
    method: str,
    image_emb: Embeddings,
    id_emb: Embeddings,
    logit_scale: float | None,
    device: Device,
    chunk_size: int | None,
    kernel: Callable[[torch.Tensor], torch.Tensor],
) -> np.ndarray:
    """``kernel(logits)`` per chunk of images, logits = ``logit_scale`` x cosine to every ID prompt
    (None: CLIP's 100, the scale where no model says its own)."""
    s = positive(CLIP_LOGIT_SCALE if logit_scale is None else logit_scale, "logit_scale")
    v, t, _ = prepare(image_emb, id_emb, None, device, need_neg=False, method=method)
    step = chunk_rows(len(v), t.shape[0], v.element_size(), chunk_size)
    return join_chunks([kernel(s * (v[i : i + step] @ t.T)) for i in range(0, len(v), step)])


def msp(
    image_emb: Embeddings,
    id_emb: Embeddings,
    *,
    logit_scale: float | None = None,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Maximum softmax probability (Hendrycks & Gimpel, ICLR 2017) of the zero-shot classifier.

    .. math:: S(v) = \max_i \frac{e^{z_i}}{\sum_k e^{z_k}}, \quad z_i = s \cos(v, t_i)

    Returns float64 scores in (1/K, 1], higher = ID. The softmax runs in float64: at CLIP's logit
    scale (100) a confident image's MSP is 1 - 1e-9 or closer, which float32 rounds to 1.0 (ties
    where the formula orders the images).
    """

    def kernel(z: torch.Tensor) -> torch.Tensor:
        z = z.double()
        return torch.exp(z.amax(-1) - torch.logsumexp(z, -1))

    return _over_logits("msp", image_emb, id_emb, logit_scale, device, chunk_size, kernel)


def maxlogit(
    image_emb: Embeddings,
    id_emb: Embeddings,
    *,
    logit_scale: float | None = None,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Maximum logit (Hendrycks et al., ICML 2022): :math:`S(v) = \max_i z_i`, higher = ID."""
    return _over_logits("maxlogit", image_emb, id_emb, logit_scale, device, chunk_size, lambda z: z.amax(-1))


def energy(
    image_emb: Embeddings,
    id_emb: Embeddings,
    *,
    logit_scale: float | None = None,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Negative free energy (Liu et al., NeurIPS 2020) at temperature 1 on the logits:
    :math:`S(v) = \log \sum_i e^{z_i}` (= :math:`-E(v)`), higher = ID."""
    return _over_logits("energy", image_emb, id_emb, logit_scale, device, chunk_size, lambda z: torch.logsumexp(z, -1))


def gen(
    image_emb: Embeddings,
    id_emb: Embeddings,
    *,
    logit_scale: float | None = None,
    gamma: float = 0.1,
    top_classes: int = 100,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Generalized entropy (Liu et al., "GEN: Pushing the limits of softmax-based OOD detection", CVPR 2023).

    .. math:: S(v) = -\sum_{j \in \text{top-}M} p_j^\gamma (1 - p_j)^\gamma, \quad p = \mathrm{softmax}(z)

    over the ``top_classes`` = M largest probabilities (the paper's M = 100 on ImageNet; clamped to
    the K ID classes), summed as in the paper's and OpenOOD's code, unclamped. Higher = ID.
    The softmax runs in float64: at gamma = 0.1 a probability of 1e-50, or 1 - p of 1e-9, still counts
    (0.1 and 0.13), and float32 rounds both away (scores off by up to 0.2 at CLIP's logit scale).
    """
    gamma = positive(gamma, "gamma")
    if isinstance(top_classes, bool) or not isinstance(top_classes, (int, np.integer)) or top_classes < 1:
        raise InputError(f"top_classes must be an integer >= 1, got {top_classes!r}")

    def kernel(z: torch.Tensor) -> torch.Tensor:
        p = torch.softmax(z.double(), -1).topk(min(int(top_classes), z.shape[-1]), -1).values
        return -(p.pow(gamma) * (1 - p).pow(gamma)).sum(-1)

    return _over_logits("gen", image_emb, id_emb, logit_scale, device, chunk_size, kernel)
