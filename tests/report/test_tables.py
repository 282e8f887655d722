"""Paper tables from tidy rows: equal to pandas, bold only beyond the interval, captions, formats, folders."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from negvocab.errors import InputError
from negvocab.evaluation.compare import paired_bootstrap
from negvocab.report.tables import build_table, comparisons, folder_rows

MODELS = ["ViT-B-32", "ViT-L-14"]
VOCABS = ["wordnet", "gpt", "oracle"]
SETS = {"ssb": 30, "ninco": 20}


def _row(model, vocab, ood, method="neglabel", conv="paper", fpr=0.5, auroc=0.8, ci=0.05, **kw):
    return {
        "model": model, "pretrained": "laion2b", "random_weights": False, "vocabulary": vocab,
        "deployable": vocab != "oracle",
        "ood_set": ood, "method": method, "convention": conv, "tpr": 0.95, "fpr": fpr, "fpr_ci_low": fpr - ci,
        "fpr_ci_high": fpr + ci,
        "auroc": auroc, "auroc_ci_low": auroc - ci, "auroc_ci_high": auroc + ci, "aupr_in": 0.7, "aupr_out": 0.6,
        "aupr_method": "average_precision", "n_id": 50, "n_ood": SETS.get(ood, 50), "templates": "paper8", **kw,
    }  # fmt: skip


@pytest.fixture
def tidy():
    rng = np.random.default_rng(0)
    rows = []
    for m in MODELS:
        for ood in [*SETS, "mean"]:
            for v in VOCABS:
                rows.append(_row(m, v, ood, fpr=float(rng.uniform(0.2, 0.9)), auroc=float(rng.uniform(0.6, 0.95))))
            rows.append(
                _row(m, "", ood, method="mcm", fpr=float(rng.uniform(0.5, 0.99)), auroc=float(rng.uniform(0.5, 0.8)))
            )
    return rows


def test_table_2_equals_a_pandas_pivot_of_the_tidy_rows(tidy):
    t = build_table(
        tidy,
        metric="fpr",
        rows_by="model",
        cols_by="vocabulary",
        where={"ood_set": "mean", "method": "neglabel"},
        mean_rows=True,
    )
    df = pd.DataFrame(tidy)
    df = df[df.ood_set == "mean"]
    df["vocabulary"] = np.where(df.vocabulary == "", df.method + " (no vocabulary)", df.vocabulary)
    want = df.pivot_table(index="model", columns="vocabulary", values="fpr", sort=False).rename(
        columns={"oracle": "oracle (NOT deployable)"}
    )
    want.loc["mean"] = want.mean(axis=0)
    assert t.index == [*MODELS, "mean"] and t.columns == [
        "wordnet",
        "gpt",
        "oracle (NOT deployable)",
        "mcm (no vocabulary)",
    ]
    np.testing.assert_allclose(t.values[:, :, 0], want.loc[t.index, t.columns].to_numpy(), rtol=0, atol=1e-15)
    assert t.summary_rows == [False, False, True] and not t.bold[-1].any()  # the mean row does not compete
    md = t.to_markdown()
    assert "| mean |" in md and "mcm (no vocabulary)" in md and "Without a vocabulary (baseline): mcm." in md
    assert "mean (row): plain mean over the model entries; no interval" in md


def test_ood_sets_as_columns_keep_the_bootstrap_mean_last_and_groups_add_means(tidy):
    t = build_table(
        tidy,
        rows_by="vocabulary",
        cols_by="ood_set",
        where={"model": "ViT-B-32", "method": "neglabel"},
        col_groups={"near": ["ssb"], "both": ["ssb", "ninco"]},
    )
    assert t.columns == ["ssb", "ninco", "mean", "near", "both"] and t.summary_cols == [False, False, True, True, True]
    df = pd.DataFrame(
        [r for r in tidy if r["model"] == "ViT-B-32" and (r["method"] == "neglabel" or r["vocabulary"] == "")]
    )
    df["vocabulary"] = np.where(df.vocabulary == "", "mcm (no vocabulary)", df.vocabulary)
    p = df.pivot_table(index="vocabulary", columns="ood_set", values="fpr", sort=False)
    idx = [i.replace(" (NOT deployable)", "") for i in t.index]
    np.testing.assert_allclose(t.values[:, 3, 0], p.loc[idx, "ssb"], atol=1e-15)
    np.testing.assert_allclose(t.values[:, 4, 0], p.loc[idx, ["ssb", "ninco"]].mean(axis=1), atol=1e-15)
    assert (
        "oracle (NOT deployable)" in t.index
        and "NOT deployable (oracle/transductive, a bound, not a result): oracle." in t.full_caption()
    )


def _column(values, ci):
    return [_row(f"m{i}", "v", "ssb", fpr=v, ci=c) for i, (v, c) in enumerate(zip(values, ci, strict=True))]


def test_bold_only_where_every_other_entry_lies_beyond_the_interval():
    clear = build_table(_column([0.20, 0.40, 0.50], [0.05, 0.05, 0.05]), rows_by="model", cols_by="ood_set")
    assert clear.bold[:, 0, 0].tolist() == [True, False, False]
    close = build_table(_column([0.20, 0.24, 0.50], [0.05, 0.05, 0.05]), rows_by="model", cols_by="ood_set")
    assert not close.bold.any()  # 0.24 lies inside [0.15, 0.25]: the best is not better beyond its interval
    tied = _column([0.20, 0.20, 0.50], [0.01, 0.01, 0.01])
    assert not build_table(tied, rows_by="model", cols_by="ood_set").bold.any()
    both = build_table(tied, rows_by="model", cols_by="ood_set", ties="all")
    assert both.bold[:, 0, 0].tolist() == [True, True, False] and "ties: all bold" in both.full_caption()
    nan_ci = [{**r, "fpr_ci_low": math.nan, "fpr_ci_high": math.nan} for r in _column([0.1, 0.5], [0, 0])]
    assert not build_table(nan_ci, rows_by="model", cols_by="ood_set").bold.any()
    point = build_table(nan_ci, rows_by="model", cols_by="ood_set", bold="point")
    assert point.bold[:, 0, 0].tolist() == [True, False] and "not tested" in point.full_caption()
    auroc = build_table(
        _column([0.20, 0.40, 0.50], [0.05, 0.05, 0.05]), metric="auroc", rows_by="model", cols_by="ood_set"
    )
    assert auroc.bold[:, 0, 0].tolist() == [False, False, False]  # AUROC = 0.8 for all: a tie, none bold
    md = clear.to_markdown()
    assert md.count("**") == 2 and "**20.00**" in md
    assert "ties: none bold" in md and "only where every other entry lies beyond its interval" in md


def test_caption_states_convention_threshold_tpr_n_templates_weights(tidy):
    rows = [{**r, "random_weights": r["model"] == "ViT-L-14"} for r in tidy]
    t = build_table(
        rows,
        rows_by="model",
        cols_by="vocabulary",
        where={"ood_set": "ssb", "method": "neglabel"},
        intervals=True,
        failed={"EVA02": "3 cells: no weights"},
    )
    cap = t.full_caption()
    for part in (
        "FPR@95 in %.", "paper convention; threshold: ID-anchored", "TPR 0.95", "n ID 50; n OOD ssb 30.",
        "Templates: paper8.",
        "ViT-B-32 (laion2b)", "ViT-L-14 (RANDOM weights)", "OOD set: ssb.", "Brackets: 95% bootstrap intervals",
        "EVA02: cells failed (3 cells: no weights)", "RANDOM WEIGHTS",
    ):  # fmt: skip
        assert part in cap, part
    r = next(x for x in rows if x["model"] == "ViT-B-32" and x["vocabulary"] == "gpt" and x["ood_set"] == "ssb")
    assert (
        f"{100 * r['fpr']:.2f} [{100 * r['fpr_ci_low']:.2f}, {100 * r['fpr_ci_high']:.2f}]"
        in t.to_markdown().replace("**", "")
    )


def test_latex_booktabs_label_siunitx_and_no_doubled_caption(tidy):
    t = build_table(
        tidy,
        metric="auroc",
        rows_by="model",
        cols_by="vocabulary",
        where={"ood_set": "mean", "method": "neglabel"},
        caption="AUROC",
        label="tab:t2",
    )
    tex = t.to_latex()
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and "\\label{tab:t2}" in tex
    caption = tex.split("\\caption{", 1)[1].split("\n", 1)[0]
    assert caption.startswith("AUROC in \\%.") and caption.count("AUROC") == 1
    s = build_table(
        tidy,
        metric=["fpr", "auroc"],
        rows_by="model",
        cols_by="vocabulary",
        where={"ood_set": "mean", "method": "neglabel"},
        intervals=True,
    )
    stex = s.to_latex(siunitx=True)
    assert "S[table-format=3.2] l" in stex and "\\multicolumn{4}{c}{wordnet}" in stex and "\\cmidrule(lr){2-5}" in stex
    body = [ln for ln in stex.splitlines() if ln.startswith("ViT-B-32")][0].split(" & ")
    assert len(body) == 1 + 4 * 4 and body[2].startswith("{\\scriptsize [")  # value, interval per metric and column
    assert float(body[1].replace("\\bfseries ", "")) == pytest.approx(round(100 * s.values[0, 0, 0], 2))


def test_csv_reads_back_to_the_values(tidy):
    t = build_table(
        tidy,
        metric=["fpr", "auroc"],
        rows_by="model",
        cols_by="ood_set",
        where={"vocabulary": "gpt", "method": "neglabel"},
    )
    rows = list(csv.DictReader(io.StringIO(t.to_csv())))
    assert [r["row"] for r in rows] == MODELS
    for i, r in enumerate(rows):
        for j, c in enumerate(t.columns):
            assert float(r[f"{c}:fpr"]) == pytest.approx(100 * t.values[i, j, 0]) and float(
                r[f"{c}:auroc:ci_low"]
            ) == pytest.approx(100 * t.low[i, j, 1])


def test_one_line_errors_name_the_values(tidy):
    with pytest.raises(InputError, match=r"several method values \(neglabel\)|several ood_set values"):
        build_table(tidy, rows_by="model", cols_by="vocabulary")
    with pytest.raises(InputError, match="unknown axis 'dataset'"):
        build_table(tidy, rows_by="dataset")
    with pytest.raises(InputError, match=r"several vocabulary values \(wordnet, gpt, oracle\)"):
        build_table(tidy, rows_by="model", cols_by="ood_set", where={"method": "neglabel"})
    with pytest.raises(
        InputError, match=r"several method values \(neglabel, mcm\)"
    ):  # the baseline fits any vocabulary
        build_table(tidy, rows_by="model", cols_by="ood_set", where={"vocabulary": "gpt"})
    with pytest.raises(
        InputError, match=r"no vocabulary 'nope' in the rows; they have wordnet, gpt, oracle$"
    ):  # no empty value listed
        build_table(tidy, rows_by="model", cols_by="ood_set", where={"vocabulary": "nope", "method": "neglabel"})


def _score_folder(tmp_path, rng):
    """A results folder as negvocab score writes it: results.json (meta + rows) and scores.npz."""
    from negvocab.scoring import metrics as M

    s_id = {k: rng.normal(1, 1, 40) for k in ("neglabel@wordnet", "neglabel@gpt", "mcm")}
    s_ood = {k: {n: rng.normal(0, 1, 20 if n == "ssb" else 15) for n in ("ssb", "ninco")} for k in s_id}
    rows = []
    for key in s_id:
        method, _, vocab = key.partition("@")
        for name, s in s_ood[key].items():
            rep = M.evaluate(s_id[key], s, n_boot=50)
            rows.append(
                {
                    "method": method,
                    "vocabulary": vocab,
                    "ood_set": name,
                    "random_weights": True,
                    "templates": "single",
                    "pretrained": None,
                    **rep,
                }
            )
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(
        json.dumps({"model": "ViT-B-32", "templates": "single", "rows": rows})
    )
    arrays = {"ood_sets": np.array(["ssb"] * 20 + ["ninco"] * 15), "random_weights": np.array(True)}
    for k in s_id:
        arrays[f"id/{k}"], arrays[f"ood/{k}"] = s_id[k], np.concatenate([s_ood[k]["ssb"], s_ood[k]["ninco"]])
    np.savez(tmp_path / "run" / "scores.npz", **arrays)
    return tmp_path / "run", s_id, s_ood


def test_score_folder_rows_and_paired_comparisons(tmp_path):
    folder, s_id, s_ood = _score_folder(tmp_path, np.random.default_rng(1))
    rows, get = folder_rows(folder)
    t = build_table(rows, rows_by="vocabulary", cols_by="ood_set", where={"method": "neglabel"}, intervals=True)
    assert t.index == ["wordnet", "gpt", "mcm (no vocabulary)"] and t.columns == ["ssb", "ninco"]
    said = comparisons(rows, get, ood_set="ssb", n_boot=80, seed=2)
    want = paired_bootstrap(
        s_id["neglabel@wordnet"],
        {"ssb": s_ood["neglabel@wordnet"]["ssb"]},
        s_id["neglabel@gpt"],
        {"ssb": s_ood["neglabel@gpt"]["ssb"]},
        n_boot=80,
        seed=2,
    )
    assert (
        f"ViT-B-32: {100 * want.diff:+.2f} [{100 * want.low:+.2f}, {100 * want.high:+.2f}]" in said[0]
        and "n 40 ID / 20 OOD" in said[0]
    )
    assert said[-1].startswith("RANDOM WEIGHTS")
    with pytest.raises(InputError, match="no results.json, sweep.json or grid cells/"):
        folder_rows(tmp_path)


def test_sweep_folder_rows_name_each_size(tmp_path):
    """sweep.json as write_sweep leaves it: meta + rows (one per M and OOD set) + references."""
    rows = [_row("", "wordnet", "ssb", M=m, fpr=f) for m, f in ((50, 0.6), (100, 0.5))]
    refs = [_row("", "gpt", "ssb", M=300, fpr=0.4, name="gpt")]
    for r in rows + refs:
        r.pop("model")
        r["fpr_ci"] = [r.pop("fpr_ci_low"), r.pop("fpr_ci_high")]
    (tmp_path / "sweep.json").write_text(
        json.dumps({"model": "ViT-B-32", "templates": "paper8", "rows": rows, "references": refs})
    )
    got, get = folder_rows(tmp_path)
    t = build_table(got, rows_by="vocabulary", cols_by="ood_set", intervals=True)
    assert t.index == ["wordnet@50", "wordnet@100", "gpt"] and get is None
    np.testing.assert_allclose(t.values[:, 0, 0], [0.6, 0.5, 0.4])
    np.testing.assert_allclose(t.low[:, 0, 0], [0.55, 0.45, 0.35])
    assert t.bold[:, 0, 0].tolist() == [False, False, True]  # 0.5 and 0.6 lie beyond gpt's [0.35, 0.45]
