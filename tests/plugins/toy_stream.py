"""A stateful toy test-time method, defined outside the package and registered through the public API.

``toy_stream`` scores an image by its largest cosine to the ID class prompts minus ``ood_weight``
times its cosine to the running mean of the earlier images that scored below ``ood_threshold``
("remember what OOD looked like"). Score first, then update: a batch never sees itself.
"""

from __future__ import annotations

import numpy as np

from negvocab.scoring.methods import Param
from negvocab.scoring.stream import StreamMethod, register_stream_method

NAME = "toy_stream"
PARAMS = (
    Param("ood_weight", float, 1.0, "Toy stream method: weight of the OOD running mean.", check="nonneg"),
    Param("ood_threshold", float, 0.5, "Toy stream method: images scoring below it join the mean."),
)


class RunningMeanOOD(StreamMethod):
    """score(v) = max_k cos(v, t_k) - w cos(v, mu), mu the mean of the earlier images scored < threshold."""

    def __init__(self, *, ood_weight: float, ood_threshold: float) -> None:
        super().__init__(ood_weight=ood_weight, ood_threshold=ood_threshold)
        self.weight, self.threshold = float(ood_weight), float(ood_threshold)

    def init_state(self) -> None:
        self.total = np.zeros(self.id_emb.shape[1])
        self.count = 0

    def step(self, image_emb: np.ndarray) -> np.ndarray:
        x = np.asarray(image_emb, dtype=np.float64)
        scores = (x @ np.asarray(self.id_emb, dtype=np.float64).T).max(axis=1)
        if self.count:
            scores = scores - self.weight * (x @ (self.total / self.count))
        low = scores < self.threshold
        self.total += x[low].sum(axis=0)
        self.count += int(low.sum())
        return scores

    def summary(self) -> dict[str, int]:
        return {"ood_remembered": self.count}


def register() -> None:
    """(Re-)register ``toy_stream`` (its import does it once; tests that remove it call this again)."""
    register_stream_method(
        NAME, RunningMeanOOD, params=PARAMS, paper="negvocab's tests (a toy)", aliases=("toy-stream",), replace=True
    )


register()
