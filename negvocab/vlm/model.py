"""The :class:`VLM` wrapper: any open_clip model, its identity, device, precision and caches.

Weights come from an open_clip pretrained tag, an ``hf-hub:`` id, a local checkpoint file or folder,
or (``pretrained=None``) random initialisation for tests, which is never silent: a warning is
logged, :attr:`VLM.random_weights` is True and the identity says so.

Local checkpoints avoid open_clip#1068: a file loaded on its own gets the model config's default
preprocessing and activation, not those its training tag implies. Pass ``tag=`` to say which tag the
file was trained as; the preprocessing actually used is recorded in :attr:`VLM.identity` and in
every cache key.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.errors import InputError, ResourceError
from negvocab.vlm.hub import hub_access
from negvocab.vlm.templates import TemplateSet, resolve_templates

if TYPE_CHECKING:
    import torch

    from negvocab.vlm.cache import EmbeddingStore
    from negvocab.vlm.images import ImageEmbeddings

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "fp16", "bf16")
#: computed text embeddings reach the cache in pieces of this many prompts (labels x templates):
#: what a hard kill (SIGKILL, OOM) can lose; Ctrl-C loses at most the chunk being encoded
STORE_EVERY_PROMPTS = 65536
_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode", "fill_color")
LOCAL_CHECKPOINT_HINT = "--pretrained /path/to/open_clip_pytorch_model.bin"


# -- device and precision -----------------------------------------------------------------------
def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA if available, else CPU; anything else is checked and returned."""
    import torch

    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InputError(f"unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ResourceError(f"device {device!r} requested but CUDA is not available; use --device cpu")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ResourceError(f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) are visible")
    return dev


def resolve_precision(precision: str | None, device: torch.device) -> str:
    """fp32 on CPU, fp16 autocast on CUDA by default; validates explicit choices."""
    if precision is None:
        return "fp16" if device.type == "cuda" else "fp32"
    p = precision.lower().removeprefix("torch.").replace("bfloat16", "bf16").replace("float", "fp").replace("amp_", "")
    p = {"fp": "fp32", "amp": "fp16", "half": "fp16"}.get(p, p)
    if p not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if p == "fp16" and device.type != "cuda":
        raise InputError("precision fp16 needs a CUDA device; use fp32 (or bf16) on the CPU")
    if p == "bf16" and device.type == "cuda":
        import torch

        if not torch.cuda.is_bf16_supported(including_emulation=False):
            raise InputError(f"{torch.cuda.get_device_name(device)} has no bf16 support; use fp16 or fp32")
    return p


@contextlib.contextmanager
def _ieee_fp32() -> Iterator[None]:
    """Precision fp32 means IEEE fp32 on CUDA: cuDNN runs fp32 convolutions in TF32 by default
    (1e-4 off on a ViT's patch embedding), and ``torch.set_float32_matmul_precision("high")`` in
    the user's code would do the same to matrix products."""
    import torch

    backends = (torch.backends.cudnn.conv, torch.backends.cuda.matmul)
    before = [b.fp32_precision for b in backends]
    for b in backends:
        b.fp32_precision = "ieee"
    try:
        yield
    finally:
        for b, value in zip(backends, before, strict=True):
            b.fp32_precision = value


