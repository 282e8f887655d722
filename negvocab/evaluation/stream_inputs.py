"""Set-up inputs of stream methods that a model can make: what :func:`negvocab.evaluate_stream` gives a
method that names them in ``StreamMethod.inputs`` when a VLM is at hand and the caller gave none.

The inputs and their makers are those of the one input registry
(:mod:`negvocab.scoring.providers`); ``noise_images`` is TANL's 15 noise images
(:func:`negvocab.scoring.tanl.noise_image_features`, seeded by the method's ``seed``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.scoring.providers import InputContext, get_input, list_inputs, setup_inputs
from negvocab.scoring.providers import unmade_inputs as _unmade
from negvocab.scoring.stream import stream_class
from negvocab.scoring.tanl import noise_image_features

if TYPE_CHECKING:
    from negvocab.scoring.stream import StreamMethod
    from negvocab.vlm.model import VLM

__all__ = ["STREAM_INPUT_MAKERS", "noise_image_features", "stream_setup_inputs", "unmade_inputs"]


def _made_by(name: str) -> Callable[[VLM, Mapping[str, Any]], np.ndarray]:
    return lambda vlm, params: get_input(name).maker()(InputContext(vlm, params=params))  # type: ignore[misc]


#: input name -> how a model makes it, given the method's parameters (the registry's set-up inputs
#: that need no names or labels; kept for callers of the older mapping)
STREAM_INPUT_MAKERS: dict[str, Callable[[VLM, Mapping[str, Any]], np.ndarray]] = {
    "noise_images": _made_by("noise_images")
}


def stream_setup_inputs(
    method: StreamMethod, vlm: VLM | None, given: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``given`` plus every input ``method`` names that is missing and the registry's maker makes from
    ``vlm``; without a VLM, ``given`` as it is (the method's set-up then names what is missing)."""
    known = set(list_inputs())
    declared = [k for k in method.inputs if k in known]  # a plug-in's own undeclared input: the caller's
    missing = [k for k in method.inputs if k not in known and (given or {}).get(k) is None]
    if vlm is not None and missing:
        raise InputError(f"{method.name} needs the set-up input(s) {', '.join(missing)}: pass them in setup_inputs")
    context = None if vlm is None else InputContext(vlm, params=method.params)
    made = setup_inputs(declared, context, given, method=method.name)
    return {**dict(given or {}), **made}


def unmade_inputs(method: str) -> list[str]:
    """The set-up inputs the stream method ``method`` names that no model can make (a plug-in's own)."""
    known = set(list_inputs())
    names = stream_class(method).inputs
    return [k for k in names if k not in known] + _unmade([k for k in names if k in known])
