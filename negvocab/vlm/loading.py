"""Loading an open_clip model for :class:`negvocab.vlm.model.VLM`: device and precision, file and
weight hashes, model-name checks, and resolving a pretrained tag, ``hf-hub:`` id, local checkpoint
(file or folder) or random initialisation into a model, its preprocessing and its identity.

Local checkpoints avoid open_clip#1068: see :mod:`negvocab.vlm.model`.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.atomic import write_json
from negvocab.core.errors import InputError, ResourceError
from negvocab.core.provenance import file_sha256

if TYPE_CHECKING:
    import torch

__all__ = [
    "LOCAL_CHECKPOINT_HINT",
    "PRECISIONS",
    "check_weights",
    "checkpoint_sha256",
    "has_quick_gelu",
    "ieee_fp32",
    "jsonable",
    "load_model",
    "needs_hub",
    "resolve_device",
    "resolve_precision",
    "state_dict_sha256",
]


log = logging.getLogger("negvocab.vlm.model")  # records keep the name of the entry point

PRECISIONS = ("fp32", "fp16", "bf16")
_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode", "fill_color")
#: how to name a local checkpoint, in the library's words (the CLI shows ``--pretrained PATH``)
LOCAL_CHECKPOINT_HINT = "pretrained='/path/to/open_clip_pytorch_model.bin'"


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
        raise ResourceError(f"device {device!r} requested but CUDA is not available; use device='cpu'", param="device")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ResourceError(
            f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) are visible"
        )
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
def ieee_fp32() -> Iterator[None]:
    """Precision fp32 means IEEE fp32 on CUDA: cuDNN runs fp32 convolutions in TF32 by default
    (1e-4 off on a ViT's patch embedding), and ``torch.set_float32_matmul_precision("high")`` in
    the user's code would do the same to matrix products."""
    import torch

    conv = torch.backends.cudnn.conv  # type: ignore[attr-defined]  # set by torch at import, not in its stubs
    backends = (conv, torch.backends.cuda.matmul)
    before = [b.fp32_precision for b in backends]
    for b in backends:
        b.fp32_precision = "ieee"
    try:
        yield
    finally:
        for b, value in zip(backends, before, strict=True):
            b.fp32_precision = value


def check_weights(
    model: str, pretrained: str | None, random_weights: bool, *, cli: bool = True, where: str = ""
) -> None:
    """Exactly one of ``pretrained`` and ``random_weights`` (``hf-hub:``/``local-dir:`` models carry their
    own weights), so random weights are never used by accident; :class:`InputError` otherwise."""
    hub = model.startswith(("hf-hub:", "local-dir:"))
    if random_weights and pretrained:
        raise InputError(
            "give either --pretrained or --random-weights, not both"
            if cli
            else f"{where} ({model}): give exactly one of pretrained = ... and random_weights = true"
        )
    if not random_weights and not pretrained and not hub:
        raise InputError(
            f"no weights for {model}: pass --pretrained TAG or --pretrained /path/to/open_clip_pytorch_model.bin "
            "(or --random-weights for a dry run)"
            if cli
            else f"{where} ({model}): give exactly one of pretrained = ... and random_weights = true"
        )


# -- fingerprints --------------------------------------------------------------------------------
def checkpoint_sha256(path: str | os.PathLike[str], memo: Path | None = None) -> str:
    """SHA-256 of a checkpoint's bytes (:func:`negvocab.core.provenance.file_sha256`), remembered in ``memo``
    (JSON) by (path, size, mtime, inode, ctime).

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
    digest = file_sha256(path)
    if memo is not None:
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
            f"or pass a local checkpoint ({LOCAL_CHECKPOINT_HINT})",
            param="pretrained",
        )
    return dict(cfg)


def needs_hub(name: str, pretrained: str | None) -> bool:
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
    """What :func:`load_model` found: the model and how it was made."""

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


def load_model(
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
        f"name='local-dir:/path/to/folder', or name=NAME with {LOCAL_CHECKPOINT_HINT}"
    )
    # open_clip goes on with random weights (after a warning) when it finds no weights file
    checkpoint = _schema_checkpoint(name)
    if checkpoint is None:
        if name.startswith("local-dir:"):
            raise ResourceError(
                f"{name}: no weights file next to open_clip_config.json; put open_clip_pytorch_model.bin "
                f"(or .safetensors) there, or pass name=NAME with {LOCAL_CHECKPOINT_HINT}",
                param=("name", "pretrained"),
            )
        why = "" if online else f" ({_UNREACHABLE})"
        raise ResourceError(
            f"could not get the weights of {name} from the Hugging Face hub{why}; {offline_hint}",
            param=("name", "pretrained"),
        )
    try:
        model = open_clip.create_model(name, force_preprocess_cfg=force_pp or None, pretrained_text=False)
    except Exception as e:  # open_clip raises RuntimeError/FileNotFoundError/HF errors
        raise ResourceError(
            f"could not load {name} ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}); {offline_hint}",
            param=("name", "pretrained"),
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


def _checkpoint(
    arch: str, pretrained: str, tag: str | None, online: bool
) -> tuple[str, str, str | None, dict[str, Any]]:
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
        raise InputError(
            f"tag {tag!r} with pretrained tag {pretrained!r}: a tag's weights come with its own settings; give one"
        )
    cfg = _tag_cfg(arch, pretrained)
    try:
        checkpoint = open_clip.download_pretrained(cfg)
    except Exception as e:
        where = cfg.get("hf_hub") or cfg.get("url") or "?"
        raise ResourceError(
            f"could not get the {arch} weights for tag {pretrained!r} (tried {where}: "
            f"{type(e).__name__ if online else _UNREACHABLE}); "
            f"offline, download open_clip_pytorch_model.bin elsewhere and pass "
            f"{LOCAL_CHECKPOINT_HINT} with tag={pretrained!r}",
            param=("pretrained", "tag"),
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
                "state-dict checkpoint (open_clip_pytorch_model.bin) or the tag's name (pretrained='openai')",
                param="pretrained",
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


def jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def has_quick_gelu(model: Any) -> bool:
    from open_clip.transformer import QuickGELU

    return any(isinstance(m, QuickGELU) for m in model.modules())
