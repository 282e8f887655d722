"""Test-time rows in every table format: the [tt] mark wherever the caption refers to it, the stream named,
the spread over stream seeds as ± (never in the bootstrap-interval column); baselines by kind; bold on
near/far columns from the stored scores."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from negvocab.evaluation.compare import metric_value
from negvocab.report.results import format_table
from negvocab.report.tables import build_table, comparisons
from tests.report.test_tables import _row

NAN = math.nan
SPREAD = {"test_time": True, "stream_order": "shuffled", "stream_batch_size": 256, "stream_seed": None}
SPREAD |= {"stream_seeds": [0, 1, 2], "n_stream_seeds": 3, "fpr_ci_low": NAN, "fpr_ci_high": NAN}


def _tt(model, ood, fpr, sd, **kw):
    """A test-time row over three stream seeds (no bootstrap interval: the seeds are the spread)."""
    extra = {"auroc_ci_low": NAN, "auroc_ci_high": NAN, "auroc_std": sd / 2, "aupr_in_std": 0.0, "aupr_out_std": 0.0}
    return _row(model, "wn", ood, method="adaneg", fpr=fpr, fpr_std=sd, **SPREAD, **extra, **kw)


def _rows():
    return [
        _row("A", "wn", "inat", fpr=0.30),
        _tt("A", "inat", 0.20, 0.03),
        _row("A", "wn", "sun", fpr=0.40),
        _tt("A", "sun", 0.35, 0.01),
    ]


def _cell(head, line, name, width):
    """The text of the right-aligned column ``name`` of ``width`` characters in a printed table's line."""
    end = head.index(name) + len(name)
    return line[end - width : end].strip()


def test_the_printed_table_keeps_intervals_and_seed_spreads_in_separate_columns():
    rows = [{**r, "vocab_size": 10, "oracle": False} for r in _rows()]
    head, *lines = format_table(rows).splitlines()
    batch, tt = lines[0], lines[1]
    assert tt.startswith("adaneg [tt]") and batch.startswith("neglabel")
    assert (_cell(head, batch, "95% CI", 15), _cell(head, batch, "± sd (seeds)", 12)) == ("[25.0, 35.0]", "-")
    assert (_cell(head, tt, "95% CI", 15), _cell(head, tt, "± sd (seeds)", 12)) == ("-", "±3.0 (n=3)")
    assert any(x.startswith("± sd (seeds): FPR's sample sd over a test-time row's stream seeds") for x in lines)
    plain = format_table([r for r in rows if r["method"] == "neglabel"])
    assert "± sd" not in plain  # no column where nothing has a spread


def test_a_seed_spread_is_plus_minus_in_every_format_and_never_an_interval():
    t = build_table(_rows(), rows_by="method", cols_by="ood_set", intervals=True)
    md = t.to_markdown()
    line = next(x for x in md.splitlines() if x.startswith("| adaneg [tt] |"))
    assert line == "| adaneg [tt] | 20.00 ± 3.00 | 35.00 ± 1.00 |"
    assert "| neglabel | 30.00 [25.00, 35.00] | 40.00 [35.00, 45.00] |" in md
    assert "adaneg (stream shuffled, batch 256, seeds 0, 1, 2)" in t.full_caption()
    assert "± after a [tt] value: the sample sd over its stream seeds" in t.full_caption()
    tex = t.to_latex()
    assert "adaneg [tt] & 20.00 & 35.00 \\\\\n & {\\scriptsize $\\pm$3.0} & {\\scriptsize $\\pm$1.0} \\\\" in tex
    got = {r["row"]: r for r in csv.DictReader(io.StringIO(t.to_csv()))}
    assert (got["adaneg [tt]"]["inat:fpr:sd"], got["adaneg [tt]"]["inat:fpr:ci_low"]) == ("3.0", "")
    assert (got["neglabel"]["inat:fpr:sd"], got["neglabel"]["inat:fpr:ci_low"]) == ("", "25.0")
    assert (got["adaneg [tt]"]["sun:stream"], got["neglabel"]["sun:stream"]) == (
        "shuffled, batch 256, seeds 0, 1, 2",
        "",
    )
    batch = build_table(_rows()[::2], rows_by="method", cols_by="ood_set").to_csv()
    assert ":stream" not in batch and ":sd" not in batch  # a batch-only CSV keeps its columns
    auroc = build_table(_rows(), metric="auroc", rows_by="method", cols_by="ood_set")
    assert "| adaneg [tt] | 80.00 ± 1.50 |" in auroc.to_markdown()  # each metric its own spread


def test_the_tt_mark_is_on_the_entry_in_every_layout_the_caption_refers_to():
    rows = [*_rows(), *(dict(r, model="B") for r in _rows())]
    joined = build_table(rows, rows_by=("method", "model"), cols_by="ood_set")
    assert joined.index == ["neglabel / A", "adaneg / A [tt]", "neglabel / B", "adaneg / B [tt]"]
    assert "adaneg / A [tt]" in joined.to_latex() and "| adaneg / B [tt] |" in joined.to_markdown()
    cols = build_table(rows, rows_by="model", cols_by="method", where={"ood_set": "inat"})
    assert cols.columns == ["neglabel", "adaneg [tt]"]
    assert "| model | neglabel | adaneg [tt] |" in cols.to_markdown()
    assert "adaneg\\\\{}[tt]" in cols.to_latex() and "\\\\[" not in cols.to_latex()  # not \\'s optional argument
    fixed = build_table(rows, rows_by="model", cols_by="ood_set", where={"method": "adaneg"})
    assert "Method: adaneg [tt]." in fixed.short_caption() and "[tt] test-time" in fixed.full_caption()


