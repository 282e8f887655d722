"""Public signatures name their types: no bare ``Any`` in a parameter or return of a public name.

``Any`` stays only inside JSON-like records (``dict[str, Any]``) and in ``**kwargs`` forwarded to a named
callee, as :mod:`negvocab.core.types` says. The check reads every lazy export of ``negvocab`` (classes' public
methods included)."""

from __future__ import annotations

import inspect

import negvocab

#: bare Any allowed in a public signature (none: name the type)
KNOWN: set[str] = set()


def _public_functions():
    seen = set()
    for name in sorted(negvocab._EXPORTS):
        obj = getattr(negvocab, name)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                fn = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
                if inspect.isfunction(fn) and id(fn) not in seen:
                    seen.add(id(fn))
                    yield f"{name}.{attr}", fn
        elif inspect.isfunction(obj) and id(obj) not in seen:
            seen.add(id(obj))
            yield name, obj


def bare_any() -> set[str]:
    found = set()
    for qual, fn in _public_functions():
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]  # **kw forwarded: allowed
        pairs = [(p.name, p.annotation) for p in params] + [("return", sig.return_annotation)]
        for pname, ann in pairs:
            if ann in ("Any", "typing.Any") or getattr(ann, "_name", None) == "Any":
                found.add(f"{qual}({pname})")
    return found


def test_no_new_bare_any_in_public_signatures():
    found = bare_any()
    assert found <= KNOWN, (
        f"public signatures with a bare Any (name the type; see negvocab/core/types.py): {found - KNOWN}"
    )


def test_the_check_sees_a_bare_any(monkeypatch):
    from typing import Any

    def probe(x: Any) -> int:
        return 0

    monkeypatch.setattr(negvocab, "probe_any", probe, raising=False)
    monkeypatch.setitem(negvocab._EXPORTS, "probe_any", "negvocab")
    assert "probe_any(x)" in bare_any()
