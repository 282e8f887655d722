"""The local grid engine against direct calls of the public API, resuming, status and tables."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.evaluation.compare import paired_bootstrap
from negvocab.grid.work import load_model, open_sets


@pytest.fixture(scope="module")
def ran(grid_files, tmp_path_factory):
    """One grid run shared by the tests that only read it."""
    from tests.grid.conftest import GRID_TOML

    tmp = tmp_path_factory.mktemp("ran")
    toml = grid_files / f"grid_{tmp.name}.toml"
    toml.write_text(GRID_TOML.format(cache=tmp / "cache"))
    return negvocab.run_grid(toml, tmp / "out"), toml, tmp / "out"


@pytest.fixture
def ran_here(grid_toml, tmp_path):
    """A grid run of its own, for tests that change it."""
    return negvocab.run_grid(grid_toml, tmp_path / "out"), grid_toml, tmp_path / "out"


def test_cells_equal_direct_public_api_calls(ran):
    res, toml, _ = ran
    cfg = negvocab.load_grid(toml)
    # 2 models x (A@4, A@8, A@12, B for neglabel + none for mcm) x 3 OOD sets x 2 conventions
    assert len(res.rows) == 2 * 5 * 3 * 2
    sets = open_sets(cfg)
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vocab = negvocab.Vocabulary.load(cfg.path("vocabA.txt")).head(8)
    vlm = load_model(cfg, cfg.models[1])
    img = {k: vlm.encode_images(s).embeddings for k, s in sets.items()}
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    s_id = negvocab.score("neglabel", img["ID"], cls, neg, groups=2)
    s_ood = negvocab.score("neglabel", img["oodB"], cls, neg, groups=2)
    want = negvocab.metrics.evaluate(s_id, s_ood, convention="openood", n_boot=20)
    row = next(
        r
        for r in res.rows
        if (r["model"], r["vocabulary"], r["ood_set"], r["method"], r["convention"])
        == ("TinyB", "A@8", "oodB", "neglabel", "openood")
    )
    for k in ("fpr", "auroc", "aupr_in", "aupr_out"):
        assert row[k] == pytest.approx(want[k], abs=1e-9)
    assert row["fpr_ci_low"] == pytest.approx(want["fpr_ci"][0], abs=1e-9)
    assert row["aupr_method"] == "trapezoid" and row["vocab_size"] == 8 and row["vocab_hash"] == vocab.short_hash
    assert row["random_weights"] is True and row["deployable"] is True and row["n_ood"] == 7 and row["n_id"] == 24
    mcm = next(
        r
        for r in res.rows
        if r["method"] == "mcm" and r["model"] == "TinyB" and r["ood_set"] == "oodB" and r["convention"] == "paper"
    )
    assert mcm["fpr"] == pytest.approx(
        negvocab.metrics.fpr_at_tpr(negvocab.score("mcm", img["ID"], cls), negvocab.score("mcm", img["oodB"], cls))
    )


def test_each_image_set_embedded_once_per_model(ran):
    res, _, _ = ran
    assert res.stats["embed_calls"] == {(m, s): 1 for m in ("TinyA", "TinyB") for s in ("ID", "oodA", "oodB", "oodC")}


def test_resume_skips_done_cells_and_reruns_only_touched_ones(ran_here, monkeypatch):
    res, toml, out = ran_here
    calls = []
    import negvocab.grid.work as W

    real = W.score_model
    monkeypatch.setattr(W, "score_model", lambda *a, **k: (calls.append(a[1].spec.display), real(*a, **k))[1])
    again = negvocab.run_grid(toml, out)
    assert calls == [] and again.stats["cells_to_run"] == 0
    assert again.rows == res.rows
    # a killed run: one cell and one score file lost -> only that one is redone, same numbers
    cell = res.rows[7]["cell"]
    victim = next(p for p in (out / "cells").glob(f"{cell}*.json"))
    victim.unlink()
    again = negvocab.run_grid(toml, out)
    assert again.stats["cells_to_run"] == 1 and again.rows == res.rows
    # one parameter changed: only the neglabel cells rerun, mcm cells stay
    text = toml.read_text().replace("params = { groups = 2 }", "params = { groups = 3 }")
    toml.write_text(text)
    changed = negvocab.run_grid(toml, out)
    assert changed.stats["cells_to_run"] == 2 * 4 * 3 * 2
    same = lambda rows: sorted(  # noqa: E731
        (r["model"], r["ood_set"], r["convention"], r["fpr"]) for r in rows if r["method"] == "mcm"
    )
    assert same(changed.rows) == same(res.rows)
    status = negvocab.grid_status(negvocab.load_grid(toml), out)
    assert status["total"] == {"done": 60, "pending": 0, "failed": 0}


def test_a_failing_model_marks_its_cells_and_the_rest_runs(grid_toml, tmp_path):
    text = grid_toml.read_text().replace('name = "TinyB"\nmodel_config = "TinyB.json"', 'name = "NoSuchModel-XYZ"')
    grid_toml.write_text(text)
    res = negvocab.run_grid(grid_toml, tmp_path / "out")
    assert {r["model"] for r in res.rows} == {"TinyA"}
    st = res.status
    assert st["models"]["NoSuchModel-XYZ"]["failed"] == 30 and "unknown open_clip model" in st["failed"][0]["error"]


def test_tables_pivots_and_comparisons(ran):
    res, _, out = ran
    res.write(out)
    rows = list(csv.DictReader((out / "table.csv").open()))
    assert len(rows) == len(res.table()) and {"deployable", "caveats", "ood_set", "aupr_method"} <= set(rows[0])
    means = [r for r in res.table() if r["ood_set"] == "mean"]
    one = next(
        r
        for r in means
        if (r["model"], r["vocabulary"], r["method"], r["convention"]) == ("TinyA", "B", "neglabel", "paper")
    )
    cells = [
        r["fpr"]
        for r in res.rows
        if (r["model"], r["vocabulary"], r["method"], r["convention"]) == ("TinyA", "B", "neglabel", "paper")
    ]
    assert one["fpr"] == pytest.approx(np.mean(cells)) and len(cells) == 3
    import pyarrow.parquet as pq

    assert pq.read_table(out / "table.parquet").num_rows == len(rows)
    p = res.pivot("auroc", vocabulary="B", method="neglabel", convention="paper")
    assert p.index == ["TinyA", "TinyB"] and p.columns == ["oodA", "oodB", "oodC", "mean"]
    get, boot = res.score_getter(), res._n_boot()
    for j, ood in enumerate(p.columns):  # bold: the paired test of the tables, recomputed pair by pair
        (a_id, a_sets), (b_id, b_sets) = get("TinyA", "B", "neglabel"), get("TinyB", "B", "neglabel")
        a = (a_id, {k: v for k, v in a_sets.items() if ood in (k, "mean")})
        b = (b_id, {k: v for k, v in b_sets.items() if ood in (k, "mean")})
        res_ab = paired_bootstrap(*a, *b, metric="auroc", n_boot=boot, seed=0)
        want = [res_ab.verdict == "a", res_ab.verdict == "b"]
        assert p.bold[:, j].tolist() == want, ood
    md = p.to_markdown()
    assert md.count("**") == 2 * int(p.bold.sum()) and "RANDOM WEIGHTS" in md and "paired bootstrap" in md
    assert "best point estimate" not in md and "(not tested" not in md
    tex = res.to_latex("fpr", vocabulary="B", method="neglabel", convention="paper")
    assert "\\toprule" in tex and "\\bottomrule" in tex
    fp = res.pivot("fpr", vocabulary="B", method="neglabel", convention="paper")
    for j in range(len(fp.columns)):  # equal values (the example grid's 100.00% for both models) are never bold
        if np.ptp(fp.values[:, j]) == 0:
            assert not fp.bold[:, j].any()
    assert tex.count("\\textbf{") == int(fp.bold.sum())
    with pytest.raises(InputError, match="several vocabulary"):
        res.pivot("fpr", method="neglabel", convention="paper")
    said = res.comparisons()
    fprs = {
        (r["model"], r["vocabulary"]): r["fpr"]
        for r in means
        if r["method"] == "neglabel" and r["convention"] == "paper"
    }
    s = next(x for x in said if ("A@12" in x.split(" (")[0] and " B" in x.split(" (")[0]) and "neglabel, paper" in x)
    # each model's difference is stated with its paired interval; "beats" only where the test says so
    for m in ("TinyA", "TinyB"):
        d = 100 * (fprs[(m, "A@12")] - fprs[(m, "B")])
        assert f"{m}: {d:+.2f} [" in s or f"{m}: {-d:+.2f} [" in s
    assert "paired-bootstrap interval" in s and "n 24 ID / 26 OOD" in s
    assert (out / "sweep_A.pdf").read_bytes()[:5] == b"%PDF-" and (out / "sweep_A.svg").exists()
    assert json.loads((out / "grid.json").read_text())["random_weights"] is True


def test_cli_run_and_status(grid_toml, tmp_path):
    from typer.testing import CliRunner

    from negvocab.cli import app

    out = tmp_path / "cli"
    text = grid_toml.read_text().replace(
        '[[models]]\nname = "TinyB"\nmodel_config = "TinyB.json"\nrandom_weights = true\nseed = 1\n', ""
    )
    grid_toml.write_text(text.replace('[[methods]]\nname = "mcm"\n', ""))
    res = CliRunner().invoke(app, ["grid", "run", str(grid_toml), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "24 cells (24 done, 0 pending, 0 failed)" in res.output and "RANDOM WEIGHTS" in res.output
    assert (out / "table.csv").exists() and (out / "pivots.tex").exists() and (out / "comparisons.md").exists()
    st = CliRunner().invoke(app, ["grid", "status", str(out)])
    assert st.exit_code == 0 and "total" in st.output and st.output.split("total")[1].split() == ["24", "0", "0"]
    bad = CliRunner().invoke(app, ["grid", "run", str(grid_toml), "--engine", "spark", "-o", str(out)])
    assert bad.exit_code == 2 and "unknown engine" in bad.output


def test_mean_rows_carry_a_bootstrap_interval_of_the_mean(ran):
    """Each set resampled within itself with its cell's draws, the FPR averaged per draw."""
    res, toml, _ = ran
    cfg = negvocab.load_grid(toml)
    sets = open_sets(cfg)
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vlm = load_model(cfg, cfg.models[0])
    img = {k: vlm.encode_images(s).embeddings for k, s in sets.items()}
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    s_id = negvocab.score("mcm", img["ID"], cls)
    per = [
        negvocab.metrics.bootstrap_values(
            "fpr", s_id, negvocab.score("mcm", img[o], cls), n_boot=20, convention="paper"
        )
        for o in ("oodA", "oodB", "oodC")
    ]
    lo, hi = np.quantile(np.mean(per, axis=0), [0.025, 0.975])
    row = next(
        r
        for r in res.table()
        if (r["model"], r["method"], r["convention"], r["ood_set"]) == ("TinyA", "mcm", "paper", "mean")
    )
    assert (row["fpr_ci_low"], row["fpr_ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    assert not np.isnan(row["auroc_ci_low"]) and not np.isnan(row["aupr_out_ci_high"])


def test_summary_rows_are_the_one_paths(ran):
    """The tidy table's mean row is :func:`negvocab.evaluation.records.summary_records`' over the cells'
    rows, its interval :func:`~negvocab.evaluation.records.summary_intervals`' of the stored scores."""
    from negvocab.evaluation.records import summary_intervals, summary_records
    from negvocab.evaluation.row import ResultRow
    from negvocab.grid.work import plan_cells, read_scores

    res, toml, out = ran
    cfg = negvocab.load_grid(toml)
    key = ("TinyA", "A@8", "neglabel", "paper")
    of = lambda r: (r["model"], r["vocabulary"], r["method"], r["convention"])  # noqa: E731
    rows = [ResultRow.from_dict(r) for r in res.rows if of(r) == key]
    mean = next(r for r in res.table() if of(r) == key and r["ood_set"] == "mean")
    plan = [c for c in plan_cells(cfg, open_sets(cfg)) if (c.model, c.vocabulary, c.method, c.convention) == key]
    s_id = {c.ood_set: read_scores(out / "scores" / f"{c.id_scores}.npz") for c in plan}
    s_ood = {c.ood_set: read_scores(out / "scores" / f"{c.ood_scores}.npz") for c in plan}
    cis = summary_intervals(s_id, s_ood, tpr=cfg.tpr, convention="paper", n_boot=cfg.n_boot, quantiles=(0.025, 0.975))
    want = summary_records(rows, None, None, {}, intervals={"mean": cis}, convention="paper", n_boot=cfg.n_boot)
    got = want[-1].to_dict()
    assert len(rows) == 3 and [r.ood_set for r in want] == ["mean"]
    for k in ("fpr", "auroc", "aupr_in", "aupr_out", "fpr_ci_low", "fpr_ci_high", "aupr_out_ci_high", "n_ood", "cell"):
        assert mean[k] == got[k], k
    assert mean["n_ood_sets"] == 3 and mean["ci_resample"] == "ood, within each set"


def test_a_vocabulary_built_with_random_weights_marks_rows_of_a_real_model(ran):
    """A pretrained model scoring a vocabulary that a random-weight model mined is no real result."""
    from negvocab.grid.config import ModelSpec
    from negvocab.grid.work import Cell, _vocab_info, cell_row

    res = ran[0]
    rng = np.random.default_rng(0)
    s_id, s_ood = rng.normal(size=30), rng.normal(size=20)
    meth = res.config.methods[0].display
    cell = Cell("Real", "mined", "oodA", meth, "paper", "0" * 32, "a", "b")
    real = ModelSpec("ViT-B-32", pretrained="openai")
    mined = negvocab.Vocabulary(labels=["tayra", "polecat"], source="mined", settings={"random_weights": True})
    assert cell_row(res.config, cell, s_id, s_ood, real, _vocab_info(mined))["random_weights"] is True
    clean = negvocab.Vocabulary(labels=["tayra", "polecat"], source="file")
    assert cell_row(res.config, cell, s_id, s_ood, real, _vocab_info(clean))["random_weights"] is False


def test_non_deployable_vocabularies_are_marked_in_pivots(ran, tmp_path):
    from negvocab.grid.tidy import GridResult

    res = ran[0]
    rows = [
        {**r, "deployable": False, "caveats": "oracle: OOD labels"} if r["vocabulary"] == "B" else r for r in res.rows
    ]
    marked = GridResult(rows, res.config, means=res.means)
    out = marked.write(tmp_path / "w")
    md = (out / "pivots.md").read_text()
    b_part = md.split("### B /", 1)[1].split("###", 1)[0]
    assert "Not deployable (oracle/transductive): B." in b_part
    assert "Not deployable (oracle/transductive): B." in (out / "pivots.tex").read_text()
    p = marked.pivot("fpr", rows="vocabulary", method=rows[0]["method"], convention="paper", model="TinyA")
    assert "B (NOT deployable)" in p.index and "A@4" in p.index
    assert "B (NOT deployable)" in p.to_markdown()
    said = (out / "comparisons.md").read_text()
    assert "B (NOT deployable)" in said and "NOT tested (no per-image scores)" in said  # no out_dir: no scores to test
    assert all("A@4 (NOT" not in line for line in said.splitlines())


def test_a_vocabulary_holding_id_class_names_is_said_in_log_rows_tables_and_comparisons(grid_files, tmp_path, caplog):
    """As `negvocab score` warns: vocabulary B with the ID class 'tench' in it (the example grid's
    hand-picked list holds 'mountain' and 'volcano') carries the caveat everywhere the grid shows B."""
    from tests.grid.conftest import GRID_TOML, VOCAB_B

    (grid_files / "vocabB_id.txt").write_text("\n".join([*VOCAB_B, "tench"]) + "\n")
    toml = grid_files / f"grid_id_{tmp_path.name}.toml"
    toml.write_text(GRID_TOML.format(cache=tmp_path / "cache").replace('"vocabB.txt"', '"vocabB_id.txt"'))
    with caplog.at_level("WARNING"):
        res = negvocab.run_grid(toml, tmp_path / "out")
    said = "1 of 9 labels are ID class names ('tench')"
    assert any(said in r.getMessage() and "vocabulary B" in r.getMessage() for r in caplog.records)
    b_rows = [r for r in res.rows if r["vocabulary"] == "B"]
    assert b_rows and all(said in r["caveats"] and r["deployable"] for r in b_rows)  # deployable, with a caveat
    assert all(r["caveats"] == "" for r in res.rows if r["vocabulary"].startswith("A@"))
    out = res.write(tmp_path / "out")  # the tables `negvocab grid run` writes
    assert f"Caveat: B: id_names: {said}" in (out / "tables.md").read_text()
    assert f"Caveat: B: id_names: {said}" in (out / "pivots.md").read_text().split("### B /", 1)[1]
    assert f"Caveat: B: id_names: {said}" in (out / "comparisons.md").read_text()


def test_a_runs_tables_and_its_folder_read_back_lay_rows_out_alike(ran):
    """The grid's tables.md and `negvocab table` on its folder had rows in different orders."""
    from negvocab.grid.tidy import _grid_folder

    res, _, out = ran
    res.write(out)  # scores_index.json: the folder read back finds the per-image scores as the run does
    kw = dict(rows="vocabulary", cols="ood_set", where={"model": "TinyA", "method": "neglabel", "convention": "paper"})
    from negvocab.grid.tidy import GridResult

    # a config that lists B before A and TinyB before TinyA: the run's rows come in that order
    swapped = GridResult(list(reversed(res.rows)), res.config, means=res.means, groups=res.groups, out_dir=out)
    run = swapped.paper_table("fpr", n_boot=50, **kw)
    back = _grid_folder(out).paper_table("fpr", n_boot=50, **kw)
    assert run.index[:2] == ["A@4", "A@8"]
    assert run.index == back.index and run.columns == back.columns
    assert run.to_markdown() == back.to_markdown()
    assert swapped.pivot("fpr", vocabulary="B", method="neglabel", convention="paper").index == ["TinyA", "TinyB"]
