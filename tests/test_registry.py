"""The open registry: names, aliases, lazy targets, one-line errors."""

import pytest

from negvocab.errors import InputError
from negvocab.registry import Registry, resolve_target


def test_names_aliases_and_order():
    r: Registry[int] = Registry("thing")
    r.register("B", 2, aliases=("bee", "b2"))
    r.register("a", 1)
    assert r.names() == ["b", "a"]  # registration order, lower-cased
    assert r.get("BEE") == 2 and r.canonical(" b2 ") == "b" and "Bee" in r and "c" not in r
    assert r.aliases("b") == ("bee", "b2")
    with pytest.raises(InputError, match=r"unknown thing 'c'; choose one of b, a"):
        r.get("c")


def test_taken_names_need_replace():
    r: Registry[int] = Registry("thing")
    r.register("a", 1, aliases=("x",))
    with pytest.raises(InputError, match="registered already"):
        r.register("x", 3)  # an alias is taken too
    r.register("a", 5, replace=True)
    assert r.get("a") == 5 and "x" not in r  # the old aliases go with the old entry
    r.unregister("a")
    assert len(r) == 0
    with pytest.raises(InputError, match="unknown thing"):
        r.unregister("a")


def test_lazy_target_is_imported_once_and_checked():
    seen = []

    def check(name, obj):
        seen.append(name)
        if not callable(obj):
            raise InputError(f"thing {name!r} is not callable")
        return obj

    r = Registry("thing", check=check)
    r.register("join", "os.path:join")
    r.register("sep", "os.path:sep")
    import os.path

    assert r.get("join") is os.path.join and r.get("join") is os.path.join
    assert seen == ["join"]  # resolved once, then kept
    with pytest.raises(InputError, match="not callable"):
        r.get("sep")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("os.path.join", "must be written 'package.module:name'"),
        ("no_such_module_xyz:f", "does not import"),
        ("os.path:no_such_name", "has no 'no_such_name'"),
    ],
)
def test_bad_targets_are_one_line(target, message):
    with pytest.raises(InputError, match=message):
        resolve_target(target)
    assert resolve_target("os:path.join") is __import__("os").path.join  # a dotted attribute


def test_replace_never_takes_another_entrys_name_or_alias():
    r: Registry[int] = Registry("thing")
    r.register("glmcm", 1, aliases=("gl-mcm",))
    r.register("mcm", 2)
    # a name that is another entry's alias, or an alias that is another entry's name: refused even with replace
    with pytest.raises(InputError, match=r"'gl-mcm' is registered already by 'glmcm'"):
        r.register("gl-mcm", 3, replace=True)
    with pytest.raises(InputError, match=r"'mcm' is registered already by 'mcm'"):
        r.register("mine", 4, aliases=("mcm",), replace=True)
    assert r.names() == ["glmcm", "mcm"] and r.get("gl-mcm") == 1 and r.get("mcm") == 2 and "mine" not in r
    r.register("glmcm", 5, aliases=("gl-mcm", "glm"), replace=True)  # its own name and aliases: replaced
    assert r.get("gl-mcm") == 5 and r.get("glm") == 5 and r.names() == ["mcm", "glmcm"]
    with pytest.raises(InputError, match="is an alias of thing 'glmcm'"):
        r.unregister("glm")
    assert "glmcm" in r
