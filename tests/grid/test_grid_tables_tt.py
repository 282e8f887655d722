"""A grid's pivots and paper tables show a test-time method as every table does: its [tt] mark, its stream
and its spread over stream seeds as ±; the "no vocabulary" baselines are batch methods only."""

from __future__ import annotations

import math

from negvocab.grid.tidy import GridResult

STREAM = {"test_time": True, "stream_order": "shuffled", "stream_batch_size": 4}


def _cell(vocab, method, ood, fpr, **kw):
    ci = {f"{m}_ci_{e}": math.nan for m in ("fpr", "auroc", "aupr_in", "aupr_out") for e in ("low", "high")}
    return {
        "model": "M", "pretrained": "p", "random_weights": False, "vocabulary": vocab, "vocab_source": "",
        "vocab_size": 3 if vocab else 0, "vocab_hash": "", "deployable": True, "caveats": "", "ood_set": ood,
        "method": method, "params": "{}", "convention": "paper", "tpr": 0.95, "fpr": fpr, "auroc": 0.8,
        "aupr_in": 0.7, "aupr_out": 0.6, "aupr_method": "average_precision", "n_id": 20, "n_ood": 10,
        "templates": "single", "cell": f"{vocab}-{method}-{ood}", **ci, **kw,
    }  # fmt: skip


def _grid():
    rows = [_cell("A", "neglabel", s, 0.5) for s in ("oodA", "oodB")]
    rows += [_cell("", "mcm", s, 0.7) for s in ("oodA", "oodB")]
    rows += [_cell("", "toy", s, 0.1, **STREAM, stream_seed=0) for s in ("oodA", "oodB")]  # test-time, no vocabulary
    for seed, fpr in ((0, 0.2), (1, 0.3), (2, 0.4)):
        rows += [_cell("A", f"adaneg#s{seed}", s, fpr, **STREAM, stream_seed=seed) for s in ("oodA", "oodB")]
    return GridResult(rows)


def test_a_pivot_marks_a_test_time_method_names_its_stream_and_shows_its_spread():
    p = _grid().pivot("fpr", rows="method", vocabulary="A")
    md = p.to_markdown()
    assert "| adaneg [tt] | 30.00 ± 10.00 | 30.00 ± 10.00 | 30.00 ± 10.00 |" in md
    assert "| neglabel | 50.00 | 50.00 | 50.00 |" in md and "| adaneg#s1 [tt] | 30.00 | 30.00 | 30.00 |" in md
    assert "adaneg (stream shuffled, batch 4, seeds 0, 1, 2)" in md and "± after a [tt] value" in md
    assert "adaneg [tt] & 30.00 $\\pm$ 10.00 &" in p.to_latex()
    fixed = _grid().pivot("fpr", rows="model", vocabulary="A", method="adaneg")
    assert "method=adaneg [tt]" in fixed.to_markdown()


def test_a_paper_table_of_a_grid_shows_the_spread_apart_from_the_intervals():
    t = _grid().paper_table("fpr", rows="method", cols="ood_set", where={"vocabulary": "A"}, intervals=True)
    md = t.to_markdown()
    assert "| adaneg [tt] | 30.00 ± 10.00 | 30.00 ± 10.00 | 30.00 ± 10.00 |" in md
    assert "[" not in md.split("| adaneg [tt] |")[1].split("\n")[0]


def test_a_test_time_method_without_a_vocabulary_is_no_baseline_of_a_pivot():
    p = _grid().pivot("fpr", rows="vocabulary", method="neglabel")
    assert p.index == ["A", "mcm (no vocabulary)"]
    assert "without a vocabulary: mcm)" in p.to_markdown()
    own = _grid().pivot("fpr", rows="vocabulary", method="toy")
    assert own.index == ["mcm (no vocabulary)", "toy (no vocabulary) [tt]"]
