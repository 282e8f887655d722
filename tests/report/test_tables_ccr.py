"""ID accuracy and CCR as table metrics (part "ccr" of issue 31): a full-spectrum run's rows tabulated by
method x OOD set hold their stored values; the paired bold does not test them (they need each ID image's
classification, which the per-image scores do not hold) and the caption says so."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.evaluation.compare import paired_bootstrap
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.report.tables import build_table
from tests.evaluation.test_evaluate import FakeVLM


def _rows():
    classes = negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:3]))
    labels = [classes.names[i % 3] for i in range(30)]
    id_set = ImageSet("id", [f"/id/{i}.png" for i in range(30)], [f"i{i}" for i in range(30)], labels,
                      {"csid": {"imagenet-r": 10}})  # fmt: skip
    oods = {n: ImageSet(n, [f"/{n}/{i}.png" for i in range(20)], [f"{n}{i}" for i in range(20)]) for n in ("a", "b")}
    vocab = negvocab.Vocabulary.from_labels([f"neg{i}" for i in range(12)], source="file")
    ev = evaluate_vocabularies(
        FakeVLM(), id_set, oods, {"v": vocab}, ["neglabel", "mcm"], id_classes=classes, templates="single", n_boot=0
    )
    return ev.rows, ev.scores


def test_ccr_and_id_accuracy_tabulate_their_stored_values_without_bold():
    rows, scores = _rows()
    table = build_table(
        rows, metric=["ccr@1e-1", "id_accuracy"], rows_by="method", cols_by="ood_set",
        scores=lambda model, vocab, method: None, bold="paired",
    )  # fmt: skip
    for i, method in enumerate(table.index):
        for j, ood in enumerate(table.columns):
            row = next(r for r in rows if r["method"] == method and r["ood_set"] == ood)
            assert table.values[i, j, 0] == row["ccr@1e-1"] and table.values[i, j, 1] == row["id_accuracy"]
    assert not table.bold.any()
    assert "CCR@1E-1" in table.to_markdown() and "ID acc." in table.to_markdown()
    assert "CCR@1E-1 is not tested (it needs each ID image's classification)" in table.full_caption()
    # the paired test itself names the metrics it can compute from scores
    s = scores["mcm"]
    with pytest.raises(InputError, match="'ccr@1e-1' is not a function of the scores; choose one of fpr, auroc"):
        paired_bootstrap(s["id"], s["ood"], s["id"], s["ood"], metric="ccr@1e-1")
    assert np.isfinite(table.values).all()