def test_a_test_time_method_without_a_vocabulary_is_no_baseline():
    rows = [*_rows(), _row("A", "", "inat", method="mcm", fpr=0.6), _row("A", "", "sun", method="mcm", fpr=0.7)]
    rows += [_row("A", "", s, method="toy", fpr=0.1, test_time=True, stream_order="given") for s in ("inat", "sun")]
    t = build_table(rows, rows_by="vocabulary", cols_by="ood_set", where={"method": "neglabel"})
    assert t.index == ["wn", "mcm (no vocabulary)"]  # not the test-time toy, though it has no vocabulary
    assert "Without a vocabulary (baseline): mcm." in t.full_caption()
    own = build_table(rows, rows_by="vocabulary", cols_by="ood_set", where={"method": "toy"})
    assert own.index == ["mcm (no vocabulary)", "toy (no vocabulary) [tt]"]
    alone = build_table(rows, rows_by="method", cols_by="ood_set", where={"vocabulary": ""})
    assert alone.index == ["mcm", "toy [tt]"] and "Without a vocabulary (baseline): mcm." in alone.full_caption()


def test_near_and_far_columns_are_tested_on_the_stored_scores():
    rng = np.random.default_rng(2)
    sets = {"n1": "near", "n2": "near", "f1": "far"}
    s_id = {"good": rng.normal(3.0, 1, 60), "bad": rng.normal(0.5, 1, 60)}
    s_ood = {v: {s: rng.normal(0, 1, 40) for s in sets} for v in s_id}
    rows = []
    for v in s_id:
        by = {s: metric_value("fpr", s_id[v], s_ood[v][s], tpr=0.95, convention="paper") for s in sets}
        rows += [_row("A", v, s, fpr=by[s], n_ood=40) for s in sets]
        for name, members in (("near-ood", ["n1", "n2"]), ("far-ood", ["f1"]), ("mean", list(sets))):
            fpr = float(np.mean([by[m] for m in members]))
            rows.append(_row("A", v, name, fpr=fpr, n_ood=40 * len(members), ood_sets=members, n_ood_sets=2))
    get = lambda model, vocab, method: (s_id[vocab], s_ood[vocab])  # noqa: E731
    t = build_table(rows, rows_by="vocabulary", cols_by="ood_set", scores=get, n_boot=200)
    assert t.columns == ["n1", "n2", "f1", "near-ood", "far-ood", "mean"]
    assert "per-image scores not stored" not in t.full_caption()
    assert t.bold[:, :, 0].tolist() == [[True] * 6, [False] * 6]  # "good" is far better on every column


def test_comparisons_pair_the_vocabularies_with_baselines_chosen_by_kind():
    rows = []
    for m in ("A", "B"):
        rows += [_row(m, "wn", "inat", fpr=0.3), _row(m, "", "inat", method="mcm", fpr=0.6)]
        rows.append(_row(m, "", "inat", method="toy", fpr=0.1, test_time=True))  # test-time, no vocabulary
    said = comparisons(rows, None, ood_set="inat")
    assert [s.split(" (FPR")[0] for s in said] == [
        "wn vs mcm (no vocabulary)",
        "toy (no vocabulary) vs mcm (no vocabulary)",
    ]
    assert not any("wn vs toy" in s for s in said)


def test_a_test_time_entry_is_not_paired_on_one_set_of_id_scores():
    rng = np.random.default_rng(5)
    s_id, s_ood = {"neglabel": rng.normal(3.0, 1, 60), "adaneg": rng.normal(0.0, 1, 60)}, rng.normal(0, 1, 40)
    fpr = {m: metric_value("fpr", s, s_ood, tpr=0.95, convention="paper") for m, s in s_id.items()}
    rows = [_row("A", "wn", "inat", fpr=fpr["neglabel"]), _row("A", "wn", "inat", method="adaneg", fpr=fpr["adaneg"])]
    rows[1] |= {"test_time": True, "stream_order": "shuffled", "stream_batch_size": 8, "stream_seed": 0}
    get = lambda model, vocab, method: (s_id[method], {"inat": s_ood})  # noqa: E731
    t = build_table(rows, rows_by="method", cols_by="ood_set", scores=get, n_boot=100)
    assert not t.bold.any() and "a test-time entry is not tested" in t.full_caption()
    batch = build_table(rows[:1] + [dict(rows[0], vocabulary="v2", method="neglabel")], rows_by="vocabulary",
                        cols_by="ood_set", scores=get, n_boot=100)  # fmt: skip
    assert "a test-time entry is not tested" not in batch.full_caption()


def test_a_files_false_is_not_test_time():
    from negvocab.evaluation.kinds import result_kind, stream_words

    assert [result_kind({"test_time": v, "vocabulary": "wn"}) for v in ("False", "", 0, None)] == ["deployable"] * 4
    assert [result_kind({"test_time": v, "vocabulary": ""}) for v in (True, "true", 1)] == ["test_time"] * 3
    assert stream_words({"test_time": True, "stream_order": "given", "stream_batch_size": 8, "id_ood_ratio": 0.5}) == (
        "given, batch 8, ID:OOD 0.5"
    )
