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
from pydantic import BaseModel, Field
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.core.plugins import load_plugins
from negvocab.scoring.methods import PARAMS
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


def _scored_as_the_toy(tiny, model_args, out, embeddings, method, flag):
    """``negvocab score --method METHOD FLAG 0.7``: its scores and metrics the toy formula's by hand; its row."""
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", method, flag, "0.7", "--n-boot", "0"]
    r = runner.invoke(app, [*args, "-o", str(out), *_common(tiny, model_args)])
    assert r.exit_code == 0, r.output
    images, cls, neg = embeddings
    s_id, s_ood, fpr, auroc = _metrics(images, cls, neg, 0.7)
    npz = np.load(out / "scores.npz")
    assert list(npz["id_image_ids"]) == list(images["id"].ids)
    np.testing.assert_allclose(npz[f"id/{method}@negA"], s_id, atol=1e-6)
    np.testing.assert_allclose(npz[f"ood/{method}@negA"], s_ood, atol=1e-6)
    (row,) = json.loads((out / "results.json").read_text())["rows"]
    assert row["method"] == method and row["fpr"] == pytest.approx(fpr) and row["auroc"] == pytest.approx(auroc)
    return row


def test_score_takes_the_plugin_method_and_its_flag(tiny, model_args, tmp_path, embeddings):
    row = _scored_as_the_toy(tiny, model_args, tmp_path / "res", embeddings, "toymargin", "--margin")
    assert row["params"] == {"margin": 0.7}


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


def _toy_weight(image_emb, id_emb, neg_emb, *, neg_weight=0.5, device=None, chunk_size=None):
    """The toy formula with its weight under another name (a plug-in whose parameters are a model's fields)."""
    return T.toy(image_emb, id_emb, neg_emb, margin=neg_weight)


class ToyWeightOptions(BaseModel):
    neg_weight: float = Field(0.5, gt=0, le=2, description="Toy: weight of the nearest negative, at most 2.")


@pytest.fixture
def registered():
    """Register plug-in methods for one test; each is removed with its own parameters afterwards."""
    names: list[str] = []

    def register(name, *args, **kw):
        method = negvocab.register_method(name, _toy_weight, *args, needs_negatives=True, replace=True, **kw)
        names.append(method.name)
        return method

    yield register
    for name in names:
        if name in negvocab.list_methods():
            params = negvocab.get_method(name).params
            negvocab.unregister_method(name)
            used = {q for m in negvocab.list_methods() for q in negvocab.get_method(m).params}
            for p in set(params) - used:
                PARAMS.pop(p, None)


def test_a_plugin_method_with_an_options_model_gets_its_flags_generated(
    tiny, model_args, tmp_path, embeddings, registered
):
    """A method registered with a pydantic options model (no Param): each field is a parameter, its flag
    derived from its name (--neg-weight), its value checked by the model too (le=2) in one line."""
    m = registered("toyweight", options=ToyWeightOptions)
    assert m.params == ("neg_weight",) and m.options is ToyWeightOptions
    row = _scored_as_the_toy(tiny, model_args, tmp_path / "res", embeddings, "toyweight", "--neg-weight")
    assert row["params"] == {"neg_weight": 0.7}
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", "toyweight", "--neg-weight", "3"]
    r = runner.invoke(app, [*args, "-o", str(tmp_path / "bad"), *_common(tiny, model_args)])
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: toyweight: --neg-weight input should be less than or equal to 2, got 3.0"


def test_the_historic_flags_still_work(tiny, model_args, tmp_path):
    """T, penalty_T and lam keep the flags users know: --temperature, --penalty-temperature, --lambda."""
    text = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "250"}).output
    assert all(f in text for f in ("--temperature", "--penalty-temperature", "--lambda", "--top-classes"))
    assert "--penalty-t " not in text and "--lam " not in text
    out = tmp_path / "res"
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", "mcm", "--temperature", "2", "--n-boot", "0"]
    r = runner.invoke(app, [*args, "-o", str(out), *_common(tiny, model_args)])
    assert r.exit_code == 0, r.output
    (row,) = json.loads((out / "results.json").read_text())["rows"]
    assert row["params"] == {"T": 2.0}
    r = runner.invoke(app, [*args, "--lambda", "-1", "-o", str(tmp_path / "bad"), *_common(tiny, model_args)])
    assert r.exit_code == 2 and r.stderr.strip() == "error: --lambda must be a number >= 0, got -1.0"


def test_a_param_s_own_flag_warns_and_works_for_one_release(tiny, model_args, tmp_path, registered):
    """A Param given a flag other than the one derived from its name: a DeprecationWarning when it is
    registered, and the command line offers that flag (and names it in errors)."""
    old = negvocab.Param("nv_gap", float, 0.5, "Toy: a gap.", "--old-gap", check="positive")
    with pytest.warns(DeprecationWarning, match=r"flag --old-gap given; .* derived from its name now \(--nv-gap\)"):
        registered("toyoldflag", [old])
    text = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "250"}).output
    assert "--old-gap" in text and "--nv-gap" not in text
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", "toyoldflag", "--old-gap", "-1"]
    r = runner.invoke(app, [*args, "-o", str(tmp_path / "o"), *_common(tiny, model_args)])
    assert r.exit_code == 2 and r.stderr.strip() == "error: --old-gap must be a positive number, got -1.0"


class OutputOptions(BaseModel):
    output: float = Field(1.0, description="A plug-in's parameter named like -o.")


def test_a_plugin_flag_never_hides_a_command_s_own_option(tiny, model_args, tmp_path, registered):
    """A plug-in parameter whose flag a command uses for an option of its own (``output`` -> --output) is
    not offered, and the command refuses to run in one line naming the parameter, the flag and the command,
    so the command's option keeps its meaning and nothing is left out silently. So is a flag that another
    parameter has (``temperature`` -> --temperature, T's)."""
    registered("clash", options=OutputOptions)
    text = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "250"}).output
    assert "plug-in's parameter named like" not in text and "Results folder." in text
    args = ["score", "--vocab", str(tiny / "negA.txt"), "--method", "mcm", "-o", str(tmp_path / "o")]
    r = runner.invoke(app, [*args, *_common(tiny, model_args)])
    assert r.exit_code == 2 and r.stderr.strip() == (
        "error: parameter output: flag --output is an option of its own of negvocab score; rename the parameter"
    )
    negvocab.unregister_method("clash")
    PARAMS.pop("output")
    registered("clash2", [negvocab.Param("temperature", float, 1.0, "Another temperature.")])
    r = runner.invoke(app, [*args, *_common(tiny, model_args)])
    assert r.exit_code == 2 and r.stderr.strip() == (
        "error: parameter temperature: flag --temperature is taken by 'T'; rename the parameter"
    )


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
