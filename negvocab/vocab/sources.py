"""The names a vocabulary's ``source`` may take: the built-in builders', the derived ones (``union``,
``file``), and those a registered builder adds (this layer sits below the builders and never imports them)."""

from __future__ import annotations

from negvocab.core.errors import InputError

__all__ = ["SOURCES", "Source", "add_source", "known_sources"]

#: a vocabulary's ``source``: one of :func:`known_sources` (a plain string, so registered builders add theirs)
Source = str
#: the built-in sources: the built-in builders' and the derived ones (``union``, ``file``); a copy this
#: layer can read of ``negvocab.builders.BUILTIN_BUILDERS`` (tests/test_registry.py checks that they agree)
SOURCES: tuple[str, ...] = (
    "wordnet",
    "gpt",
    "eoe",
    "oracle",
    "union",
    "file",
    "siblings",
    "mined",
    "negrefine",
    "csp",
    "interneg",
)
_known: dict[str, None] = dict.fromkeys(SOURCES)


def add_source(name: str) -> None:
    """Accept ``name`` as a vocabulary ``source`` from now on: :func:`negvocab.register_builder` calls it
    (this layer sits below the builders and never imports them), so the files a registered builder
    writes read back in every process that has its plug-in loaded."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InputError(f"a vocabulary source must be a non-empty name without surrounding spaces, got {name!r}")
    _known.setdefault(name, None)


def known_sources() -> tuple[str, ...]:
    """The sources a :class:`Vocabulary` accepts: :data:`SOURCES` and those of registered builders."""
    return tuple(_known)
