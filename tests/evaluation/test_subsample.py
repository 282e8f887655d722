"""negvocab.subsample against a loop of negvocab.metrics.fpr_at_tpr over the same draws, the
finite-population binomial SD, and scipy's Spearman rho."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

import negvocab
from negvocab.errors import InputError
from negvocab.scoring import metrics as M


def _draws(seed, draws, n_total):
    return np.argsort(np.random.default_rng(seed).random((draws, n_total)), axis=1)


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(1)
    ids = rng.normal(1.0, 1.0, 900)
    ids[:40] = np.round(ids[:40], 1)  # ties, as real scores have
    oods = {f"det{k}": rng.normal(0.2 * k, 1.0, 300) for k in range(4)}
    oods["det3"][:30] = np.round(oods["det3"][:30], 1)
    return {k: ids + 0.05 * j for j, k in enumerate(oods)}, oods


@pytest.mark.parametrize("convention", ["paper", "hendrycks", "openood"])
def test_each_draw_equals_fpr_at_tpr(scores, convention):
    s_id, s_ood = scores
    rows = negvocab.subsample(s_id["det1"], s_ood["det1"], sizes=[7, 50, 300], draws=40, convention=convention, seed=3)
    perm = _draws(3, 40, 300)
    for row in rows:
        n = row["n"]
        want = np.array([M.fpr_at_tpr(s_id["det1"], s_ood["det1"][p[:n]], convention=convention) for p in perm])
        assert row["mean"] == pytest.approx(want.mean(), abs=1e-12)
        assert row["sd"] == pytest.approx(want.std(ddof=1), abs=1e-12)
        assert row["full"] == M.fpr_at_tpr(s_id["det1"], s_ood["det1"], convention=convention)
        assert row["diff"] == pytest.approx(row["mean"] - row["full"], abs=1e-15)
    assert rows[-1]["sd"] < 1e-12 and rows[-1]["sd_analytic"] == 0  # n = N: every draw is the full set


def test_sd_follows_the_finite_population_formula(scores):
    s_id, s_ood = scores
    rows = negvocab.subsample(s_id["det0"], s_ood["det0"], sizes=[30, 150, 270], draws=3000, seed=0)
    for r in rows:
        p, n, big = r["full"], r["n"], r["N"]
        assert r["sd_analytic"] == pytest.approx(math.sqrt(p * (1 - p) / n * (big - n) / (big - 1)))
        assert r["sd"] == pytest.approx(r["sd_analytic"], rel=0.08)
        assert abs(r["diff"]) < 4 * r["sd_analytic"] / math.sqrt(3000)


def test_spearman_stability_across_detectors(scores):
    s_id, s_ood = scores
    rows = negvocab.subsample(s_id, s_ood, sizes=[20, 300], draws=60, seed=5)
    assert {r["detector"] for r in rows} == set(s_ood) and len(rows) == 8
    perm = _draws(5, 60, 300)
    names = list(s_ood)
    full = [M.fpr_at_tpr(s_id[k], s_ood[k]) for k in names]
    rhos = []
    for p in perm:
        f = [M.fpr_at_tpr(s_id[k], s_ood[k][p[:20]]) for k in names]
        rhos.append(spearmanr(f, full).statistic)
    r20 = next(r for r in rows if r["n"] == 20)
    assert r20["spearman_mean"] == pytest.approx(np.nanmean(rhos), abs=1e-12)
    r300 = next(r for r in rows if r["n"] == 300)
    assert r300["spearman_mean"] == pytest.approx(1.0) and r300["same_best"] == 1.0


def test_bad_input_is_one_line(scores):
    s_id, s_ood = scores
    with pytest.raises(InputError, match=r"sizes must be integers in \[1, 300\]"):
        negvocab.subsample(s_id["det0"], s_ood["det0"], sizes=[301])
    with pytest.raises(InputError, match="different detectors"):
        negvocab.subsample({"a": s_id["det0"]}, {"b": s_ood["det0"]})
    with pytest.raises(InputError, match="draws"):
        negvocab.subsample(s_id["det0"], s_ood["det0"], draws=0)
    with pytest.raises(InputError, match="both be arrays"):
        negvocab.subsample(s_id, s_ood["det0"])


def test_plot_writes_vector_formats(scores, tmp_path):
    from negvocab.evaluation.subsample import plot_subsample

    s_id, s_ood = scores
    rows = negvocab.subsample(s_id, s_ood, sizes=[20, 100, 200], draws=30)
    for ext in ("pdf", "svg"):
        out = plot_subsample(rows, tmp_path / f"sd.{ext}")
        head = out.read_bytes()[:5]
        assert head == b"%PDF-" if ext == "pdf" else b"<?xml" == head


def test_cli_reads_a_results_folder(scores, tmp_path):
    from typer.testing import CliRunner

    from negvocab.cli import app

    s_id, s_ood = scores
    arrays = {f"id/{k}": v for k, v in s_id.items()} | {f"ood/{k}": v for k, v in s_ood.items()}
    arrays["id/det0/lower"] = s_id["det0"]  # top-k bounds are not detectors
    np.savez(tmp_path / "scores.npz", **arrays, random_weights=np.array(True))
    res = CliRunner().invoke(app, ["subsample", str(tmp_path), "-o", str(tmp_path / "sub"), "--sizes", "50,100", "--draws", "20"])
    assert res.exit_code == 0, res.output
    import csv

    rows = list(csv.DictReader((tmp_path / "sub" / "subsample.csv").open()))
    assert len(rows) == 8 and {r["detector"] for r in rows} == set(s_ood)
    assert {r["random_weights"] for r in rows} == {"True"}  # the CSV says so too, not only subsample.json
    want = negvocab.subsample(s_id, s_ood, sizes=[50, 100], draws=20)
    assert [float(r["sd"]) for r in rows] == pytest.approx([r["sd"] for r in want], abs=1e-12)
    assert (tmp_path / "sub" / "subsample.pdf").exists()
    again = CliRunner().invoke(app, ["subsample", str(tmp_path), "-o", str(tmp_path / "sub")])
    assert again.exit_code == 2 and "--overwrite" in again.output
