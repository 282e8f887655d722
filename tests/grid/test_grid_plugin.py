"""A grid file that names a plug-in (``plugins = [...]``) runs the plug-in's method like a built-in one:
the file loads the module before it is checked, workers load it before a unit runs."""

from __future__ import annotations

import sys

import pytest

import negvocab
from negvocab.core import plugins
from negvocab.core.errors import InputError
from negvocab.grid import units
from negvocab.grid.work import load_model, open_sets
from negvocab.scoring import methods as R
from tests.plugins import toy_method as T

GRID = """
plugins = ["tests.plugins.toy_method"]

[grid]
templates = "single"
id_classes = "classes.txt"
n_boot = 0
device = "cpu"
cache_dir = "{cache}"

[[models]]
name = "TinyA"
model_config = "TinyA.json"
random_weights = true

[id]
path = "id"

[ood]
oodA = "oodA"

[vocabularies]
A = "vocabA.txt"

[[methods]]
name = "toymargin"
params = {{ margin = 0.7 }}
"""


@pytest.fixture
def fresh(monkeypatch):
    """As in a new process: the plug-in not imported, its method not registered."""
    monkeypatch.setattr(plugins, "_loaded", [m for m in plugins._loaded if m != "tests.plugins.toy_method"])
    monkeypatch.delitem(sys.modules, "tests.plugins.toy_method", raising=False)
    R.REGISTRY.unregister("toymargin", missing_ok=True)
    yield
    plugins.load_plugins(["tests.plugins.toy_method"])  # registered again for the tests after this one


def test_a_grid_runs_a_plugin_method(grid_files, tmp_path, fresh):
    toml = grid_files / f"grid_plugin_{tmp_path.name}.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache"))
    assert "toymargin" not in R.METHODS
    res = negvocab.run_grid(toml, tmp_path / "out")
    cfg = negvocab.load_grid(toml)
    assert cfg.plugins == ("tests.plugins.toy_method",) and "toymargin" in R.METHODS
    (row,) = res.rows
    assert row["method"] == "toymargin" and row["vocabulary"] == "A"
    sets = open_sets(cfg)
    vlm = load_model(cfg, cfg.models[0])
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vocab = negvocab.Vocabulary.load(cfg.path("vocabA.txt"))
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    s_id = T.reference(vlm.encode_images(sets["ID"]).embeddings, cls, neg, 0.7)
    s_ood = T.reference(vlm.encode_images(sets["oodA"]).embeddings, cls, neg, 0.7)
    assert row["fpr"] == pytest.approx(negvocab.metrics.fpr_at_tpr(s_id, s_ood), abs=1e-9)
    assert row["auroc"] == pytest.approx(negvocab.metrics.auroc(s_id, s_ood), abs=1e-9)


def test_a_grid_checks_plugin_methods_and_names_a_missing_module(grid_files, tmp_path):
    toml = grid_files / f"grid_plugin_bad_{tmp_path.name}.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache").replace("margin = 0.7", "margin = -2.0"))
    with pytest.raises(InputError, match=r"methods\[0\]\.params: margin must be a positive number, got -2.0"):
        negvocab.load_grid(toml)
    toml.write_text(GRID.format(cache=tmp_path / "cache").replace("tests.plugins.toy_method", "tests.plugins.nope"))
    with pytest.raises(InputError, match=r"plugins: plug-in 'tests.plugins.nope' \(given\) failed to import"):
        negvocab.load_grid(toml)


def test_workers_load_the_grid_s_plugins_first(grid_files, tmp_path, monkeypatch):
    """A Ray actor or task is a fresh process: each loads the file's plug-ins before it runs a unit."""
    toml = grid_files / f"grid_plugin_w_{tmp_path.name}.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache"))
    cfg = negvocab.load_grid(toml)
    seen = []
    monkeypatch.setattr(units, "load_plugins", lambda modules=(): seen.append(tuple(modules)))
    units.ModelHost(cfg, {}, {}, str(tmp_path / "out"), "ray")
    with pytest.raises(AttributeError):  # no work given: what matters is the call before it
        units.score_unit(cfg, None, {}, str(tmp_path / "out"), {})  # type: ignore[arg-type]
    assert seen == [("tests.plugins.toy_method",)] * 2
