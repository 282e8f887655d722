"""A table's mean row is the plain mean over every member, '-' where one is missing, as its caption
says (issue 34: a ``nanmean`` over the members present passed the tests)."""

from __future__ import annotations

import numpy as np

from negvocab.report.tables import build_table
from tests.report.test_tables import _row


def test_the_mean_row_is_missing_where_a_member_is():
    rows = [
        _row("A", "wordnet", "ssb", fpr=0.2),
        _row("B", "wordnet", "ssb", fpr=0.6),
        _row("A", "gpt", "ssb", fpr=0.3),  # B has no gpt entry
    ]
    t = build_table(rows, rows_by="model", cols_by="vocabulary", where={"ood_set": "ssb"}, mean_rows=True)
    assert t.index == ["A", "B", "mean"] and t.columns == ["wordnet", "gpt"]
    assert t.values[2, 0, 0] == np.mean([0.2, 0.6])  # every member there: their plain mean
    assert np.isnan(t.values[2, 1, 0])  # a member missing: no mean (a nanmean would say 0.3)
    md = t.to_markdown()
    mean_line = next(line for line in md.splitlines() if line.startswith("| mean"))
    # a mean over models shows their spread (issue 32): the sample SD of 20 and 60 is 28.28
    assert mean_line.split("|")[2:4] == [f" 40.00 ± {np.std([20, 60], ddof=1):.2f} ", " - "], mean_line
    assert "'-' where a member is missing" in md
