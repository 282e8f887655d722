"""CCR at an FPR (part "ccr" of issue 31): equal to OpenOOD's own ``ccr_fpr`` (the MIT copy in
tests/reference/openood, loaded from its file) on random inputs with ties, and a case computed by hand."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.scoring.metrics import CCR_FPRS, UndefinedMetricWarning, ccr_at_fpr, ccr_column

_REF = Path(__file__).parents[1] / "reference" / "openood" / "openood" / "evaluators" / "metrics.py"


def _openood_metrics():
    """OpenOOD's metrics module from the copied file, under a private name (not the ``openood`` package)."""
    spec = importlib.util.spec_from_file_location("_openood_metrics_ref", _REF)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_openood_ccr_fpr_on_random_inputs(seed):
    ref = _openood_metrics()
    rng = np.random.default_rng(seed)
    n_id, n_ood, n_classes = int(rng.integers(5, 300)), int(rng.integers(1, 3000)), 7
    # rounded scores: ties inside and across the sets
    id_s = np.round(rng.normal(1.0, 1.0, n_id), 1)
    ood_s = np.round(rng.normal(0.0, 1.0, n_ood), 1)
    label = rng.integers(0, n_classes, n_id)
    pred = np.where(rng.random(n_id) < 0.6, label, rng.integers(0, n_classes, n_id))
    conf = np.concatenate([id_s, ood_s])
    labels = np.concatenate([label, -np.ones(n_ood, dtype=np.int64)])
    preds = np.concatenate([pred, rng.integers(0, n_classes, n_ood)])
    for fpr in (*CCR_FPRS, 0.05, 0.5, 1.0):
        want = ref.ccr_fpr(conf, fpr, preds, labels)
        assert ccr_at_fpr(id_s, ood_s, pred == label, fpr) == want, (seed, fpr)


def test_a_case_by_hand():
    # OOD scores sorted: 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 (n_ood = 10)
    ood = np.arange(1, 11) / 10
    ids = np.array([1.2, 0.95, 0.85, 0.85, 0.5, 1.0])
    correct = np.array([True, True, False, True, True, True])
    # fpr 0.1: k = 1, threshold 1.0 (the largest); above it: 1.2 (correct) -> 1 of 6
    assert ccr_at_fpr(ids, ood, correct, 0.1) == 1 / 6
    # fpr 0.2: k = 2, threshold 0.9; above: 1.2, 0.95, 1.0 (all correct) -> 3 of 6
    assert ccr_at_fpr(ids, ood, correct, 0.2) == 3 / 6
    # fpr 0.25: k = ceil(2.5) = 3, threshold 0.8; above: 1.2, 0.95, 0.85 (wrong), 0.85, 1.0 -> 4 of 6
    assert ccr_at_fpr(ids, ood, correct, 0.25) == 4 / 6
    # 1e-4 with 10 OOD images: k = 1, as at 0.1 (OpenOOD's rule; said in the docstring)
    assert ccr_at_fpr(ids, ood, correct, 1e-4) == 1 / 6
    # fpr 1: k = 10, threshold 0.1: every ID image above it; CCR = the accuracy
    assert ccr_at_fpr(ids, ood, correct, 1.0) == 5 / 6
    # an ID score equal to the threshold is not accepted (strictly above)
    assert ccr_at_fpr([1.0], ood, [True], 0.1) == 0.0


def test_column_names_and_refusals():
    assert [ccr_column(f) for f in CCR_FPRS] == ["ccr@1e-4", "ccr@1e-3", "ccr@1e-2", "ccr@1e-1"]
    for bad in (0, -0.1, 1.5, True, "0.1"):
        with pytest.raises(InputError, match="fpr must be in"):
            ccr_at_fpr([1.0], [0.0], [True], bad)
    with pytest.raises(InputError, match="id_correct holds 1 values for 2"):
        ccr_at_fpr([1.0, 2.0], [0.0], [True], 0.1)
    with pytest.raises(InputError, match="boolean"):
        ccr_at_fpr([1.0], [0.0], [1], 0.1)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(ccr_at_fpr([1.0], [], [True], 0.1))
