"""Tables mark test-time (stream) results: the method's entry and a caption note; batch-only tables unchanged."""

from __future__ import annotations

from negvocab.evaluation.row import ResultRow, result_kind
from negvocab.report.results import format_table
from negvocab.report.tables import build_table
from tests.report.test_tables import _row

STREAM = {"test_time": True, "stream_order": "shuffled", "stream_batch_size": 256, "stream_seed": 0}


def _rows():
    return [
        _row("A", "wn", "inat", method="neglabel", fpr=0.30, vocab_size=10),
        _row("A", "wn", "inat", method="adaneg", fpr=0.20, vocab_size=10, **STREAM),
        _row("A", "wn", "sun", method="neglabel", fpr=0.40, vocab_size=10),
        _row("A", "wn", "sun", method="adaneg", fpr=0.35, vocab_size=10, **STREAM),
    ]


def test_a_table_by_method_marks_the_test_time_method_and_says_so():
    t = build_table(_rows(), rows_by="method", cols_by="ood_set")
    assert t.index == ["neglabel", "adaneg [tt]"]
    assert "[tt] test-time" in t.full_caption() and "mixes them with other kinds" in t.full_caption()
    only = build_table([r for r in _rows() if r["method"] == "adaneg"], rows_by="method", cols_by="ood_set")
    assert "mixes" not in only.full_caption() and "[tt] test-time" in only.full_caption()


def test_a_batch_only_table_has_no_mark():
    rows = [r for r in _rows() if r["method"] == "neglabel"]
    t = build_table(rows, rows_by="method", cols_by="ood_set")
    assert t.index == ["neglabel"] and "[tt]" not in t.full_caption()
    assert "[tt]" not in format_table(rows)


def test_result_kinds_of_rows():
    assert [result_kind(r) for r in _rows()[:2]] == ["deployable", "test_time"]
    assert result_kind(_row("A", "oracle", "inat", caveats="oracle", **STREAM)) == "oracle"  # the strongest caveat
    assert result_kind({"caveats": "transductive: mined from the test images"}) == "transductive"
    assert ResultRow.from_dict(_rows()[1]).result_kind == "test_time"
    assert ResultRow.from_dict(_rows()[0]).result_kind == "deployable"
    text = format_table(_rows())
    assert "adaneg [tt]" in text and "mixes result kinds (deployable, test-time)" in text
