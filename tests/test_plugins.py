"""Plug-ins are imported once each, from arguments, the environment and entry points."""

import sys

import pytest

from negvocab import plugins
from negvocab.errors import InputError


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "nv_plugin_probe.py").write_text(
        "import builtins\nbuiltins.NV_PROBE = getattr(builtins, 'NV_PROBE', 0) + 1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_loaded", [])
    yield "nv_plugin_probe"
    sys.modules.pop("nv_plugin_probe", None)
    import builtins

    builtins.__dict__.pop("NV_PROBE", None)


def test_environment_modules_load_once(module, monkeypatch):
    import builtins

    monkeypatch.setenv(plugins.ENV_VAR, f" {module} ,")
    assert module in plugins.load_plugins()
    plugins.load_plugins([module])
    assert builtins.NV_PROBE == 1 and plugins.loaded_plugins().count(module) == 1


def test_a_broken_plugin_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "nv_broken_probe.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_loaded", [])
    monkeypatch.setenv(plugins.ENV_VAR, "nv_broken_probe")
    with pytest.raises(
        InputError, match=r"plug-in 'nv_broken_probe' \(\$NEGVOCAB_PLUGINS\) failed to import: RuntimeError: boom"
    ):
        plugins.load_plugins()
    monkeypatch.delenv(plugins.ENV_VAR)
    assert plugins.load_plugins(environment=False) == []


def test_a_plugin_may_add_a_command_to_the_cli(tmp_path):
    """Plug-ins load after the CLI's app exists: a plug-in that imports it (to add a command) is no circle."""
    import subprocess
    from pathlib import Path

    (tmp_path / "nv_cmd_probe.py").write_text(
        "from negvocab.cli.app import app\n\n\n@app.command('hello-probe')\n"
        "def hello() -> None:\n    print('hello probe')\n"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**__import__("os").environ, plugins.ENV_VAR: "nv_cmd_probe", "PYTHONPATH": f"{root}:{tmp_path}"}
    code = "import sys; from negvocab.cli import main; sys.argv = ['negvocab', 'hello-probe']; main()"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "hello probe", r.stderr
