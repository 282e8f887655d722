"""negvocab's scorers as pytorch-ood detectors (``pip install 'negvocab[pytorch-ood]'``).

Sign: pytorch-ood detectors return OUTLIER scores (higher = more likely OOD) and its ``OODMetrics``
takes OOD (labels < 0) as the positive class. These detectors return ``-S(v)``, the negative of the
negvocab score (which is high for ID), so they drop into pytorch-ood code as its own detectors do;
pytorch-ood's AUROC of them equals negvocab's AUROC of ``S`` and its ``FPR95TPR`` equals negvocab's
``fpr_at_tpr(..., convention="openood")`` (docs/methods.md, "Score signs").

>>> from negvocab.adapters.pytorch_ood import NegLabelDetector      # doctest: +SKIP
>>> det = NegLabelDetector(vlm, vocabulary="neglabel.json")            # doctest: +SKIP
>>> metrics = OODMetrics(); metrics.update(det(x), y); metrics.compute()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from negvocab.adapters.zeroshot import ZeroShot
from negvocab.errors import ResourceError
from negvocab.types import ParamValue

try:
    from pytorch_ood.api import FeaturesDetector
except ModuleNotFoundError:  # the extra is not installed: the module imports, a detector says what to install

    class FeaturesDetector:  # type: ignore[no-redef]
        """Stands in for pytorch-ood's base class where pytorch-ood is not installed."""

        def __init__(self) -> None:
            raise ResourceError("the pytorch-ood detectors need pytorch-ood: pip install 'negvocab[pytorch-ood]'")


if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = ["EOEDetector", "GLMCMDetector", "MCMDetector", "NegLabelDetector", "NegvocabDetector"]


class NegvocabDetector(FeaturesDetector):
    """Any method of the negvocab registry (``method=``) as a pytorch-ood ``Detector`` over an open_clip model.

    ``predict(x)`` takes a batch preprocessed with the model's transform; ``predict_features(z)`` takes
    image features (``local=`` the patch features for glmcm). No fitting: ``fit`` returns self.
    ``get_hyperparameters``/``set_hyperparameters`` read and change the method's parameters (the
    registry checks them); ``hyperparameter_space`` lists each at its default, for pytorch-ood's GridSearch.
    """

    requires_fit = False
    method: str = "neglabel"

    def __init__(
        self,
        vlm: VLM,
        method: str | None = None,
        *,
        id_classes: IdClasses | Iterable[str] | None = None,
        vocabulary: Vocabulary | str | Iterable[str] | None = None,
        templates: str | list[str] = "paper8",
        **params: ParamValue,
    ) -> None:
        super().__init__()
        self.zeroshot = ZeroShot(
            vlm,
            method or type(self).method,
            id_classes=id_classes,
            vocabulary=vocabulary,
            templates=templates,
            **params,
        )
        self.hyperparameter_space = {p: [v] for p, v in self.zeroshot.hyperparameters.items()}

    def get_hyperparameters(self) -> dict[str, Any]:
        return self.zeroshot.hyperparameters

    def set_hyperparameters(self, **kwargs: Any) -> NegvocabDetector:
        unknown = sorted(set(kwargs) - set(self.hyperparameter_space))
        if unknown:
            raise ValueError(
                f"Unknown hyperparameter(s) {unknown} for {type(self).__name__}. "
                f"Known hyperparameters: {list(self.hyperparameter_space)}"
            )
        self.zeroshot.set_params(**kwargs)
        return self

    def fit(self, data_loader: Any = None) -> NegvocabDetector:
        return self

    def fit_features(self, x: Any = None, y: Any = None) -> NegvocabDetector:
        return self

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Outlier scores (high = OOD) of a preprocessed image batch."""
        g, local = self.zeroshot.features(x)
        return -self.zeroshot.score_features(g, local)

    def predict_features(self, x: torch.Tensor, local: torch.Tensor | None = None) -> torch.Tensor:
        """Outlier scores (high = OOD) of image features [B, D] (and patch features [B, P, D] for glmcm)."""
        return -self.zeroshot.score_features(x, local)


class NegLabelDetector(NegvocabDetector):
    """NegLabel (Jiang et al., ICLR 2024) with a negvocab vocabulary, as a pytorch-ood detector."""

    method = "neglabel"


class EOEDetector(NegvocabDetector):
    """EOE (Cao et al., ICML 2024) with envisioned outlier labels, as a pytorch-ood detector."""

    method = "eoe"


class MCMDetector(NegvocabDetector):
    """MCM (Ming et al., NeurIPS 2022), as a pytorch-ood detector."""

    method = "mcm"


class GLMCMDetector(NegvocabDetector):
    """GL-MCM (Miyai et al., 2023), as a pytorch-ood detector (``predict`` computes the patch features)."""

    method = "glmcm"
