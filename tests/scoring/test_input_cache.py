"""The label-embedding norm check runs once per array, and stratified layouts reuse the negatives."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring.grouping import layout, layout_embeddings, neglabel_groups


def _unit(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    a = rng.normal(size=(n, d))
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype("float32")


def test_new_or_edited_arrays_are_checked_again() -> None:
    rng = np.random.default_rng(0)
    img, ids, neg = _unit(rng, 4), _unit(rng, 3), _unit(rng, 10)
    negvocab.score("neglabel", img, ids, neg, groups=2)
    with pytest.raises(InputError, match="neg_emb is not L2-normalised"):
        negvocab.score("neglabel", img, ids, neg * 2, groups=2)  # a new array
    tn = torch.from_numpy(neg.copy())
    negvocab.score("neglabel", img, ids, tn, groups=2)
    tn.mul_(3)  # in place: the tensor's version changes
    with pytest.raises(InputError, match="neg_emb is not L2-normalised"):
        negvocab.score("neglabel", img, ids, tn, groups=2)
    with pytest.raises(InputError, match="id_emb is not L2-normalised"):
        negvocab.score("neglabel", img, (ids * 2).tolist(), neg, groups=2)  # lists: checked every call


@pytest.mark.parametrize(
    ("m", "g", "grouping"), [(10, 5, "stratified"), (11, 4, "stratified"), (7, 4, "stratified"), (11, 4, "random")]
)
def test_layout_embeddings_match_the_gather(m: int, g: int, grouping: str) -> None:
    """Layouts of the first m of 11 negatives: the stratified ones skip the gather, same values."""
    neg = torch.from_numpy(_unit(np.random.default_rng(1), 11))
    index, _ = layout(neglabel_groups(m, g, grouping))  # type: ignore[arg-type]
    flat = torch.as_tensor(index.reshape(-1))
    gathered = neg[flat.clamp(min=0)] * (flat >= 0)[:, None]
    assert torch.equal(layout_embeddings(neg, index), gathered)
