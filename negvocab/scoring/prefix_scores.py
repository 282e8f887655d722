"""Vocabulary-size sweeps: score every vocabulary size M from one farthest-first ranking.

A WordNet vocabulary lists its labels farthest first, so the vocabulary of size M is the first M
labels. With NegLabel's stratified grouping (rank r -> group r mod G) the first M ranks of the ranking
are, in every group, a prefix of that group. One pass over the image chunks therefore gives every M:
each group's negative log-mass is accumulated segment by segment along the ranking (a log-sum-exp per
segment, combined with ``logaddexp``), and the score at each M is read off as the pass reaches it. The
sweep costs about one run at the largest M. EOE's softmax over ID ∪ the first M outliers is read off the
same way (a running log-sum-exp and maximum), so EOE and stratified NegLabel+EOE sweep in one pass too.
Random grouping draws a new permutation for each M, and top-k NegLabel searches each prefix, so those
are scored as separate runs (exactly :func:`negvocab.score` per size).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import cast

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import Embeddings, MethodArg
from negvocab.scoring import scores
from negvocab.scoring.methods import batch_method, check_params, get_method, list_methods

logger = logging.getLogger(__name__)

__all__ = ["check_sweep_method", "parse_sizes", "sweep"]


def parse_sizes(sizes: str | Iterable[int], m: int | None = None) -> list[int]:
    """Vocabulary sizes M as sorted unique ints; accepts ``"1000,2000,5k"`` or an iterable of ints.

    Raises :class:`InputError` for an empty list, a size < 1, or (when ``m`` is given) a size above
    the ``m`` ranked labels available.
    """
    if isinstance(sizes, str):
        items = [s.strip().lower() for s in sizes.split(",") if s.strip()]
        out = []
        for s in items:
            mult = 1000 if s.endswith("k") else 1
            try:
                value = Decimal(s.removesuffix("k")) * mult  # decimal: 1.001k is 1001, not 1000.999...
            except InvalidOperation:
                value = Decimal("NaN")
            if not value.is_finite() or value != value.to_integral_value():
                raise InputError(f"vocabulary size {s!r} is not an integer (use e.g. 1000,2000,5k)")
            out.append(int(value))
    else:
        out = []
        for size in sizes:
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
                raise InputError(f"vocabulary sizes must be integers, got {size!r}")
            out.append(int(size))
    if not out:
        raise InputError("no vocabulary sizes given")
    bad = [s for s in out if s < 1]
    if bad:
        raise InputError(f"vocabulary sizes must be >= 1, got {bad[0]}")
    if m is not None:
        over = [s for s in out if s > m]
        if over:
            raise InputError(f"vocabulary size {max(over)} exceeds the {m} ranked labels available")
    return sorted(set(out))


def check_sweep_method(method: str) -> str:
    """The registered name of ``method`` if a vocabulary-size sweep can serve it (a batch method that takes
    negatives), else one :class:`InputError` (said before any model work)."""
    spec = batch_method(method, "a vocabulary-size sweep")
    if not spec.needs_negatives:
        able = ", ".join(list_methods(needs_negatives=True, kind="batch"))
        raise InputError(f"{spec.name} does not use negative labels; a vocabulary-size sweep needs {able}")
    unserved = [i for i in spec.inputs if i != "pair_texts"]  # NegRefine's pair texts: the sweep pipeline gives them
    if unserved:
        raise InputError(f"{spec.name} takes {', '.join(unserved)}, which a vocabulary-size sweep does not give")
    return spec.name


def sweep(
    image_emb: Embeddings,
    id_emb: Embeddings,
    ranked_neg_emb: Embeddings,
    sizes: str | Iterable[int],
    *,
    method: str = "neglabel",
    **params: MethodArg,
) -> dict[int, np.ndarray]:
    """Score images with the first M ranked negatives for every M in ``sizes``.

    Parameters
    ----------
    image_emb : array or tensor, shape (n, d)
    id_emb : array or tensor, shape (K, d)
    ranked_neg_emb : array or tensor, shape (M_max, d)
        Negative label embeddings in ranking (farthest-first) order.
    sizes : iterable of int or str
        Vocabulary sizes M, each in [1, M_max] (``"1000,2000,5k"`` accepted).
    method : str, default "neglabel"
        Any registered method that takes negatives. Those with a one-pass form (EOE, and NegLabel
        and NegLabel+EOE with stratified grouping, the default) run as one pass; others, random
        grouping and top-k run once per size.
    **params
        Passed to the scorer (``tau``, ``groups``, ``grouping``, ``seed``, ``beta``, ``device``, ...).

    Returns
    -------
    dict int -> ndarray of float64, shape (n,)
        ``{M: scores}`` in increasing M; each equals ``negvocab.score(method, image_emb, id_emb,
        ranked_neg_emb[:M], **params)`` (to float rounding).
    """
    spec = get_method(check_sweep_method(method))
    key = spec.name
    check_params(key, params)
    neg_rows = scores.embeddings_of(ranked_neg_emb)
    if neg_rows is None:
        raise InputError("sweep needs the ranked negative label embeddings")
    wanted = parse_sizes(sizes, len(neg_rows))
    grouped = "grouping" in spec.params
    one_pass = (
        spec.one_pass_kernel is not None
        and (not grouped or params.get("grouping", "stratified") == "stratified")
        and params.get("topk") is None
    )
    start = time.perf_counter()
    if one_pass:
        params.pop("grouping", None)
        params.pop("seed", None)  # stratified grouping draws nothing
        assert spec.one_pass is not None
        result = spec.one_pass(image_emb, id_emb, neg_rows[: max(wanted)], wanted, **params)
    else:
        # an array each: check_params refused return_bounds, the one way score returns TopkScores
        result = {m: cast(np.ndarray, scores.score(key, image_emb, id_emb, neg_rows[:m], **params)) for m in wanted}
    logger.info(
        "sweep %s over %d sizes (M up to %d, %s) in %.2fs",
        key,
        len(wanted),
        max(wanted),
        "one pass" if one_pass else "one run per size",
        time.perf_counter() - start,
    )
    return {m: result[m] for m in wanted}
