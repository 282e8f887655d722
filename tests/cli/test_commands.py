"""The command table (negvocab.cli.commands): the same commands and help as the real ones, a start
without numpy, pydantic or torch, and unknown choices refused before the heavy imports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from negvocab.cli import commands as T

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pydantic", "torch", "open_clip", "openai", "sklearn")

# runs main() with the given argv in a fresh process, then prints (on stderr's last line) the heavy
# packages imported by then and the exit status
PROBE = """
import json, sys
from negvocab.cli import main
args, heavy = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["negvocab", *args]
code = 0
try:
    main()
except SystemExit as e:
    code = e.code or 0
print(json.dumps({"heavy": sorted({m.split(".")[0] for m in sys.modules} & heavy), "code": code}), file=sys.stderr)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NEGVOCAB_PLUGINS"}
    return {**env, "PYTHONPATH": str(ROOT), "COLUMNS": "120", **extra}


def _run(*args: str, **env: str) -> tuple[str, str, dict]:
    """stdout, stderr (less the probe's line) and the probe's {"heavy", "code"} of ``negvocab ARGS``."""
    r = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(**env),
        cwd=ROOT,
    )
    *err, last = r.stderr.rstrip("\n").split("\n")
    return r.stdout, "\n".join(err), json.loads(last)


