"""Optional dependencies: which ``pip install 'negvocab[EXTRA]'`` brings a third-party package.

The base install holds the vocabulary tools (labels, WordNet, the synonym filter, vocabulary files,
``negvocab methods`` and ``benchmarks``); models, LLM builders, figures and the rest are extras
(``pyproject.toml``). A missing one is one line naming the extra to install, never a traceback: the
CLI turns a :class:`ModuleNotFoundError` of a known package into :class:`MissingExtraError`
(:func:`missing_extra`), ``negvocab.<name>`` does the same, and library code may call :func:`require`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from negvocab.core.errors import ResourceError

__all__ = ["EXTRAS", "MissingExtraError", "extra_for", "missing_extra", "require"]

# top-level import name -> (distribution as pip names it, extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "torch": ("torch", "vlm"),
    "torchvision": ("torchvision", "vlm"),
    "open_clip": ("open_clip_torch", "vlm"),
    "safetensors": ("safetensors", "vlm"),
    "PIL": ("pillow", "vlm"),
    "faiss": ("faiss-cpu", "vlm"),
    "openai": ("openai", "llm"),
    "tenacity": ("tenacity", "llm"),
    "matplotlib": ("matplotlib", "report"),
    "jinja2": ("jinja2", "report"),
    "scipy": ("scipy", "report"),
    "pandas": ("pandas", "report"),
    "transformers": ("transformers", "hf"),
    "pyarrow": ("pyarrow", "grid"),
    "ray": ("ray", "ray"),
    "pytorch_ood": ("pytorch-ood", "pytorch-ood"),
}


class MissingExtraError(ResourceError, ModuleNotFoundError):
    """An optional package is not installed; the message names the extra that installs it.

    Also a :class:`ModuleNotFoundError` (with ``name`` set), so that code that falls back when an
    import fails still does.

    Parameters
    ----------
    *args
        The message (one line), as :class:`Exception` takes it.
    param : str or sequence of str, optional
        The parameter (or parameters) the message names.
    """


def extra_for(module: str) -> str | None:
    """The extra that installs the top-level package of ``module`` (``"torch.nn"`` -> ``"vlm"``), or None."""
    hit = EXTRAS.get(module.split(".")[0])
    return hit[1] if hit else None


def _error(module: str) -> MissingExtraError | None:
    top = module.split(".")[0]
    if top not in EXTRAS:
        return None
    dist, extra = EXTRAS[top]
    err = MissingExtraError(f"{dist} is not installed; this needs pip install 'negvocab[{extra}]' (or 'negvocab[all]')")
    err.name = top
    return err


def missing_extra(error: ModuleNotFoundError) -> MissingExtraError | None:
    """The one-line error for a failed import of an optional package, or None for any other module."""
    if isinstance(error, MissingExtraError):
        return error
    return _error(error.name or "")


def require(module: str) -> ModuleType:
    """Import ``module``; if its package is missing, raise :class:`MissingExtraError` naming the extra.

    >>> require("numpy").__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        err = missing_extra(e) if (e.name or "").split(".")[0] == module.split(".")[0] else None
        if err is None:
            raise
        raise err from None
