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

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from negvocab.adapters.zeroshot import ZeroShot, search_grid
from negvocab.core.errors import ResourceError
from negvocab.core.types import ParamValue
from negvocab.scoring.methods import get_method

try:
    from pytorch_ood.api import DetectorInfo, FeaturesDetector, Paper, Task
except ModuleNotFoundError:  # the extra is not installed: the module imports, a detector says what to install

    class FeaturesDetector:  # type: ignore[no-redef]
        """Stands in for pytorch-ood's base class where pytorch-ood is not installed."""

        def __init__(self) -> None:
            raise ResourceError("the pytorch-ood detectors need pytorch-ood: pip install 'negvocab[pytorch-ood]'")

    DetectorInfo = Paper = Task = None


def _info(title: str, venue: str, year: int, url: str, code: str | None = None) -> Any:
    """pytorch-ood's ``DetectorInfo`` of a method's paper (None without pytorch-ood)."""
    if DetectorInfo is None:
        return None
    paper = Paper(title=title, venue=venue, year=year, url=url, code=code)
    return DetectorInfo(tasks={Task.CLASSIFICATION}, paper=paper, ai_coded=True)


#: the papers of the methods with a detector class here, with their authors' code
_PAPERS = {
    "neglabel": _info(
        "Negative Label Guided OOD Detection with Pretrained Vision-Language Models",
        "ICLR",
        2024,
        "https://arxiv.org/abs/2403.20078",
        "https://github.com/XueJiang16/NegLabel",
    ),
    "eoe": _info(
        "Envisioning Outlier Exposure by Large Language Models for Out-of-Distribution Detection",
        "ICML",
        2024,
        "https://arxiv.org/abs/2406.00806",
        "https://github.com/tmlr-group/EOE",
    ),
    "mcm": _info(
        "Delving into Out-of-Distribution Detection with Vision-Language Representations",
        "NeurIPS",
        2022,
        "https://arxiv.org/abs/2211.13445",
        "https://github.com/deeplearning-wisc/MCM",
    ),
    "glmcm": _info(
        "Zero-Shot In-Distribution Detection in Multi-Object Settings Using Vision-Language Foundation Models",
        "arXiv",
        2023,
        "https://arxiv.org/abs/2304.04521",
        "https://github.com/AtsuMiyai/GL-MCM",
    ),
}

#: methods pytorch-ood has a detector of: their ``info`` names the paper as pytorch-ood itself does
_PYTORCH_OOD_OWN = {"msp": "MaxSoftmax", "maxlogit": "MaxLogit", "energy": "EnergyBased", "gen": "GEN"}


def _citation_paper(citation: str) -> tuple[str, str, int, str] | None:
    """Title, venue, year and link of a registry citation ("Authors, Title, Venue Year"; an arXiv id gives
    the link and, where no year is written, the year); None where it has no title or no year."""
    parts = [p.strip() for p in citation.split(", ")]
    if len(parts) < 3:
        return None
    title, tail = ", ".join(parts[1:-1]), parts[-1]
    arxiv = re.search(r"arXiv:((\d{2})\d{2}\.\d{4,5})", tail)
    year = re.search(r"\b(?:19|20)\d{2}\b", tail.split("(")[0])
    url = f"https://arxiv.org/abs/{arxiv.group(1)}" if arxiv else ""
    if year is not None:
        return title, tail[: year.start()].strip() or "arXiv", int(year.group(0)), url
    if arxiv is not None:
        return title, "arXiv", 2000 + int(arxiv.group(2)), url
    return None


def method_info(method: str) -> Any:
    """The ``info`` of a detector of ``method``: pytorch-ood's own paper record where pytorch-ood has the
    method, else the paper of the method's registry citation (``paper=None`` where the registry cites none;
    None without pytorch-ood).

    Parameters
    ----------
    method : str
        A registered method (a name or an alias).
    """
    if DetectorInfo is None:
        return None
    entry = get_method(method)
    if entry.name in _PYTORCH_OOD_OWN:
        import pytorch_ood.detector

        own = getattr(pytorch_ood.detector, _PYTORCH_OOD_OWN[entry.name]).info
        return DetectorInfo(tasks={Task.CLASSIFICATION}, paper=own.paper, ai_coded=True)
    if entry.name in _PAPERS:
        return _PAPERS[entry.name]
    found = _citation_paper(entry.paper)
    if found is None:
        return DetectorInfo(tasks={Task.CLASSIFICATION}, paper=None, ai_coded=True)
    return _info(*found)


if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = ["EOEDetector", "GLMCMDetector", "MCMDetector", "NegLabelDetector", "NegvocabDetector", "method_info"]


