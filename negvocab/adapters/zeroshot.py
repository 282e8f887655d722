"""The core of the adapters: an open_clip model (a :class:`negvocab.VLM`), the ID class prompts and a
negative vocabulary embedded once, and image batches scored by a method of the registry (high = ID)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from negvocab.core.errors import InputError
from negvocab.core.types import ParamValue
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.scoring.detector import make_detector
from negvocab.scoring.methods import PARAMS, check_params, get_method
from negvocab.scoring.providers import InputContext, image_inputs, setup_inputs
from negvocab.scoring.stream import StreamMethod
from negvocab.vlm.images import encode_batch
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM

__all__ = ["GRID_SKIPPED", "ZeroShot", "as_id_classes", "as_vocabulary", "check_batch", "search_grid"]


def as_id_classes(id_classes: IdClasses | Iterable[str] | None) -> IdClasses:
    """The ID label space: an :class:`IdClasses`, class names, or None for ImageNet-1k.

    Parameters
    ----------
    id_classes : IdClasses, iterable of str, or None
        The label space, its class names, or None.
    """
    if id_classes is None:
        return imagenet1k()
    if isinstance(id_classes, IdClasses):
        return id_classes
    if isinstance(id_classes, str):
        raise InputError("id_classes must be a list of class names (or an IdClasses), not one string")
    return IdClasses.from_names(id_classes)


def as_vocabulary(vocabulary: Vocabulary | str | Iterable[str] | None) -> Vocabulary | None:
    """A negative vocabulary: a :class:`Vocabulary`, a vocabulary file's path, a list of labels, or None.

    Parameters
    ----------
    vocabulary : Vocabulary, str, iterable of str, or None
        The vocabulary, its file's path, its labels, or None.
    """
    if vocabulary is None or isinstance(vocabulary, Vocabulary):
        return vocabulary
    if isinstance(vocabulary, (str, os.PathLike)):  # os.PathLike: anything with __fspath__
        return Vocabulary.load(vocabulary)
    return Vocabulary.from_labels(vocabulary, source="file")


def check_batch(vlm: VLM, images: Any) -> None:
    """Refuse, in one line naming ``vlm.preprocess``, a batch the image encoder cannot take: not a floating
    tensor, not [B, 3, H, W], or not the model's image size (a raw torch error would say none of it).

    Parameters
    ----------
    vlm : VLM
        The model whose image encoder takes the batch.
    images : tensor
        The batch.
    """
    size = getattr(getattr(vlm.model, "visual", None), "image_size", None)
    want = tuple(size) if isinstance(size, (tuple, list)) else (size, size) if size else None
    fix = "preprocess the images with vlm.preprocess (the model's own transform) and stack them"
    shape = f"[B, 3, {want[0]}, {want[1]}]" if want else "[B, 3, H, W]"
    if not isinstance(images, torch.Tensor):
        raise InputError(f"images: a {type(images).__name__}, not a tensor {shape}: {fix}")
    if not images.is_floating_point():
        raise InputError(f"images: {images.dtype} pixels, not floats (raw pixels?): {fix}")
    got = tuple(images.shape)
    if images.dim() != 4 or got[1] != 3 or (want is not None and got[2:] != want):
        raise InputError(f"images: shape {list(got)}, not {shape}: {fix}")


#: parameters a hyper-parameter search leaves alone: seeds, a top-k bound, a scale the model gives
GRID_SKIPPED = frozenset({"seed", "topk"})


def search_grid(method: str, values: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A hyper-parameter grid worth searching around ``values`` (a method's parameters now): a number x 1/2,
    1 and 2 (an integer kept within its limit), every choice of a choice; seeds, ``topk``, the model's
    scale and parameters left at None (the kernel's default) are not searched.

    Parameters
    ----------
    method : str
        A registered method.
    values : mapping
        The method's parameters now, by name.
    """
    entry = get_method(method)
    grid: dict[str, list[Any]] = {}
    for name in entry.params:
        param, value = PARAMS[name], values.get(name, PARAMS[name].default)
        if name in GRID_SKIPPED or name == entry.model_scale or value is None:
            continue
        if param.check == "choice":
            grid[name] = [value, *(c for c in param.choices if c != value)]
        elif param.kind is int:
            low = int(param.low or 1)
            grid[name] = sorted({max(low, value // 2), value, value * 2})
        else:
            grid[name] = sorted({value / 2, value, value * 2}) if value else [value]
    return grid


class ZeroShot:
    """Score preprocessed image batches (or image features) with ``method`` over ``vlm``.

    ``method``: any registered method (``negvocab.list_methods()``, plug-ins included), batch or test-time:
    it is held as its detector (:func:`negvocab.make_detector`), set up once on the ID side with the inputs
    the input registry makes from the model (NegRefine's pair texts, TANL's noise images); its entry's
    capabilities decide what is computed (negatives, patch features, the model's scale). A test-time
    method sees the batches scored as one stream, in the order they come; :meth:`reset` starts a new one.
    The logit baselines (msp, maxlogit, energy, gen) take the model's own logit scale unless
    ``logit_scale`` is given (100 for CLIP's released weights; ``negvocab.score``'s default).

    Parameters
    ----------
    vlm : VLM
        The model.
    method : str, default "neglabel"
        Any registered method.
    id_classes, vocabulary, templates, **params
        As for :class:`negvocab.adapters.pytorch_ood.NegvocabDetector`, which holds this engine: the ID
        label space, the negatives (a vocabulary, its file or its labels), the prompts, the method's
        parameters.
    """

    def __init__(
        self,
        vlm: VLM,
        method: str = "neglabel",
        *,
        id_classes: IdClasses | Iterable[str] | None = None,
        vocabulary: Vocabulary | str | Iterable[str] | None = None,
        templates: str | list[str] = "paper8",
        **params: ParamValue,
    ) -> None:
        self.method = get_method(method)
        scale = getattr(vlm, "logit_scale", None)  # the model's own (VLM.logit_scale)
        own = self.method.model_scale  # the parameter that takes it (the logit baselines' logit_scale)
        if own is not None and params.get(own) is None and scale is not None:
            params = {**params, own: scale}
        self.params = check_params(self.method.name, params)
        vocab = as_vocabulary(vocabulary)
        if self.method.needs_negatives and vocab is None:
            raise InputError(
                f"{self.method.name} needs a negative vocabulary: pass "
                "vocabulary= (a Vocabulary, a file or a list of labels)"
            )
        self.vlm = vlm
        self.id_classes = as_id_classes(id_classes)
        self.vocabulary = vocab if self.method.needs_negatives else None
        self.id_emb = torch.from_numpy(vlm.encode_text(list(self.id_classes.names), templates, pos="n", progress=False))
        self.neg_emb = (
            None if self.vocabulary is None
            else torch.from_numpy(vlm.encode_text(list(self.vocabulary.labels), templates,
                                                  pos=self.vocabulary.parts_of_speech(), progress=False))
        )  # fmt: skip
        labels = None if self.vocabulary is None else self.vocabulary.labels
        self.context = InputContext(vlm, templates, self.id_classes.names, labels)
        self.detector = self._detector()

    @property
    def hyperparameters(self) -> dict[str, Any]:
        """The method's parameters now: the given ones over the registry defaults."""
        return {p: self.params.get(p, PARAMS[p].default) for p in self.method.params}

    @property
    def test_time(self) -> bool:
        """Whether the method keeps state over the batches it scores (a test-time method)."""
        return self.detector.stateful

    def _detector(self) -> StreamMethod:
        """The method's detector with the parameters now, set up on the ID side (a fresh state)."""
        det = make_detector(self.method.name, self.params)
        stream = self.method.kind == "stream"
        context = dataclasses.replace(self.context, params=det.params)
        inputs = setup_inputs(det.inputs, context, method=self.method.name)
        id_emb, neg_emb = (self.id_emb, self.neg_emb) if not stream else (self.id_emb.numpy(), _numpy(self.neg_emb))
        return det.setup(id_emb, neg_emb, **inputs)

    def set_params(self, **params: ParamValue) -> None:
        """Change parameters of the method (checked against the registry); a test-time method starts a
        new stream."""
        self.params = check_params(self.method.name, {**self.params, **params})
        self.detector = self._detector()

    def reset(self) -> None:
        """Start a new stream: a test-time method forgets the images it has seen (a batch method has none)."""
        self.detector.reset()

    @torch.no_grad()
    def features(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """L2-normalised global features of a preprocessed image batch, and the patch features GL-MCM needs;
        a batch the encoder cannot take is refused (:func:`check_batch`)."""
        check_batch(self.vlm, images)
        return encode_batch(self.vlm, images, bool(image_inputs(self.method.inputs)))

    def score_features(self, features: Any, local: Any = None) -> torch.Tensor:
        """float64 scores of image features (normalised here), high = ID; ``local``: GL-MCM's patch features.
        A test-time method takes the batch as the next of its stream."""
        z = torch.nn.functional.normalize(torch.as_tensor(features).detach().float().cpu(), dim=-1)
        extra: Mapping[str, Any] = {}
        if image_inputs(self.method.inputs):
            if local is None:
                raise InputError(
                    f"{self.method.name} needs the patch features: call predict(images), or pass local=[n, p, d]"
                )
            extra = {"local": torch.nn.functional.normalize(torch.as_tensor(local).detach().float().cpu(), dim=-1)}
        s = self.detector.score_batch(z.numpy() if self.test_time else z, **extra)
        return torch.from_numpy(np.asarray(s, dtype=np.float64))

    def classify(self, features: Any) -> torch.Tensor:
        """The zero-shot class of each image: the ID prompt nearest to its features."""
        z = torch.nn.functional.normalize(torch.as_tensor(features).detach().float().cpu(), dim=-1)
        return (z @ self.id_emb.T).argmax(-1)


def _numpy(x: torch.Tensor | None) -> np.ndarray | None:
    return None if x is None else x.numpy()
