"""An OpenOOD-style postprocessor: negvocab's scorers where OpenOOD v1.5 expects a postprocessor.

OpenOOD is not on PyPI, so this class does not subclass its ``BasePostprocessor``: it has the same
interface (``__init__(config)``, ``setup(net, id_loader_dict, ood_loader_dict)``,
``postprocess(net, data) -> (pred, conf)``, ``inference(net, data_loader, progress)``, and the
``args``/``args_dict``/``APS_mode``/``hyperparam_search_done``/``set_hyperparam``/``get_hyperparam``
that OpenOOD's ``Evaluator`` reads). ``conf`` is high for ID, OpenOOD's sign and negvocab's.

The config, as OpenOOD's ``configs/postprocessors/<name>.yml`` (attribute or key access)::

    postprocessor:
      name: negvocab
      APS_mode: False
      postprocessor_args:
        method: neglabel          # any method of negvocab's registry
        vocabulary: /data/neglabel.json
        model: ViT-B-16           # the open_clip model name of `net` (its tokenizer)
        templates: paper8
        id_classes: null          # null: ImageNet-1k; or a list of class names
        params: {tau: 0.01, groups: 100}
      postprocessor_sweep:        # for APS_mode: one list per parameter
        tau_list: [0.01, 0.02]

Registering it in an OpenOOD checkout: put ``NegvocabPostprocessor`` in
``openood/postprocessors/utils.py``'s ``postprocessors`` dict under ``'negvocab'`` and save the YAML
above as ``configs/postprocessors/negvocab.yml``; or pass an instance to ``Evaluator(net, ...,
postprocessor=NegvocabPostprocessor(config, vlm=vlm))``. ``net`` is the open_clip model (docs/howto/ecosystem.md,
"Using negvocab from pytorch-ood / OpenOOD").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from negvocab.adapters.zeroshot import ZeroShot
from negvocab.errors import InputError
from negvocab.vlm.model import VLM

__all__ = ["NegvocabPostprocessor"]


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj.key`` or ``obj[key]`` (OpenOOD's Config allows both; a plain dict only the second)."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


class NegvocabPostprocessor:
    """A negvocab scorer as an OpenOOD postprocessor; ``vlm``: the :class:`negvocab.VLM` of ``net``
    (default: built in :meth:`setup` from ``net`` and ``postprocessor_args.model``)."""

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
        """Embed the ID prompts and the vocabulary with ``net`` once (no data is read: zero-shot)."""
        if self.zeroshot is not None:
            return
        if self.vlm is None:
            import open_clip

            name = _get(self.args, "model")
            if not name:
                raise InputError(
                    "postprocessor_args.model: give the open_clip model name of net (its tokenizer), or pass vlm="
                )
            device = str(next(net.parameters()).device)
            self.vlm = VLM.from_model(
                net, open_clip.get_tokenizer(name), name=str(name), random_weights=False, device=device
            )
        self.zeroshot = ZeroShot(
            self.vlm, self.method, id_classes=_get(self.args, "id_classes"), vocabulary=_get(self.args, "vocabulary"),
            templates=_get(self.args, "templates", "paper8"), **self.params,
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
        """Predictions, confidences and labels over OpenOOD batches (dicts with ``data`` and ``label``)."""
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
