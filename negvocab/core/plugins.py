"""Plug-ins: modules that register methods, builders or benchmarks through the public API.

A plug-in is any importable module whose import registers its entries (``negvocab.register_method``
and the like). negvocab imports, once each:

- the modules named in ``$NEGVOCAB_PLUGINS`` (comma-separated), for a user's own module;
- the entry points of the group ``negvocab.core.plugins`` of installed packages, for a plug-in package
  (``[project.entry-points."negvocab.core.plugins"] mine = "mypkg.negvocab_plugin"``);
- the modules a caller names (a grid file's ``plugins = [...]``).

The CLI loads them before it reads its options, grids before they validate their file, and every
grid worker before it runs a unit, so a registered entry works everywhere a built-in one does. Every
registry (:class:`negvocab.core.registry.Registry`: methods, builders, benchmarks) loads them when a name is
missing, and the vocabulary layer when a file's source is unknown, so a plain ``get_method("mine")`` or
``Vocabulary.load(path)`` needs no explicit :func:`load_plugins`.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Iterable
from importlib.metadata import entry_points

from negvocab.core.errors import InputError

__all__ = ["ENTRY_POINT_GROUP", "ENV_VAR", "load_plugins", "loaded_plugins", "plugin_modules"]

ENV_VAR = "NEGVOCAB_PLUGINS"
ENTRY_POINT_GROUP = "negvocab.core.plugins"

logger = logging.getLogger(__name__)
_loaded: list[str] = []


def plugin_modules() -> list[str]:
    """The modules ``$NEGVOCAB_PLUGINS`` names (comma-separated), in order."""
    return [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]


def load_plugins(modules: Iterable[str] = (), *, environment: bool = True) -> list[str]:
    """Import ``modules``, then (with ``environment``) ``$NEGVOCAB_PLUGINS`` and the ``negvocab.core.plugins``
    entry points; each at most once per process. Returns the modules loaded so far.

    A module that does not import is one :class:`InputError` naming it and where it was named.

    Parameters
    ----------
    modules : iterable of str, default ()
        Modules to import.
    environment : bool, default True
        Also load ``$NEGVOCAB_PLUGINS`` and the entry points.
    """
    named = [(m, "given") for m in modules]
    if environment:
        named += [(m, f"${ENV_VAR}") for m in plugin_modules()]
        named += [
            (ep.value.partition(":")[0], f"entry point {ep.name!r}") for ep in entry_points(group=ENTRY_POINT_GROUP)
        ]
    for module, where in named:
        if module in _loaded:
            continue
        try:
            importlib.import_module(module)
        except Exception as e:  # any failure of a user's module is one line naming it
            raise InputError(f"plug-in {module!r} ({where}) failed to import: {type(e).__name__}: {e}") from e
        _loaded.append(module)
        logger.info("plug-in %s loaded (%s)", module, where)
    return list(_loaded)


def loaded_plugins() -> list[str]:
    """The plug-in modules imported so far (recorded with a run's provenance, passed to workers)."""
    return list(_loaded)
