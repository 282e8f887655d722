"""The logit baselines (msp, maxlogit, energy, gen) take each model's own logit scale in the pipeline.

A random-weight open_clip CLIP holds open_clip's initial ``logit_scale = log(1 / 0.07)``, so its
logits are 14.29 x cosine, not CLIP's released 100: the pipeline (``evaluate_vocabularies``, the
``negvocab score`` command, grids) must use that scale unless one is given. Checked against the
float64 formulas of ``tests/scoring/reference.py`` on the model's own embeddings.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.evaluation.stored import read_scores_npz
from tests.scoring import reference as ref

BASELINES = {"msp": ref.msp, "maxlogit": ref.maxlogit, "energy": ref.energy, "gen": ref.gen}
INIT_SCALE = 1 / 0.07  # open_clip's CLIP initialisation: logit_scale = log(1 / 0.07)


@pytest.fixture(scope="module")
def rw(tiny):
    return negvocab.VLM("ViT-B-32", random_weights=True, device="cpu", cache_dir=tiny / "cache")


@pytest.fixture(scope="module")
def embedded(rw, tiny):
    classes = negvocab.read_id_classes(tiny / "classes.txt")
    id_set, ood_set = negvocab.open_image_set(tiny / "id"), negvocab.open_image_set(tiny / "ood")
    img = np.concatenate([rw.encode_images(id_set).embeddings, rw.encode_images(ood_set).embeddings])
    cls = rw.encode_text(list(classes.names), "single", pos="n")
    return classes, id_set, ood_set, img, cls


def test_a_model_reports_its_own_logit_scale(rw):
    assert rw.logit_scale == pytest.approx(INIT_SCALE, rel=1e-6)
    assert rw.logit_bias is None  # CLIP has none; SigLIP's is -10 at initialisation


def _ours(ev, key):
    return np.r_[ev.scores[key]["id"], ev.scores[key]["ood"]]


def test_evaluation_scores_the_baselines_at_the_models_scale(rw, embedded):
    classes, id_set, ood_set, img, cls = embedded
    kw = {"id_classes": classes, "templates": "single", "n_boot": 0, "explain_k": 0}
    ev = negvocab.evaluate_vocabularies(rw, id_set, ood_set, {}, list(BASELINES), **kw)
    for method, formula in BASELINES.items():
        np.testing.assert_allclose(
            _ours(ev, method), formula(img, cls, logit_scale=INIT_SCALE), rtol=1e-5, atol=1e-6, err_msg=method
        )
    # the 100 the pipeline used before gives other scores (MSP and GEN are not scale-invariant)
    for method in ("msp", "maxlogit", "energy", "gen"):
        assert not np.allclose(
            _ours(ev, method), BASELINES[method](img, cls, logit_scale=100.0), rtol=1e-3, atol=1e-6
        ), method
    rows = {r["method"]: r for r in ev.rows}
    assert rows["energy"]["params"]["logit_scale"] == pytest.approx(INIT_SCALE, rel=1e-6)  # recorded with the results
    # a scale given wins over the model's
    given = negvocab.evaluate_vocabularies(rw, id_set, ood_set, {}, ["energy"], params={"logit_scale": 100.0}, **kw)
    np.testing.assert_allclose(_ours(given, "energy"), ref.energy(img, cls, logit_scale=100.0), rtol=1e-5, atol=1e-4)


def test_the_score_command_uses_the_models_scale_unless_given(rw, embedded, tiny, model_args, tmp_path):
    classes, _, _, img, cls = embedded
    base = [
        "score",
        "--id",
        str(tiny / "id"),
        "--ood",
        str(tiny / "ood"),
        "--method",
        "msp",
        "--method",
        "energy",
        "--n-boot",
        "0",
        *model_args,
    ]
    for out, extra, scale in (
        (tmp_path / "own", [], INIT_SCALE),
        (tmp_path / "given", ["--logit-scale", "100"], 100.0),
    ):
        r = CliRunner().invoke(app, [*base, *extra, "-o", str(out)], catch_exceptions=False)
        assert r.exit_code == 0, r.output
        stored = read_scores_npz(out)
        for method in ("msp", "energy"):
            got = np.r_[stored.id[method], stored.ood[method]]
            np.testing.assert_allclose(
                got, BASELINES[method](img, cls, logit_scale=scale), rtol=1e-5, atol=1e-4, err_msg=f"{method} {extra}"
            )
        rows = json.loads((out / "results.json").read_text())["rows"]
        assert {round(x["params"]["logit_scale"], 4) for x in rows} == {round(scale, 4)}
    assert math.isclose(rw.logit_scale, INIT_SCALE, rel_tol=1e-6)
