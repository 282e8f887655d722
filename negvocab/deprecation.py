"""One-release deprecation of renamed parameters and option keys (the glossary's rename pass).

A renamed keyword argument or option key keeps working for one release: the old spelling is mapped to
the new one with a :class:`DeprecationWarning` that names both; giving both is an error. The renames
are listed in CHANGELOG.md.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar

from negvocab.errors import InputError

__all__ = ["rename_keys", "renamed_kwargs"]

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