# -- fingerprints --------------------------------------------------------------------------------
def file_sha256(path: str | os.PathLike[str], memo: Path | None = None) -> str:
    """SHA-256 of a file's bytes, remembered in ``memo`` (JSON) by (path, size, mtime, inode, ctime).

    Inode and ctime catch a checkpoint replaced by another of the same size with its mtime kept
    (``cp -p``, ``rsync -a``): no tool sets the ctime back.
    """
    path = Path(path).resolve()
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_ctime_ns}"
    table: dict[str, str] = {}
    if memo is not None and memo.is_file():
        try:
            table = json.loads(memo.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            table = {}
        if key in table:
            return table[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            h.update(block)
    digest = h.hexdigest()
    if memo is not None:
        from negvocab.atomic import write_json

        table[key] = digest
        try:
            write_json(memo, table)
        except OSError as e:  # a read-only cache must not stop the run
            log.warning("cannot record the checkpoint hash in %s: %s", memo, e)
    return digest


def state_dict_sha256(model: torch.nn.Module) -> str:
    """SHA-256 over the model's tensors (names, dtypes, shapes, bytes) in state-dict order."""
    import torch

    h = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        t = tensor.detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        h.update(t.numpy().tobytes())
    return h.hexdigest()


# -- loading -------------------------------------------------------------------------------------
def _check_model_name(name: str) -> str:
    import open_clip

    cleaned = name.replace("/", "-")
    models = open_clip.list_models()
    if cleaned in models:
        return cleaned
    close = difflib.get_close_matches(cleaned, models, n=6, cutoff=0.5)
    hint = f"close matches: {', '.join(close)}" if close else "see open_clip.list_models()"
    raise InputError(f"unknown open_clip model {name!r}; {hint} (or use 'hf-hub:org/repo')")


def _tag_cfg(name: str, tag: str) -> dict[str, Any]:
    import open_clip

    cfg = open_clip.get_pretrained_cfg(name, tag)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(name)
        raise InputError(
            f"unknown pretrained tag {tag!r} for {name}; known tags: {', '.join(tags) or 'none'}; "
            f"or pass a local checkpoint ({LOCAL_CHECKPOINT_HINT})"
        )
    return dict(cfg)


def _needs_hub(name: str, pretrained: str | None) -> bool:
    """Whether loading ``name`` may download from the Hugging Face hub (weights, config or tokenizer)."""
    import open_clip

    if name.startswith("hf-hub:"):
        return True
    if name.startswith("local-dir:"):
        folder = Path(name.split(":", 1)[1]).expanduser()
        if not (folder / "open_clip_config.json").is_file():
            raise InputError(f"{name}: no open_clip_config.json in {folder}; give a folder holding it and the weights")
    if pretrained is not None and not _looks_like_path(pretrained) and not Path(pretrained).expanduser().exists():
        return True
    cfg = open_clip.get_model_config(name) or {}
    return bool(cfg.get("text_cfg", {}).get("hf_tokenizer_name"))


def _looks_like_path(value: str) -> bool:
    return os.sep in value or "/" in value or value.endswith((".bin", ".pt", ".pth", ".safetensors", ".ckpt"))


class _Loaded:
    """What :func:`_load` found: the model and how it was made."""

    def __init__(
        self, model: Any, checkpoint: str | None, source: str, tag: str | None, preprocess_from: str, spec: str
    ):
        self.model = model
        self.spec = spec  # the name open_clip knows the model by (for its tokenizer)
        self.checkpoint = checkpoint
        self.source = source
        self.tag = tag
        self.preprocess_from = preprocess_from


_UNREACHABLE = "the hub is offline or unreachable, and the file is not in the local Hugging Face cache"


def _load(
    name: str,
    pretrained: str | None,
    *,
    tag: str | None,
    quick_gelu: bool | None,
    preprocess: Mapping[str, Any] | None,
    seed: int,
    online: bool = True,
) -> _Loaded:
    """The model behind ``name`` / ``pretrained``: a schema id, random weights, a file/folder or a tag."""
    force_pp = dict(preprocess or {})
    unknown = set(force_pp) - set(_PREPROCESS_KEYS) - {"size"}
    if unknown:
        raise InputError(f"unknown preprocessing keys {sorted(unknown)}; known: {', '.join(_PREPROCESS_KEYS)}")
    if name.startswith(("hf-hub:", "local-dir:")):
        if pretrained:
            log.warning("ignoring pretrained=%r: %s carries its own weights", pretrained, name)
        _no_tag(tag, f"{name} carries its own preprocessing and activation")
        return _load_schema(name, force_pp, online)
    arch = _check_model_name(name)
    if pretrained is None:
        _no_tag(tag, "random weights take quick_gelu= and preprocess= instead")
        return _load_random(arch, quick_gelu, force_pp, seed)
    path = Path(pretrained).expanduser()
    if path.is_dir() and (path / "open_clip_config.json").is_file():
        _no_tag(tag, f"{path}/open_clip_config.json gives the preprocessing and activation")
        return _load_schema(f"local-dir:{path}", force_pp, online)
    checkpoint, source, tag, cfg = _checkpoint(arch, pretrained, tag, online)
    return _create(arch, checkpoint, source, tag, cfg, quick_gelu, force_pp)


def _no_tag(tag: str | None, why: str) -> None:
    if tag:
        raise InputError(f"tag={tag!r} applies to a local checkpoint file only; {why}")


def _load_schema(name: str, force_pp: dict[str, Any], online: bool) -> _Loaded:
    """An ``hf-hub:`` or ``local-dir:`` model: its own config, preprocessing and weights."""
    import open_clip

    offline_hint = (
        "offline, download open_clip_config.json and the weights into a folder and pass "
        f"--model local-dir:/path/to/folder, or --model NAME {LOCAL_CHECKPOINT_HINT}"
    )
    # open_clip goes on with random weights (after a warning) when it finds no weights file
    checkpoint = _schema_checkpoint(name)
    if checkpoint is None:
        if name.startswith("local-dir:"):
            raise ResourceError(
                f"{name}: no weights file next to open_clip_config.json; put open_clip_pytorch_model.bin "
                f"(or .safetensors) there, or pass --model NAME {LOCAL_CHECKPOINT_HINT}"
            )
        why = "" if online else f" ({_UNREACHABLE})"
        raise ResourceError(f"could not get the weights of {name} from the Hugging Face hub{why}; {offline_hint}")
    try:
        model = open_clip.create_model(name, force_preprocess_cfg=force_pp or None, pretrained_text=False)
    except Exception as e:  # open_clip raises RuntimeError/FileNotFoundError/HF errors
        raise ResourceError(
            f"could not load {name} ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}); {offline_hint}"
        ) from e
    return _Loaded(model, checkpoint, name.split(":", 1)[0], None, "model config", name)


def _load_random(arch: str, quick_gelu: bool | None, force_pp: dict[str, Any], seed: int) -> _Loaded:
    """``arch`` with RANDOM weights drawn from ``seed`` (tests); loudly logged."""
    import open_clip
    import torch

    log.warning(
        "building %s with RANDOM weights (pretrained=None, seed=%d): embeddings are meaningless "
        "outside tests; pass pretrained=TAG or a checkpoint path",
        arch,
        seed,
    )
    # open_clip repeats it on the root logger ("No pretrained weights loaded ..."): said once, above
    only_ours = logging.Filter("negvocab")
    root = logging.getLogger()
    root.addFilter(only_ours)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = open_clip.create_model(
                arch,
                pretrained=None,
                pretrained_image=False,
                pretrained_text=False,
                force_quick_gelu=bool(quick_gelu),
                force_preprocess_cfg=force_pp or None,
            )
    finally:
        root.removeFilter(only_ours)
    return _Loaded(model, None, "random", None, "model config", arch)


def _checkpoint(arch: str, pretrained: str, tag: str | None, online: bool) -> tuple[str, str, str | None, dict[str, Any]]:
    """(checkpoint file, source, tag, tag config) for a local file/folder or a pretrained tag."""
    import open_clip

    path = Path(pretrained).expanduser()
    if path.is_dir():
        from open_clip.factory import _find_checkpoint_in_dir

        found = _find_checkpoint_in_dir(path)
        if not found:
            raise InputError(f"{path}: no checkpoint (*.safetensors, *.bin, *.pth) in this folder")
        path = Path(found)
    if path.is_file():
        if not tag:
            log.warning(
                "%s: loading weights from a file without tag=: using %s's default preprocessing and "
                "activation; pass tag=<pretrained tag> if the checkpoint was trained as one",
                path,
                arch,
            )
        return str(path), "file", tag, _tag_cfg(arch, tag) if tag else {}
    if _looks_like_path(pretrained):
        raise InputError(f"checkpoint {pretrained}: no such file or folder")
    if tag not in (None, pretrained):
        raise InputError(f"tag {tag!r} with pretrained tag {pretrained!r}: a tag's weights come with its own settings; give one")
    cfg = _tag_cfg(arch, pretrained)
    try:
        checkpoint = open_clip.download_pretrained(cfg)
    except Exception as e:
        where = cfg.get("hf_hub") or cfg.get("url") or "?"
        raise ResourceError(
            f"could not get the {arch} weights for tag {pretrained!r} (tried {where}: "
            f"{type(e).__name__ if online else _UNREACHABLE}); "
            f"offline, download open_clip_pytorch_model.bin elsewhere and pass "
            f"{LOCAL_CHECKPOINT_HINT} --tag {pretrained}"
        ) from e
    if not checkpoint:
        raise ResourceError(f"open_clip has no download location for {arch} tag {pretrained!r}")
    return str(checkpoint), "tag", pretrained, cfg


def _create(
    arch: str,
    checkpoint: str,
    source: str,
    tag: str | None,
    cfg: Mapping[str, Any],
    quick_gelu: bool | None,
    force_pp: dict[str, Any],
) -> _Loaded:
    """``arch`` with ``checkpoint``'s weights and the tag's preprocessing and QuickGELU (open_clip#1068)."""
    import open_clip

    tag_pp = {k: cfg[k] for k in _PREPROCESS_KEYS if k in cfg}
    qg = bool(cfg.get("quick_gelu", False)) if quick_gelu is None else quick_gelu
    try:
        model = open_clip.create_model(
            arch,
            pretrained=checkpoint,
            force_quick_gelu=qg,
            force_preprocess_cfg={**tag_pp, **force_pp} or None,
            pretrained_image=False,
            pretrained_text=False,
        )
    except Exception as e:
        if "TorchScript" in str(e):  # OpenAI's original ViT-B-32.pt and the like
            raise InputError(
                f"{checkpoint}: a TorchScript archive, which open_clip does not load as weights; pass the "
                "state-dict checkpoint (open_clip_pytorch_model.bin) or the tag's name (--pretrained openai)"
            ) from e
        raise InputError(
            f"{checkpoint}: cannot load as {arch} weights ({type(e).__name__}: "
            f"{(str(e).splitlines() or [''])[0][:200]}); check the model name matches the checkpoint"
        ) from e
    pp_from = f"tag {tag}" if tag else "model config"
    if force_pp:
        pp_from += " + overrides"
    return _Loaded(model, checkpoint, source, tag, pp_from, arch)


def _schema_checkpoint(name: str) -> str | None:
    """The local weights file behind an ``hf-hub:`` / ``local-dir:`` name (for fingerprinting)."""
    schema, ident = name.split(":", 1)
    try:
        if schema == "local-dir":
            from open_clip.factory import _find_checkpoint_in_dir

            return _find_checkpoint_in_dir(Path(ident))
        from open_clip.pretrained import download_pretrained_from_hf

        return download_pretrained_from_hf(ident)
    except Exception:  # fingerprint falls back to the state dict
        return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _has_quick_gelu(model: Any) -> bool:
    from open_clip.transformer import QuickGELU

    return any(isinstance(m, QuickGELU) for m in model.modules())


# -- the wrapper ---------------------------------------------------------------------------------
class VLM:
    """An open_clip vision-language model with cached, exact and fast text/image embedding.

    Parameters
    ----------
    name : str
        open_clip model name (``"ViT-B-32"``), ``"hf-hub:org/repo"`` or ``"local-dir:/path"``.
    pretrained : str or None
        A pretrained tag (``"laion2b_s34b_b79k"``), a local checkpoint file or folder, or None for
        RANDOM weights (tests only; logged, and :attr:`random_weights` is True).
    device : str
        ``"auto"`` (CUDA if available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
    precision : str or None
        ``"fp32"``, ``"fp16"`` or ``"bf16"`` (autocast over fp32 weights). Default: fp16 on CUDA,
        fp32 on CPU. Outputs are always float32.
    cache_dir : path or None
        Embedding cache root (default ``negvocab.paths.cache_dir() / "embeddings"``).
    cache : bool
        False disables the embedding cache.
    tag : str or None
        With a local checkpoint: the tag it was trained as (its preprocessing and QuickGELU).
    quick_gelu : bool or None
        Force QuickGELU on (None: as the tag or model config says).
    preprocess : mapping or None
        Image preprocessing overrides (mean, std, interpolation, resize_mode, fill_color).
    seed : int
        Seed of the random initialisation when ``pretrained`` is None.

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
    ) -> None:
        import open_clip

        resolve_precision(precision, resolve_device(device))  # bad settings fail before the model loads
        spec = None if pretrained is None else str(pretrained)
        with hub_access() if _needs_hub(name, spec) else contextlib.nullcontext(True) as online:
            loaded = _load(name, spec, tag=tag, quick_gelu=quick_gelu, preprocess=preprocess, seed=seed, online=online)
            try:
                tokenizer = open_clip.get_tokenizer(loaded.spec)
            except ModuleNotFoundError as e:
                raise ResourceError(
                    f"the tokenizer of {name} needs the {e.name} package: pip install 'negvocab[hf]'"
                ) from e
            except Exception as e:
                raise ResourceError(
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
        model: Any,
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

        from negvocab.paths import cache_dir as default_cache_dir
        from negvocab.vlm.text import text_tower

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
            "quick_gelu": _has_quick_gelu(model),
            "preprocessing": {**_jsonable(pp_cfg), "from": preprocess_from},
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
    def identity(self) -> dict[str, Any]:
        """Who this model is: name, pretrained, weights fingerprint, dim, precision, preprocessing.

        ``weights`` is ``sha256:<hex>`` of the checkpoint file (or, for random weights and models
        built in memory, of the state dict). Computed once, on first use.
        """
        if self._identity is None:
            if self._checkpoint:
                memo = self.cache_root / "fingerprints.json" if self.cache_enabled else None
                weights = "sha256:" + file_sha256(self._checkpoint, memo)
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
        out["preprocessing"] = {k: v for k, v in ident["preprocessing"].items() if k != "from"} if kind != "text" else None
        out["kind"] = kind
        return out

    def store(self, kind: str, extra: Mapping[str, Any] | None = None) -> EmbeddingStore:
        """The embedding cache for ``kind`` (``text``, ``image``, ``image-local``) of this model."""
        from negvocab.vlm.cache import EmbeddingStore

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
                with _ieee_fp32() if self.device.type == "cuda" else contextlib.nullcontext():
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
                else f"{self.precision} overflowed: use precision='fp32' (--precision fp32)"
                + (" or 'bf16'" if self.precision == "fp16" else "")
            )
            raise ResourceError(
                f"{self.name} ({self.precision} on {self.device}) gave NaN/inf embeddings for "
                f"{int(bad.sum())} of {len(out)} {what}; {hint}"
            )
        return out

    def _encode_prompts(self, prompts: Sequence[str], **kw: Any) -> torch.Tensor:
        from negvocab.vlm.text import encode_prompts

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
    ) -> np.ndarray:
        """Template-ensembled text embeddings of ``labels``, float32 [n, d], L2-normalised.

        Each label's embedding is the mean of its L2-normalised template embeddings, normalised
        again (docs/methods.md#text-embeddings). Results are cached on disk per model identity and template set, so
        labels seen before cost no model work. ``pos`` gives each label's part of speech (``"n"``,
        ``"a"``; one string for all) for presets that depend on it (``"neglabel"``); labels without
        one count as nouns. ``progress``: a bar on a terminal once the encoding lasts 2 s (None or
        True; False: no bar); either way a line with done/total, rate and ETA goes to the
        ``negvocab.progress`` logger every 30 s (:mod:`negvocab.progress`).
        """
        from negvocab.vlm.text import encode_labels

        labels = list(labels)
        for i, label in enumerate(labels):
            if not isinstance(label, str) or not label.strip():
                raise InputError(f"label {i} is empty or not a string: {label!r}")
        tset = resolve_templates(templates)
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
            emb = self._cached(
                "text",
                uniq,
                {"templates": list(tpls)},
                lambda todo, sink, t=tpls: encode_labels(
                    self, todo, t, batch_size=batch_size or self.batch_size, progress=progress, on_chunk=sink
                ),
                store_every=max(1, STORE_EVERY_PROMPTS // len(tpls)),
            )
            if len(groups) == 1 and len(uniq) == len(labels):  # unique labels, one template set
                return np.ascontiguousarray(emb, dtype=np.float32)
            row = {lab: j for j, lab in enumerate(uniq)}
            out[idx] = emb[[row[labels[i]] for i in idx]]
        return out

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
        come (every ``store_every`` rows, and whatever is finished when interrupted), so an
        interrupted long run resumes where it stopped.
        """
        if not self.cache_enabled:
            return compute(keys, None)
        store = self.store(kind, extra)
        found, rows = store.get(keys)
        missing = [k for k, hit in zip(keys, found, strict=True) if not hit]
        if not missing:
            log.info("%s: all %d %s embeddings from the cache", self.name, len(keys), kind)
            return rows
        log.info("%s: %d of %d %s embeddings cached, computing %d", self.name, len(keys) - len(missing), len(keys), kind, len(missing))
        pending: list[tuple[list[str], np.ndarray]] = []

        def flush() -> None:
            if pending:
                store.put([k for ks, _ in pending for k in ks], np.concatenate([a for _, a in pending]))
                pending.clear()

        def sink(chunk_keys: list[str], chunk_rows: np.ndarray) -> None:
            pending.append((list(chunk_keys), chunk_rows))
            if sum(len(ks) for ks, _ in pending) >= store_every:
                flush()

        try:
            new = compute(missing, sink)
        finally:
            flush()  # keep what was finished, also when interrupted
        if rows is None:
            return new
        rows[~found] = new
        return rows

    def encode_images(
        self,
        source: Any,
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
        from negvocab.vlm.images import encode_images

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
        return f"VLM({self.name!r}, pretrained={self.pretrained!r}, device={str(self.device)!r}, precision={self.precision!r}{rw})"
