"""ID accuracy and CCR in the HTML report (issue 31): a full-spectrum score run's results table and a sweep's
table show them as percentages under their names, each cell the row's own value; folders whose rows lack
them (an unlabelled ID set, an older version) show no such column, and a row without a value shows '-'."""

from __future__ import annotations

import json
import re

import negvocab
from negvocab.report.html import write_report
from negvocab.report.results import write_results, write_sweep
from tests.evaluation.test_ccr_columns import _run
from tests.evaluation.test_sweep_accuracy import _id_set, _sweep


def _table(text: str, after: str) -> tuple[list[str], list[list[str]]]:
    """The head and the body rows (cell texts) of the first table after ``after`` in the report."""
    part = text[text.index(after) :]
    head = re.search(r"<thead>(.*?)</thead>", part, re.S).group(1)
    body = re.search(r"<tbody>(.*?)</tbody>", part, re.S).group(1)
    strip = lambda html: re.sub(r"<[^>]+>|&shy;|<wbr>", "", html).strip()  # noqa: E731
    cells = [[strip(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)] for tr in body.split("</tr>")]
    return [strip(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)], [c for c in cells if c]


def _classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:3]))


def test_a_full_spectrum_score_run_shows_ccr_per_row_and_its_id_accuracy(tmp_path):
    ev, _, _ = _run(True, _classes())
    write_results(ev, tmp_path / "fs")
    text = write_report(tmp_path / "fs").read_text()
    head, rows = _table(text, 'id="results"')
    for col in ("ccr@1e-4", "ccr@1e-1"):
        j = head.index(f"{col.upper()} %")
        assert [r[j] for r in rows] == [f"{100 * r[col]:.2f}" for r in ev.rows]
    # the same ID accuracy in every row: said once, above the table
    assert "ID acc. %" not in head
    assert re.search(rf"<dt>ID acc. %</dt><dd>{100 * ev.rows[0]['id_accuracy']:.2f}</dd>", text)
    plain, _, _ = _run(False, _classes())
    write_results(plain, tmp_path / "plain")
    assert "CCR@" not in write_report(tmp_path / "plain").read_text()


def test_a_sweep_shows_id_accuracy_and_ccr_and_an_older_sweep_none(tmp_path):
    classes = _classes()
    res, _, _ = _sweep(classes, _id_set(classes, csid=True))
    write_sweep(res, tmp_path / "sw")
    text = write_report(tmp_path / "sw").read_text()
    head, rows = _table(text, 'id="sweep"')
    assert head[-5:] == ["ID acc. %", "CCR@1E-4 %", "CCR@1E-3 %", "CCR@1E-2 %", "CCR@1E-1 %"]
    every = [*res.rows, *res.references]
    assert len(rows) == len(every)
    for shown, r in zip(rows, every, strict=True):
        assert shown[-5:] == [
            f"{100 * r[c]:.2f}" for c in ("id_accuracy", "ccr@1e-4", "ccr@1e-3", "ccr@1e-2", "ccr@1e-1")
        ]
    # an older sweep.json (no such keys), and one whose references lack them: '-' where a row has none
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    keys = ("id_accuracy", "ccr@1e-4", "ccr@1e-3", "ccr@1e-2", "ccr@1e-1")
    doc["references"] = [{k: v for k, v in r.items() if k not in keys} for r in doc["references"]]
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps(doc))
    _, rows = _table(write_report(tmp_path / "sw").read_text(), 'id="sweep"')
    assert all(r[-5:] == ["-"] * 5 for r in rows[len(res.rows) :]) and rows[0][-1] != "-"
    doc["rows"] = [{k: v for k, v in r.items() if k not in keys} for r in doc["rows"]]
    (tmp_path / "sw" / "sweep.json").write_text(json.dumps(doc))
    head, _ = _table(write_report(tmp_path / "sw").read_text(), 'id="sweep"')
    assert head == ["OOD set", "M", "FPR@95", "95% CI", "AUROC"]
