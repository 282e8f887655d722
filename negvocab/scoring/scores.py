"""Zero-shot OOD scores from embeddings: MCM, GL-MCM, NegLabel, EOE, NegLabel + EOE penalty, and the
logit baselines MSP, MaxLogit, Energy and GEN.

Every scorer is a pure function of L2-normalised embeddings (numpy arrays or torch tensors, CPU or
GPU) and returns one float64 score per image, high for in-distribution (ID). The maths runs in torch
on ``device`` (default: the device of ``image_emb`` if it is a tensor, else the CPU), in the
precision of the inputs (float16/bfloat16 are promoted to float32), streaming images in chunks so
memory is bounded by the chunk, never by N x M. Softmax ratios are evaluated with log-sum-exp, so
``tau = 0.01`` (logits up to 100) never overflows.

Use :func:`score` (``negvocab.score``) to dispatch by name through the method registry
(:mod:`negvocab.scoring.methods`, which checks every parameter at this boundary). The scorers live by
concept and are re-exported here: input checks in :mod:`negvocab.scoring.inputs`, MCM/GL-MCM in
:mod:`negvocab.scoring.mcm`, MSP/MaxLogit/Energy/GEN in :mod:`negvocab.scoring.logits`, groups in
:mod:`negvocab.scoring.grouping`, the NegLabel kernel in :mod:`negvocab.scoring.neglabel`, EOE and
NegLabel + EOE in :mod:`negvocab.scoring.eoe`, top-k and explanations in
:mod:`negvocab.scoring.explain`. Formulas follow the methods document (docs/methods.md#scores) and
Rozumnyi et al., "Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k Validation
Set", arXiv:2609.01027.

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
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import Embeddings, MethodArg
from negvocab.scoring import methods as _methods
from negvocab.scoring.eoe import eoe, eoe_prefixes, neglabel_eoe, neglabel_eoe_prefixes
from negvocab.scoring.explain import TopkScores, explain, neglabel_topk
from negvocab.scoring.grouping import GROUPINGS, Grouping, neglabel_groups
from negvocab.scoring.inputs import embeddings_of
from negvocab.scoring.logits import energy, gen, maxlogit, msp
from negvocab.scoring.mcm import glmcm, mcm
from negvocab.scoring.methods import METHODS, canonical_method, check_params, get_method, list_methods
from negvocab.scoring.neglabel import neglabel, neglabel_prefixes

logger = logging.getLogger(__name__)


__all__ = [
    "GROUPINGS",
    "Grouping",
    "METHODS",
    "TopkScores",
    "canonical_method",
    "eoe",
    "eoe_prefixes",
    "embeddings_of",
    "energy",
    "explain",
    "gen",
    "glmcm",
    "maxlogit",
    "mcm",
    "msp",
    "neglabel",
    "neglabel_eoe",
    "neglabel_eoe_prefixes",
    "neglabel_groups",
    "neglabel_prefixes",
    "neglabel_topk",
    "score",
]


def score(
    method: str,
    image_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings | None = None,
    **params: MethodArg,
) -> np.ndarray | TopkScores:
    """Score images with a zero-shot OOD method by name: one float64 score per image, high = ID.

    Parameters
    ----------
    method : str
        A registered method (``negvocab.list_methods()``: the built-ins mcm, glmcm, neglabel, eoe,
        neglabel_eoe, msp, maxlogit, energy, gen, and any registered with ``negvocab.register_method``)
        or an alias ("gl-mcm", "neglabel+eoe").
    image_emb : array or tensor, shape (n, d), or an ImageEmbeddings
    id_emb : array or tensor, shape (K, d)
    neg_emb : array or tensor, shape (M, d), optional
        Negative (or outlier) label embeddings; required by the methods that take them
        (``negvocab.list_methods(needs_negatives=True)``).
    **params
        Passed to the scorer: ``tau``, ``groups``, ``grouping``, ``seed`` (NegLabel); ``beta``,
        ``T`` (EOE); ``T`` (MCM); ``local``, ``lam``, ``T`` (GL-MCM); ``beta``, ``penalty_T``
        (NegLabel + EOE); ``logit_scale`` (MSP, MaxLogit, Energy, GEN: logits = scale x cosine,
        default 100), ``gamma``, ``top_classes`` (GEN); ``device``, ``chunk_size``.
        ``topk=k`` (methods with a top-k form: NegLabel) sums each image's k nearest negatives; with
        ``return_bounds=True`` it returns the :class:`TopkScores` (estimate, certified lower/upper
        bounds) instead.

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
    m = get_method(method)
    key = m.name
    if params.get("topk") is not None and m.topk is None:
        raise InputError(
            f"topk is only available for {', '.join(list_methods(lambda x: x.topk_kernel is not None))}, not {key}"
        )
    check_params(key, {k: v for k, v in params.items() if k != "return_bounds"})
    topk = params.pop("topk", None)
    return_bounds = params.pop("return_bounds", False)
    if topk is not None:
        assert m.topk is not None
        res = m.topk(image_emb, id_emb, neg_emb, topk, **params)
        return res if return_bounds else res.scores
    if return_bounds:
        raise InputError("return_bounds needs topk=k")
    if m.needs_negatives:
        return m.scorer(image_emb, id_emb, neg_emb, **params)
    if neg_emb is not None:
        logger.info("%s ignores the negative labels", key)
    return m.scorer(image_emb, id_emb, **params)


def __getattr__(name: str) -> Any:
    """``NEEDS_NEGATIVES``, deprecated (one release): :func:`negvocab.scoring.methods.needs_negatives`."""
    if name == "NEEDS_NEGATIVES":
        return _methods.__getattr__(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
