"""The tuning protocol for test-time knobs: a stream method (AdaNeg) tuned on a validation split over a
declared search space by a criterion of several metrics (FPR@95, ties by AUROC), the choice equal to an
argmin over the same grid computed here from the kernel, sklearn's AUROC and the FPR formula; the test
rows equal scoring that setting directly and record the tuning; tuning on the test sets refused unless
asked for by name, and then a kind of its own, marked in every table; old rows read back untuned."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import negvocab
from negvocab.core.errors import InputError
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.evaluation.kinds import TEST_TUNED_MARK, result_kind
from negvocab.evaluation.row import ResultRow
from negvocab.evaluation.tuning import check_tuning, tune_methods, tune_params
from negvocab.report.html_results import results_table
from negvocab.report.results import format_table
from negvocab.report.tables import build_table
from negvocab.scoring.stream import make_stream, run_stream
from tests.evaluation.test_evaluate import FakeVLM
from tests.evaluation.test_tuning import _set


def _inputs():
    """Six ID classes and 24 negatives: a split where AdaNeg's knobs change the result."""
    ids = negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:6]))
    return ids, negvocab.Vocabulary.from_labels([f"neg{i}" for i in range(24)], source="file")


GRID = {"adaneg_threshold": [0.3, 0.5, 0.7], "adaneg_gap": [0.1, 0.5], "adaneg_memory": [2, 4]}
STREAM = {"stream_batch": 8, "order": "shuffled", "stream_seed": 0}
FIXED = {"tau": 0.05, "adaneg_groups": 2}


def _by_hand(params, classes, vocab, id_set, oods):
    """(FPR@95, AUROC) of AdaNeg on the split without the pipeline: the stream method run on each ID + OOD
    stream from a fresh state, the paper's FPR (OOD >= the ID scores' 5% quantile) and sklearn's AUROC,
    averaged over the OOD sets."""
    vlm = FakeVLM()
    cls = vlm.encode_text(list(classes.names), "single")
    neg = vlm.encode_text(list(vocab.labels), "single")
    x_id = vlm.encode_images(id_set).embeddings
    fprs, aurocs = [], []
    for ood in oods.values():
        x_ood = vlm.encode_images(ood).embeddings
        detector = make_stream("adaneg", params)
        detector.setup(cls, neg)
        s = np.asarray(run_stream(detector, np.concatenate([x_id, x_ood]), stream_batch=8, seed=0).scores)
        s_id, s_ood = s[: len(x_id)], s[len(x_id) :]
        fprs.append(np.mean(s_ood >= np.quantile(s_id, 0.05)))
        aurocs.append(roc_auc_score(np.r_[np.ones(len(s_id)), np.zeros(len(s_ood))], s))
    return float(np.mean(fprs)), float(np.mean(aurocs))


def test_a_stream_method_tunes_on_validation_and_scores_the_choice_once():
    classes, vocab = _inputs()
    id_val, oods = _set("val_id", 40), {"val_a": _set("val_a", 24), "val_b": _set("val_b", 16)}
    run = {"id_classes": classes, "templates": "single"}
    t = tune_params(
        FakeVLM(), id_val, oods, vocab, "adaneg", grid=GRID, params=FIXED, criterion="fpr,auroc", stream=STREAM,
        vocabulary_name="v", **run,
    )  # fmt: skip
    combos = [dict(zip(GRID, c, strict=True)) for c in itertools.product(*GRID.values())]
    assert [tr["params"] for tr in t.trials] == combos
    by_hand = [_by_hand({**FIXED, **c}, classes, vocab, id_val, oods) for c in combos]
    got = [v for tr in t.trials for v in (tr["fpr"], tr["auroc"])]
    assert got == pytest.approx([v for pair in by_hand for v in pair], abs=1e-12)
    assert len(set(by_hand)) > 2  # the knobs matter on this split
    fpr_best = min(f for f, _ in by_hand)
    assert sum(f == fpr_best for f, _ in by_hand) > 1  # a tie in FPR: AUROC decides
    # the argmin of (FPR, -AUROC), the first on a full tie
    best = min(range(len(combos)), key=lambda i: (by_hand[i][0], -by_hand[i][1], i))
    assert {k: t.params[k] for k in GRID} == combos[best] and t.value == by_hand[best][0]
    assert t.params["tau"] == FIXED["tau"] and t.key == "adaneg@v"
    # the test sets scored once with the choice: equal to the choice given by hand; the rows record it
    test_id, test_ood = _set("test_id", 30), {"test_o": _set("test_o", 20)}
    kw = {"n_boot": 0, "stream": STREAM, **run}
    tuned = evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], tuned=[t], **kw)
    plain = evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], params=dict(t.params), **kw)
    (row,), (ref,) = tuned.rows, plain.rows
    assert (row["fpr"], row["auroc"], row["params"]) == (ref["fpr"], ref["auroc"], ref["params"])
    assert row["tuned"] is True and row["tuned_on_test"] is False and row["tuning_criterion"] == "fpr,auroc"
    assert row["tuning_space"] == "adaneg_threshold=0.3,0.5,0.7; adaneg_gap=0.1,0.5; adaneg_memory=2,4"
    assert row["tuned_on"].startswith("val_id (40) vs val_a (24), val_b (16); paths sha256 ")
    assert tuned.meta["tuning"]["adaneg@v"]["trials"] == [dict(x) for x in t.trials]
    assert result_kind(row) == "test_time" and "tuned" not in ref and "tuning_space" not in ref  # untuned: no fields


