"""A scoring method defined outside negvocab, registered through the public API only.

``toymargin``: ``S(v) = max_k cos(v, t_k) - margin * max_j cos(v, n_j)``, a parameter no built-in
method has (``margin``, flag ``--margin`` from its name), a kernel here, a one-pass form (prefix maxima) and an
incremental form for marginal gains (the nearest negative's cosine, per image).
Load it with ``NEGVOCAB_PLUGINS=tests.plugins.toy_method`` or ``plugins = ["tests.plugins.toy_method"]``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

import negvocab

NAME = "toymargin"
MARGIN = negvocab.Param("margin", float, 0.5, "Toy: weight of the nearest negative.", check="positive")


def _rows(x: Any) -> np.ndarray:
    x = getattr(x, "embeddings", x)  # an ImageEmbeddings
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def toy(
    image_emb: Any, id_emb: Any, neg_emb: Any, *, margin: float = 0.5, device: Any = None, chunk_size: Any = None
) -> np.ndarray:
    """One float64 score per image, high = ID."""
    v, t, n = _rows(image_emb), _rows(id_emb), _rows(neg_emb)
    return (v @ t.T).max(1) - margin * (v @ n.T).max(1)


def toy_prefixes(
    image_emb: Any,
    id_emb: Any,
    ranked_neg_emb: Any,
    sizes: Iterable[int],
    *,
    margin: float = 0.5,
    device: Any = None,
    chunk_size: Any = None,
) -> dict[int, np.ndarray]:
    """The scores with the first M ranked negatives, for every M in ``sizes``, from one product."""
    v, t, n = _rows(image_emb), _rows(id_emb), _rows(ranked_neg_emb)
    best = np.maximum.accumulate(v @ n.T, axis=1)
    top = (v @ t.T).max(1)
    return {m: top - margin * best[:, m - 1] for m in sizes}


class ToyGains:
    """The incremental form: a candidate changes an image's score only through its nearest negative."""

    def __init__(self, v: Any, t: Any, n: Any, margin: float) -> None:
        import torch

        self.v, self.margin = v, margin
        self.max_id = (v @ t.T).double().amax(1)
        self.max_neg = (v @ n.T).double().amax(1)
        self.torch = torch

    def logits(self, cand: Any) -> tuple[Any]:
        return ((self.v @ cand.T).double(),)

    def scores(self, s: Any) -> Any:
        return self.max_id[:, None] - self.margin * self.torch.maximum(self.max_neg[:, None], s)

    def base_scores(self) -> np.ndarray:
        return (self.max_id - self.margin * self.max_neg).cpu().numpy()

    def append(self, cand: Any, s: Any) -> None:
        self.max_neg = self.torch.maximum(self.max_neg, s)


def toy_gains(v: Any, t: Any, n: Any, *, margin: float, **_: Any) -> ToyGains:
    return ToyGains(v, t, n, margin)


negvocab.register_method(
    NAME,
    f"{__name__}:toy",
    [MARGIN],
    needs_negatives=True,
    one_pass=f"{__name__}:toy_prefixes",
    gains=f"{__name__}:toy_gains",
    aliases=("toy-margin",),
    paper="a toy method of the tests",
    replace=True,  # a re-import (importlib.reload) replaces its own entry
)


def reference(images: np.ndarray, id_emb: np.ndarray, neg_emb: np.ndarray, margin: float = 0.5) -> np.ndarray:
    """The toy formula by hand, in float64, one image at a time (the tests' independent computation)."""
    out = []
    for v in np.asarray(images, dtype=np.float64):
        best_id = max(float(np.dot(v, t)) for t in np.asarray(id_emb, dtype=np.float64))
        best_neg = max(float(np.dot(v, n)) for n in np.asarray(neg_emb, dtype=np.float64))
        out.append(best_id - margin * best_neg)
    return np.array(out)