class NegvocabDetector(FeaturesDetector):
    """Any method of the negvocab registry (``method=``) as a pytorch-ood ``Detector`` over an open_clip model.

    ``predict(x)`` takes a batch preprocessed with the model's transform; ``predict_features(z)`` takes
    image features (``local=`` the patch features for glmcm). No fitting: ``fit`` returns self.
    ``get_hyperparameters``/``set_hyperparameters`` read and change the method's parameters (the
    registry checks them); ``hyperparameter_space`` is a grid around the values given
    (:func:`negvocab.adapters.zeroshot.search_grid`: several values per parameter) for pytorch-ood's
    GridSearch. As pytorch-ood's own detectors: scores are float32 on the input's device,
    ``.to(device)`` moves the model, and ``info`` names the method's paper (:func:`method_info`), on the
    class for the method's own detector class and on every instance. ``get_hyperparameters`` offers what
    the search varies (``hyperparameter_space``: no seed, no ``topk``). A batch the model cannot take
    (raw uint8 pixels, the wrong size) is refused in one line naming ``vlm.preprocess``.

    A test-time method (``"adaneg"``, ``"tanl"``, a plug-in's) is hosted the same way: the batches
    ``predict`` is given form one stream, scored in the order they come (each batch with what the
    method has seen before it), so its scores depend on that order; :meth:`reset` starts a new stream,
    and changing a hyper-parameter does too.

    Parameters
    ----------
    vlm : VLM
        The open_clip model.
    method : str, optional
        Any registered method (default the class's ``method``: ``neglabel`` here).
    id_classes : IdClasses, iterable of str, or None
        The ID label space (default ImageNet-1k).
    vocabulary : Vocabulary, str, iterable of str, or None
        The negatives of the methods that take them: a vocabulary, its file's path, or its labels.
    templates : str or list of str, default "paper8"
        The prompt preset or list.
    **params
        The method's parameters (checked against the registry, as ``negvocab.score`` does).
    """

    requires_fit = False
    method: str = "neglabel"

    def __init_subclass__(cls, method: str | None = None, **kwargs: Any) -> None:
        """``class MyDetector(NegvocabDetector, method="name")``: a detector class of one method, whose
        ``info`` names that method's paper."""
        super().__init_subclass__(**kwargs)
        if method is not None:
            cls.method = method
            cls.info = method_info(method)

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
        self.info = method_info(self.zeroshot.method.name)
        self.hyperparameter_space = search_grid(self.zeroshot.method.name, self.zeroshot.hyperparameters)
        # pytorch-ood's GridSearch encodes the images once through `encoder`, then scores features per
        # candidate; GL-MCM needs the patch features too, so it has none (each candidate encodes)
        self.encoder = None if "local" in self.zeroshot.method.inputs else self._global_features

    def _global_features(self, x: torch.Tensor) -> torch.Tensor:
        return self.zeroshot.features(x)[0]

    def get_hyperparameters(self) -> dict[str, Any]:
        """The searched parameters' values now (the keys of ``hyperparameter_space``)."""
        return {k: v for k, v in self.zeroshot.hyperparameters.items() if k in self.hyperparameter_space}

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


class NegLabelDetector(NegvocabDetector, method="neglabel"):
    """NegLabel (Jiang et al., ICLR 2024) with a negvocab vocabulary, as a pytorch-ood detector.

    Parameters
    ----------
    vlm, method, id_classes, vocabulary, templates, **params
        As for :class:`NegvocabDetector`; ``method`` defaults to ``"neglabel"``.
    """


class EOEDetector(NegvocabDetector, method="eoe"):
    """EOE (Cao et al., ICML 2024) with envisioned outlier labels, as a pytorch-ood detector.

    Parameters
    ----------
    vlm, method, id_classes, vocabulary, templates, **params
        As for :class:`NegvocabDetector`; ``method`` defaults to ``"eoe"``.
    """


class MCMDetector(NegvocabDetector, method="mcm"):
    """MCM (Ming et al., NeurIPS 2022), as a pytorch-ood detector.

    Parameters
    ----------
    vlm, method, id_classes, vocabulary, templates, **params
        As for :class:`NegvocabDetector`; ``method`` defaults to ``"mcm"``.
    """


class GLMCMDetector(NegvocabDetector, method="glmcm"):
    """GL-MCM (Miyai et al., 2023), as a pytorch-ood detector (``predict`` computes the patch features).

    Parameters
    ----------
    vlm, method, id_classes, vocabulary, templates, **params
        As for :class:`NegvocabDetector`; ``method`` defaults to ``"glmcm"``.
    """