def test_tuning_on_the_test_sets_is_refused_unless_named_and_then_marked():
    classes, vocab = _inputs()
    test_id, test_ood = _set("test_id", 30), _set("test_o", 20)
    run = {"id_classes": classes, "templates": "single"}
    grid = {"adaneg_threshold": [0.3, 0.6]}
    kw = {"n_boot": 0, "stream": STREAM, **run}
    sneaky = tune_methods(FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], grid=grid, stream=STREAM, **run)
    with pytest.raises(InputError, match=r"50 test image\(s\) are also in the tuning split of adaneg@v"):
        evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], tuned=sneaky, **kw)
    named = tune_methods(
        FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], grid=grid, stream=STREAM, on_test=True, **run
    )
    ev = evaluate_vocabularies(FakeVLM(), test_id, test_ood, {"v": vocab}, ["adaneg"], tuned=named, **kw)
    (row,) = ev.rows
    assert row["tuned_on_test"] is True and row["tuned_on"].startswith("the test sets: test_id (30)")
    assert result_kind(row) == "test_tuned" and ResultRow.from_dict(row).result_kind == "test_tuned"
    assert ev.meta["tuning"]["adaneg@v"]["on_test"] is True
    # on the test sets, the tuning value is the test result itself (the flattery the mark warns of)
    assert named[0].value == row["auroc"]
    # every table marks it: the terminal table, the paper table's entry and caption
    text = format_table(ev.rows, ev.meta)
    assert f"adaneg [tt]{TEST_TUNED_MARK}" in text and "[tuned on test] parameters tuned on the test sets" in text
    assert "ON THE TEST SETS" in text
    table = build_table(ev.rows, metric="fpr", rows_by="method", cols_by="ood_set")
    md = table.to_markdown()
    assert f"adaneg [tt]{TEST_TUNED_MARK}" in md and "[tuned on test] parameters tuned on the test sets" in md
    html = results_table(ev.rows)  # the HTML report's table: the method cell and the footer
    texts = [c["text"] for r in html["rows"] for c in r] + [t for _, t in html["constant"]]
    assert f"adaneg [tt]{TEST_TUNED_MARK}" in texts
    assert "[tuned on test] parameters tuned on the test sets" in html["footer"]


def test_rows_of_older_releases_read_back_untuned():
    old = {
        "method": "neglabel", "model": "m", "pretrained": "p", "vocabulary": "v", "vocab_size": 3, "ood_set": "o",
        "fpr": 0.5, "auroc": 0.6, "aupr_in": 0.5, "aupr_out": 0.5, "n_id": 3, "n_ood": 3, "convention": "paper",
        "tpr": 0.95,
    }  # fmt: skip
    row = ResultRow.from_dict(old)
    assert row.result_kind == "deployable" and "tuned_on_test" not in row.extra
    assert TEST_TUNED_MARK not in format_table([row.to_dict()])


@pytest.mark.parametrize(
    ("methods", "grid", "criterion", "message"),
    [
        (["adaneg"], None, "auroc", "grid: adaneg is a test-time method: name its search space"),
        (["neglabel"], {"adaneg_gap": [0.1]}, "auroc", "grid: no method tuned here takes 'adaneg_gap'"),
        (["adaneg"], {"adaneg_threshold": [0.5, 1.5]}, "auroc", "grid: adaneg_threshold must be in (0, 1], got 1.5"),
        (["adaneg"], {"adaneg_memory": [1]}, "auroc", "grid: adaneg_memory must be >= 2, got 1"),
        (["mcm"], None, "fpr,fpr", "criterion must be one of auroc"),
        (["mcm"], None, "fpr;auroc", "criterion must be one of auroc"),
    ],
)
def test_bad_tuning_arguments_are_one_line_each(methods, grid, criterion, message):
    with pytest.raises(InputError) as e:
        check_tuning(methods, grid, criterion)
    assert message in str(e.value) and "\n" not in str(e.value)
