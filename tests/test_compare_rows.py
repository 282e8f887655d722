"""scripts/compare_rows.py: the same rows under other row keys compare equal; any changed value does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from negvocab.evaluation.row import ResultRow

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_rows.py"


def _row(**kw):
    base = dict(method="neglabel", ood_set="inat", convention="paper", tpr=0.95, fpr=0.25, auroc=0.9,
                aupr_in=0.8, aupr_out=0.7, n_id=10, n_ood=12, model="ViT-B-32", vocabulary="wn",
                intervals={"fpr": (0.1, 0.4), "auroc": (0.85, 0.95)}, ci_level=0.95, n_boot=100)  # fmt: skip
    return ResultRow(**{**base, **kw})


def _run(tmp_path, a, b):
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps({"run": {"seed": 0}, "rows": a}))
    pb.write_text(json.dumps({"run": {"seed": 0}, "rows": b}))
    return subprocess.run([sys.executable, str(SCRIPT), str(pa), str(pb)], capture_output=True, text=True)


def test_the_same_rows_under_the_other_files_keys_compare_equal(tmp_path):
    rows = [_row(), _row(ood_set="places", fpr=0.5)]
    score_shape = [r.to_dict() for r in rows]
    flat_shape = [{k: v for k, v in r.flat_dict().items() if k != "layout"} for r in rows]
    assert set(score_shape[0]) != set(flat_shape[0])  # other keys: fpr_ci vs fpr_ci_low/high
    r = _run(tmp_path, score_shape, flat_shape)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    "change", [{"fpr": 0.25 + 1e-12}, {"intervals": {"fpr": (0.1, 0.41), "auroc": (0.85, 0.95)}}, {"n_ood": 13}]
)
def test_any_changed_value_or_interval_differs(tmp_path, change):
    a = [_row().to_dict()]
    b = [_row(**change).flat_dict()]
    r = _run(tmp_path, a, b)
    assert r.returncode == 1 and "row 0 differs" in r.stdout


def test_a_lost_row_or_a_changed_document_differs(tmp_path):
    assert _run(tmp_path, [_row().to_dict()] * 2, [_row().to_dict()]).returncode == 1
    pa, pb = tmp_path / "c.json", tmp_path / "d.json"
    pa.write_text(json.dumps({"run": {"seed": 0}, "rows": [_row().to_dict()]}))
    pb.write_text(json.dumps({"run": {"seed": 1}, "rows": [_row().to_dict()]}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(pa), str(pb)], capture_output=True, text=True)
    assert r.returncode == 1 and "outside its rows" in r.stdout
