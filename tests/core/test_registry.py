"""The open registry: names, aliases, lazy targets, one-line errors."""

import pytest

from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, resolve_target


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
    r.register("resolve", "negvocab.core.registry:resolve_target")  # negvocab's own: lazy
    r.register("names", "negvocab.core.registry:__all__")
    assert seen == []
    assert r.get("resolve") is resolve_target and r.get("resolve") is resolve_target
    assert seen == ["resolve"]  # resolved once, then kept
    with pytest.raises(InputError, match="not callable"):
        r.get("names")


def test_a_target_outside_negvocab_is_checked_when_registered():
    import os.path

    r = Registry("thing", check=lambda name, obj: obj if callable(obj) else _refuse(name))
    assert r.register("join", "os.path:join") == "os.path:join" and r.get("join") is os.path.join
    with pytest.raises(InputError, match=r"^thing 'sep' is not callable$"):
        r.register("sep", "os.path:sep")
    with pytest.raises(InputError, match=r"^thing 'gone' 'os.path:gone': 'os.path' has no 'gone'$"):
        r.register("gone", "os.path:gone")
    with pytest.raises(
        InputError, match=r"^thing 'bare' 'negvocab.core.registry' must be written 'package.module:name'$"
    ):
        r.register("bare", "negvocab.core.registry")  # the syntax is checked for negvocab's own targets too
    assert r.names() == ["join"]


def _refuse(name):
    raise InputError(f"thing {name!r} is not callable")


def test_an_unknown_name_suggests_the_closest():
    r: Registry[int] = Registry("method", plugins=False)
    for name in ("neglabel", "neglabel_eoe", "mcm"):
        r.register(name, 1)
    r.register("glmcm", 2, aliases=("gl-mcm",))
    with pytest.raises(InputError, match=r"^unknown method 'neglable'; did you mean 'neglabel'"):
        r.get("neglable")
    with pytest.raises(InputError, match=r"^unknown method 'gl_mcm'; did you mean 'glmcm' or 'mcm'\? choose one of "):
        r.canonical("gl_mcm")  # an alias that is close names its entry
    with pytest.raises(InputError, match=r"^unknown method 'xyz'; choose one of neglabel, neglabel_eoe, mcm, glmcm$"):
        r.get("xyz")  # nothing close: the list alone


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


def test_the_built_in_name_tables_are_the_registries():
    """The copy of the built-in sources that the vocabulary layer keeps (it may not import the builders)
    is the builder registry's; the CLI's build table is BUILTIN_BUILDERS itself (tests/cli/test_commands.py)."""
    from negvocab.builders import BUILTIN_BUILDERS
    from negvocab.builders.registry import get_builder, list_builders
    from negvocab.vocab.vocabulary import SOURCES

    assert list_builders()[: len(BUILTIN_BUILDERS)] == list(BUILTIN_BUILDERS)
    assert sorted(SOURCES) == sorted({get_builder(n).source for n in BUILTIN_BUILDERS} | {"union", "file"})
