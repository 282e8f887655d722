"""Numbers fit for a paper: several named OOD sets, deployability in every table, seeded and traceable
results, the conventions in the footer, sweeps of unions refused, a short Evaluation repr."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.core.provenance import set_command
from negvocab.data.images import ImageSet
from negvocab.evaluation import evaluate, sweeps
from negvocab.report import results
from tests.evaluation.test_evaluate import FakeVLM, _vec

KW = {"templates": "single", "params": {"groups": 4}}


@pytest.fixture
def classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:20]))


@pytest.fixture
def sets():
    id_set = ImageSet("id", [f"/id/{i}.png" for i in range(40)], [f"i{i}" for i in range(40)])
    a = ImageSet("textures", [f"/dtd/{i}.png" for i in range(15)], [f"t{i}" for i in range(15)])
    b = ImageSet("places", [f"/places/{i}.png" for i in range(9)], [f"p{i}" for i in range(9)])
    return id_set, a, b


@pytest.fixture
def vocab():
    return negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(30)], source="wordnet")


def _scores(paths, classes, vocab, groups=4):
    """NegLabel scores computed directly (not through the pipeline)."""
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    neg = np.stack([_vec(f"single:{x}") for x in vocab.labels])
    return negvocab.score("neglabel", np.stack([_vec(p) for p in paths]), cls, neg, groups=groups)


def test_several_ood_sets_are_each_scored_against_the_one_id_set_and_averaged(sets, classes, vocab, tmp_path):
    id_set, a, b = sets
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, {"A": a, "B": b}, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=0, **KW
    )
    assert [r["ood_set"] for r in ev.rows] == ["A", "B", "mean"]
    s_id = _scores(id_set.paths, classes, vocab)
    threshold = np.quantile(s_id.astype(np.float64), 0.05)  # the paper's ID-anchored threshold, the same for both
    for row, st in zip(ev.rows, (a, b), strict=False):
        s_ood = _scores(st.paths, classes, vocab)
        assert row["fpr"] == pytest.approx(np.mean(s_ood >= threshold))
        assert row["auroc"] == pytest.approx(
            np.mean(s_id[:, None] > s_ood[None, :]) + 0.5 * np.mean(s_id[:, None] == s_ood[None, :])
        )
        assert row["n_ood"] == len(st.paths) and row["n_id"] == 40
    mean = ev.rows[2]
    for key in ("fpr", "auroc", "aupr_in", "aupr_out"):
        assert mean[key] == pytest.approx((ev.rows[0][key] + ev.rows[1][key]) / 2)
    assert mean["n_ood"] == 24 and mean["n_ood_sets"] == 2
    # each set alone gives its own row unchanged; a single set keeps working and has no mean row
    alone = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, b, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=0, **KW
    )
    assert [r["ood_set"] for r in alone.rows] == ["places"] and alone.rows[0]["fpr"] == ev.rows[1]["fpr"]
    # the results folder: a row per set and the mean; each OOD image says which set it is from
    out = results.write_results(ev, tmp_path / "r")
    table = list(csv.DictReader((out / "results.csv").open()))
    assert [t["ood_set"] for t in table] == ["A", "B", "mean"] and table[2]["fpr_ci_low"] == ""  # n_boot=0: null
    per_image = list(csv.DictReader((out / "scores.csv").open()))
    assert [p["ood_set"] for p in per_image if p["set"] == "ood"] == ["A"] * 15 + ["B"] * 9
    assert list(np.load(out / "scores.npz")["ood_sets"]) == ["A"] * 15 + ["B"] * 9
    doc = json.loads((out / "results.json").read_text())
    assert doc["ood_set"] == "mean" and doc["ood_sets"]["B"]["n"] == 9
    ex = json.loads((out / "explanations.json").read_text())["vocabularies"]["wn"]
    assert [e["ood_set"] for e in ex] == ["A"] * 15 + ["B"] * 9
    assert "OOD set" in results.format_table(ev.rows) and "n_ood=A 15, B 9" in results.format_table(ev.rows)


def test_the_mean_row_has_a_bootstrap_interval_of_the_mean(sets, classes, vocab):
    id_set, a, b = sets
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, {"A": a, "B": b}, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=200, seed=3, **KW
    )
    mean = ev.rows[2]
    # reimplemented: each set's OOD scores resampled from the seed (as numpy's generator draws them),
    # the paper FPR at the one ID threshold, averaged over the sets draw by draw, 2.5/97.5 percentiles
    s_id = _scores(id_set.paths, classes, vocab).astype(np.float64)
    threshold = np.quantile(s_id, 0.05)
    per_set = []
    for st in (a, b):
        s_ood = _scores(st.paths, classes, vocab)
        rng = np.random.default_rng(3)
        per_set.append([np.mean(s_ood[rng.integers(0, s_ood.size, s_ood.size)] >= threshold) for _ in range(200)])
    want = np.quantile(np.mean(per_set, axis=0), [0.025, 0.975])
    assert [mean["fpr_ci_low"], mean["fpr_ci_high"]] == pytest.approx(list(want))
    assert mean["auroc_ci_low"] <= mean["auroc"] <= mean["auroc_ci_high"] and mean["ci_level"] == pytest.approx(0.95)


def test_ood_set_names_must_be_usable(sets, classes, vocab):
    id_set, a, b = sets
    listed = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, [a, b], {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=0, **KW
    )
    assert [r["ood_set"] for r in listed.rows] == ["textures", "places", "mean"]  # a list: each named after itself
    for bad in ({"mean": a}, {"": a}, {}, [a, a]):
        with pytest.raises(InputError):
            evaluate.evaluate_vocabularies(
                FakeVLM(), id_set, bad, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=0, **KW
            )


def test_sweep_over_several_ood_sets(sets, classes, vocab):
    id_set, a, b = sets
    res = sweeps.sweep_vocabulary(
        FakeVLM(), id_set, {"A": a, "B": b}, vocab, "10,30", id_classes=classes, n_boot=0, **KW
    )
    assert [(r["M"], r["ood_set"]) for r in res.rows] == [
        (10, "A"),
        (10, "B"),
        (10, "mean"),
        (30, "A"),
        (30, "B"),
        (30, "mean"),
    ]
    for r in res.rows[:2]:
        ev = evaluate.evaluate_vocabularies(
            FakeVLM(), id_set, {"A": a, "B": b}, {"v": vocab.head(10)}, ["neglabel"], id_classes=classes, n_boot=0, **KW
        )
        (want,) = [x for x in ev.rows if x["ood_set"] == r["ood_set"]]
        assert r["fpr"] == pytest.approx(want["fpr"]) and r["auroc"] == pytest.approx(want["auroc"])
    assert res.rows[2]["auroc"] == pytest.approx((res.rows[0]["auroc"] + res.rows[1]["auroc"]) / 2)


def test_non_deployable_vocabularies_are_marked_in_every_table(sets, classes, vocab, tmp_path):
    id_set, a, _ = sets
    oracle = negvocab.build_oracle_vocabulary(["kite toy", "paper towel holder"], synonym_filter=False)
    union = negvocab.Vocabulary.union(vocab, oracle)  # merged: still holds oracle labels
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, a, {"wn": vocab, "union": union}, ["neglabel", "mcm"], id_classes=classes, n_boot=0, **KW
    )
    marks = {(r["method"], r["vocabulary"]): (r["deployable"], r["caveats"].split(":")[0]) for r in ev.rows}
    assert marks == {("neglabel", "wn"): (True, ""), ("neglabel", "union"): (False, "oracle"), ("mcm", ""): (True, "")}
    assert ev.rows[1]["caveats"] == f"oracle: {union.caveats['oracle']}"  # "kind: text", as every results file
    out = results.write_results(ev, tmp_path / "r")
    table = {t["vocabulary"]: t for t in csv.DictReader((out / "results.csv").open())}
    assert (
        table["union"]["deployable"] == "False"
        and table["union"]["caveats"] == f"oracle: {union.caveats['oracle']}"
        and table["wn"]["deployable"] == "True"
    )
    doc = json.loads((out / "results.json").read_text())
    assert doc["deployable"] is False and set(doc["vocabularies"]["union"]["caveats"]) == {"oracle"}
    text = results.format_table(ev.rows, ev.meta)
    assert "union (not deployable: oracle)" in text and "NOT DEPLOYABLE: union (oracle)" in text
    widths = {len(line) for line in text.splitlines()[:4]}
    assert len(widths) == 1, text  # the mark widens the column, it does not push the numbers out of line
    # the sweep's references, in sweep.csv as well as sweep.json
    res = sweeps.sweep_vocabulary(
        FakeVLM(), id_set, a, vocab, "10,30", references={"union": union}, id_classes=classes, n_boot=0, **KW
    )
    out = results.write_sweep(res, tmp_path / "s")
    refs = [t for t in csv.DictReader((out / "sweep.csv").open()) if t["kind"] == "reference"]
    assert [(t["vocabulary"], t["M"], t["deployable"], t["caveats"]) for t in refs] == [
        ("union", "32", "False", f"oracle: {union.caveats['oracle']}")
    ]
    assert json.loads((out / "sweep.json").read_text())["references"][0]["deployable"] is False


def test_results_are_traceable_and_the_bootstrap_seed_is_settable(sets, classes, vocab, tmp_path):
    id_set, a, _ = sets
    set_command(["negvocab", "score", "--api-key", "sk-verysecretvalue", "--base-url", "http://me:pw@host/v1"])
    try:
        ev = evaluate.evaluate_vocabularies(
            FakeVLM(), id_set, a, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=50, seed=7, **KW
        )
    finally:
        set_command(None)
    meta = json.loads((results.write_results(ev, tmp_path / "r") / "results.json").read_text())
    assert meta["command"] == ["negvocab", "score", "--api-key", "***", "--base-url", "http://***@host/v1"]
    assert "verysecret" not in json.dumps(meta)
    assert {"negvocab", "torch", "open_clip", "numpy", "faiss"} <= set(meta["versions"]) and meta["versions"][
        "numpy"
    ] == np.__version__
    assert meta["bootstrap"] == {"n_boot": 50, "seed": 7, "resample": "ood"}
    assert meta["id_class_list"]["wnids"] == list(classes.wnids) and meta["id_class_list"]["names"] == list(
        classes.names
    )
    custom = negvocab.IdClasses.from_names(["cat", "dog"])
    ev_custom = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, a, {"wn": vocab}, ["neglabel"], id_classes=custom, n_boot=0, **KW
    )
    assert ev_custom.meta["id_class_list"] == {"dataset": "custom", "n": 2, "wnids": None, "names": ["cat", "dog"]}
    # the seed decides the intervals: the same seed gives the same, another seed others
    again = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, a, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=50, seed=7, **KW
    )
    other = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, a, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=50, seed=8, **KW
    )
    ends = lambda ev: (ev.rows[0]["auroc_ci_low"], ev.rows[0]["auroc_ci_high"])  # noqa: E731
    assert ends(again) == ends(ev) and ends(other) != ends(ev)
    s_id, s_ood = ev.scores["neglabel@wn"]["id"], ev.scores["neglabel@wn"]["ood"]
    ci = negvocab.metrics.bootstrap_ci("auroc", s_id, s_ood, n_boot=50, seed=7)
    assert ends(ev) == (ci.low, ci.high)


def test_footer_and_results_name_grouping_templates_and_threshold(sets, classes, vocab, tmp_path):
    id_set, a, _ = sets
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, a, {"wn": vocab}, ["neglabel"], id_classes=classes, n_boot=0, convention="hendrycks", **KW
    )
    for text in (
        results.format_table(ev.rows, ev.meta),
        results.format_table(ev.rows),
    ):  # from the meta, or read off the rows
        footer = "\n".join(text.splitlines()[-4:])
        assert "FPR convention: hendrycks" in footer and "fpr_and_fdr_at_recall" in footer
        assert "grouping: stratified, G=4" in footer and "templates: single" in footer
        assert 'negvocab methods -s conventions), section "Conventions and the anchors\' code"' in footer
    conv = json.loads((results.write_results(ev, tmp_path / "r") / "results.json").read_text())["conventions"]
    assert (
        conv["grouping"].startswith("stratified, G=4")
        and conv["templates"] == "single"
        and "negvocab/methods.md" in conv["see"]
    )


def test_evaluation_repr_is_short(sets, classes, vocab):
    id_set, a, b = sets
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, {"A": a, "B": b}, {"wn": vocab}, ["neglabel", "mcm"], id_classes=classes, n_boot=0, **KW
    )
    text = repr(ev)
    assert len(text) < 400 and "array" not in text and "'A': 15" in text and "RANDOM WEIGHTS" in text


def test_a_union_is_not_swept_without_an_explicit_order(sets, classes, vocab):
    id_set, a, _ = sets
    union = negvocab.Vocabulary.union(negvocab.Vocabulary.from_labels(["x", "y", "z"], source="gpt"), vocab)
    with pytest.raises(InputError, match="union .*no farthest-first order.*order='given'"):
        sweeps.sweep_vocabulary(FakeVLM(), id_set, a, union, "5,10", id_classes=classes, n_boot=0, **KW)
    res = sweeps.sweep_vocabulary(
        FakeVLM(), id_set, a, union, "5,10", id_classes=classes, n_boot=0, order="given", **KW
    )
    assert [r["order"] for r in res.rows] == ["given", "given"] and res.meta["vocabulary"]["order"] == "given"


def test_a_vocabulary_built_with_random_weights_marks_its_rows(sets, classes, vocab, tmp_path):
    """Scored by a pretrained model, a vocabulary mined with random weights is still no real result."""

    class RealVLM(FakeVLM):
        pretrained, random_weights = "openai", False

    id_set, a, _ = sets
    mined = negvocab.Vocabulary.from_labels(
        ["kite toy", "paper towel holder"], source="mined", settings={"random_weights": True}
    )
    ev = evaluate.evaluate_vocabularies(
        RealVLM(), id_set, a, {"wn": vocab, "mined": mined}, ["neglabel"], id_classes=classes, n_boot=0, **KW
    )
    assert {r["vocabulary"]: r["random_weights"] for r in ev.rows} == {"wn": False, "mined": True}
    out = results.write_results(ev, tmp_path / "r")
    table = {t["vocabulary"]: t["random_weights"] for t in csv.DictReader((out / "results.csv").open())}
    assert table == {"wn": "False", "mined": "True"}
