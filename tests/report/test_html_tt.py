"""The HTML report shows a test-time row as every table does: [tt] on its method, its stream said under
the table, its spread over stream seeds in columns of their own (percent), never as a bootstrap interval."""

from __future__ import annotations

import json
import re

import numpy as np

from negvocab.report.html import write_report

STREAM = {"test_time": True, "stream_order": "shuffled", "stream_batch_size": 8, "stream_seed": None}
STREAM |= {"stream_seeds": [0, 1, 2], "n_stream_seeds": 3, "fpr_std": 0.05, "fpr_min": 0.2, "fpr_max": 0.3}


def test_the_report_marks_a_test_time_row_and_keeps_its_spread_apart(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "res"
    folder.mkdir()
    np.savez(folder / "scores.npz", **{"id/neglabel@wn": rng.normal(1, 1, 40), "ood/neglabel@wn": rng.normal(0, 1, 30)})
    base = {"vocabulary": "wn", "ood_set": "setA", "deployable": True, "caveats": {}, "convention": "paper"}
    rows = [
        {**base, "method": "neglabel", "fpr": 0.5, "auroc": 0.8, "tpr": 0.95, "fpr_ci": [0.4, 0.6]},
        {**base, "method": "adaneg", "fpr": 0.25, "auroc": 0.9, "tpr": 0.95, **STREAM},
    ]
    (folder / "results.json").write_text(json.dumps({"model": "m", "convention": "paper", "tpr": 0.95, "rows": rows}))
    text = write_report(folder).read_text()
    table = re.search(r"<table[^>]*>.*?<thead>(.*?)</thead>(.*?)</table>", text, re.S)
    head, body = table.group(1), table.group(2)
    assert "FPR ± sd (seeds) %" in head and "[95% CI]" in head
    tt = next(r for r in re.findall(r"<tr>(.*?)</tr>", body, re.S) if "adaneg [tt]" in r)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tt, re.S)]
    assert cells[0] == "adaneg [tt]" and "0; 1; 2" in cells and "shuffled" in cells
    assert cells[1] == "25.00" and "5.00" in cells and not any("[" in c for c in cells[1:])  # sd in %, no interval
    assert "[tt] test-time: scores depend on the test stream seen (one stream per OOD set, shuffled, batch 8" in text
