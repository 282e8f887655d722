"""negvocab's scorers as an OpenOOD v1.5 postprocessor, accepted by OpenOOD's own ``Evaluator``.

OpenOOD is not on PyPI and is not a dependency. Where it is importable (an OpenOOD checkout on the
path), :class:`NegvocabPostprocessor` subclasses its ``openood.postprocessors.BasePostprocessor``, so
that ``Evaluator(net, ..., postprocessor=...)`` (whose ``isinstance`` check refuses anything else) and
OpenOOD's ``postprocessors`` registry take it; elsewhere it stands alone with the same interface
(``__init__(config)``, ``setup(net, id_loader_dict, ood_loader_dict)``, ``postprocess(net, data) ->
(pred, conf)``, ``inference(net, data_loader, progress)``, and the ``args``/``args_dict``/``APS_mode``/
``hyperparam_search_done``/``set_hyperparam``/``get_hyperparam`` the ``Evaluator`` reads).
:func:`postprocessor_class` builds it over any other base (a fork's). ``conf`` is high for ID, OpenOOD's
sign and negvocab's.

``net``: OpenOOD's ``Evaluator`` computes the ID accuracy of its table from ``net(data).argmax(1)``, so
give it a :class:`ZeroShotNet` (the open_clip model as a zero-shot classifier over the ID prompts); the
postprocessor then takes the model, the ID classes and the templates from it.

The config, as OpenOOD's ``configs/postprocessors/<name>.yml`` (attribute or key access)::

    postprocessor:
      name: negvocab
      APS_mode: False
      postprocessor_args:
        method: neglabel          # any method of negvocab's registry
        vocabulary: /data/neglabel.json
        model: ViT-B-16           # the open_clip model name of `net` (its tokenizer); not with a ZeroShotNet
        templates: paper8
        id_classes: null          # null: ImageNet-1k (or the ZeroShotNet's); or a list of class names
        params: {tau: 0.01, groups: 100}
      postprocessor_sweep:        # for APS_mode: one list per parameter
        tau_list: [0.01, 0.02]

Registering it in an OpenOOD checkout: put ``NegvocabPostprocessor`` in
``openood/evaluation_api/postprocessor.py``'s (and ``openood/postprocessors/utils.py``'s)
``postprocessors`` dict under ``'negvocab'`` and save the YAML above as
``configs/postprocessors/negvocab.yml``; or pass an instance to ``Evaluator(net, ...,
postprocessor=NegvocabPostprocessor(config))`` (docs/howto/ecosystem.md).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from negvocab.adapters.zeroshot import ZeroShot, as_id_classes
from negvocab.core.errors import InputError
from negvocab.vlm.images import encode_batch
from negvocab.vlm.model import VLM

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses

__all__ = [
    "OPENOOD_SET_NAMES", "NegvocabPostprocessor", "ZeroShotNet", "from_openood_name", "openood_base",
    "postprocessor_class", "to_openood_name",
]  # fmt: skip

#: the rows of OpenOOD v1.5's ImageNet-1k table (its ``Evaluator``'s names, in its order) -> the same sets
#: and groups as ``negvocab score --ood openood=ROOT`` names them
OPENOOD_SET_NAMES: dict[str, str] = {
    "ssb_hard": "ssb-hard",
    "ninco": "ninco",
    "nearood": "near-ood",
    "inaturalist": "inaturalist",
    "textures": "textures",
    "openimage_o": "openimage-o",
    "farood": "far-ood",
}


def from_openood_name(name: str) -> str:
    """negvocab's name of an OpenOOD table row (``ssb_hard`` -> ``ssb-hard``, ``nearood`` -> ``near-ood``);
    a name OpenOOD's ImageNet-1k table does not have is refused, naming those it has.

    Parameters
    ----------
    name : str
        A row name of OpenOOD's ImageNet-1k table.
    """
    if name not in OPENOOD_SET_NAMES:
        raise InputError(f"{name!r} is no row of OpenOOD's ImageNet-1k table; it has {', '.join(OPENOOD_SET_NAMES)}")
    return OPENOOD_SET_NAMES[name]


def to_openood_name(name: str) -> str:
    """OpenOOD's table row of a negvocab set or group name (``ssb-hard`` -> ``ssb_hard``).

    Parameters
    ----------
    name : str
        A negvocab set or group name that has a row in OpenOOD's ImageNet-1k table.
    """
    back = {v: k for k, v in OPENOOD_SET_NAMES.items()}
    if name not in back:
        raise InputError(f"{name!r} has no row in OpenOOD's ImageNet-1k table; negvocab's names are {', '.join(back)}")
    return back[name]


log = logging.getLogger(__name__)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj.key`` or ``obj[key]`` (OpenOOD's Config allows both; a plain dict only the second)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def openood_base() -> type:
    """OpenOOD's ``BasePostprocessor`` where OpenOOD is importable, else ``object``.

    Looked up without importing OpenOOD where it is absent; an OpenOOD that is present but fails to
    import (a missing optional dependency of one of its postprocessors) is logged and left out."""
    if importlib.util.find_spec("openood") is None:
        return object
    try:
        from openood.postprocessors import BasePostprocessor
    except Exception as e:  # any error of a third-party package's import: negvocab still works alone
        log.warning("openood is on the path but does not import (%s): NegvocabPostprocessor stands alone", e)
        return object
    return BasePostprocessor


class ZeroShotNet(torch.nn.Module):
    """An open_clip model as the classifier OpenOOD expects of ``net``: ``net(x)`` returns the logits
    ``logit_scale * cos(image, ID prompt)`` [B, C] on ``x``'s device (float32), so OpenOOD's ID
    accuracy is zero-shot top-1 with the ID prompts. ``.to(device)`` moves the model and the prompts.

    Parameters
    ----------
    vlm : VLM
        The open_clip model.
    id_classes : IdClasses, iterable of str, or None
        The ID label space (default ImageNet-1k).
    templates : str or list of str, default "paper8"
        The prompt preset or list that encodes the ID class names.
    """

    id_emb: torch.Tensor

    def __init__(
        self,
        vlm: VLM,
        *,
        id_classes: IdClasses | Iterable[str] | None = None,
        templates: str | list[str] = "paper8",
    ) -> None:
        super().__init__()
        self.vlm = vlm
        self.model = vlm.model  # a submodule: eval(), to() and parameters() reach it
        self.id_classes = as_id_classes(id_classes)
        self.templates = templates
        emb = vlm.encode_text(list(self.id_classes.names), templates, pos="n", progress=False)
        self.register_buffer("id_emb", torch.from_numpy(np.ascontiguousarray(emb, dtype=np.float32)))
        self.scale = float(vlm.logit_scale or 100.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g, _ = encode_batch(self.vlm, x, False)
        return (self.scale * g.float() @ self.id_emb.cpu().T).to(x.device)

    def _apply(self, fn: Any, recurse: bool = True) -> ZeroShotNet:
        out = super()._apply(fn, recurse)
        first = next(self.model.parameters(), None)
        self.vlm.device = self.id_emb.device if first is None else first.device  # where encode_batch sends images
        return out


class _Postprocessor:
    """The postprocessor's work, whatever its base (:func:`postprocessor_class`)."""

    def __init__(self, config: Any, vlm: VLM | None = None) -> None:
        self.config = config
        post = _get(config, "postprocessor")
        if post is None:
            raise InputError("postprocessor config: no 'postprocessor' section")
        self.args = _get(post, "postprocessor_args") or {}
        self.args_dict = dict(_get(post, "postprocessor_sweep") or {})
        self.APS_mode = bool(_get(post, "APS_mode", False))
        self.hyperparam_search_done = False
        self.method = str(_get(self.args, "method", "neglabel"))
        self.params = dict(_get(self.args, "params") or {})
        for key in self.args_dict:
            if not key.endswith("_list"):
                raise InputError(f"postprocessor_sweep.{key}: sweep keys are <parameter>_list, as in OpenOOD's configs")
        self.vlm = vlm
        self.zeroshot: ZeroShot | None = None

    def setup(
        self, net: torch.nn.Module, id_loader_dict: Any = None, ood_loader_dict: Any = None, **kwargs: Any
    ) -> None:
        """Embed the ID prompts and the vocabulary with ``net`` once (no data is read: zero-shot).

        A :class:`ZeroShotNet` gives its model, and its ID classes and templates where the config has none."""
        if self.zeroshot is not None:
            return
        id_classes, templates = _get(self.args, "id_classes"), _get(self.args, "templates")
        if isinstance(net, ZeroShotNet):
            self.vlm = self.vlm or net.vlm
            id_classes = net.id_classes if id_classes is None else id_classes
            templates = net.templates if templates is None else templates
        if self.vlm is None:
            import open_clip

            name = _get(self.args, "model")
            if not name:
                raise InputError(
                    "postprocessor_args.model: give the open_clip model name of net (its tokenizer), "
                    "or pass vlm= or a ZeroShotNet as net"
                )
            device = str(next(net.parameters()).device)
            self.vlm = VLM.from_model(
                net, open_clip.get_tokenizer(name), name=str(name), random_weights=False, device=device
            )
        self.zeroshot = ZeroShot(
            self.vlm, self.method, id_classes=id_classes, vocabulary=_get(self.args, "vocabulary"),
            templates=templates or "paper8", **self.params,
        )  # fmt: skip

    def _ready(self) -> ZeroShot:
        if self.zeroshot is None:
            raise InputError("call setup(net, id_loader_dict, ood_loader_dict) before postprocess")
        return self.zeroshot

    @torch.no_grad()
    def postprocess(self, net: torch.nn.Module, data: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(zero-shot class, confidence high = ID) of a preprocessed image batch."""
        zs = self._ready()
        g, local = zs.features(data)
        return zs.classify(g), zs.score_features(g, local)

    def inference(
        self, net: torch.nn.Module, data_loader: Any, progress: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Predictions, confidences and labels over OpenOOD batches (dicts with ``data`` and ``label``),
        on the model's device (OpenOOD's own loop moves batches with ``.cuda()``)."""
        preds, confs, labels = [], [], []
        for batch in data_loader:
            pred, conf = self.postprocess(net, batch["data"])
            preds.append(pred.cpu())
            confs.append(conf.cpu())
            labels.append(torch.as_tensor(batch["label"]).cpu())
        return torch.cat(preds).numpy().astype(int), torch.cat(confs).numpy(), torch.cat(labels).numpy().astype(int)

    def set_hyperparam(self, hyperparam: list[Any]) -> None:
        """One value per ``postprocessor_sweep`` key, in its order (OpenOOD's hyperparameter search)."""
        names = [k[: -len("_list")] for k in self.args_dict]
        if len(hyperparam) != len(names):
            raise InputError(
                f"set_hyperparam: {len(hyperparam)} values for the sweep's {len(names)} parameters {names}"
            )
        self.params.update(zip(names, hyperparam, strict=True))
        self._ready().set_params(**dict(zip(names, hyperparam, strict=True)))

    def get_hyperparam(self) -> list[Any]:
        """The swept parameters' values now, in the sweep's order."""
        values = self._ready().hyperparameters
        return [values[k[: -len("_list")]] for k in self.args_dict]


def postprocessor_class(base: type | None = None) -> type[_Postprocessor]:
    """A ``NegvocabPostprocessor`` class that subclasses ``base`` (default :func:`openood_base`): for an
    OpenOOD fork whose ``BasePostprocessor`` lives elsewhere. Its methods come before ``base``'s.

    Parameters
    ----------
    base : type, optional
        The fork's ``BasePostprocessor`` class.
    """
    base = openood_base() if base is None else base
    if base in NegvocabPostprocessor.__mro__:
        return NegvocabPostprocessor
    doc = f"{NegvocabPostprocessor.__doc__} Subclasses ``{base.__module__}.{base.__qualname__}``."
    return type("NegvocabPostprocessor", (_Postprocessor, base), {"__module__": __name__, "__doc__": doc})


class NegvocabPostprocessor(_Postprocessor, openood_base()):  # type: ignore[misc]
    """A negvocab scorer as an OpenOOD postprocessor (a subclass of OpenOOD's ``BasePostprocessor``
    where OpenOOD is importable); ``vlm``: the :class:`negvocab.VLM` of ``net`` (default: a
    :class:`ZeroShotNet`'s, or built in :meth:`setup` from ``net`` and ``postprocessor_args.model``).

    Parameters
    ----------
    config : object
        OpenOOD's config, with a ``postprocessor`` section (``postprocessor_args``: ``method``,
        ``params``, ...; ``postprocessor_sweep``: ``<parameter>_list`` keys; ``APS_mode``).
    vlm : VLM, optional
        The model of ``net``.
    """
