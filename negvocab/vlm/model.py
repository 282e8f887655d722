"""The :class:`VLM` wrapper: any open_clip model, its identity, device, precision and caches.

Loading (device, precision, hashes, checkpoint resolution) lives in :mod:`negvocab.vlm.loading`;
its public names are re-exported here.

Weights come from an open_clip pretrained tag, an ``hf-hub:`` id, a local checkpoint file or folder,
or (``random_weights=True``) random initialisation for tests, which is never silent: a warning is
logged, :attr:`VLM.random_weights` is True and the identity says so. Random weights are chosen
explicitly, as the CLI's ``--random-weights``; the old ``VLM(name)`` / ``VLM(name, pretrained=None)``
still builds them for one release, with a :class:`DeprecationWarning`.

Local checkpoints avoid open_clip#1068: a file loaded on its own gets the model config's default
preprocessing and activation, not those its training tag implies. Pass ``tag=`` to say which tag the
file was trained as; the preprocessing actually used is recorded in :attr:`VLM.identity` and in
every cache key.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from negvocab.core.errors import InputError, ResourceError
from negvocab.core.extras import require
from negvocab.core.paths import cache_dir as default_cache_dir
from negvocab.vlm.cache import Checkpoints, EmbeddingStore
from negvocab.vlm.hub import hub_access
from negvocab.vlm.images import ImageSource, encode_images
from negvocab.vlm.loading import (
    checkpoint_sha256,
    has_quick_gelu,
    ieee_fp32,
    jsonable,
    load_model,
    needs_hub,
    resolve_device,
    resolve_precision,
    state_dict_sha256,
)
from negvocab.vlm.templates import TemplateSet, resolve_templates
from negvocab.vlm.text import encode_labels, encode_prompts, text_tower

if TYPE_CHECKING:
    import torch

    from negvocab.vlm.cache import EmbeddingStore
    from negvocab.vlm.images import ImageEmbeddings

__all__ = ["STORE_EVERY_PROMPTS", "TokenizerUnavailable", "VLM"]

log = logging.getLogger(__name__)

#: computed text embeddings reach the cache in pieces of this many prompts (labels x templates):
#: what a hard kill (SIGKILL, OOM) can lose; Ctrl-C loses at most the chunk being encoded
STORE_EVERY_PROMPTS = 65536


# -- the wrapper ---------------------------------------------------------------------------------
def _weights_spec(name: str, pretrained: str | os.PathLike[str] | None, random_weights: bool) -> str | None:
    """``pretrained`` as the loader takes it (None: random weights, or a schema name's own), checked.

    Random weights must be asked for (``random_weights=True``); the old implicit form still works one
    release, with a :class:`DeprecationWarning` that says what to write.
    """
    if random_weights and pretrained is not None:
        raise InputError(f"pretrained={str(pretrained)!r} and random_weights=True: give one of them, not both")
    if random_weights or pretrained is not None or name.startswith(("hf-hub:", "local-dir:")):
        return None if pretrained is None else str(pretrained)
    warnings.warn(
        f"VLM({name!r}) without pretrained= builds RANDOM weights; this implicit form goes away in the next "
        f"release: write VLM({name!r}, random_weights=True) for random weights, or "
        f"VLM({name!r}, pretrained=TAG_OR_CHECKPOINT) for real ones",
        DeprecationWarning,
        stacklevel=3,
    )
    return None


class TokenizerUnavailable(ResourceError):
    """The model's tokenizer cannot be built here (a missing package, a hub that cannot be reached)."""


class VLM:
    """An open_clip vision-language model with cached, exact and fast text/image embedding.

    Parameters
    ----------
    name : str
        open_clip model name (``"ViT-B-32"``), ``"hf-hub:org/repo"`` or ``"local-dir:/path"``.
    pretrained : str or None
        A pretrained tag (``"laion2b_s34b_b79k"``), a local checkpoint file or folder; None with
        ``random_weights=True`` (or with an ``hf-hub:``/``local-dir:`` name, which carries its weights).
    device : str
        ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
    precision : str or None
        ``"fp32"``, ``"fp16"`` or ``"bf16"`` (autocast over fp32 weights). Default: fp16 on CUDA,
        fp32 on CPU. Outputs are always float32.
    cache_dir : path or None
        Embedding cache root (default ``negvocab.core.paths.cache_dir() / "embeddings"``).
    cache : bool
        False disables the embedding cache.
    tag : str or None
        With a local checkpoint: the tag it was trained as (its preprocessing and QuickGELU).
    quick_gelu : bool or None
        Force QuickGELU on (None: as the tag or model config says).
    preprocess : mapping or None
        Image preprocessing overrides (mean, std, interpolation, resize_mode, fill_color).
    seed : int
        Seed of the random initialisation when ``random_weights`` is True.
    random_weights : bool
        True builds RANDOM weights (tests and dry runs only; logged, and :attr:`random_weights` is
        True); it excludes ``pretrained``.

    Attributes
    ----------
    causal_tower : CausalTower or None
        How to cut the text context per batch (:func:`negvocab.vlm.text.text_tower`); None for
        towers whose output depends on the padding (never cut).
    batch_size, num_workers : int or None
        Defaults of :meth:`encode_text` / :meth:`encode_images` when they are given None (None:
        their own defaults); the CLI's ``--batch-size`` and ``--num-workers`` set them, so code
        that encodes through this VLM (e.g. ``evaluate_vocabularies``) follows them.

    Examples
    --------
    >>> vlm = VLM("ViT-B-32", pretrained="laion2b_s34b_b79k")        # doctest: +SKIP
    >>> vlm.encode_text(["goldfish", "umbrella"]).shape               # doctest: +SKIP
    (2, 512)
    >>> tiny = VLM("ViT-B-32", random_weights=True, device="cpu")     # doctest: +SKIP
    """

    batch_size: int | None = None
    num_workers: int | None = None

    def __init__(
        self,
        name: str,
        pretrained: str | os.PathLike[str] | None = None,
        device: str = "auto",
        precision: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        cache: bool = True,
        tag: str | None = None,
        quick_gelu: bool | None = None,
        preprocess: Mapping[str, Any] | None = None,
        seed: int = 0,
        random_weights: bool = False,
    ) -> None:
        require("torch")  # where the [vlm] extra is missing: one line naming it
        require("open_clip")
        import open_clip

        spec = _weights_spec(name, pretrained, random_weights)
        resolve_precision(precision, resolve_device(device))  # bad settings fail before the model loads
        with hub_access() if needs_hub(name, spec) else contextlib.nullcontext(True) as online:
            loaded = load_model(
                name, spec, tag=tag, quick_gelu=quick_gelu, preprocess=preprocess, seed=seed, online=online
            )
            try:
                tokenizer = open_clip.get_tokenizer(loaded.spec)
            except ModuleNotFoundError as e:
                raise TokenizerUnavailable(
                    f"the tokenizer of {name} needs the {e.name} package: pip install 'negvocab[hf]'"
                ) from e
            except Exception as e:
                raise TokenizerUnavailable(
                    f"could not build the tokenizer of {name} ({type(e).__name__}: {str(e)[:200]}); "
                    "tokenizers from the Hugging Face hub need network access or a filled HF cache"
                ) from e
        self._setup(
            loaded.model,
            tokenizer,
            name=name,
            pretrained=None if pretrained is None else str(pretrained),
            checkpoint=loaded.checkpoint,
            random_weights=loaded.source == "random",
            tag=loaded.tag,
            preprocess_from=loaded.preprocess_from,
            device=device,
            precision=precision,
            cache_dir=cache_dir,
            cache=cache,
            seed=seed if loaded.source == "random" else None,
        )

    @classmethod
    def from_model(
        cls,
        model: torch.nn.Module,
        tokenizer: Callable[..., Any],
        *,
        name: str,
        random_weights: bool,
        device: str = "auto",
        precision: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
    ) -> VLM:
        """Wrap an open_clip model you built yourself (its weights are fingerprinted by content)."""
        self = cls.__new__(cls)
        if not hasattr(getattr(model, "visual", None), "preprocess_cfg"):
            from open_clip.model import get_model_preprocess_cfg, set_model_preprocess_cfg
            from open_clip.transform import PreprocessCfg

            pp = {**PreprocessCfg().__dict__, **get_model_preprocess_cfg(model)}
            set_model_preprocess_cfg(model, pp)
        if random_weights:
            log.warning("%s: wrapping a model with RANDOM weights; outputs are meaningless outside tests", name)
        self._setup(
            model,
            tokenizer,
            name=name,
            pretrained=None,
            checkpoint=None,
            random_weights=random_weights,
            tag=None,
            preprocess_from="model",
            device=device,
            precision=precision,
            cache_dir=cache_dir,
            cache=cache,
            seed=None,
        )
        return self

    def _setup(
        self,
        model: Any,
        tokenizer: Callable[..., Any],
        *,
        name: str,
        pretrained: str | None,
        checkpoint: str | None,
        random_weights: bool,
        tag: str | None,
        preprocess_from: str,
        device: str,
        precision: str | None,
        cache_dir: str | os.PathLike[str] | None,
        cache: bool,
        seed: int | None,
    ) -> None:
        import torch
        from open_clip.transform import PreprocessCfg, image_transform_v2

        self.name = name
        self.pretrained = pretrained
        self.random_weights = random_weights
        self.device = resolve_device(device)
        self.precision = resolve_precision(precision, self.device)
        self.model = model.to(self.device).eval()
        if any(p.is_floating_point() and p.dtype != torch.float32 for p in model.parameters()):
            log.info("%s: weights converted to float32 (fp16/bf16 are run as autocast)", name)
            self.model = model.float()
        self.tokenizer = tokenizer
        pp_cfg = dict(model.visual.preprocess_cfg)
        self.preprocess = image_transform_v2(PreprocessCfg(**pp_cfg), is_train=False)
        self.cache_root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir() / "embeddings"
        self.cache_enabled = cache
        self._checkpoint = checkpoint
        self.causal_tower = text_tower(model)
        self._identity_base: dict[str, Any] = {
            "name": name,
            "pretrained": pretrained,
            "tag": tag,
            "random_weights": random_weights,
            "seed": seed,
            "precision": self.precision,
            "quick_gelu": has_quick_gelu(model),
            "preprocessing": {**jsonable(pp_cfg), "from": preprocess_from},
            "context_length": int(getattr(tokenizer, "context_length", 0) or 0),
            "text_tower": "causal (context cut per batch)" if self.causal_tower is not None else "uncut",
            "architecture": hashlib.sha256(repr(model).encode()).hexdigest()[:16],
        }
        self._identity: dict[str, Any] | None = None
        self._dim: int | None = None
        self._stores: dict[tuple[str, ...], EmbeddingStore] = {}
        log.info(
            "%s on %s (%s)%s",
            name,
            self.device,
            self.precision,
            " with RANDOM weights" if random_weights else "",
        )

    # -- identity --------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Embedding dimension (the joint image-text space)."""
        if self._dim is None:
            proj = getattr(self.model, "text_projection", None)
            if proj is not None and hasattr(proj, "shape") and len(proj.shape) == 2:
                self._dim = int(proj.shape[1])
            else:
                self._dim = int(self._encode_prompts(["a"]).shape[1])
        return self._dim

    @property
    def logit_scale(self) -> float | None:
        """The model's own logit scale ``exp(model.logit_scale)``: 100 for CLIP's released weights,
        1/0.07 for open_clip's random initialisation, SigLIP's learned one; None when the model has
        none. The logit baselines (msp, maxlogit, energy, gen) use it unless a scale is given."""
        p: Any = getattr(self.model, "logit_scale", None)
        return float(p.detach().float().exp()) if hasattr(p, "detach") else None

    @property
    def logit_bias(self) -> float | None:
        """SigLIP's learned logit bias (None for CLIP). It shifts every logit of an image alike, so
        no baseline's ranking or metric depends on it; the baselines leave it out."""
        p: Any = getattr(self.model, "logit_bias", None)
        return float(p.detach().float()) if hasattr(p, "detach") else None

    @property
    def identity(self) -> dict[str, Any]:
        """Who this model is: name, pretrained, weights fingerprint, dim, precision, preprocessing.

        ``weights`` is ``sha256:<hex>`` of the checkpoint file (or, for random weights and models
        built in memory, of the state dict). Computed once, on first use.
        """
        if self._identity is None:
            if self._checkpoint:
                memo = self.cache_root / "fingerprints.json" if self.cache_enabled else None
                weights = "sha256:" + checkpoint_sha256(self._checkpoint, memo)
            else:
                weights = "sha256-state-dict:" + state_dict_sha256(self.model)
            self._identity = {**self._identity_base, "weights": weights, "dim": self.dim}
        return dict(self._identity)

    def _key_identity(self, kind: str) -> dict[str, Any]:
        ident = self.identity
        keep = ["name", "weights", "architecture", "quick_gelu", "precision", "context_length", "dim"]
        if kind != "text":  # text embeddings do not depend on the image preprocessing
            keep.append("preprocessing")
        out = {k: ident[k] for k in keep}
        out["preprocessing"] = (
            {k: v for k, v in ident["preprocessing"].items() if k != "from"} if kind != "text" else None
        )
        out["kind"] = kind
        return out

    def store(self, kind: str, extra: Mapping[str, Any] | None = None) -> EmbeddingStore:
        """The embedding cache for ``kind`` (``text``, ``image``, ``image-local``) of this model."""
        key_doc = {"model": self._key_identity(kind), **(extra or {})}
        key = (kind, json.dumps(key_doc, sort_keys=True))
        if key not in self._stores:
            self._stores[key] = EmbeddingStore.for_key(self.cache_root / kind, key_doc)
        return self._stores[key]

    # -- running the model -----------------------------------------------------------------------
    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """Inference mode plus autocast to fp16/bf16 when that precision was chosen."""
        import torch

        with torch.inference_mode():
            if self.precision == "fp32":
                with ieee_fp32() if self.device.type == "cuda" else contextlib.nullcontext():
                    yield
            else:
                dtype = torch.float16 if self.precision == "fp16" else torch.bfloat16
                with torch.autocast(device_type=self.device.type, dtype=dtype):
                    yield

    def unit_rows(self, feats: torch.Tensor, what: str) -> torch.Tensor:
        """``feats`` L2-normalised, float32, on the CPU; a one-line error when the model gave
        NaN or inf (fp16 overflow, damaged weights): such rows must never reach the cache."""
        import torch
        import torch.nn.functional as F

        out = F.normalize(feats.float(), dim=-1).cpu()
        bad = ~torch.isfinite(out).all(dim=-1)
        if bool(bad.any()):
            hint = (
                "check the weights (a damaged checkpoint?)"
                if self.precision == "fp32"
                else f"{self.precision} overflowed: use precision='fp32'"
                + (" or 'bf16'" if self.precision == "fp16" else "")
            )
            raise ResourceError(
                f"{self.name} ({self.precision} on {self.device}) gave NaN/inf embeddings for "
                f"{int(bad.sum())} of {len(out)} {what}; {hint}",
                param="precision",
            )
        return out

    def _encode_prompts(self, prompts: Sequence[str], **kw: Any) -> torch.Tensor:
        return encode_prompts(self, prompts, **kw)

    # -- public encoders -------------------------------------------------------------------------
    def encode_text(
        self,
        labels: Sequence[str],
        templates: str | Sequence[str] | TemplateSet = "paper8",
        *,
        pos: str | Sequence[str | None] | None = None,
        batch_size: int | None = None,
        progress: bool | None = None,
        reduce: str | None = None,
    ) -> np.ndarray:
        """Template-ensembled text embeddings of ``labels``, float32 [n, d], L2-normalised.

        Each label's embedding is the mean of its template embeddings, normalised
        (docs/methods.md#text-embeddings): of the L2-normalised ones (``reduce="unit_mean"``) or of the
        raw ones (``"raw_mean"``, CSP's code); None takes the template set's (``"csp"``: raw_mean,
        the others unit_mean). Results are cached on disk per model identity and template set, so
        labels seen before cost no model work. ``pos`` gives each label's part of speech (``"n"``,
        ``"a"``; one string for all) for presets that depend on it (``"neglabel"``); labels without
        one count as nouns. ``progress``: a bar on a terminal once the encoding lasts 2 s (None or
        True; False: no bar); either way a line with done/total, rate and ETA goes to the
        ``negvocab.core.progress`` logger every 30 s (:mod:`negvocab.core.progress`).
        """
        labels = list(labels)
        for i, label in enumerate(labels):
            if not isinstance(label, str) or not label.strip():
                raise InputError(f"label {i} is empty or not a string: {label!r}")
        tset = resolve_templates(templates).with_reduce(reduce)
        if pos is None or isinstance(pos, str):
            pos_list: list[str | None] = [pos] * len(labels)
        else:
            pos_list = list(pos)
            if len(pos_list) != len(labels):
                raise InputError(f"pos has {len(pos_list)} entries for {len(labels)} labels")
        out = np.empty((len(labels), self.dim), dtype=np.float32)
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, p in enumerate(pos_list):
            groups.setdefault(tset.for_pos(p), []).append(i)
        for tpls, idx in groups.items():
            uniq = list(dict.fromkeys(labels[i] for i in idx))
            raw = tset.reduce == "raw_mean" and len(tpls) > 1  # one template: the reductions are the same
            emb = self._cached(
                "text",
                uniq,
                {"templates": list(tpls), **({"reduce": "raw_mean"} if raw else {})},
                functools.partial(
                    self._encode_with,
                    tpls,
                    batch_size=batch_size or self.batch_size,
                    progress=progress,
                    reduce=tset.reduce,
                ),
                store_every=max(1, STORE_EVERY_PROMPTS // len(tpls)),
            )
            if len(groups) == 1 and len(uniq) == len(labels):  # unique labels, one template set
                return np.ascontiguousarray(emb, dtype=np.float32)
            row = {lab: j for j, lab in enumerate(uniq)}
            out[idx] = emb[[row[labels[i]] for i in idx]]
        return out

    def _encode_with(
        self,
        templates: Sequence[str],
        todo: list[str],
        sink: Callable[[list[str], np.ndarray], None] | None,
        *,
        batch_size: int | None,
        progress: bool | None,
        reduce: str = "unit_mean",
    ) -> np.ndarray:
        """:func:`encode_labels` of ``todo`` with ``templates``, each finished chunk handed to ``sink``."""
        return encode_labels(
            self, todo, templates, batch_size=batch_size, progress=progress, on_chunk=sink, reduce=reduce
        )

    def _cached(
        self,
        kind: str,
        keys: list[str],
        extra: Mapping[str, Any],
        compute: Callable[[list[str], Callable[[list[str], np.ndarray], None] | None], np.ndarray],
        store_every: int,
    ) -> np.ndarray:
        """Rows for unique ``keys`` from the cache, computing and storing only the missing ones.

        ``compute(missing, sink)`` hands finished chunks to ``sink``, which stores them as they
        come (:class:`~negvocab.vlm.cache.Checkpoints`: every ``SAVE_EVERY_S`` seconds of work or
        ``store_every`` rows, and whatever is finished when interrupted), so an interrupted long
        run resumes where it stopped.
        """
        if not self.cache_enabled:
            return compute(keys, None)
        store = self.store(kind, extra)
        found, rows = store.get(keys)
        missing = [k for k, hit in zip(keys, found, strict=True) if not hit]
        if not missing:
            log.info("%s: all %d %s embeddings from the cache", self.name, len(keys), kind)
            return cast("np.ndarray", rows)  # every key found: rows is an array (None only for no keys)
        log.info(
            "%s: %d of %d %s embeddings cached, computing %d",
            self.name,
            len(keys) - len(missing),
            len(keys),
            kind,
            len(missing),
        )
        saved = Checkpoints(store, max_rows=store_every)  # by time, by size, and whatever is done on exit

        try:
            new = compute(missing, saved.add)
        finally:
            saved.flush()  # keep what was finished, also when interrupted
        if rows is None:
            return new
        rows[~found] = new
        return rows

    def encode_images(
        self,
        source: ImageSource,
        *,
        local_features: bool = False,
        strict: bool = False,
        batch_size: int | None = None,
        num_workers: int | None = None,
        progress: bool | None = None,
    ) -> ImageEmbeddings:
        """Image embeddings (and optionally GL-MCM patch features) of files, a folder or a dataset.

        See :func:`negvocab.vlm.images.encode_images` for the accepted sources and the outputs.
        """
        return encode_images(
            self,
            source,
            local_features=local_features,
            strict=strict,
            batch_size=batch_size or self.batch_size,
            num_workers=self.num_workers if num_workers is None else num_workers,
            progress=progress,
        )

    def __repr__(self) -> str:
        rw = ", RANDOM weights" if self.random_weights else ""
        return (
            f"VLM({self.name!r}, pretrained={self.pretrained!r}, "
            f"device={str(self.device)!r}, precision={self.precision!r}{rw})"
        )
