"""MCM and GL-MCM: maximum softmax over the ID classes, global and global + local (see
negvocab.scoring.scores for the conventions)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from negvocab.core.errors import InputError
from negvocab.core.types import Device, Embeddings
from negvocab.scoring.inputs import as_tensor, check_dims, check_unit_rows, chunk_rows, join_chunks, positive, prepare

__all__ = ["glmcm", "mcm"]


def _max_softmax(logits: torch.Tensor) -> torch.Tensor:
    """max_i softmax_i(logits) along the last axis, = exp(max - logsumexp)."""
    return torch.exp(logits.amax(-1) - torch.logsumexp(logits, -1))


def mcm(
    image_emb: Embeddings,
    id_emb: Embeddings,
    *,
    T: float = 1.0,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Maximum Concept Matching (Ming et al., "Delving into OOD detection with vision-language
    representations", NeurIPS 2022).

    .. math:: S(v) = \max_i \frac{e^{\cos(v, t_i)/T}}{\sum_k e^{\cos(v, t_k)/T}}

    Parameters
    ----------
    image_emb : array or tensor, shape (n, d)
        L2-normalised image embeddings.
    id_emb : array or tensor, shape (K, d)
        L2-normalised ID class embeddings.
    T : float, default 1
        Softmax temperature on cosine similarities (the paper's reference value).
    device, chunk_size
        Where to compute (default: where ``image_emb`` lives, else CPU); images per chunk.

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores in (1/K, 1]; higher means more ID.
    """
    T = positive(T, "T")
    v, t, _ = prepare(image_emb, id_emb, None, device, need_neg=False, method="mcm")
    step = chunk_rows(len(v), t.shape[0], v.element_size(), chunk_size)
    return join_chunks([_max_softmax(v[i : i + step] @ t.T / T) for i in range(0, len(v), step)])


def glmcm(
    image_emb: Embeddings,
    id_emb: Embeddings,
    local: Any = None,
    *,
    lam: float = 1.0,
    T: float = 1.0,
    device: Device = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Global-Local MCM (Miyai et al., "Zero-shot in-distribution detection in multi-object
    settings using vision-language foundation models", 2023).

    .. math:: S(v) = \mathrm{MCM}(v) + \lambda \max_p \max_i
              \frac{e^{\cos(z_p, t_i)/T}}{\sum_k e^{\cos(z_p, t_k)/T}}

    with local (patch) features ``z_p`` from the value path of the last ViT block.

    Parameters
    ----------
    image_emb : array or tensor, shape (n, d), or an ImageEmbeddings with .local
        L2-normalised global image embeddings.
    id_emb : array or tensor, shape (K, d)
        L2-normalised ID class embeddings.
    local : array or tensor, shape (n, p, d)
        L2-normalised patch features (default: ``image_emb.local``).
    lam : float, default 1
        Weight of the local term (GL-MCM uses 0.5 in its ImageNet script).
    T : float, default 1
        Softmax temperature on cosine similarities.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    T = positive(T, "T")
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
        raise InputError(f"lam must be a non-negative number, got {lam!r}")
    if local is None:
        local = getattr(image_emb, "local", None)
    if local is None:
        raise InputError(
            "glmcm needs local (patch) features: pass local=[n, p, d] (encode_images(local_features=True))"
        )
    v, t, _ = prepare(image_emb, id_emb, None, device, need_neg=False, method="glmcm")
    # the [n, p, d] patch features stay where and as they are (float16 halves them) and go to the
    # device and the compute dtype a chunk at a time
    z = as_tensor(local, "local", 3, local.device if isinstance(local, torch.Tensor) else torch.device("cpu"), None)
    check_dims(image_emb=v, id_emb=t, local=z)
    if z.shape[0] != v.shape[0]:
        raise InputError(f"local has {z.shape[0]} images but image_emb has {v.shape[0]}")
    check_unit_rows(z, "local")
    step = chunk_rows(len(v), (t.shape[0] + v.shape[1]) * z.shape[1], v.element_size(), chunk_size)
    out = []
    for i in range(0, len(v), step):
        glob = _max_softmax(v[i : i + step] @ t.T / T)
        loc = _max_softmax(z[i : i + step].to(v.device, v.dtype) @ t.T / T).amax(-1)
        out.append(glob + lam * loc)
    return join_chunks(out)
