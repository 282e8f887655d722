"""One open registry shape for methods, builders and benchmarks: entries by name, added from anywhere.

An entry is registered as an object, or lazily as a ``"pkg.module:attr"`` target that is imported on
first use (so a catalogue can be read, listed and validated without importing torch, and a plug-in
package can add an entry without editing negvocab), as lm-evaluation-harness's ``Registry`` does.
Names are looked up case-insensitively, aliases accepted; an unknown name is one :class:`InputError`
that lists the registered names.

>>> r = Registry("colour")
>>> r.register("red", 1, aliases=("rouge",))
1
>>> r.get("ROUGE"), r.canonical("Red"), r.names()
(1, 'red', ['red'])
>>> r.get("blue")
Traceback (most recent call last):
...
negvocab.errors.InputError: unknown colour 'blue'; choose one of red
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from negvocab.errors import InputError

__all__ = ["Registry", "resolve_target"]

T = TypeVar("T")


def resolve_target(target: str, *, what: str = "target") -> object:
    """The object named by ``"pkg.module:attr"`` (``attr`` may be dotted), imported now.

    A malformed target, a module that does not import or a missing attribute is one
    :class:`InputError` naming the target."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise InputError(f"{what} {target!r} must be written 'package.module:name'")
    try:
        obj: object = importlib.import_module(module)
    except ImportError as e:
        raise InputError(f"{what} {target!r}: module {module!r} does not import ({e})") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise InputError(f"{what} {target!r}: {module!r} has no {attr!r}") from e
    return obj


class Registry(Generic[T]):
    """Entries of one kind (``kind`` names it in errors), by name and alias, in registration order.

    ``check`` (optional) validates an entry when it is resolved (a lazy target on first use) and
    returns it, so a plug-in's wrong object fails with one line instead of deep inside a pipeline."""

    def __init__(self, kind: str, check: Callable[[str, object], T] | None = None) -> None:
        self.kind = kind
        self._check = check
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, entry: T | str, *, aliases: tuple[str, ...] = (), replace: bool = False) -> T | str:
        """Add ``entry`` (an object, or a lazy ``"pkg.module:attr"`` string) under ``name`` and ``aliases``.

        A name or alias that is taken is :class:`InputError` unless ``replace`` (a notebook re-running
        its cell replaces its own entry). Returns ``entry``, so it can serve as a decorator's body."""
        key = self.check_free(name, aliases, replace=replace)
        if replace:
            self.unregister(key, missing_ok=True)
        self._entries[key] = entry
        for alias in map(_key, aliases):
            if alias != key:
                self._aliases[alias] = key
        return entry

    def check_free(self, name: str, aliases: tuple[str, ...] = (), *, replace: bool = False) -> str:
        """The key ``name`` would be registered under, or :class:`InputError` if :meth:`register` would
        refuse it (so a caller can check before it changes anything else)."""
        key = _key(name)
        if not key:
            raise InputError(f"a {self.kind} needs a non-empty name")
        # replace swaps only an entry of this very name: a name or alias that belongs to ANOTHER entry
        # (an alias of a built-in, a built-in's name given as an alias) is refused even with replace
        owners = {k: self._aliases.get(k, k) for k in (key, *map(_key, aliases))}
        taken = [k for k, owner in owners.items() if owner in self._entries and (owner != key or not replace)]
        if taken:
            owner = owners[taken[0]]
            hint = " (pass replace=True to replace it)" if owner == key else f" by {owner!r}"
            raise InputError(f"{self.kind} {taken[0]!r} is registered already{hint}")
        return key

    def unregister(self, name: str, *, missing_ok: bool = False) -> None:
        """Remove the entry registered as ``name`` and its aliases (tests and notebooks that register a
        temporary entry). An alias is not a name: unregistering it is refused, not its owner removed."""
        key = _key(name)
        if key in self._aliases:
            raise InputError(f"{name!r} is an alias of {self.kind} {self._aliases[key]!r}; unregister it by its name")
        if key not in self._entries:
            if missing_ok:
                return
            raise InputError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self._entries)}")
        del self._entries[key]
        self._aliases = {a: k for a, k in self._aliases.items() if k != key}

    def canonical(self, name: str) -> str:
        """The registered name of ``name`` (case-insensitive, aliases accepted) or :class:`InputError`."""
        key = _key(name)
        key = self._aliases.get(key, key)
        if key not in self._entries:
            raise InputError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self._entries)}")
        return key

    def get(self, name: str) -> T:
        """The entry of ``name``; a lazy target is imported (and checked) on first use and kept."""
        key = self.canonical(name)
        entry = self._entries[key]
        if isinstance(entry, str):
            resolved = resolve_target(entry, what=f"{self.kind} {key!r}")
            entry = self._check(key, resolved) if self._check else resolved  # type: ignore[assignment]
            self._entries[key] = entry
        return entry  # type: ignore[return-value]

    def aliases(self, name: str) -> tuple[str, ...]:
        """The aliases registered for ``name``."""
        key = self.canonical(name)
        return tuple(a for a, k in self._aliases.items() if k == key)

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._aliases.get(_key(name), _key(name)) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"


def _key(name: str) -> str:
    return str(name).strip().lower()
