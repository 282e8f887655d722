"""Paper tables from tidy rows: equal to pandas, means within one kind, captions, formats, folders (bold:
tests/report/test_significance.py)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.compare import paired_bootstrap
from negvocab.report.tables import build_table, comparisons, folder_rows

MODELS = ["ViT-B-32", "ViT-L-14"]
VOCABS = ["wordnet", "gpt", "oracle"]
SETS = {"ssb": 30, "ninco": 20}


def _row(model, vocab, ood, method="neglabel", conv="paper", fpr=0.5, auroc=0.8, ci=0.05, **kw):
    return {
        "model": model, "pretrained": "laion2b", "random_weights": False, "vocabulary": vocab,
        "deployable": vocab != "oracle", "caveats": "oracle: the OOD set's own labels" if vocab == "oracle" else "",
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
    assert "mean (row): plain mean over the model entries; ± the standard deviation over the models" in md
    sd = want.iloc[:2].std(axis=0, ddof=1)  # the spread beside the mean over VLMs: pandas' sample SD
    np.testing.assert_allclose(t.spread[-1, :, 0], sd.loc[t.columns].to_numpy(), rtol=0, atol=1e-15)
    assert np.isnan(t.spread[:-1]).all() and f"± {100 * sd.iloc[0]:.2f}" in md


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


def test_means_never_mix_kinds_unless_asked(tidy):
    """The mean over vocabulary rows: deployable vocabularies, the oracle and MCM each averaged alone."""
    t = build_table(
        tidy, rows_by="vocabulary", cols_by="ood_set", where={"model": "ViT-B-32", "method": "neglabel"}, mean_rows=True
    )
    assert t.index[-3:] == ["mean (deployable)", "mean (no vocabulary)", "mean (oracle)"]
    df = pd.DataFrame([r for r in tidy if r["model"] == "ViT-B-32" and r["vocabulary"] in ("wordnet", "gpt")])
    want = df.pivot_table(index="vocabulary", columns="ood_set", values="fpr").mean(axis=0)
    np.testing.assert_allclose(t.values[-3, :, 0], want.loc[t.columns].to_numpy(), atol=1e-15)
    oracle = [r["fpr"] for r in tidy if r["model"] == "ViT-B-32" and r["vocabulary"] == "oracle"]
    np.testing.assert_allclose(t.values[-1, :, 0], oracle, atol=1e-15)  # ssb, ninco, mean in tidy's order
    assert "kinds are never averaged together" in t.full_caption() and not t.bold[-3:].any()
    mixed = build_table(
        tidy,
        rows_by="vocabulary",
        cols_by="ood_set",
        where={"model": "ViT-B-32", "method": "neglabel"},
        mean_rows=True,
        mix_kinds=True,
    )
    assert mixed.index[-1] == "mean" and np.isclose(
        mixed.values[-1, 0, 0], np.mean([r["fpr"] for r in tidy if r["model"] == "ViT-B-32" and r["ood_set"] == "ssb"])
    )
    one_kind = build_table(  # each vocabulary row is one kind: the mean over the models is one column
        tidy, rows_by="vocabulary", cols_by="model", where={"ood_set": "ssb", "method": "neglabel"}, mean_cols=True
    )
    assert one_kind.columns == [*MODELS, "mean"] and np.isfinite(one_kind.spread[:, -1, 0]).all()


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
    assert "S[table-format=3.2]S[table-format=3.2]" in stex and "\\multicolumn{2}{c}{wordnet}" in stex
    assert "\\cmidrule(lr){2-3}" in stex and "\\usepackage{booktabs,siunitx} and \\sisetup{detect-weight=true}" in stex
    lines = stex.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("ViT-B-32"))
    body, under = lines[at].split(" & "), lines[at + 1].split(" & ")
    assert len(body) == len(under) == 1 + 4 * 2  # value per metric and column; its interval in the row under it
    assert float(body[1].replace("\\bfseries ", "")) == pytest.approx(round(100 * s.values[0, 0, 0], 2))
    assert under[1] == f"{{\\scriptsize {100 * s.low[0, 0, 0]:.1f}--{100 * s.high[0, 0, 0]:.1f}}}"


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
    assert {r["id_classes"] for r in rows} == {""}  # the file does not say: published figures meet none of them
    doc = json.loads((folder / "results.json").read_text())
    (folder / "results.json").write_text(json.dumps({**doc, "id_classes": "custom:cub200.txt"}))
    assert {r["id_classes"] for r in folder_rows(folder)[0]} == {"custom:cub200.txt"}  # as `score` writes it
    assert {r["id_split"] for r in rows} == {""} and rows[0]["set_benchmarks"] == {}  # nor where its sets came from
    sets = {"ssb": {"name": "ssb-hard", "n": 20, "benchmark": "openood"}, "ninco": {"name": "ninco", "n": 15}}
    (folder / "results.json").write_text(json.dumps({**doc, "id_set": {"name": "ImageNet-1k val"}, "ood_sets": sets}))
    said = folder_rows(folder)[0]
    assert {r["id_split"] for r in said} == {"ImageNet-1k val"}
    assert said[0]["set_benchmarks"] == {"ssb": "openood", "ninco": ""}  # a set of the user's own: no benchmark
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
    assert not t.bold.any() and "no bold where per-image scores not stored" in t.full_caption()  # nothing tested
