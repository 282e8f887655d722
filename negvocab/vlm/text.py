"""Exact, fast text encoding: length-sorted batches, context cut for causal text towers.

CLIP text towers use a causal attention mask and read one token (the EOT token: ``argmax`` pooling,
or the tokenizer's ``eos`` id). The output at position p depends only on tokens 0..p, so every token
after the pooled one (the padding) can be dropped: cutting a batch to its longest prompt gives the
same embedding as the full context, and sorting prompts by length makes the batches short. Towers
without a causal mask (SigLIP: bidirectional, ``last`` pooling), with an appended class token (CoCa)
or Hugging Face text encoders are run on the full context, never cut (docs/methods.md#text-embeddings).
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.progress import Progress
from negvocab.vlm.templates import check_reduce

if TYPE_CHECKING:
    import torch

    from negvocab.vlm.model import VLM

__all__ = [
    "CHUNK_PROMPTS",
    "CHUNK_S",
    "CausalTower",
    "encode_labels",
    "encode_prompts",
    "ensemble",
    "forward_cut",
    "pooled_index",
    "text_tower",
]

log = logging.getLogger(__name__)

#: prompts tokenised, sorted and encoded together, then kept by the cache: bounds token memory and the work
#: an interruption can lose (1,024 prompts: seconds on a CPU for ViT-B; a fixed count, never the clock, so a
#: resumed run encodes in a clean run's chunks)
CHUNK_PROMPTS = 1024
#: deprecated (ignored): chunks were once sized by the clock to take about this long
CHUNK_S = 10.0


@dataclass(frozen=True)
class CausalTower:
    """The parts of an open_clip causal text tower needed to run it on a cut context."""

    token_embedding: Any
    positional_embedding: Any
    transformer: Any
    ln_final: Any
    text_projection: Any
    attn_mask: Any
    pool_type: str
    eos_id: int | None


def _is_causal_mask(mask: Any) -> bool:
    import torch

    if mask is None or mask.dim() != 2 or mask.shape[0] != mask.shape[1]:
        return False
    upper = torch.ones(mask.shape, dtype=torch.bool, device=mask.device).triu(1)
    return bool(torch.isneginf(mask[upper]).all()) and bool((mask[~upper] == 0).all())


def text_tower(model: Any) -> CausalTower | None:
    """The causal text tower of ``model`` if its context may be cut exactly, else None.

    Cuttable: an open_clip ``CLIP`` text transformer or a ``CustomTextCLIP`` whose ``text`` is a
    ``TextTransformer``, with a causal attention mask, ``argmax``/``eos`` pooling, no appended
    class token and no padding mask.
    """
    from open_clip.transformer import TextTransformer

    src = model.text if isinstance(getattr(model, "text", None), TextTransformer) else model
    needed = ("token_embedding", "positional_embedding", "transformer", "ln_final", "attn_mask")
    if not all(hasattr(src, a) for a in needed):
        return None  # e.g. an HF text encoder
    pool = getattr(src, "text_pool_type", getattr(src, "pool_type", None))
    if pool not in ("argmax", "eos"):
        return None
    if getattr(src, "cls_emb", None) is not None or getattr(src, "use_pad_mask", False):
        return None
    if not _is_causal_mask(src.attn_mask):
        return None
    parts = ("token_embedding", "positional_embedding", "transformer", "ln_final", "text_projection", "attn_mask")
    return CausalTower(
        **{part: getattr(src, part) for part in parts},
        pool_type=pool,
        eos_id=getattr(src, "text_eos_id", getattr(src, "eos_id", None)),
    )


def pooled_index(tokens: torch.Tensor, tower: CausalTower) -> torch.Tensor:
    """Position of the token the tower reads, per row of ``tokens`` [n, ctx] (same rule as open_clip)."""
    if tower.pool_type == "argmax":
        return tokens.argmax(dim=-1)
    assert tower.eos_id is not None, "a tower that pools at a token other than the argmax names its id"
    return tokens.eq(tower.eos_id).int().argmax(dim=-1)


def forward_cut(tower: CausalTower, tokens: torch.Tensor) -> torch.Tensor:
    """Pooled, projected text features of ``tokens`` [b, L] with L <= context length.

    Equals open_clip's ``encode_text`` on the same prompts padded to the full context as long as L
    covers every row's pooled token.
    """
    import torch
    import torch.nn as nn

    length = tokens.shape[1]
    cast_dtype = tower.transformer.get_cast_dtype()
    x = tower.token_embedding(tokens).to(cast_dtype)
    x = x + tower.positional_embedding[:length].to(cast_dtype)
    x = tower.transformer(x, attn_mask=tower.attn_mask[:length, :length])
    x = tower.ln_final(x)
    idx = pooled_index(tokens, tower)
    x = x[torch.arange(x.shape[0], device=x.device), idx]
    proj = tower.text_projection
    if proj is not None:
        x = proj(x) if isinstance(proj, nn.Linear) else x @ proj
    return x


def encode_prompts(
    vlm: VLM,
    prompts: Sequence[str],
    *,
    batch_size: int | None = None,
    progress: Any = None,
    cut: bool = True,
    normalize: bool = True,
) -> torch.Tensor:
    """L2-normalised float32 embeddings [n, d] (on the CPU) of the prompts, in input order
    (``normalize=False``: the raw features, checked finite all the same).

    Prompts are sorted by token length and batched; causal towers see each batch cut to its
    longest prompt (``cut=False`` runs the full context, for checks).
    """
    import torch

    if not prompts:
        raise ValueError("no prompts to encode")
    device = vlm.device
    tokens = vlm.tokenizer(list(prompts))
    tower = vlm.causal_tower if cut else None
    bs = batch_size or (1024 if device.type == "cuda" else 256)
    if tower is not None:
        lengths = (pooled_index(tokens, tower) + 1).numpy()
        order = np.argsort(lengths, kind="stable")
        full = np.flatnonzero(lengths >= tokens.shape[1])
        if full.size:  # the tokenizer cut them: two long labels may end up with one embedding
            log.warning(
                "%d prompts fill the %d-token context and were truncated (e.g. %r)",
                full.size,
                tokens.shape[1],
                prompts[int(full[0])][:80],
            )
    else:
        lengths = None
        order = np.arange(len(prompts))
    out: torch.Tensor | None = None
    with vlm.autocast():
        for start in range(0, len(order), bs):
            sel = order[start : start + bs]
            batch = tokens[torch.from_numpy(sel)]
            if tower is not None and lengths is not None:  # lengths are measured for a cut tower
                length = int(lengths[sel].max())
                feats = forward_cut(tower, batch[:, :length].to(device))
            else:
                feats = vlm.model.encode_text(batch.to(device))
            unit = vlm.unit_rows(feats, "prompts")  # also refuses NaN/inf rows
            feats = unit if normalize else feats.float().cpu()
            if out is None:
                out = torch.empty((len(prompts), feats.shape[1]), dtype=torch.float32)
            out[torch.from_numpy(sel)] = feats
            if progress is not None:
                progress.update(len(sel))
    assert out is not None
    return out


def ensemble(prompt_emb: torch.Tensor, n_labels: int, n_templates: int) -> np.ndarray:
    """Mean of each label's template embeddings, normalised: float32 [n, d].

    ``prompt_emb`` is [n_labels * n_templates, d], label-major (all templates of label 0 first):
    L2-normalised rows give the ``unit_mean`` reduction (CLIP's zero-shot recipe), raw rows the
    ``raw_mean`` one (CSP's code: ``.view(-1, K, D).mean(dim=1)``, then ``/= norm``), where the raw
    features' norms weigh the mean.
    """
    import torch.nn.functional as F

    emb = prompt_emb.reshape(n_labels, n_templates, -1).mean(dim=1)
    return F.normalize(emb, dim=-1).numpy().astype(np.float32, copy=False)


def encode_labels(
    vlm: VLM,
    labels: Sequence[str],
    templates: Sequence[str],
    *,
    batch_size: int | None = None,
    progress: bool | None = None,
    on_chunk: Callable[[list[str], np.ndarray], None] | None = None,
    chunk_s: float | None = None,
    clock: Callable[[], float] | None = None,
    reduce: str = "unit_mean",
) -> np.ndarray:
    """Template-ensembled embeddings [n, d] of ``labels`` (no cache; see :meth:`VLM.encode_text`),
    each label's templates averaged as ``reduce`` says (:func:`ensemble`).

    Labels are processed in chunks of :data:`CHUNK_PROMPTS` prompts (``CHUNK_PROMPTS // len(templates)``
    labels); ``on_chunk(labels, embeddings)`` is called after each (the cache keeps them as they come).
    Prompts are sorted and batched within a chunk, and a row's float32 result depends on its batch
    (its companions and its cut length; up to ~1e-7), so the chunks never depend on the clock or on
    torch's determinism setting: a run resumed from the cache (which holds whole chunks, in order)
    encodes the labels it lacks in the chunks a clean run has, and gives the same bits. (Before
    this release the chunks followed the clock outside ``torch.use_deterministic_algorithms``;
    ``chunk_s`` and ``clock`` are ignored and deprecated.)
    """
    if chunk_s is not None or clock is not None:
        warnings.warn(
            "encode_labels(chunk_s=, clock=) are ignored: chunks hold CHUNK_PROMPTS prompts whatever the "
            "clock (a resumed run equals a clean one); drop them",
            DeprecationWarning,
            stacklevel=2,
        )
    check_reduce(reduce)
    raw = reduce == "raw_mean" and len(templates) > 1  # one template: the two reductions are the same
    n_prompts = len(labels) * len(templates)
    # a bar on a terminal once the run lasts (progress=None or True; False: none), and a line in
    # the log every 30 s whatever the output: no encoding of any length is silent
    bar = Progress(n_prompts, f"encoding {len(labels)} labels", "prompt", bar=progress is not False)
    t0 = time.perf_counter()
    step = max(1, CHUNK_PROMPTS // max(1, len(templates)))
    parts = []
    try:
        for start in range(0, len(labels), step):
            chunk = labels[start : start + step]
            prompts = [t.format(label) for label in chunk for t in templates]
            emb = encode_prompts(vlm, prompts, batch_size=batch_size, progress=bar, normalize=not raw)
            parts.append(ensemble(emb, len(chunk), len(templates)))
            if on_chunk is not None:
                on_chunk(list(chunk), parts[-1])
    finally:
        bar.close()
    dt = time.perf_counter() - t0
    log.info(
        "encoded %d labels x %d templates in %.1f s (%.0f labels/s)",
        len(labels),
        len(templates),
        dt,
        len(labels) / max(dt, 1e-9),
    )
    return np.concatenate(parts, axis=0)
