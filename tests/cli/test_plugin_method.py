"""A plug-in's method (tests/plugins/toy_method.py) from ``negvocab score``, ``sweep`` and ``coverage``:
its parameter is a flag (``--margin``), its name in the help and errors, its numbers the toy formula by
hand over the same embeddings; nothing in negvocab/ names it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.errors import InputError
from negvocab.plugins import load_plugins
from tests.plugins import toy_method as T
from tests.scoring.conftest import ID_NAMES

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def plugin():
    load_plugins(["tests.plugins.toy_method"])


@pytest.fixture(scope="module")
def embeddings(tiny):
    """The embeddings the CLI scores (the same random model, through the same cache)."""
    from negvocab.cli.options import load_vlm

    vlm = load_vlm("ViT-B-32", None, "cpu", None, tiny / "cache", True)
    vocab = negvocab.Vocabulary.load(tiny / "negA.txt")
    images = {k: vlm.encode_images(negvocab.open_image_set(tiny / k)) for k in ("id", "ood")}
    cls = vlm.encode_text(ID_NAMES, "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    return images, cls, neg


def _metrics(images, cls, neg, margin):
    s_id = T.reference(images["id"].embeddings, cls, neg, margin)
    s_ood = T.reference(images["ood"].embeddings, cls, neg, margin)
    return s_id, s_ood, negvocab.metrics.fpr_at_tpr(s_id, s_ood), negvocab.metrics.auroc(s_id, s_ood)


def _common(tiny, model_args):
    return ["--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--no-report", *model_args]


def test_score_takes_the_plugin_method_and_its_flag(tiny, model_args, tmp_path, embeddings):
    out = tmp_path / "res"
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", "toymargin", "--margin", "0.7", "--n-boot", "0"]
    r = runner.invoke(app, [*args, "-o", str(out), *_common(tiny, model_args)])
    assert r.exit_code == 0, r.output
    images, cls, neg = embeddings
    s_id, s_ood, fpr, auroc = _metrics(images, cls, neg, 0.7)
    npz = np.load(out / "scores.npz")
    assert list(npz["id_image_ids"]) == list(images["id"].ids)
    np.testing.assert_allclose(npz["id/toymargin@negA"], s_id, atol=1e-6)
    np.testing.assert_allclose(npz["ood/toymargin@negA"], s_ood, atol=1e-6)
    (row,) = json.loads((out / "results.json").read_text())["rows"]
    assert row["method"] == "toymargin" and row["params"] == {"margin": 0.7}
    assert row["fpr"] == pytest.approx(fpr) and row["auroc"] == pytest.approx(auroc)


def test_sweep_takes_the_plugin_method(tiny, model_args, tmp_path, embeddings):
    vocab = tmp_path / "ranked.json"
    negvocab.Vocabulary.load(tiny / "negA.txt").save(vocab)
    args = ["sweep", "--vocab", str(vocab), "--order", "given", "--sizes", "3,10", "--method", "toymargin"]
    r = runner.invoke(
        app, [*args, "--margin", "0.3", "--n-boot", "0", "-o", str(tmp_path / "sw"), *_common(tiny, model_args)]
    )
    assert r.exit_code == 0, r.output
    images, cls, neg = embeddings
    rows = [x for x in csv.DictReader((tmp_path / "sw" / "sweep.csv").open()) if x["kind"] == "sweep"]
    assert [int(x["M"]) for x in rows] == [3, 10]
    for x in rows:
        _, _, fpr, auroc = _metrics(images, cls, neg[: int(x["M"])], 0.3)
        assert float(x["fpr"]) == pytest.approx(fpr) and float(x["auroc"]) == pytest.approx(auroc)


def test_coverage_takes_the_plugin_method(tiny, model_args, tmp_path, embeddings):
    args = ["coverage", "--vocab", str(tiny / "negA.txt"), "--method", "toymargin", "--margin", "0.6", "--repair", "0"]
    r = runner.invoke(app, [*args, "-o", str(tmp_path / "cov"), *_common(tiny, model_args)])
    assert r.exit_code == 0, r.output
    images, cls, neg = embeddings
    _, _, fpr, auroc = _metrics(images, cls, neg, 0.6)
    summary = json.loads((tmp_path / "cov" / "coverage.json").read_text())["summary"]
    assert summary["fpr"] == pytest.approx(fpr) and summary["auroc"] == pytest.approx(auroc)


def test_help_and_errors_list_the_registry(tiny, model_args, tmp_path):
    for command in ("score", "sweep", "coverage"):
        text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "250"}).output
        assert "--margin" in text and "toymargin" in text, command
    r = runner.invoke(
        app, ["coverage", "--method", "mcm", "--vocab", str(tiny / "negA.txt"), *_common(tiny, model_args)]
    )
    assert r.exit_code == 2 and r.stderr.strip().endswith("coverage needs neglabel, eoe, neglabel_eoe, toymargin")
    assert len(r.stderr.strip().splitlines()) == 1
    r = runner.invoke(
        app,
        [
            "score",
            "--vocab",
            str(tiny / "negA.txt"),
            "--method",
            "toymargin",
            "--margin",
            "-1",
            *_common(tiny, model_args),
        ],
    )
    assert r.exit_code == 2 and r.stderr.strip() == "error: --margin must be a positive number, got -1.0"


def test_the_environment_variable_loads_a_plugin_for_the_console_command():
    code = "from negvocab.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEGVOCAB_PLUGINS": "tests.plugins.toy_method", "COLUMNS": "250"}
    run = subprocess.run(
        [sys.executable, "-c", code, "sweep", "--help"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert run.returncode == 0 and "--margin" in run.stdout and "toymargin" in run.stdout
    env["NEGVOCAB_PLUGINS"] = "tests.plugins.no_such_module"
    run = subprocess.run(  # a command stops; its --help still helps, after a warning
        [sys.executable, "-c", code, "methods"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert run.returncode == 2 and run.stderr.strip().startswith("error: plug-in 'tests.plugins.no_such_module'")
    assert "Traceback" not in run.stderr
    run = subprocess.run(
        [sys.executable, "-c", code, "score", "--help"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert run.returncode == 0 and run.stderr.strip().startswith("warning: plug-in 'tests.plugins.no_such_module'")


def test_a_plugin_flag_never_hides_a_command_s_own_option():
    """A plug-in parameter whose flag a command uses for an option of its own is refused when it registers
    (one line naming the command), so the command's option keeps its meaning and nothing is left out silently."""
    param = negvocab.Param("clash_output", float, 1.0, "A plug-in's parameter named like -o.", "--output")
    with pytest.raises(InputError, match=r"^parameter clash_output: flag --output is an option of its own of negvocab"):
        negvocab.register_method("clash", T.toy, [param], needs_negatives=True, replace=True)
    assert "clash" not in negvocab.list_methods()
    text = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "250"}).output
    assert "plug-in's parameter named like" not in text and "Results folder." in text


@pytest.mark.parametrize("command", ["sweep", "coverage"])  # score serves them (tests/cli/test_score_stream.py)
def test_a_stream_method_is_refused_before_any_model(tiny, model_args, tmp_path, monkeypatch, command):
    """A test-time (stream) method is one line naming the command, before any model is built."""
    load_plugins(["tests.plugins.toy_stream"])
    from negvocab.vlm import model as vlm_model

    def no_model(*a, **k):
        raise AssertionError("a model was built")

    monkeypatch.setattr(vlm_model.VLM, "__init__", no_model)
    extra = ["--sizes", "2,4"] if command == "sweep" else []
    r = runner.invoke(
        app,
        [command, "--vocab", str(tiny / "negA.txt"), "--method", "toy_stream", "-o", str(tmp_path / "o"), *extra]
        + _common(tiny, model_args),
    )
    assert r.exit_code == 2, r.output
    assert f"toy_stream is a stream method; negvocab {command} serves batch methods" in r.output
    assert "Traceback" not in r.output and "a model was built" not in r.output
