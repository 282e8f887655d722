"""Texts that pair an ID class with a negative label ("<ID class> and <negative>"), embedded on demand.

NegRefine's multi-matching score (:mod:`negvocab.scoring.negrefine`) asks, per image, for the
embeddings of such pairs of its nearest ID classes and negatives: which pairs depends on the image,
so a scorer cannot be given them in advance. :class:`PairTexts` embeds the pairs a scorer asks for
with the run's model and templates (through the embedding cache); :func:`pair_inputs` is what the
pipelines give a method whose entry lists the input ``pair_texts``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM
    from negvocab.vlm.templates import TemplateSet

__all__ = ["PAIR_JOINER", "PairTexts", "pair_inputs", "pair_texts"]

#: NegRefine's ``p + " and " + n``
PAIR_JOINER = " and "


class PairTexts:
    """``(id_idx, neg_idx) -> [P, d]`` unit-norm embeddings of ``f"{id_names[i]} and {neg_labels[j]}"``,
    each with the noun templates of ``templates`` (NegRefine embeds them with its noun templates).

    Parameters
    ----------
    vlm : VLM
        The model that encodes the pair texts.
    templates : str, sequence of str or TemplateSet
        The prompt templates.
    id_names : sequence of str
        The ID class names.
    neg_labels : sequence of str
        The negative labels.
    """

    def __init__(
        self,
        vlm: VLM,
        templates: str | Sequence[str] | TemplateSet,
        id_names: Sequence[str],
        neg_labels: Sequence[str],
    ) -> None:
        self.vlm = vlm
        self.templates = templates
        self.id_names = list(id_names)
        self.neg_labels = list(neg_labels)

    def texts(self, id_idx: Iterable[int], neg_idx: Iterable[int]) -> list[str]:
        """The pair texts of index pairs, in order."""
        return [
            self.id_names[int(i)] + PAIR_JOINER + self.neg_labels[int(j)] for i, j in zip(id_idx, neg_idx, strict=True)
        ]

    def __call__(self, id_idx: np.ndarray, neg_idx: np.ndarray) -> np.ndarray:
        texts = self.texts(id_idx, neg_idx)
        if not texts:
            return np.zeros((0, self.vlm.dim), dtype=np.float32)
        return self.vlm.encode_text(texts, self.templates, pos="n", progress=False)

    def __repr__(self) -> str:
        return f"PairTexts({len(self.id_names)} ID classes x {len(self.neg_labels)} negatives)"


def pair_inputs(
    inputs: Iterable[str],
    vlm: VLM,
    templates: str | Sequence[str] | TemplateSet,
    id_names: Sequence[str],
    neg_labels: Sequence[str] | None,
) -> dict[str, PairTexts]:
    """``{"pair_texts": PairTexts(...)}`` when a method's ``inputs`` list it (and it has negatives), else ``{}``."""
    if "pair_texts" not in inputs or neg_labels is None:
        return {}
    return {"pair_texts": PairTexts(vlm, templates, id_names, neg_labels)}


def pair_texts(context: Any) -> PairTexts | None:
    """The set-up input ``pair_texts`` (:mod:`negvocab.scoring.providers`) of an ``InputContext``: the
    pairs of its ID names and negative labels, or None without negatives."""
    if context.neg_labels is None:
        return None
    return PairTexts(context.vlm, context.templates, context.id_names, context.neg_labels)
