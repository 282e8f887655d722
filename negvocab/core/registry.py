"""One open registry shape for methods, builders and benchmarks: entries by name, added from anywhere.

An entry is registered as an object, or lazily as a ``"pkg.module:attr"`` target that is imported on
first use (so a catalogue can be read, listed and validated without importing torch, and a plug-in
package can add an entry without editing negvocab), as lm-evaluation-harness's ``Registry`` does.
A target outside negvocab (a user's or a plug-in's) is imported and checked when it is registered,
so a wrong one fails at once, in one line; negvocab's own stay lazy.

Names are looked up case-insensitively, aliases accepted. One plug-in rule for every registry: a name
not registered loads the plug-ins (``$NEGVOCAB_PLUGINS`` and the ``negvocab.core.plugins`` entry points,
each once: :func:`negvocab.core.plugins.load_plugins`) and is looked up again; still unknown, it is one
:class:`InputError` that suggests the closest registered names and lists them all.

A method or a builder is registered beside its code by the public ``register_method`` /
``register_builder`` used as a decorator (given everything but the function).

>>> r = Registry("colour", plugins=False)
>>> r.register("red", 1, aliases=("rouge",))
1
>>> r.get("ROUGE"), r.canonical("Red"), r.names()
(1, 'red', ['red'])
>>> r.get("rd")
Traceback (most recent call last):
...
negvocab.core.errors.InputError: unknown colour 'rd'; did you mean 'red'? choose one of red
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins

__all__ = [
    "Registry",
    "builtin_target",
    "check_now",
    "check_target",
    "decorator",
    "resolve_callable",
    "resolve_lazy",
    "resolve_target",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def check_target(target: object, *, what: str = "target") -> str:
    """``target`` if it is written ``"pkg.module:attr"``, else one :class:`InputError` (nothing imported)."""
    module, sep, attr = str(target).partition(":")
    if not isinstance(target, str) or not sep or not module or not attr:
        raise InputError(f"{what} {target!r} must be written 'package.module:name'")
    return target


def builtin_target(target: str) -> bool:
    """Whether ``target`` names negvocab's own code (kept lazy: importing it may import torch)."""
    module = target.partition(":")[0]
    return module == "negvocab" or module.startswith("negvocab.")


def resolve_target(target: str, *, what: str = "target") -> object:
    """The object named by ``"pkg.module:attr"`` (``attr`` may be dotted), imported now.

    A malformed target, a module that does not import or a missing attribute is one
    :class:`InputError` naming the target."""
    module, _, attr = check_target(target, what=what).partition(":")
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


def resolve_lazy(ref: object, *, what: str = "target") -> object:
    """``ref`` itself, or the object a lazy ``"pkg.module:attr"`` string names, imported now
    (:func:`resolve_target`, its errors naming ``what``)."""
    return resolve_target(ref, what=what) if isinstance(ref, str) else ref


def resolve_callable(ref: object, *, what: str = "target") -> Callable[..., object]:
    """``ref`` if it is callable, else the target it names imported now; one :class:`InputError` if
    that is not callable."""
    obj = ref if callable(ref) else resolve_target(check_target(ref, what=what), what=what)
    if not callable(obj):
        raise InputError(f"{what} {ref!r} is not callable")
    return obj


def check_now(ref: object, *, what: str = "target") -> None:
    """Import and check a target outside negvocab now (a user's or a plug-in's: a wrong one fails when
    it is registered, in one line); negvocab's own targets stay lazy, objects are left as they are."""
    if isinstance(ref, str) and not builtin_target(check_target(ref, what=what)):
        resolve_callable(ref, what=what)


def decorator(register: Callable[..., object], name: str, options: Mapping[str, object]) -> Callable[[F], F]:
    """A decorator that calls ``register(name, fn, **options)`` with the function below it and returns
    the function (``register_method`` and ``register_builder`` given no function return one)."""

    def decorate(fn: F) -> F:
        register(name, fn, **options)
        return fn

    return decorate


class Registry(Generic[T]):
    """Entries of one kind (``kind`` names it in errors), by name and alias, in registration order.

    ``check`` (optional) validates an entry when it is resolved (a lazy target of negvocab's on first
    use, any other target when it is registered) and returns it, so a plug-in's wrong object fails
    with one line instead of deep inside a pipeline. ``plugins``: a name not registered loads the
    plug-ins and is looked up again (the rule of every registry of negvocab; off for a table that
    only copies built-ins)."""

    def __init__(self, kind: str, check: Callable[[str, object], T] | None = None, *, plugins: bool = True) -> None:
        self.kind = kind
        self._check = check
        self._plugins = plugins
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, entry: T | str, *, aliases: tuple[str, ...] = (), replace: bool = False) -> T | str:
        """Add ``entry`` (an object, or a lazy ``"pkg.module:attr"`` string) under ``name`` and ``aliases``.

        A name or alias that is taken is :class:`InputError` unless ``replace`` (a notebook re-running
        its cell replaces its own entry). A target outside negvocab is imported and checked now.
        Returns ``entry``, so it can serve as a decorator's body."""
        key = self.check_free(name, aliases, replace=replace)
        stored = entry
        if isinstance(entry, str) and not builtin_target(check_target(entry, what=f"{self.kind} {key!r}")):
            stored = self._resolve(key, entry)
        if replace:
            self.unregister(key, missing_ok=True)
        self._entries[key] = stored
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
            raise InputError(self._unknown(name))
        del self._entries[key]
        self._aliases = {a: k for a, k in self._aliases.items() if k != key}

    def canonical(self, name: str) -> str:
        """The registered name of ``name`` (case-insensitive, aliases accepted); one not registered
        loads the plug-ins and is looked up again; still unknown, :class:`InputError`."""
        key = self._aliases.get(_key(name), _key(name))
        if key not in self._entries and self._plugins:
            load_plugins()
            key = self._aliases.get(_key(name), _key(name))
        if key not in self._entries:
            raise InputError(self._unknown(name))
        return key

    def get(self, name: str) -> T:
        """The entry of ``name``; a lazy target is imported (and checked) on first use and kept."""
        key = self.canonical(name)
        entry = self._entries[key]
        if isinstance(entry, str):
            entry = self._entries[key] = self._resolve(key, entry)
        return entry

    def _resolve(self, key: str, target: str) -> T:
        resolved = resolve_target(target, what=f"{self.kind} {key!r}")
        return self._check(key, resolved) if self._check else resolved  # type: ignore[return-value]

    def did_you_mean(self, name: str) -> str:
        """``"did you mean 'a', 'b' or 'c'?"``: the registered names closest to ``name`` (difflib's; an
        alias counts as its entry's name), best first; ``""`` when nothing is close."""
        close = difflib.get_close_matches(_key(name), [*self._entries, *self._aliases], n=3)
        near = [repr(n) for n in dict.fromkeys(self._aliases.get(c, c) for c in close)]
        return f"did you mean {' or '.join([', '.join(near[:-1]), near[-1]] if near[:-1] else near)}?" if near else ""

    def _unknown(self, name: str) -> str:
        """The line for an unknown ``name``: the closest registered names first, then every one."""
        hint = self.did_you_mean(name)
        hint += " " if hint else ""
        return f"unknown {self.kind} {name!r}; {hint}choose one of {', '.join(self._entries)}"

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