def _real(code: str) -> object:
    """What ``code`` (a Python expression over every command imported) says in a fresh process."""
    prelude = "import json; from negvocab.cli import load_commands; load_commands(); "
    r = subprocess.run(
        [sys.executable, "-c", prelude + f"print(json.dumps({code}))"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        cwd=ROOT,
        check=True,
    )
    return json.loads(r.stdout)


def test_version_and_help_import_no_numpy_pydantic_or_torch():
    out, err, probe = _run("--version")
    assert probe == {"heavy": [], "code": 0} and out.strip() and not err
    from negvocab.core.provenance import negvocab_version

    assert out.strip() == negvocab_version()
    out, err, probe = _run("--help")
    assert probe == {"heavy": [], "code": 0} and "Usage: negvocab" in out and not err


def test_the_lazy_help_is_the_help_of_the_real_commands():
    """``negvocab --help`` lists from the table; with every command imported it lists the real ones:
    the two outputs are the same text (names, order, one-line help, build's builders)."""
    lazy, _, probe = _run("--help")
    assert probe["code"] == 0
    code = (
        "import sys; from negvocab.cli import load_commands, main; load_commands(); "
        "sys.argv = ['negvocab', '--help']; main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env(), cwd=ROOT)
    assert r.returncode == 0 and lazy == r.stdout
    for name in T.COMMANDS:
        assert f" {name} " in lazy


def test_the_tables_are_the_real_commands_and_registries():
    real = _real(
        "{'help': {n: (c.help or '').split(chr(10) * 2)[0] for n, c in "
        "__import__('typer').main.get_command(__import__('negvocab.cli', fromlist=['app']).app).commands.items()}, "
        "'module': {n: c.callback.__module__ for n, c in "
        "__import__('typer').main.get_command(__import__('negvocab.cli', fromlist=['app']).app).commands.items() "
        "if c.callback is not None}, "
        "'build': list(__import__('typer').main.get_command(__import__('negvocab.cli', fromlist=['app']).build_app)"
        ".commands), "
        "'build_help': __import__('negvocab.cli.build_generic', fromlist=['x']).build_help(), "
        "'methods': {n: list(__import__('negvocab.scoring.methods', fromlist=['x']).get_method(n).aliases) "
        "for n in __import__('negvocab.scoring.methods', fromlist=['x']).list_methods()}, "
        "'conventions': list(__import__('negvocab.scoring.metrics', fromlist=['x']).CONVENTIONS)}"
    )
    assert real["help"] == {n: c.help for n, c in T.COMMANDS.items()}  # the same names and help
    assert all(real["module"][n] == c.module for n, c in T.COMMANDS.items() if n in real["module"])
    assert sorted(real["build"]) == sorted(T.BUILD_COMMANDS) and real["build_help"] == T.BUILD_HELP
    assert real["methods"] == {n: list(a) for n, a in T.METHODS.items()}  # names, aliases, order
    assert real["conventions"] == list(T.CONVENTIONS)


def test_every_command_and_sub_command_helps_when_imported_on_first_use():
    code = """
import sys
from negvocab.cli import main
names = [["build", n] for n in sys.argv[1].split(",")] + [[n] for n in sys.argv[2].split(",")]
names += [["grid", n] for n in ("init", "run", "status", "plan")]
for words in names:
    sys.argv = ["negvocab", *words, "--help"]
    try:
        main()
    except SystemExit as e:
        assert not e.code, words
    print("==", " ".join(words))
"""
    r = subprocess.run(
        [sys.executable, "-c", code, ",".join(T.BUILD_COMMANDS), ",".join(T.COMMANDS)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    chunks = re.split(r"^== (.*)$", r.stdout, flags=re.M)  # each command's help, then its name
    helped = dict(zip(chunks[1::2], chunks[0::2], strict=False))  # the last chunk: after the last name
    assert len(helped) == len(T.BUILD_COMMANDS) + len(T.COMMANDS) + 4
    for words, text in helped.items():
        assert f"Usage: negvocab {words} " in text, words


def _registry_line(kind: str, value: str) -> str:
    """The line the real check gives, in a fresh process (this one's registry may hold test methods)."""
    check = "get_method(v)" if kind == "method" else "EVALUATION_PARAMS['convention'].validate(v, cli=True)"
    code = (
        "import sys; from negvocab.scoring.methods import EVALUATION_PARAMS, get_method; v = sys.argv[1]\n"
        f"try:\n    {check}\nexcept Exception as e:\n    print(f'error: {{e}}')"
    )
    r = subprocess.run([sys.executable, "-c", code, value], capture_output=True, text=True, timeout=120, env=_env())
    assert r.stdout.startswith("error: unknown "), r.stdout + r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("command", ["score", "sweep", "coverage"])
def test_an_unknown_method_or_convention_is_refused_before_numpy(command):
    rest = ["--id", ".", "--ood", ".", "-o", "/nonexistent/x"]
    _, err, probe = _run(command, "--method", "nosuch", *rest)
    assert probe == {"heavy": [], "code": 2} and err == _registry_line("method", "nosuch")
    _, err, probe = _run(command, "--convention=nosuch", "--method", "GL-MCM", *rest)  # an alias passes
    assert probe == {"heavy": [], "code": 2} and err == _registry_line("convention", "nosuch")


def test_a_plugin_method_is_accepted_and_an_unknown_one_still_refused():
    """With a plug-in the registry itself decides (it is imported with the plug-in): its method
    passes the check, an unknown name gets the same line, now listing the plug-in's method too."""
    env = {"NEGVOCAB_PLUGINS": "tests.plugins.toy_method"}
    _, err, probe = _run("score", "--method", "toy-margin", "--convention", "nosuch", "--id", ".", "--ood", ".", **env)
    assert probe["code"] == 2 and "unknown method" not in err and "unknown --convention 'nosuch'" in err
    _, err, probe = _run("score", "--method", "nosuch", **env)
    assert probe["code"] == 2 and err.startswith("error: unknown method 'nosuch'; choose one of mcm,")
    assert err.endswith(", toymargin")


def test_help_and_repeats_are_left_to_the_command():
    _, err, probe = _run("score", "--method", "nosuch", "--help")
    assert probe["code"] == 0 and not err
    _, err, probe = _run("sweep", "--convention", "x", "--convention", "y")
    assert probe["code"] == 2 and err.startswith("error: option --convention given 2 times")


def test_an_unknown_build_command_is_refused_without_the_builder_registry():
    """Without numpy or torch; typer itself may import pydantic to parse the ``build`` group's options."""
    _, err, probe = _run("build", "nosuch")
    assert probe["code"] == 2 and err == "error: No such command 'nosuch'. (see 'negvocab build --help')"
    assert not set(probe["heavy"]) - {"pydantic"}


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (["--method", "a", "--x", "--method=b"], ["a", "b"]),
        (["--method", "a", "--", "--method", "b"], ["a"]),
        (["--methods", "a", "--method"], None),  # no value: click says so
        (["--convention", "a"], []),
    ],
)
def test_values_of_a_flag(args, values):
    assert T._values(args, "--method") == values


def test_every_module_that_adds_a_command_is_in_the_table():
    """A command module missing from the table would never be imported: its commands would be gone."""
    tabled = {c.module for c in T.COMMANDS.values()} | set(T.BUILD_MODULES) | {"negvocab.cli.build_generic"}
    adds = re.compile(r"^@(app|build_app|\w+_app)\.command\(|^(app|build_app)\.add_typer\(", re.M)
    found = {
        f"negvocab.cli.{p.stem}"
        for p in (ROOT / "negvocab" / "cli").glob("*.py")
        if adds.search(p.read_text(encoding="utf-8")) and p.stem != "app"
    }
    assert found and found <= tabled, f"add a row to negvocab/cli/commands.py for: {sorted(found - tabled)}"
    build = {m for m in found if "build_app.command" in (ROOT / (m.replace(".", "/") + ".py")).read_text()}
    assert build - {"negvocab.cli.build_generic"} <= set(T.BUILD_MODULES)
