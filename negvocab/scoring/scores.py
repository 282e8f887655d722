"""Zero-shot OOD scores from embeddings: MCM, GL-MCM, NegLabel, EOE and NegLabel + EOE penalty.

Every scorer is a pure function of L2-normalised embeddings (numpy arrays or torch tensors, CPU or
GPU) and returns one float64 score per image, high for in-distribution (ID). The maths runs in torch
on ``device`` (default: the device of ``image_emb`` if it is a tensor, else the CPU), in the
precision of the inputs (float16/bfloat16 are promoted to float32), streaming images in chunks so
memory is bounded by the chunk, never by N x M. Softmax ratios are evaluated with log-sum-exp, so
``tau = 0.01`` (logits up to 100) never overflows.

Use :func:`score` (``negvocab.score``) to dispatch by name; the functions below are the scorers.
Formulas follow the methods document (docs/methods.md#scores) and Rozumnyi et al., "Fi-ImageNet-1k: An OOD
Benchmark From the Inside of the ImageNet-1k Validation Set", arXiv:2609.01027.

Conventions decided here (documented again on each function):

- NegLabel groups: ``grouping="stratified"`` (default) puts the label of rank ``r`` in group
  ``r mod G``; ``"random"`` draws a seeded permutation and splits it into ``G`` contiguous groups of
  near-equal size (``numpy.array_split``). Neither drops a negative, and ``G = 1`` is the plain
  NegLabel formula. ``"neglabel"`` is NegLabel's released code exactly, for reproducing its numbers:
  the last ``M mod G`` negatives are dropped, ``torch.randperm`` seeded with ``seed`` (their 0) on the
  scoring device permutes the rest, and the permutation is cut into ``G`` contiguous groups.
- ``G > M`` (more groups than negatives) is clamped to ``G = M`` (every negative its own group) and
  logged; the effective value is what any grouping gives when groups cannot be filled.
"""

from __future__ import annotations

import logging
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from negvocab.errors import InputError

logger = logging.getLogger(__name__)

Grouping = Literal["stratified", "random", "neglabel"]
GROUPINGS: tuple[str, ...] = ("stratified", "random", "neglabel")
#: groupings that draw a permutation (each pool size is scored from a layout of its own)
_PERMUTED = ("random", "neglabel")
#: default budget for the largest per-chunk matrix (bytes); a few such temporaries live at once
DEFAULT_CHUNK_BYTES = 64 * 2**20
JOINT_SEGMENT = 256

__all__ = [
    "METHODS",
    "NEEDS_NEGATIVES",
    "TopkScores",
    "eoe",
    "eoe_prefixes",
    "explain",
    "glmcm",
    "mcm",
    "neglabel",
    "neglabel_eoe",
    "neglabel_eoe_prefixes",
    "neglabel_groups",
    "neglabel_prefixes",
    "neglabel_topk",
    "score",
]


# ----------------------------------------------------------------------------------------------
# input handling
# ----------------------------------------------------------------------------------------------
def _resolve_device(device: Any, *arrays: Any) -> torch.device:
    if device is None or device == "auto":
        for a in arrays:
            if isinstance(a, torch.Tensor):
                return a.device
        if device == "auto" and torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InputError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N' or 'auto'") from e


def _dtype_of(*arrays: Any) -> torch.dtype:
    """float64 if any input is float64, else float32 (lists and other array-likes: float32)."""
    for a in arrays:
        dt = getattr(a, "dtype", None)
        if dt in (np.float64, torch.float64):
            return torch.float64
    return torch.float32


