"""negvocab.subsample against a loop of negvocab.metrics.fpr_at_tpr over the same draws, the
finite-population binomial SD, and scipy's Spearman rho."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import metrics as M


def _draws(seed, draws, n_total, n_max=None):
    """The documented draws, rebuilt here: the r-th rng.choice(N, n_max, replace=False) of one generator."""
    rng = np.random.default_rng(seed)
    return np.array([rng.choice(n_total, n_max or n_total, replace=False) for _ in range(draws)])


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


def test_cli_reads_a_results_folder(scores, tmp_path):
    from typer.testing import CliRunner

    from negvocab.cli import app

    s_id, s_ood = scores
    arrays = {f"id/{k}": v for k, v in s_id.items()} | {f"ood/{k}": v for k, v in s_ood.items()}
    arrays["id/det0/lower"] = s_id["det0"]  # top-k bounds are not detectors
    np.savez(tmp_path / "scores.npz", **arrays, random_weights=np.array(True))
    res = CliRunner().invoke(
        app, ["subsample", str(tmp_path), "-o", str(tmp_path / "sub"), "--sizes", "50,100", "--draws", "20"]
    )
    assert res.exit_code == 0, res.output
    import csv

    rows = list(csv.DictReader((tmp_path / "sub" / "subsample.csv").open()))
    assert len(rows) == 8 and {r["detector"] for r in rows} == set(s_ood)
    assert {r["random_weights"] for r in rows} == {"True"}  # the CSV says so too, not only subsample.json
    want = negvocab.subsample(s_id, s_ood, sizes=[50, 100], draws=20)
    assert [float(r["sd"]) for r in rows] == pytest.approx([r["sd"] for r in want], abs=1e-12)
    assert (tmp_path / "sub" / "subsample.pdf").exists()
    assert not [p for p in (tmp_path / "sub").iterdir() if p.name.startswith(".negvocab")]  # staged, committed, cleaned
    again = CliRunner().invoke(app, ["subsample", str(tmp_path), "-o", str(tmp_path / "sub")])
    assert again.exit_code == 2 and "--overwrite" in again.output


def test_draws_in_chunks_never_hold_draws_x_n(monkeypatch):
    """The draws come in chunks of at most _CHUNK indices (or one draw), each an ordered sample
    without replacement, and together they are the documented draws."""
    from negvocab.evaluation import subsample as S

    monkeypatch.setattr(S, "_CHUNK", 64)
    for n_max, big in ((10, 50), (50, 50), (200, 300)):
        chunks = [c.copy() for c in S.draw_chunks(4, 23, n_max, big)]  # one buffer refilled: copied as they come
        assert all(c.size <= max(64, n_max) for c in chunks)
        got = np.concatenate(chunks)
        assert got.shape == (23, n_max)
        assert all(len(set(row)) == n_max for row in got.tolist())
        np.testing.assert_array_equal(got, _draws(4, 23, big, n_max))


def test_small_chunks_give_the_same_rows(scores, monkeypatch):
    from negvocab.evaluation import subsample as S

    s_id, s_ood = scores
    want = negvocab.subsample(s_id, s_ood, sizes=[5, 40, 300], draws=30, seed=2, convention="openood")
    monkeypatch.setattr(S, "_CHUNK", 7)
    got = negvocab.subsample(s_id, s_ood, sizes=[5, 40, 300], draws=30, seed=2, convention="openood")
    assert got == want


def _two_sets(scores):
    s_id, s_ood = scores
    sets = ["near"] * 120 + ["far"] * 180
    return s_id, s_ood, sets


def test_one_analysis_per_ood_set_equals_each_set_alone(scores):
    s_id, s_ood, sets = _two_sets(scores)
    rows = negvocab.subsample(s_id, s_ood, sizes=[10, 100], draws=25, seed=1, ood_sets=sets)
    assert [r["ood_set"] for r in rows][:1] == ["near"] and {r["ood_set"] for r in rows} == {"near", "far"}
    for name, sl in (("near", slice(0, 120)), ("far", slice(120, 300))):
        alone = negvocab.subsample(s_id, {k: v[sl] for k, v in s_ood.items()}, sizes=[10, 100], draws=25, seed=1)
        mine = [r for r in rows if r["ood_set"] == name]
        assert [{**r, "ood_set": "x"} for r in mine] == [{**r, "ood_set": "x"} for r in alone]
        for r in mine:  # the set's own full FPR, not the pooled one
            assert (
                r["full"] == M.fpr_at_tpr(s_id[r["detector"]], s_ood[r["detector"]][sl])
                and r["N"] == sl.stop - sl.start
            )
    assert "pooled" not in {r["ood_set"] for r in rows}
    both = negvocab.subsample(s_id, s_ood, sizes=[10, 100], draws=25, seed=1, ood_sets=sets, pooled=True)
    pooled = [r for r in both if r["ood_set"] == "pooled"]
    assert len(pooled) == 8 and pooled[0]["N"] == 300
    assert pooled[0]["full"] == M.fpr_at_tpr(s_id[pooled[0]["detector"]], s_ood[pooled[0]["detector"]])
    with pytest.raises(InputError, match=r"in \[1, 120\] \(the OOD images of OOD set 'near'\)"):
        negvocab.subsample(s_id, s_ood, sizes=[150], ood_sets=sets)
    auto = negvocab.subsample(s_id["det0"], s_ood["det0"], sizes=None, draws=3, ood_sets=sets)
    assert [r["n"] for r in auto if r["ood_set"] == "near"] == [10, 25, 50, 100, 120]


def test_q05_same_best_and_the_tied_draws_dropped():
    """Three detectors: at n = 1 their FPRs often tie (all 0 or all 1), so Spearman rho is undefined
    for those draws; they are counted, and the figures are those of the other draws (scipy)."""
    rng = np.random.default_rng(0)
    ids = rng.normal(2, 1, 400)
    oods = {f"d{k}": rng.normal(0.6 * k, 1, 60) for k in range(3)}
    s_id = {k: ids for k in oods}
    rows = negvocab.subsample(s_id, oods, sizes=[1, 6], draws=200, seed=9)
    perm = _draws(9, 200, 60, 6)
    full = [M.fpr_at_tpr(ids, oods[k]) for k in oods]
    for n in (1, 6):
        fprs = np.array([[M.fpr_at_tpr(ids, oods[k][p[:n]]) for k in oods] for p in perm])
        rho = np.array([spearmanr(f, full).statistic if len(set(f)) > 1 else np.nan for f in fprs])
        row = next(r for r in rows if r["n"] == n)
        ok = ~np.isnan(rho)
        assert row["dropped_tied"] == int((~ok).sum())
        assert row["spearman_mean"] == pytest.approx(rho[ok].mean(), abs=1e-12)
        assert row["spearman_q05"] == pytest.approx(np.quantile(rho[ok], 0.05), abs=1e-12)
        best = np.argmin(fprs, axis=1)
        assert row["same_best"] == pytest.approx(np.mean(np.asarray(full)[best] == min(full)))
    assert next(r for r in rows if r["n"] == 1)["dropped_tied"] > 0


def test_draws_and_seed_limits_are_refused_before_any_allocation(scores, monkeypatch):
    from negvocab.evaluation import subsample as S
    from negvocab.scoring.methods import MAX_DRAWS

    def no(*a, **k):
        raise AssertionError("allocated before the limits were checked")

    monkeypatch.setattr(S, "draw_chunks", no)
    monkeypatch.setattr(S, "_score_sets", no)
    s_id, s_ood = scores
    with pytest.raises(InputError, match=rf"draws must be an integer in \[1, {MAX_DRAWS:,}\], got 10000000000"):
        negvocab.subsample(s_id["det0"], s_ood["det0"], draws=10**10)
    with pytest.raises(InputError, match=r"seed must be an integer >= 0, got -1"):
        negvocab.subsample(s_id["det0"], s_ood["det0"], seed=-1)


def _folder(tmp_path, scores, sets=True):
    s_id, s_ood = scores
    arrays = {f"id/{k}": v for k, v in s_id.items()} | {f"ood/{k}": v for k, v in s_ood.items()}
    if sets:
        arrays["ood_sets"] = np.array(["near"] * 120 + ["far"] * 180)  # as write_results stores it
    np.savez(tmp_path / "scores.npz", **arrays, random_weights=np.array(False))
    return tmp_path


def _cli(*args):
    from typer.testing import CliRunner

    from negvocab.cli import app

    return CliRunner().invoke(app, ["subsample", *map(str, args)])


def test_cli_one_analysis_per_set_and_pooled_only_when_asked(scores, tmp_path):
    import json
    import warnings

    src = _folder(tmp_path, scores)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no library warning reaches the user
        res = _cli(src, "-o", tmp_path / "a", "--sizes", "10,120", "--draws", "15", "--key", "det0", "--key", "det2")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "a" / "subsample.json").read_text())
    assert {r["ood_set"] for r in doc["rows"]} == {"near", "far"} and doc["pooled"] is False
    assert "Spearman mean" in res.output and "q05" in res.output and "all-tied draws dropped" in res.output
    s_id, s_ood = scores
    near = next(r for r in doc["rows"] if r["ood_set"] == "near" and r["detector"] == "det0")
    assert near["full"] == M.fpr_at_tpr(s_id["det0"], s_ood["det0"][:120])
    one = _cli(src, "-o", tmp_path / "b", "--sizes", "10,150", "--draws", "5", "--ood-set", "far", "--pooled")
    assert one.exit_code == 0, one.output
    rows = json.loads((tmp_path / "b" / "subsample.json").read_text())["rows"]
    assert {r["ood_set"] for r in rows} == {"far", "pooled"} and {r["N"] for r in rows} == {
        180
    }  # pooled over the chosen set
    assert "pooled (all sets)" in one.output
    bad = _cli(src, "-o", tmp_path / "c", "--ood-set", "mid")
    assert bad.exit_code == 2 and "--ood-set 'mid': the scores hold OOD sets near, far" in bad.output


def test_cli_refuses_bad_runs_and_files_in_one_line(scores, tmp_path):
    src = _folder(tmp_path, scores)
    for args, msg in (
        (("--draws", 10**12), "draws must be an integer in [1, 100,000]"),
        (("--seed", -3), "seed must be an integer >= 0, got -3"),
        (("--sizes", "500"), "(the OOD images of OOD set 'near'), got 500"),
    ):
        res = _cli(src, "-o", tmp_path / "x", *args)
        assert res.exit_code == 2 and msg in res.output and "Traceback" not in res.output, res.output
    good = (src / "scores.npz").read_bytes()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "scores.npz").write_bytes(good[: len(good) // 2])  # a copy cut short
    np.savez(
        tmp_path / "obj.npz", **{"id/a": np.array([1.0, 2.0], dtype=object), "ood/a": np.array([0.5], dtype=object)}
    )
    np.savez(tmp_path / "txt.npz", **{"id/a": np.array(["1.0", "2.0"]), "ood/a": np.array(["0.5"])})
    for path, msg in ((tmp_path / "cut", "scores.npz: not a readable scores.npz"),
                      (tmp_path / "obj.npz", "obj.npz: not a readable scores.npz"),
                      (tmp_path / "txt.npz", "'id/a' must be a 1-D array of numbers, got <U3")):  # fmt: skip
        res = _cli(
            path, "-o", tmp_path / "y"
        )  # the one validation layer's lines (negvocab.evaluation.stored), with what to do
        assert (
            res.exit_code == 2
            and msg in res.output
            and "re-run `negvocab score`" in res.output
            and len(res.output.strip().splitlines()) == 1
        ), res.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_cli_overwrite_leaves_no_earlier_plot_and_a_full_disk_keeps_the_earlier_run(scores, tmp_path, monkeypatch):
    import errno

    src = _folder(tmp_path, scores)
    out = tmp_path / "sub"
    assert _cli(src, "-o", out, "--sizes", "10", "--draws", "5").exit_code == 0
    assert (out / "subsample.pdf").exists()
    res = _cli(src, "-o", out, "--sizes", "10", "--draws", "5", "--plot-format", "svg", "--overwrite")
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["subsample.csv", "subsample.json", "subsample.svg"]
    assert (out / "subsample.svg").read_bytes()[:5] == b"<?xml"
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    from negvocab.cli import subsample as C

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(C, "write_json", full)
    res = _cli(src, "-o", out, "--sizes", "20", "--draws", "5", "--plot-format", "png", "--overwrite")
    assert res.exit_code == 2 and "earlier files are kept" in res.output, res.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier run, whole
