"""Set-up inputs of stream methods that a model can make: what :func:`negvocab.evaluate_stream` gives a
method that names them in ``StreamMethod.inputs`` when a VLM is at hand and the caller gave none.

``noise_images``: TANL's 15 noise images (:func:`negvocab.scoring.tanl.noise_pixels`, seeded by the
method's ``seed``), encoded by the model as TANL's code encodes them: the [0, 1] pixels as they are, at
the model's input size, without the preprocessing's normalisation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.errors import InputError
from negvocab.scoring.stream import stream_class
from negvocab.scoring.tanl import noise_pixels
from negvocab.vlm.images import encode_batch

if TYPE_CHECKING:
    from negvocab.scoring.stream import StreamMethod
    from negvocab.vlm.model import VLM

__all__ = ["STREAM_INPUT_MAKERS", "noise_image_features", "stream_setup_inputs", "unmade_inputs"]


def _image_size(vlm: VLM) -> int:
    size = getattr(getattr(vlm.model, "visual", None), "image_size", 224)
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def noise_image_features(vlm: VLM, seed: int = 0) -> np.ndarray:
    """The unit-norm image features (15, d) of TANL's noise images, encoded by ``vlm``."""
    pixels = noise_pixels(seed, size=_image_size(vlm))
    feats, _ = encode_batch(vlm, pixels, local=False)
    return feats.numpy()


#: input name -> how a model makes it, given the method's parameters
STREAM_INPUT_MAKERS: dict[str, Callable[[VLM, Mapping[str, Any]], np.ndarray]] = {
    "noise_images": lambda vlm, params: noise_image_features(vlm, int(params.get("seed", 0))),
}


def stream_setup_inputs(
    method: StreamMethod, vlm: VLM | None, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``given`` plus every input ``method`` names that is missing and a maker can make from ``vlm``;
    without a VLM, ``given`` as it is (the method's set-up then names what is missing)."""
    out = dict(given or {})
    missing = [k for k in method.inputs if out.get(k) is None]
    if vlm is None or not missing:
        return out
    unknown = [k for k in missing if k not in STREAM_INPUT_MAKERS]
    if unknown:
        raise InputError(f"{method.name} needs the set-up input(s) {', '.join(unknown)}: pass them in setup_inputs")
    for k in missing:
        out[k] = STREAM_INPUT_MAKERS[k](vlm, method.params)
    return out


def unmade_inputs(method: str) -> list[str]:
    """The set-up inputs the stream method ``method`` names that no model can make (a plug-in's own)."""
    return [k for k in stream_class(method).inputs if k not in STREAM_INPUT_MAKERS]
