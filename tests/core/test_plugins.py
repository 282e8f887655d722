"""Plug-ins are imported once each, from arguments, the environment and entry points."""

import sys

import pytest

from negvocab.core import plugins
from negvocab.core.errors import InputError


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
    root = Path(__file__).resolve().parents[2]
    env = {**__import__("os").environ, plugins.ENV_VAR: "nv_cmd_probe", "PYTHONPATH": f"{root}:{tmp_path}"}
    code = "import sys; from negvocab.cli import main; sys.argv = ['negvocab', 'hello-probe']; main()"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "hello probe", r.stderr


# -- one plug-in rule for every registry; targets as the user wrote them ---------------------------
KERNEL = "import numpy as np\n\n\ndef mcm(image_emb, id_emb, **kw):\n    return -np.asarray(image_emb).sum(axis=1)\n"


@pytest.fixture
def fresh_plugins(tmp_path, monkeypatch):
    """A folder on sys.path for the test's modules, no plug-in loaded yet; the modules and the entries
    they registered are removed afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "_loaded", [])
    before = set(sys.modules)
    yield tmp_path
    from negvocab.builders.registry import unregister_builder
    from negvocab.data.benchmarks import REGISTRY as BENCHMARKS
    from negvocab.scoring.methods import unregister_method

    for name in ("nv_top", "nv_short", "nv_plugged", "nv_deco"):
        unregister_method(name, missing_ok=True)
    BENCHMARKS.unregister("nv-bench", missing_ok=True)
    for name in ("nv_src_builder", "nv_deco_builder"):
        if name in __import__("negvocab").list_builders():
            unregister_builder(name)
    for name in set(sys.modules) - before:
        if name.startswith(("nv_", "mcm")):
            sys.modules.pop(name)


def test_a_top_level_module_holds_a_kernel_even_with_a_scoring_modules_name(fresh_plugins):
    import warnings

    import numpy as np

    import negvocab

    (fresh_plugins / "mcm.py").write_text(KERNEL)  # top-level `mcm`, not negvocab.scoring.mcm
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user's own module: no deprecation
        negvocab.register_method("nv_top", "mcm:mcm")
    x = np.array([[1.0, 2.0], [0.5, 0.0]])
    assert negvocab.score("nv_top", x, np.eye(2)).tolist() == [-3.0, -0.5]


def test_the_old_short_form_reads_negvocab_scoring_with_a_warning(fresh_plugins):
    import numpy as np

    import negvocab
    from negvocab.scoring.methods import get_method

    with pytest.warns(DeprecationWarning, match=r"'mcm:mcm' is renamed 'negvocab.scoring.mcm:mcm'"):
        negvocab.register_method("nv_short", "mcm:mcm", ["T"])
    assert get_method("nv_short").kernel == "negvocab.scoring.mcm:mcm"
    x, t = np.array([[1.0, 0.0], [0.6, 0.8]]), np.eye(2)
    np.testing.assert_array_equal(negvocab.score("nv_short", x, t), negvocab.score("mcm", x, t))


def test_a_wrong_target_is_refused_when_registered_in_one_line(fresh_plugins):
    import negvocab
    from negvocab.data.benchmarks import REGISTRY as BENCHMARKS

    with pytest.raises(InputError, match=r"^method 'nv_top' kernel 'nv_nowhere:fn': module 'nv_nowhere' does not"):
        negvocab.register_method("nv_top", "nv_nowhere:fn")
    with pytest.raises(InputError, match=r"^method 'nv_top' one_pass 'os.path:sep' is not callable$"):
        negvocab.register_method("nv_top", "negvocab.scoring.mcm:mcm", one_pass="os.path:sep")
    with pytest.raises(InputError, match=r"^builder 'nv_src_builder' 'os.path:nope': 'os.path' has no 'nope'$"):
        negvocab.register_builder("nv_src_builder", "os.path:nope", options=negvocab.BuilderOptions)
    with pytest.raises(InputError, match=r"^benchmark 'nv-bench': the target is a str, not a Benchmark or a dict$"):
        negvocab.register_benchmark("os.path:sep", name="nv-bench")
    assert "nv_top" not in negvocab.list_methods() and "nv-bench" not in BENCHMARKS
    assert "nv_src_builder" not in negvocab.list_builders()


def test_get_method_and_get_benchmark_load_the_plugins_when_a_name_is_missing(fresh_plugins, monkeypatch):
    from negvocab.data.benchmarks import get_benchmark
    from negvocab.scoring.methods import get_method

    (fresh_plugins / "nv_plugged_mod.py").write_text(
        "import negvocab\n\n\ndef fn(image_emb, id_emb, **kw):\n    return image_emb[:, 0]\n\n\n"
        "negvocab.register_method('nv_plugged', fn)\n"
        "negvocab.register_benchmark({'name': 'nv-bench', 'title': 'T', 'source': 's',\n"
        "    'ood': {'one': {'group': 'far', 'layout': 'folder', 'path': 'one'}}})\n"
    )
    with pytest.raises(InputError, match=r"^unknown method 'nv_plugged'"):
        get_method("nv_plugged")  # not named anywhere: still unknown
    monkeypatch.setenv(plugins.ENV_VAR, "nv_plugged_mod")
    assert get_method("NV_Plugged").name == "nv_plugged"  # no explicit load_plugins()
    assert get_benchmark("nv-bench").name == "nv-bench" and plugins.loaded_plugins() == ["nv_plugged_mod"]


def test_register_method_and_register_builder_are_decorators(fresh_plugins):
    import numpy as np

    import negvocab
    from negvocab.builders.registry import get_builder
    from negvocab.scoring.methods import get_method

    @negvocab.register_method("nv_deco", params=["T"])
    def nv_deco(image_emb, id_emb, **kw):
        return np.asarray(image_emb)[:, 1]

    @negvocab.register_builder("nv_deco_builder", options=negvocab.BuilderOptions)
    def build():
        return negvocab.Vocabulary.from_labels(["a"], source="nv_deco_builder")

    assert callable(nv_deco) and get_method("nv_deco").scorer is nv_deco and get_method("nv_deco").params == ("T",)
    assert negvocab.score("nv_deco", np.array([[0.0, 2.0]]), np.eye(2)).tolist() == [2.0]
    assert get_builder("nv_deco_builder").function() is build
    assert negvocab.build_vocabulary("nv_deco_builder").labels == ["a"]


def test_a_vocabulary_of_a_plugin_builders_source_loads_through_the_environment(fresh_plugins, monkeypatch):
    import json

    import negvocab
    from negvocab.vocab import sources

    monkeypatch.setattr(sources, "_known", dict(sources._known))  # the source is known only here
    (fresh_plugins / "nv_src_mod.py").write_text(
        "import negvocab\n\n\ndef build():\n    return negvocab.Vocabulary.from_labels(['x'], source='nv-src')\n\n\n"
        "negvocab.register_builder('nv_src_builder', build, options=negvocab.BuilderOptions, source='nv-src')\n"
    )
    doc = json.loads(negvocab.Vocabulary.from_labels(["x", "y"], source="file").model_dump_json())
    path = fresh_plugins / "v.json"
    path.write_text(json.dumps({**doc, "source": "nv-src"}))
    with pytest.raises(InputError, match="unknown source 'nv-src'"):
        negvocab.Vocabulary.load(path)
    monkeypatch.setenv(plugins.ENV_VAR, "nv_src_mod")
    got = negvocab.Vocabulary.load(path)
    assert got.source == "nv-src" and got.labels == ["x", "y"]


def test_an_entry_points_plugin_is_found_by_a_lookup(fresh_plugins, monkeypatch):
    from importlib.metadata import EntryPoint

    from negvocab.scoring.methods import get_method

    (fresh_plugins / "nv_ep_mod.py").write_text(
        "import negvocab\n\n\ndef fn(image_emb, id_emb, **kw):\n    return image_emb[:, 0]\n\n\n"
        "negvocab.register_method('nv_plugged', fn)\n"
    )
    found = [EntryPoint("mine", "nv_ep_mod", plugins.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(plugins, "entry_points", lambda group: found if group == plugins.ENTRY_POINT_GROUP else [])
    monkeypatch.delenv(plugins.ENV_VAR, raising=False)
    assert get_method("nv_plugged").name == "nv_plugged" and plugins.loaded_plugins() == ["nv_ep_mod"]
