"""Names for the types that public signatures take: arrays, method parameters, and their sources.

A public signature names what it accepts instead of ``Any``. ``Any`` remains only inside JSON-like
records (``dict[str, Any]``: a results row, a vocabulary's settings), as the standard library's own
``json`` stubs do, and in ``**kwargs`` forwarded unchanged to a named callee.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias, Union

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = ["ArrayLike", "Device", "Embeddings", "MethodArg", "ParamValue", "PathLike"]

#: a matrix of embeddings, one row per image or label: numpy or torch (any device), float16/32/64
Embeddings: TypeAlias = Union[np.ndarray, "torch.Tensor"]
#: a vector or matrix of numbers: numpy, torch, or a (nested) list of floats
ArrayLike: TypeAlias = Union[np.ndarray, "torch.Tensor", Sequence[float], Sequence[Sequence[float]]]
#: where to compute: "cpu", "cuda", "cuda:1", "mps", "auto", a torch.device, or None (the inputs' device)
Device: TypeAlias = Union[str, "torch.device", None]
#: one method parameter's value (negvocab.list_params()): a number, a word, a flag, GL-MCM's patch
#: features (an array), a device, or None (the default)
ParamValue: TypeAlias = Union[int, float, str, bool, None, np.ndarray, "torch.Tensor", "torch.device"]
#: what a scorer takes by keyword: a parameter's value (ParamValue) or a method input, which is any
#: object a registered input names (GL-MCM's patch features, NegRefine's pair texts, a plug-in's own)
MethodArg: TypeAlias = object
#: a file or folder path
PathLike: TypeAlias = str | os.PathLike[str]