def _as_tensor(x: Any, name: str, ndim: int, device: torch.device, dtype: torch.dtype | None) -> torch.Tensor:
    """Validate an embedding array and move it to ``device``/``dtype`` (no copy when already there;
    ``dtype=None`` keeps a floating dtype)."""
    x = embeddings_of(x)
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.from_numpy(np.ascontiguousarray(np.asarray(x)))
        except (TypeError, ValueError) as e:
            raise InputError(f"{name} must be a numeric array, got {type(x).__name__}") from e
    if x.ndim != ndim:
        shape = "[n, d]" if ndim == 2 else "[n, p, d]"
        raise InputError(f"{name} must be {ndim}-D {shape}, got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise InputError(f"{name} is empty (shape {tuple(x.shape)})")
    if not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
        raise InputError(f"{name} must hold floating-point values, got {x.dtype}")
    if dtype is None:
        dtype = x.dtype if x.is_floating_point() else torch.float32
    return x.to(device=device, dtype=dtype)


#: largest accepted deviation of an embedding's L2 norm from 1 (fp16/bf16 round-offs are ~1e-3)
NORM_TOLERANCE = 1e-2


def _check_unit_rows(x: torch.Tensor, name: str) -> None:
    """Every embedding (last axis) of ``x`` is finite and L2-normalised; checked in chunks of rows."""
    step = max(1, (1 << 22) // max(1, x[0].numel()))
    for i in range(0, x.shape[0], step):
        norms = torch.linalg.vector_norm(x[i : i + step].float(), dim=-1)
        if not bool(torch.isfinite(norms).all()):
            raise InputError(f"{name} contains NaN or infinite values")
        worst = float((norms - 1).abs().max())
        if worst > NORM_TOLERANCE:
            off = float(norms.flatten()[int((norms - 1).abs().flatten().argmax())])
            raise InputError(
                f"{name} is not L2-normalised (an embedding of norm {off:.4g}); "
                "divide each by its norm (negvocab's encoders already do)"
            )


def _check_dims(**named: torch.Tensor) -> None:
    dims = {name: t.shape[-1] for name, t in named.items()}
    if len(set(dims.values())) > 1:
        raise InputError(f"embedding dimensions differ: {dims}; use embeddings from the same model")


def _positive(value: float, name: str) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise InputError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _chunk_rows(n: int, width: int, itemsize: int, chunk_size: int | None) -> int:
    """Images per chunk: ``chunk_size`` or as many as fit ``DEFAULT_CHUNK_BYTES`` for ``width`` columns."""
    if chunk_size is not None:
        if int(chunk_size) < 1:
            raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
        return int(chunk_size)
    return max(1, min(n, DEFAULT_CHUNK_BYTES // max(1, width * itemsize)))


def _prepare(
    image_emb: Any, id_emb: Any, neg_emb: Any, device: Any, *, need_neg: bool, method: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    if need_neg and neg_emb is None:
        raise InputError(f"{method} needs negative (or outlier) label embeddings: pass neg_emb")
    dev = _resolve_device(device, image_emb, id_emb, neg_emb)
    dtype = _dtype_of(embeddings_of(image_emb), id_emb, neg_emb)
    v = _as_tensor(image_emb, "image_emb", 2, dev, dtype)
    t = _as_tensor(id_emb, "id_emb", 2, dev, dtype)
    n = _as_tensor(neg_emb, "neg_emb", 2, dev, dtype) if neg_emb is not None else None
    named = {"image_emb": v, "id_emb": t, **({"neg_emb": n} if n is not None else {})}
    _check_dims(**named)
    for name, x in named.items():
        _check_unit_rows(x, name)
    return v, t, n


def embeddings_of(x: Any) -> Any:
    """The array behind an :class:`~negvocab.ImageEmbeddings` (``.embeddings``); arrays as they are."""
    if hasattr(x, "embeddings") and not isinstance(x, (np.ndarray, torch.Tensor)):
        return x.embeddings
    return x


def _out(parts: list[torch.Tensor]) -> np.ndarray:
    return torch.cat(parts).to("cpu", torch.float64).numpy()


# ----------------------------------------------------------------------------------------------
# MCM, GL-MCM, EOE
# ----------------------------------------------------------------------------------------------
def _max_softmax(logits: torch.Tensor) -> torch.Tensor:
    """max_i softmax_i(logits) along the last axis, = exp(max - logsumexp)."""
    return torch.exp(logits.amax(-1) - torch.logsumexp(logits, -1))


def mcm(
    image_emb: Any,
    id_emb: Any,
    *,
    T: float = 1.0,
    device: Any = None,
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
    T = _positive(T, "T")
    v, t, _ = _prepare(image_emb, id_emb, None, device, need_neg=False, method="mcm")
    step = _chunk_rows(len(v), t.shape[0], v.element_size(), chunk_size)
    return _out([_max_softmax(v[i : i + step] @ t.T / T) for i in range(0, len(v), step)])


def glmcm(
    image_emb: Any,
    id_emb: Any,
    local: Any = None,
    *,
    lam: float = 1.0,
    T: float = 1.0,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Global-Local MCM (Miyai et al., "Zero-shot in-distribution detection in multi-object
    settings using vision-language foundation models", 2023).

    .. math:: S(v) = \mathrm{MCM}(v) + \lambda \max_p \max_i
              \frac{e^{\cos(z_p, t_i)/T}}{\sum_k e^{\cos(z_p, t_k)/T}}

    with local (patch) features ``z_p`` from the value path of the last ViT block.

    Parameters
    ----------
    image_emb : array or tensor, shape (n, d), or an ``ImageEmbeddings`` with ``.local``
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
    T = _positive(T, "T")
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam >= 0):
        raise InputError(f"lam must be a non-negative number, got {lam!r}")
    if local is None:
        local = getattr(image_emb, "local", None)
    if local is None:
        raise InputError("glmcm needs local (patch) features: pass local=[n, p, d] (encode_images(local_features=True))")
    v, t, _ = _prepare(image_emb, id_emb, None, device, need_neg=False, method="glmcm")
    # the [n, p, d] patch features stay where and as they are (float16 halves them) and go to the
    # device and the compute dtype a chunk at a time
    z = _as_tensor(local, "local", 3, local.device if isinstance(local, torch.Tensor) else torch.device("cpu"), None)
    _check_dims(image_emb=v, id_emb=t, local=z)
    if z.shape[0] != v.shape[0]:
        raise InputError(f"local has {z.shape[0]} images but image_emb has {v.shape[0]}")
    _check_unit_rows(z, "local")
    step = _chunk_rows(len(v), (t.shape[0] + v.shape[1]) * z.shape[1], v.element_size(), chunk_size)
    out = []
    for i in range(0, len(v), step):
        glob = _max_softmax(v[i : i + step] @ t.T / T)
        loc = _max_softmax(z[i : i + step].to(v.device, v.dtype) @ t.T / T).amax(-1)
        out.append(glob + lam * loc)
    return _out(out)


def eoe(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""Envisioning Outlier Exposure (Cao et al., "Envisioning outlier exposure by large language
    models for out-of-distribution detection", ICML 2024).

    One softmax over ID labels and outlier labels, :math:`p_k = e^{\cos(v,t_k)/T} / \sum_{k'}
    e^{\cos(v,t_{k'})/T}` with k over ID ∪ outliers, and

    .. math:: S(v) = \max_{i \in ID} p_i - \beta \max_{j \in outliers} p_j

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); neg_emb : (M, d)
        L2-normalised embeddings; ``neg_emb`` are the envisioned outlier labels.
    beta : float, default 0.25
        Weight of the outlier penalty.
    T : float, default 1
        Softmax temperature on cosine similarities.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    T = _positive(T, "T")
    beta = _finite(beta, "beta")
    v, t, n = _prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="eoe")
    assert n is not None
    p_id, p_neg = _joint_max_probs(v, t, n, T, chunk_size)[n.shape[0]]
    return p_id - beta * p_neg


def _finite(value: float, name: str) -> float:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value)):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _joint_max_probs(
    v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, T: float, chunk_size: int | None, sizes: Sequence[int] | None = None
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{M: (max_ID p, max_neg p)}`` of one softmax over ID ∪ the first M negatives of cos/T, per
    image, for every M in ``sizes`` (default: all negatives). One pass: each segment of negatives
    between two sizes adds its log-sum-exp and maximum to the running ones."""
    wanted = sorted(set(sizes or [n.shape[0]]))
    # segments of at most JOINT_SEGMENT negatives: on 2 CPU cores EOE at 71,000 labels runs 1.8x faster
    ends = sorted(set(wanted) | set(range(JOINT_SEGMENT, wanted[-1], JOINT_SEGMENT)))
    widest = max(b - a for a, b in zip([0, *ends[:-1]], ends, strict=True))
    step = _chunk_rows(len(v), t.shape[0] + widest, v.element_size(), chunk_size)
    parts: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {m: ([], []) for m in wanted}
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sid = vc @ t.T / T
        lse_id, max_id = torch.logsumexp(sid, -1), sid.amax(-1)
        lse_neg, max_neg, start = None, None, 0
        for m in ends:
            sneg = vc @ n[start:m].T / T
            seg_lse, seg_max = torch.logsumexp(sneg, -1), sneg.amax(-1)
            lse_neg = seg_lse if lse_neg is None else torch.logaddexp(lse_neg, seg_lse)
            max_neg = seg_max if max_neg is None else torch.maximum(max_neg, seg_max)
            if m in parts:
                lse = torch.logaddexp(lse_id, lse_neg)
                parts[m][0].append(torch.exp(max_id - lse))
                parts[m][1].append(torch.exp(max_neg - lse))
            start = m
    return {m: (_out(p_id), _out(p_neg)) for m, (p_id, p_neg) in parts.items()}


def _prefix_sizes(sizes: Sequence[int], m: int, method: str) -> list[int]:
    """``sizes`` as ints, each a prefix size in [1, m] (2.5 or "2" is refused, not truncated)."""
    try:
        out = [operator.index(s) for s in sizes if not isinstance(s, bool)]
    except TypeError:
        out = []
    if not out or len(out) != len(sizes) or any(not 1 <= s <= m for s in out):
        raise InputError(f"{method} prefix sizes must be integers in [1, {m}], got {list(sizes)}")
    return out


def eoe_prefixes(
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Sequence[int],
    *,
    beta: float = 0.25,
    T: float = 1.0,
    device: Any = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """:func:`eoe` scores with the first M ranked outlier labels for every M in ``sizes``, in one
    pass over the labels (about one :func:`eoe` run at ``max(sizes)``).

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: eoe(image_emb, id_emb, ranked_neg_emb[:M], beta=beta, T=T)}``.
    """
    T = _positive(T, "T")
    beta = _finite(beta, "beta")
    v, t, n = _prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="eoe")
    assert n is not None
    probs = _joint_max_probs(v, t, n, T, chunk_size, _prefix_sizes(sizes, n.shape[0], "eoe"))
    return {m: p_id - beta * p_neg for m, (p_id, p_neg) in probs.items()}


# ----------------------------------------------------------------------------------------------
# NegLabel
# ----------------------------------------------------------------------------------------------
def _effective_groups(groups: int, m: int) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise InputError(f"groups must be an integer >= 1, got {groups!r}")
    if groups > m:
        logger.info("groups=%d > %d negatives: clamped to %d (one negative per group)", groups, m, m)
        return m
    return int(groups)


def neglabel_groups(
    m: int, groups: int = 100, grouping: Grouping = "stratified", seed: int = 0, *, device: Any = "cpu"
) -> list[np.ndarray]:
    """The NegLabel groups of ``m`` ranked negatives: a list of index arrays (ranks into the vocabulary).

    ``"stratified"``: rank ``r`` goes to group ``r mod G`` (each group spans near and far labels, and
    the first M ranks of each group are a prefix of that group, which makes sweeps cheap).
    ``"random"``: ``numpy.random.default_rng(seed).permutation(m)`` split into ``G`` contiguous groups of
    near-equal size (NegLabel's scheme, without dropping the last ``m mod G`` negatives).
    ``"neglabel"``: NegLabel's released code (``ScalableClassifier.grouping``): the last ``m mod G``
    negatives are dropped, the remaining ``m'`` are permuted by ``torch.randperm(m')`` after
    ``torch.manual_seed(seed)`` on ``device`` and cut into ``G`` contiguous groups of ``m' / G``.
    torch's CPU and CUDA generators give different permutations: NegLabel drew theirs on the GPU
    it scored on, so its published numbers are matched by scoring on a CUDA device (README,
    "Reproducing published numbers"). ``G`` is clamped to ``m``. Every kept rank is in exactly one
    group.
    """
    if m < 1:
        raise InputError(f"need at least one negative label, got {m}")
    g = _effective_groups(groups, m)
    if grouping == "stratified":
        return [np.arange(j, m, g) for j in range(g)]
    if grouping == "random":
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InputError(f"seed must be an integer >= 0 (random grouping), got {seed!r}")
        perm = np.random.default_rng(seed).permutation(m)
        return list(np.array_split(perm, g))
    if grouping == "neglabel":
        kept = m - m % g
        dev = torch.device(device) if not isinstance(device, torch.device) else device
        gen = torch.Generator(device=dev).manual_seed(int(seed))  # = torch.manual_seed(seed) on that device
        idx = torch.randperm(kept, generator=gen, device=dev).cpu().numpy()
        return list(idx.reshape(g, kept // g))
    raise InputError(f"unknown grouping {grouping!r}; choose one of {', '.join(GROUPINGS)}")


def _layout(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rank-major padded layout: ``index[l, g]`` = rank of the l-th member of group g, or -1."""
    g = len(groups)
    length = max(len(x) for x in groups)
    index = np.full((length, g), -1, dtype=np.int64)
    for j, members in enumerate(groups):
        index[: len(members), j] = members
    return index, index >= 0


def _layout_embeddings(neg: torch.Tensor, index: np.ndarray) -> torch.Tensor:
    """Negative embeddings in layout order ``[L*G, d]``; padding rows are zero (masked later)."""
    flat = torch.as_tensor(index.reshape(-1), device=neg.device)
    out = neg[flat.clamp(min=0)]
    out[flat < 0] = 0
    return out


Segment = tuple[int, int, list[tuple[int, torch.Tensor]]]


def _neglabel_setup(
    neg: torch.Tensor, sizes: Sequence[int], groups: int, grouping: str, seed: int
) -> tuple[torch.Tensor, int, list[Segment], list[int], torch.Tensor | None]:
    """Layout and segments for scoring every pool size in ``sizes`` (prefixes of the ranking).

    Returns (layout embeddings [L*G, d], G, segments, small sizes, padded columns of the last row).
    Segment k adds the ranks ``[sizes[k-1], sizes[k])``: whole layout rows ``[r0, r1)`` plus partial
    rows ``(row, 0/1 mask [G])``; the running sum over segments is each group's mass at that size.
    Sizes below G (clamped to one negative per group) are returned separately.
    """
    m_max = max(sizes)
    g = _effective_groups(groups, m_max)
    if grouping in _PERMUTED and len(sizes) > 1:
        raise ValueError("a permuted grouping scores one size per layout")  # internal: sweep loops instead
    index, valid = _layout(neglabel_groups(m_max, g, grouping, seed, device=neg.device))
    lay = _layout_embeddings(neg, index)
    big = sorted(s for s in set(sizes) if s >= g)
    small = sorted(s for s in set(sizes) if s < g)
    segments: list[Segment] = []
    prev = 0
    for size in big:
        # stratified: rank r sits at row r // G; permuted groupings have a single size == m_max
        rows = range(prev // g, -(-size // g)) if grouping == "stratified" else range(len(index))
        full, partial = [], []
        for r in rows:
            inside = valid[r] & (index[r] >= prev) & (index[r] < size)
            if inside.all() or (grouping in _PERMUTED and (inside == valid[r]).all()):
                full.append(r)  # padding (invalid) entries are zero after the exponential
            elif inside.any():
                partial.append((r, torch.as_tensor(inside, dtype=neg.dtype, device=neg.device)))
        r0, r1 = (full[0], full[-1] + 1) if full else (0, 0)
        assert r1 - r0 == len(full)
        segments.append((r0, r1, partial))
        prev = size
    pad = np.flatnonzero(~valid[-1])
    return lay, g, segments, small, (torch.as_tensor(pad, device=neg.device) if pad.size else None)


def _shifted_lse(cos: torch.Tensor, tau: float) -> torch.Tensor:
    """float64 ``logsumexp(cos / tau)`` along the last axis, exponentials in the input precision.

    ``log(sum exp((cos - max) / tau)) + max / tau``: the terms are in (0, 1], the one at the max is
    1, so the sum is exact to float32 rounding and terms that underflow are below 1e-38 of it.
    (Consumes ``cos``.)
    """
    cmax = cos.amax(-1, keepdim=True)
    mass = cos.sub_(cmax).mul_(1.0 / tau).exp_().sum(-1)
    return torch.log(mass.double()) + cmax[..., 0].double() / tau


def _neglabel_chunk(
    v: torch.Tensor,
    t: torch.Tensor,
    lay: torch.Tensor,
    g: int,
    segments: list[Segment],
    small: list[int],
    tau: float,
    rows_needed: int,
    pad: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """NegLabel for one image chunk at each size, and EOE's penalty at each size.

    Each image's negative logits are shifted by that image's largest one, exponentiated in place in
    the input precision (no term overflows; with cosines and tau = 0.01 none that matters underflows)
    and summed per group; group masses accumulate across segments in float64. The ID log-mass is an
    exact float64 log-sum-exp. Returns (scores [n, n_big], scores of small sizes [n, n_small], a
    flag [n] for images whose smallest group mass fell below 1e-30 of the largest term (to be
    recomputed by :func:`_neglabel_chunk_exact`), and the penalties [n, n_big], [n, n_small]: the
    top negative's probability in one softmax of cos/tau over ID ∪ the first M negatives.
    """
    n = v.shape[0]
    a = _shifted_lse(v @ t.T, tau)  # [n], float64
    cos = (v @ lay[: rows_needed * g].T).view(n, rows_needed, g)
    if pad is not None and rows_needed * g == lay.shape[0]:
        cos[:, -1, pad] = float("-inf")
    small_out, small_pen = [], []
    if small:
        # rank r < G is alone in group r: S(M) = mean_{r<M} sigmoid(a - s_r)
        s0 = cos[:, 0, : max(small)].double() / tau
        per = torch.cumsum(torch.sigmoid(a[:, None] - s0), 1)
        small_out = [per[:, m - 1] / m for m in small]
        top, lse = torch.cummax(s0, 1).values, torch.logcumsumexp(s0, 1)
        small_pen = [torch.exp(top[:, m - 1] - torch.logaddexp(a, lse[:, m - 1])) for m in small]
    cmax = cos.reshape(n, -1).amax(1)
    if len(segments) == 1 and segments[0][:2] == (0, rows_needed) and not segments[0][2]:
        seg_max = [cmax]  # one segment of every row: its maximum is the one just taken
    else:
        seg_max = [_segment_max(cos, r0, r1, partial) for r0, r1, partial in segments]  # before exp_ overwrites cos
    e = cos.view(n, -1).sub_(cmax[:, None]).mul_(1.0 / tau).exp_().view(n, rows_needed, g)
    shift = cmax.double()[:, None] / tau
    acc = torch.zeros((n, g), dtype=torch.float64, device=v.device)
    flag = torch.zeros(n, dtype=torch.bool, device=v.device)
    big, big_pen = [], []
    top = None
    for (r0, r1, partial), m in zip(segments, seg_max, strict=True):
        if r1 > r0:
            acc += e[:, r0:r1].sum(1).double()
        for r, mask in partial:
            acc += (e[:, r] * mask).double()
        flag |= (acc < 1e-30).any(1)  # the total below 1e-30 too: such images are recomputed
        big.append(torch.sigmoid(a[:, None] - (torch.log(acc) + shift)).mean(1))
        top = m if top is None else torch.maximum(top, m)
        big_pen.append(torch.exp(top.double() / tau - torch.logaddexp(a, torch.log(acc.sum(1)) + shift[:, 0])))
    stack = lambda xs: torch.stack(xs, 1) if xs else a.new_zeros((n, 0))  # noqa: E731
    return stack(big), stack(small_out), flag, stack(big_pen), stack(small_pen)


def _segment_max(x: torch.Tensor, r0: int, r1: int, partial: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    """Per image, the largest entry of ``x`` [n, rows, G] in rows r0..r1 and the masked partial rows."""
    parts = [x[:, r0:r1].amax((1, 2))] if r1 > r0 else []
    parts += [x[:, r].masked_fill(mask == 0, float("-inf")).amax(1) for r, mask in partial]
    return torch.stack(parts).amax(0)


def _neglabel_chunk_exact(
    v: torch.Tensor, t: torch.Tensor, lay: torch.Tensor, g: int, segments: list[Segment], tau: float, rows_needed: int, pad: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same scores and penalties of big sizes with a float64 log-sum-exp per group (slower;
    for extreme logit ranges)."""
    n = v.shape[0]
    a = torch.logsumexp((v @ t.T).double() / tau, -1)
    s = ((v @ lay[: rows_needed * g].T).double() / tau).view(n, rows_needed, g)
    if pad is not None and rows_needed * g == lay.shape[0]:
        s[:, -1, pad] = float("-inf")
    b = torch.full((n, g), float("-inf"), dtype=torch.float64, device=v.device)
    big, big_pen = [], []
    top = None
    for r0, r1, partial in segments:
        parts = [b, torch.logsumexp(s[:, r0:r1], 1)] if r1 > r0 else [b]
        for r, mask in partial:
            parts.append(s[:, r] + torch.log(mask.double()))
        b = torch.logsumexp(torch.stack(parts), 0)
        big.append(torch.sigmoid(a[:, None] - b).mean(1))
        m = _segment_max(s, r0, r1, partial)
        top = m if top is None else torch.maximum(top, m)
        big_pen.append(torch.exp(top - torch.logaddexp(a, torch.logsumexp(b, 1))))
    return torch.stack(big, 1), torch.stack(big_pen, 1)


def _neglabel_sizes(v: torch.Tensor, t: torch.Tensor, neg: torch.Tensor, sizes: Sequence[int], **kw: Any) -> dict[int, np.ndarray]:
    """NegLabel scores for every prefix size in ``sizes`` of the ranked negatives (one pass)."""
    return _neglabel_pass(v, t, neg, sizes, **kw)[0]


def _neglabel_pass(
    v: torch.Tensor,
    t: torch.Tensor,
    neg: torch.Tensor,
    sizes: Sequence[int],
    *,
    tau: float,
    groups: int,
    grouping: str,
    seed: int,
    chunk_size: int | None,
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """NegLabel scores and EOE's penalty (temperature ``tau``) for every prefix size in ``sizes``
    of the ranked negatives, in one pass (see :func:`_neglabel_chunk`)."""
    lay, g, segments, small, pad = _neglabel_setup(neg, sizes, groups, grouping, seed)
    big = sorted(s for s in set(sizes) if s >= g)
    rows_needed = min(-(-max(big) // g), lay.shape[0] // g) if big else 1  # neglabel: dropped labels have no row
    step = _chunk_rows(len(v), t.shape[0] + rows_needed * g, v.element_size(), chunk_size)
    outs: list[list[torch.Tensor]] = [[], [], [], []]  # scores big, small; penalties big, small
    n_exact = 0
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sb, ss, flag, pb, ps = _neglabel_chunk(vc, t, lay, g, segments, small, tau, rows_needed, pad)
        if bool(flag.any()) and segments:
            sb[flag], pb[flag] = _neglabel_chunk_exact(vc[flag], t, lay, g, segments, tau, rows_needed, pad)
            n_exact += int(flag.sum())
        for out, x in zip(outs, (sb, ss, pb, ps), strict=True):
            out.append(x.to("cpu", torch.float64))
    if n_exact:
        logger.info("neglabel: %d images needed the float64 log-sum-exp path (extreme logit range)", n_exact)
    res = [torch.cat(out).numpy() for out in outs]
    scores = {m: res[0][:, k].copy() for k, m in enumerate(big)} | {m: res[1][:, k].copy() for k, m in enumerate(small)}
    penalties = {m: res[2][:, k].copy() for k, m in enumerate(big)} | {m: res[3][:, k].copy() for k, m in enumerate(small)}
    return scores, penalties


def neglabel(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""NegLabel score (Jiang et al., "Negative label guided OOD detection with pretrained
    vision-language models", ICLR 2024), grouped, exactly as docs/methods.md#scores.

    With logits :math:`s_i = \cos(v, t_i)/\tau` over ID labels and :math:`\tilde s_j` over the
    negatives of group g,

    .. math:: S_g(v) = \frac{\sum_i e^{s_i}}{\sum_i e^{s_i} + \sum_{j \in g} e^{\tilde s_j}},
              \qquad S(v) = \frac{1}{G} \sum_g S_g(v),

    evaluated as ``mean_g sigmoid(logsumexp(s) - logsumexp(s~_g))``. ``G = 1`` is the ungrouped
    formula. Groups: see :func:`neglabel_groups` (no negative is dropped; ``G > M`` is clamped to M).

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); neg_emb : (M, d)
        L2-normalised embeddings; ``neg_emb`` in vocabulary (ranking) order.
    tau : float, default 0.01
        Temperature on cosine similarities.
    groups : int, default 100
        Number of groups G.
    grouping : {"stratified", "random", "neglabel"}, default "stratified"
        ``"neglabel"``: NegLabel's released code exactly (drops the last ``M mod G`` negatives; see
        :func:`neglabel_groups`).
    seed : int, default 0
        Seed of the random and neglabel groupings' permutation.

    Returns
    -------
    ndarray of float64, shape (n,)
        Scores in (0, 1); higher means more ID.
    """
    tau = _positive(tau, "tau")
    v, t, n = _prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="neglabel")
    assert n is not None
    m = n.shape[0]
    return _neglabel_sizes(v, t, n, [m], tau=tau, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size)[m]


def neglabel_prefixes(
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Sequence[int],
    *,
    tau: float = 0.01,
    groups: int = 100,
    device: Any = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """Stratified :func:`neglabel` scores for every prefix size M in ``sizes``, in one pass.

    With stratified grouping (rank r -> group r mod G) the first M ranked negatives are, in every
    group, a prefix of that group, so each group's log-mass is accumulated segment by segment along
    the ranking and read off at each M. Costs about one :func:`neglabel` run at ``max(sizes)``.

    Parameters
    ----------
    image_emb : (n, d); id_emb : (K, d); ranked_neg_emb : (M_max, d)
        L2-normalised embeddings; negatives in ranking (farthest-first) order.
    sizes : sequence of int
        Prefix sizes, each in [1, M_max].

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: neglabel(image_emb, id_emb, ranked_neg_emb[:M], tau=tau, groups=groups)}``.
    """
    tau = _positive(tau, "tau")
    v, t, n = _prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="neglabel")
    assert n is not None
    wanted = _prefix_sizes(sizes, n.shape[0], "neglabel")
    return _neglabel_sizes(v, t, n, wanted, tau=tau, groups=groups, grouping="stratified", seed=0, chunk_size=chunk_size)


def neglabel_eoe(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Any = None,
    chunk_size: int | None = None,
) -> np.ndarray:
    r"""NegLabel with EOE's penalty term on top (as used in the Fi-ImageNet-1k paper).

    .. math:: S(v) = S_{NegLabel}(v) - \beta \max_{j \in neg} p_j, \qquad
              p_k = \frac{e^{\cos(v,t_k)/T_p}}{\sum_{k' \in ID \cup neg} e^{\cos(v,t_{k'})/T_p}}

    i.e. EOE's penalty (the largest probability of any negative label in ONE softmax over the ID
    labels and all M negatives, ungrouped) subtracted from the grouped NegLabel score.
    The penalty temperature ``penalty_T`` (:math:`T_p`) defaults to ``tau`` so that the penalty
    lives on the same logit scale as the NegLabel term (with :math:`T_p = 1` on cosines and thousands
    of labels the penalty is ~1e-4 and vanishes). It is named apart from the ``T`` of MCM and EOE
    so that one set of parameters can drive every scorer.

    Parameters are those of :func:`neglabel` plus ``beta`` (default 0.25) and ``penalty_T``.

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    tau = _positive(tau, "tau")
    temp = tau if penalty_T is None else _positive(penalty_T, "penalty_T")
    beta = _finite(beta, "beta")
    v, t, n = _prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="neglabel_eoe")
    assert n is not None
    m = n.shape[0]
    return _neglabel_eoe_sizes(v, t, n, [m], tau=tau, temp=temp, beta=beta, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size)[m]


def _neglabel_eoe_sizes(
    v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, sizes: Sequence[int], *, tau: float, temp: float, beta: float, **kw: Any
) -> dict[int, np.ndarray]:
    """NegLabel+EOE at every prefix size: the penalty comes off NegLabel's pass when its
    temperature ``temp`` is ``tau``, else from a pass of its own."""
    base, penalty = _neglabel_pass(v, t, n, sizes, tau=tau, **kw)
    g = _effective_groups(kw["groups"], max(sizes))
    if temp != tau or (kw["grouping"] == "neglabel" and max(sizes) % g):  # the penalty sees every negative, dropped or not
        penalty = {m: p_neg for m, (_, p_neg) in _joint_max_probs(v, t, n, temp, kw["chunk_size"], sizes).items()}
    return {m: base[m] - beta * penalty[m] for m in sorted(set(sizes))}


def neglabel_eoe_prefixes(
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Sequence[int],
    *,
    tau: float = 0.01,
    groups: int = 100,
    beta: float = 0.25,
    penalty_T: float | None = None,
    device: Any = None,
    chunk_size: int | None = None,
) -> dict[int, np.ndarray]:
    """Stratified :func:`neglabel_eoe` scores with the first M ranked negatives for every M in
    ``sizes``, in one pass (as :func:`neglabel_prefixes`; a second one when ``penalty_T != tau``).

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: neglabel_eoe(image_emb, id_emb, ranked_neg_emb[:M], tau=tau, groups=groups, beta=beta,
        penalty_T=penalty_T)}``.
    """
    tau = _positive(tau, "tau")
    temp = tau if penalty_T is None else _positive(penalty_T, "penalty_T")
    beta = _finite(beta, "beta")
    v, t, n = _prepare(image_emb, id_emb, ranked_neg_emb, device, need_neg=True, method="neglabel_eoe")
    assert n is not None
    wanted = _prefix_sizes(sizes, n.shape[0], "neglabel_eoe")
    return _neglabel_eoe_sizes(v, t, n, wanted, tau=tau, temp=temp, beta=beta, groups=groups, grouping="stratified", seed=0, chunk_size=chunk_size)


# ----------------------------------------------------------------------------------------------
# NegLabel, top-k with a certified bound
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopkScores:
    """NegLabel scores from each image's k nearest negatives, with certified bounds.

    Attributes
    ----------
    scores : (n,) the top-k estimate (negatives outside the top k contribute nothing); it equals
        ``upper``.
    lower, upper : (n,) certified bounds: the exact NegLabel score lies in ``[lower, upper]``.
        ``upper`` omits the missing mass; ``lower`` adds its bound ``(M_g - k_g) e^{s~_k}`` per group.
    log_omitted_bound : (n,) ``log((M - k) e^{s~_k})``: log of the bound on the omitted negative mass
        (``s~_k`` = the k-th largest negative logit ``cos/tau``; -inf when k = M).
    k : the number of neighbours used.
    """

    scores: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    log_omitted_bound: np.ndarray
    k: int

    @property
    def max_gap(self) -> float:
        """Largest ``upper - lower`` over images: how far the estimate can be from the exact score."""
        return float(np.max(self.upper - self.lower))


def _nearest_negatives(v: torch.Tensor, n: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each image's ``k`` nearest negatives: (cosines [N, k] descending, indices [N, k]).

    The search is :func:`negvocab.index.knn` (exact FAISS ``IndexFlatIP``, GPU when available) over
    all images at once; the retrieved cosines are then recomputed from the indices in the working
    precision, so the scores do not inherit FAISS's float32 rounding.
    """
    from negvocab.index import knn

    _, idx_np = knn(v.float().cpu().numpy(), n.float().cpu().numpy(), k, device=str(v.device))
    idx = torch.as_tensor(idx_np, device=v.device, dtype=torch.int64)
    cos = torch.empty(idx.shape, dtype=v.dtype, device=v.device)
    step = max(1, (1 << 24) // max(1, k * v.shape[1]))  # bounds the gathered [c, k, d] block
    for i in range(0, len(v), step):
        block = n[idx[i : i + step]]  # [c, k, d]
        cos[i : i + step] = torch.bmm(block, v[i : i + step, :, None])[..., 0]
    cos, order = torch.sort(cos, dim=1, descending=True)
    return cos, idx.gather(1, order)


def neglabel_topk(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    k: int,
    *,
    tau: float = 0.01,
    groups: int = 100,
    grouping: Grouping = "stratified",
    seed: int = 0,
    device: Any = None,
    chunk_size: int | None = None,
) -> TopkScores:
    r"""NegLabel from each image's ``k`` nearest negatives (an exact FAISS inner-product search).

    Each group's negative mass :math:`B_g = \sum_{j\in g} e^{\tilde s_j}` is replaced by the part
    over the group's members among the image's top k, :math:`\hat B_g`. The omitted members all have
    :math:`\tilde s_j \le \tilde s_{(k)}` (the k-th largest), so
    :math:`\hat B_g \le B_g \le \hat B_g + (M_g - k_g) e^{\tilde s_{(k)}}` and, S_g being decreasing
    in B_g, the exact score is certified to lie in ``[lower, upper]`` (see :class:`TopkScores`).
    Cost: the exact search still forms every image-negative product (FAISS ``IndexFlatIP``), so
    it is not faster than :func:`neglabel` (on 2 CPU cores 0.8x its time at k=16, 1.4x at k=256);
    it answers how much of the score the k nearest negatives carry, with the bound saying when k
    suffices.

    Returns
    -------
    TopkScores
    """
    tau = _positive(tau, "tau")
    v, t, n = _prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="neglabel topk")
    assert n is not None
    m = n.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= m:
        raise InputError(f"topk must be an integer in [1, {m}] (the number of negatives), got {k!r}")
    k = int(k)
    grp = neglabel_groups(m, groups, grouping, seed, device=v.device)
    if grouping == "neglabel":  # the dropped negatives are not searched: keep the grouped ones, in group order
        kept = np.concatenate(grp)
        n, m = n[torch.as_tensor(kept, device=n.device)], len(kept)
        k = min(k, m)
        grp = list(np.arange(m).reshape(len(grp), -1))
    g = len(grp)
    group_of = np.empty(m, dtype=np.int64)
    for j, members in enumerate(grp):
        group_of[members] = j
    group_of_t = torch.as_tensor(group_of, device=v.device)
    sizes_t = torch.as_tensor([len(x) for x in grp], device=v.device, dtype=v.dtype)
    cos_all, idx_all = _nearest_negatives(v, n, k)
    step = _chunk_rows(len(v), t.shape[0] + k + g, v.element_size(), chunk_size)
    lows, ups, oms = [], [], []
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        a = torch.logsumexp(vc @ t.T / tau, -1)
        s = cos_all[i : i + step] / tau  # [c, k] descending
        gid = group_of_t[idx_all[i : i + step]]  # [c, k]
        # per-group log-sum-exp of the retrieved logits, shifted by each group's max for stability
        gmax = torch.full((len(vc), g), float("-inf"), dtype=v.dtype, device=v.device)
        gmax = gmax.scatter_reduce(1, gid, s, reduce="amax")
        shift = torch.where(torch.isfinite(gmax), gmax, torch.zeros_like(gmax))
        acc = torch.zeros_like(gmax).scatter_add(1, gid, torch.exp(s - shift.gather(1, gid)))
        b_hat = torch.log(acc) + shift  # -inf where a group has no retrieved member
        counts = torch.zeros_like(gmax).scatter_add(1, gid, torch.ones_like(s))
        missing = sizes_t[None, :] - counts
        s_k = s[:, -1:]  # every omitted negative has a logit <= s_k
        log_miss = torch.where(missing > 0, torch.log(missing.clamp(min=1)) + s_k, torch.full_like(missing, float("-inf")))
        ups.append(torch.sigmoid(a[:, None] - b_hat).mean(1))
        lows.append(torch.sigmoid(a[:, None] - torch.logaddexp(b_hat, log_miss)).mean(1))
        total_missing = m - k
        oms.append(s_k[:, 0] + math.log(total_missing) if total_missing > 0 else torch.full_like(s_k[:, 0], float("-inf")))
    upper = _out(ups)
    return TopkScores(scores=upper, lower=_out(lows), upper=upper, log_omitted_bound=_out(oms), k=k)


# ----------------------------------------------------------------------------------------------
# explanations
# ----------------------------------------------------------------------------------------------
def explain(
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    *,
    id_labels: Sequence[str],
    neg_labels: Sequence[str],
    k: int = 5,
    tau: float = 0.01,
    device: Any = None,
    chunk_size: int | None = None,
) -> list[dict[str, Any]]:
    r"""Which labels drove each image's NegLabel score.

    For every image, the ``k`` negatives and the ``k`` ID classes with the largest contribution
    :math:`e^{s_k}` (ungrouped), each with its cosine and its share
    :math:`e^{s_k} / (\sum_{ID} e^{s_i} + \sum_{neg} e^{\tilde s_j})` (one softmax over ID ∪
    negatives at ``tau``), and the total negative share (1 - the ungrouped NegLabel score).

    Returns
    -------
    list of dict, one per image:
        ``{"negative_share": float, "top_negatives": [{"label", "cosine", "share"}, ...],
        "top_id": [{"label", "cosine", "share"}, ...]}``
    """
    tau = _positive(tau, "tau")
    v, t, n = _prepare(image_emb, id_emb, neg_emb, device, need_neg=True, method="explain")
    assert n is not None
    if len(id_labels) != t.shape[0] or len(neg_labels) != n.shape[0]:
        raise InputError(
            f"label lists do not match the embeddings: {len(id_labels)} ID labels for {t.shape[0]} rows, "
            f"{len(neg_labels)} negatives for {n.shape[0]} rows"
        )
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    k_neg, k_id = min(int(k), n.shape[0]), min(int(k), t.shape[0])
    step = _chunk_rows(len(v), t.shape[0] + n.shape[0], v.element_size(), chunk_size)
    result: list[dict[str, Any]] = []
    for i in range(0, len(v), step):
        vc = v[i : i + step]
        sid, sneg = vc @ t.T, vc @ n.T  # one product gives the negative mass and the top negatives
        a = torch.logsumexp(sid / tau, -1)
        b = torch.logsumexp(sneg / tau, -1)
        total = torch.logaddexp(a, b)
        dn, in_ = torch.topk(sneg, k_neg, dim=1)
        di, ii = torch.topk(sid, k_id, dim=1)
        share_n = torch.exp(dn / tau - total[:, None]).cpu().numpy()
        share_i = torch.exp(di / tau - total[:, None]).cpu().numpy()
        neg_share = torch.exp(b - total).cpu().numpy()
        dn, in_, di, ii = (x.cpu().numpy() for x in (dn, in_, di, ii))
        for r in range(len(vc)):
            result.append(
                {
                    "negative_share": float(neg_share[r]),
                    "top_negatives": [
                        {"label": neg_labels[int(j)], "cosine": float(c), "share": float(p)}
                        for j, c, p in zip(in_[r], dn[r], share_n[r], strict=True)
                    ],
                    "top_id": [
                        {"label": id_labels[int(j)], "cosine": float(c), "share": float(p)}
                        for j, c, p in zip(ii[r], di[r], share_i[r], strict=True)
                    ],
                }
            )
    return result


# ----------------------------------------------------------------------------------------------
# dispatch
# ----------------------------------------------------------------------------------------------
METHODS: dict[str, Callable[..., np.ndarray]] = {
    "mcm": mcm,
    "glmcm": glmcm,
    "neglabel": neglabel,
    "eoe": eoe,
    "neglabel_eoe": neglabel_eoe,
}
_ALIASES = {"gl-mcm": "glmcm", "gl_mcm": "glmcm", "neglabel+eoe": "neglabel_eoe", "neglabel-eoe": "neglabel_eoe"}
#: the methods that take negative (or outlier) label embeddings
NEEDS_NEGATIVES: frozenset[str] = frozenset({"neglabel", "eoe", "neglabel_eoe"})


def canonical_method(method: str) -> str:
    """The registered name of ``method`` (case-insensitive, aliases accepted) or :class:`InputError`."""
    key = str(method).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return key


def score(
    method: str,
    image_emb: Any,
    id_emb: Any,
    neg_emb: Any = None,
    **params: Any,
) -> np.ndarray | TopkScores:
    """Score images with a zero-shot OOD method by name: one float64 score per image, high = ID.

    Parameters
    ----------
    method : {"mcm", "glmcm", "neglabel", "eoe", "neglabel_eoe"}
        Aliases: "gl-mcm", "neglabel+eoe".
    image_emb : array or tensor, shape (n, d), or an ``ImageEmbeddings``
    id_emb : array or tensor, shape (K, d)
    neg_emb : array or tensor, shape (M, d), optional
        Negative (or outlier) label embeddings; required by neglabel, eoe, neglabel_eoe.
    **params
        Passed to the scorer: ``tau``, ``groups``, ``grouping``, ``seed`` (NegLabel); ``beta``,
        ``T`` (EOE); ``T`` (MCM); ``local``, ``lam``, ``T`` (GL-MCM); ``beta``, ``penalty_T``
        (NegLabel + EOE); ``device``, ``chunk_size``.
        ``topk=k`` (NegLabel only) sums each image's k nearest negatives; with ``return_bounds=True``
        it returns the :class:`TopkScores` (estimate, certified lower/upper bounds) instead.

    Returns
    -------
    ndarray of float64, shape (n,), or TopkScores

    Examples
    --------
    >>> import numpy as np, negvocab
    >>> rng = np.random.default_rng(0)
    >>> unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
    >>> img, idt, neg = (unit(rng.normal(size=(n, 8))).astype("float32") for n in (3, 5, 20))
    >>> negvocab.score("neglabel", img, idt, neg, groups=4).shape
    (3,)
    """
    key = canonical_method(method)
    topk = params.pop("topk", None)
    return_bounds = params.pop("return_bounds", False)
    if topk is not None:
        if key != "neglabel":
            raise InputError(f"topk is only available for neglabel, not {key}")
        res = neglabel_topk(image_emb, id_emb, neg_emb, topk, **params)
        return res if return_bounds else res.scores
    if return_bounds:
        raise InputError("return_bounds needs topk=k")
    fn = METHODS[key]
    try:
        if key in NEEDS_NEGATIVES:
            return fn(image_emb, id_emb, neg_emb, **params)
        if neg_emb is not None:
            logger.info("%s ignores the negative labels", key)
        return fn(image_emb, id_emb, **params)
    except TypeError as e:
        if "unexpected keyword argument" in str(e):
            raise InputError(f"{key}: {e}".replace(f"{fn.__name__}() ", "")) from e
        raise
