"""``evaluate_vocabularies`` and ``sweep_vocabulary`` with a plug-in's method (tests/plugins/toy_method.py),
on the stand-in model of test_evaluate, against the toy formula by hand."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins
from negvocab.evaluation import sweeps
from tests.evaluation.test_evaluate import FakeVLM, _vec, classes, sets  # noqa: F401  (fixtures)
from tests.plugins import toy_method as T


@pytest.fixture(scope="module", autouse=True)
def plugin():
    load_plugins(["tests.plugins.toy_method"])


def test_evaluate_and_sweep_a_plugin_method(sets, classes):  # noqa: F811
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(12)], source="file")
    ev = negvocab.evaluate_vocabularies(
        FakeVLM(), *sets, {"v": vocab}, ["toymargin", "mcm"], id_classes=classes, templates="single",
        params={"margin": 0.25, "tau": 0.05}, n_boot=0,
    )  # fmt: skip
    imgs = np.stack([_vec(p) for p in sets[0].paths + sets[1].paths])
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    neg = np.stack([_vec(f"single:{x}") for x in vocab.labels])
    want = T.reference(imgs, cls, neg, 0.25)
    got = np.r_[ev.scores["toymargin@v"]["id"], ev.scores["toymargin@v"]["ood"]]
    np.testing.assert_allclose(got, want, atol=1e-12)
    row = ev.rows[0]
    assert (row["method"], row["vocabulary"], row["params"]) == ("toymargin", "v", {"margin": 0.25})
    assert row["fpr"] == pytest.approx(negvocab.metrics.fpr_at_tpr(want[:30], want[30:]))
    res = sweeps.sweep_vocabulary(
        FakeVLM(), *sets, vocab, "4,12", method="toymargin", id_classes=classes, templates="single",
        params={"margin": 0.25}, n_boot=0, order="given",
    )  # fmt: skip
    by_m = {r["M"]: r for r in res.rows}
    s4 = T.reference(imgs, cls, neg[:4], 0.25)
    assert by_m[4]["auroc"] == pytest.approx(negvocab.metrics.auroc(s4[:30], s4[30:]))
    with pytest.raises(InputError, match="methods toymargin need a vocabulary"):
        negvocab.evaluate_vocabularies(FakeVLM(), *sets, {}, ["toymargin"], id_classes=classes)
