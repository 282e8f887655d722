"""One-release deprecation of renamed parameters, option keys and moved modules.

A renamed keyword argument or option key keeps working for one release: the old spelling is mapped to
the new one with a :class:`DeprecationWarning` that names both; giving both is an error. A moved module
(:data:`MOVED_MODULES`) is importable under its old path for one release, as the same module object,
with a warning. The renames are listed in CHANGELOG.md.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import ParamSpec, TypeVar

from negvocab.core.errors import InputError

__all__ = ["MOVED_MODULES", "install_moved_modules", "rename_keys", "renamed_kwargs"]

P = ParamSpec("P")
R = TypeVar("R")


def rename_keys(
    values: Mapping[str, object], renames: Mapping[str, str], where: str, stacklevel: int = 3
) -> dict[str, object]:
    """``values`` with each old key of ``renames`` (old -> new) moved to its new name, warning once per key.

    Raises :class:`InputError` naming ``where`` when both spellings are given.
    """
    out = dict(values)
    for old, new in renames.items():
        if old not in out:
            continue
        if new in out:
            raise InputError(f"{where}: give {new} (the new name) or {old} (its old name), not both", param=new)
        warnings.warn(
            f"{where}: {old!r} is renamed {new!r}; the old name works until the next release",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        out[new] = out.pop(old)
    return out


def renamed_kwargs(**renames: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function whose keyword arguments ``old=new`` were renamed: the old keyword still works
    for one release, with a :class:`DeprecationWarning`."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            if any(old in kwargs for old in renames):
                kwargs = rename_keys(kwargs, renames, f"{fn.__name__}()", stacklevel=4)  # type: ignore[assignment]
            return fn(*args, **kwargs)

        return inner

    return wrap


# old module path -> its home (the layout pass: loose root modules into their layer, one file name per concept)
MOVED_MODULES: dict[str, str] = {
    "negvocab.atomic": "negvocab.core.atomic",
    "negvocab.deprecation": "negvocab.core.deprecation",
    "negvocab.errors": "negvocab.core.errors",
    "negvocab.extras": "negvocab.core.extras",
    "negvocab.outdir": "negvocab.core.outdir",
    "negvocab.paths": "negvocab.core.paths",
    "negvocab.plugins": "negvocab.core.plugins",
    "negvocab.progress": "negvocab.core.progress",
    "negvocab.provenance": "negvocab.core.provenance",
    "negvocab.redact": "negvocab.core.redact",
    "negvocab.registry": "negvocab.core.registry",
    "negvocab.textfiles": "negvocab.core.textfiles",
    "negvocab.types": "negvocab.core.types",
    "negvocab.index": "negvocab.vocab.index",
    "negvocab.vocab.tables": "negvocab.vocab.label_files",
    "negvocab.data.tables": "negvocab.data.annotations",
    "negvocab.grid.tables": "negvocab.grid.tidy",
    "negvocab.evaluation.stream": "negvocab.evaluation.stream_evaluation",
    "negvocab.grid.stream": "negvocab.grid.stream_cells",
    "negvocab.evaluation.rows": "negvocab.evaluation.records",
    "negvocab.scoring.sweep": "negvocab.scoring.prefix_scores",
}


#: public module paths that name a module defined elsewhere (``negvocab.metrics``): importable as it, no warning
MODULE_ALIASES: dict[str, str] = {}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import an old module path as its new module (the same object), warning once per path; a public
    alias (:data:`MODULE_ALIASES`) as the module it names, without a warning."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        known = fullname in MOVED_MODULES or fullname in MODULE_ALIASES
        return importlib.util.spec_from_loader(fullname, self) if known else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if spec.name in MODULE_ALIASES:
            return importlib.import_module(MODULE_ALIASES[spec.name])
        new = MOVED_MODULES[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; the old path works until the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is already executed under its new path."""


def install_moved_modules(aliases: Mapping[str, str] | None = None) -> None:
    """Make :data:`MOVED_MODULES`' old paths importable (done once by ``import negvocab``), and the
    public module ``aliases`` (``{"negvocab.metrics": "negvocab.scoring.metrics"}``): ``from
    negvocab.metrics import auroc`` then works as ``negvocab.metrics.auroc`` does."""
    MODULE_ALIASES.update(aliases or {})
    if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
        sys.meta_path.append(_MovedModules())
