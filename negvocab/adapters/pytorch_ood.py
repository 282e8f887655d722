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

from negvocab.adapters.zeroshot import ZeroShot, search_grid
from negvocab.core.errors import ResourceError
from negvocab.core.types import ParamValue

try:
    from pytorch_ood.api import DetectorInfo, FeaturesDetector, Paper, Task
except ModuleNotFoundError:  # the extra is not installed: the module imports, a detector says what to install

    class FeaturesDetector:  # type: ignore[no-redef]
        """Stands in for pytorch-ood's base class where pytorch-ood is not installed."""

        def __init__(self) -> None:
            raise ResourceError("the pytorch-ood detectors need pytorch-ood: pip install 'negvocab[pytorch-ood]'")

    DetectorInfo = Paper = Task = None


def _info(title: str, venue: str, year: int, url: str, code: str) -> Any:
    """pytorch-ood's ``DetectorInfo`` of a method's paper (None without pytorch-ood)."""
    if DetectorInfo is None:
        return None
    paper = Paper(title=title, venue=venue, year=year, url=url, code=code)
    return DetectorInfo(tasks={Task.CLASSIFICATION}, paper=paper, ai_coded=True)


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
    registry checks them); ``hyperparameter_space`` is a grid around the values given
    (:func:`negvocab.adapters.zeroshot.search_grid`: several values per parameter) for pytorch-ood's
    GridSearch. As pytorch-ood's own detectors: scores are float32 on the input's device,
    ``.to(device)`` moves the model, and ``info`` (the method's detectors) names the paper.

    A test-time method (``"adaneg"``, ``"tanl"``, a plug-in's) is hosted the same way: the batches
    ``predict`` is given form one stream, scored in the order they come (each batch with what the
    method has seen before it), so its scores depend on that order; :meth:`reset` starts a new stream,
    and changing a hyper-parameter does too.
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
        self.hyperparameter_space = search_grid(self.zeroshot.method.name, self.zeroshot.hyperparameters)
        # pytorch-ood's GridSearch encodes the images once through `encoder`, then scores features per
        # candidate; GL-MCM needs the patch features too, so it has none (each candidate encodes)
        self.encoder = None if "local" in self.zeroshot.method.inputs else self._global_features

    def _global_features(self, x: torch.Tensor) -> torch.Tensor:
        return self.zeroshot.features(x)[0]

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

    def reset(self) -> NegvocabDetector:
        """Start a new stream: a test-time method forgets the batches it has scored (a batch method has
        nothing to forget)."""
        self.zeroshot.reset()
        return self

    def fit(self, data_loader: Any = None) -> NegvocabDetector:
        return self

    def fit_features(self, x: Any = None, y: Any = None) -> NegvocabDetector:
        return self

    def to(self, device: str | torch.device) -> NegvocabDetector:
        """Move the model to ``device`` (images are encoded there; scores come back on the input's device)."""
        device = torch.device(device)
        self.zeroshot.vlm.model.to(device)
        self.zeroshot.vlm.device = device
        self._device = device
        return self

    @property
    def device(self) -> torch.device:
        """Where the model is."""
        return torch.device(self.zeroshot.vlm.device)

    @torch.no_grad()
    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Outlier scores (high = OOD) of a preprocessed image batch: float32 on ``x``'s device, as
        pytorch-ood's detectors return them (scored in float64)."""
        g, local = self.zeroshot.features(x)
        return (-self.zeroshot.score_features(g, local)).to(device=x.device, dtype=torch.float32)

    def predict_features(self, x: torch.Tensor, local: torch.Tensor | None = None) -> torch.Tensor:
        """Outlier scores (high = OOD) of image features [B, D] (and patch features [B, P, D] for glmcm),
        float32 on ``x``'s device."""
        device = x.device if isinstance(x, torch.Tensor) else torch.device("cpu")
        return (-self.zeroshot.score_features(x, local)).to(device=device, dtype=torch.float32)


class NegLabelDetector(NegvocabDetector):
    """NegLabel (Jiang et al., ICLR 2024) with a negvocab vocabulary, as a pytorch-ood detector."""

    method = "neglabel"
    info = _info(
        "Negative Label Guided OOD Detection with Pretrained Vision-Language Models",
        "ICLR",
        2024,
        "https://arxiv.org/abs/2403.20078",
        "https://github.com/XueJiang16/NegLabel",
    )


class EOEDetector(NegvocabDetector):
    """EOE (Cao et al., ICML 2024) with envisioned outlier labels, as a pytorch-ood detector."""

    method = "eoe"
    info = _info(
        "Envisioning Outlier Exposure by Large Language Models for Out-of-Distribution Detection",
        "ICML",
        2024,
        "https://arxiv.org/abs/2406.00806",
        "https://github.com/tmlr-group/EOE",
    )


class MCMDetector(NegvocabDetector):
    """MCM (Ming et al., NeurIPS 2022), as a pytorch-ood detector."""

    method = "mcm"
    info = _info(
        "Delving into Out-of-Distribution Detection with Vision-Language Representations",
        "NeurIPS",
        2022,
        "https://arxiv.org/abs/2211.13445",
        "https://github.com/deeplearning-wisc/MCM",
    )


class GLMCMDetector(NegvocabDetector):
    """GL-MCM (Miyai et al., 2023), as a pytorch-ood detector (``predict`` computes the patch features)."""

    method = "glmcm"
    info = _info(
        "Zero-Shot In-Distribution Detection in Multi-Object Settings Using Vision-Language Foundation Models",
        "arXiv",
        2023,
        "https://arxiv.org/abs/2304.04521",
        "https://github.com/AtsuMiyai/GL-MCM",
    )
