"""The pytorch-ood detectors against the real pytorch-ood package (0.4.0): its Detector API, its sign, its
own MCM detector on the same embeddings, and its OODMetrics on our scores against our metrics (the anchor)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.errors import InputError
from negvocab.scoring import metrics as M
from tests.adapters.conftest import ID, NEG
from tests.scoring.reference import unit

api = pytest.importorskip("pytorch_ood.api")
ood_detector = pytest.importorskip("pytorch_ood.detector")
ood_metrics = pytest.importorskip("pytorch_ood.metrics")
from negvocab.adapters.pytorch_ood import EOEDetector, GLMCMDetector, MCMDetector, NegLabelDetector, NegvocabDetector  # noqa: E402


@pytest.mark.parametrize(("cls", "kw"), [(NegLabelDetector, {"vocabulary": NEG, "groups": 4}),
                                         (EOEDetector, {"vocabulary": NEG}),
                                         (MCMDetector, {}), (GLMCMDetector, {"lam": 0.5})])  # fmt: skip
def test_detectors_are_pytorch_ood_detectors_with_its_sign(vlm, batches, cls, kw):
    det = cls(vlm, id_classes=ID, templates="single", **kw)
    assert isinstance(det, api.Detector) and det.fit(None) is det and not det.requires_fit
    x = batches[0]
    out = det(x)  # Detector.__call__ -> predict
    g, local = det.zeroshot.features(x)
    params = {k: v for k, v in kw.items() if k != "vocabulary"}
    neg = vlm.encode_text(NEG, "single") if "vocabulary" in kw else None
    ours = negvocab.score(
        cls.method,
        g.numpy(),
        vlm.encode_text(ID, "single", pos="n"),
        neg,
        **({"local": local.numpy()} if local is not None else {}),
        **params,
    )
    np.testing.assert_allclose(out.numpy(), -ours, rtol=1e-5)  # outlier score = -(negvocab score)
    if cls is not GLMCMDetector:
        np.testing.assert_allclose(det.predict_features(g).numpy(), -ours, rtol=1e-5)


def test_mcm_equals_pytorch_oods_own_mcm(vlm, batches):
    """pytorch-ood's MCM (FeaturesDetector over text embeddings) on the same features and prompts."""
    det = MCMDetector(vlm, id_classes=ID, templates="single", T=0.5)
    g, _ = det.zeroshot.features(batches[1])
    theirs = ood_detector.MCM(None, text_embeddings=det.zeroshot.id_emb, temperature=0.5).predict_features(g)
    np.testing.assert_allclose(det.predict_features(g).numpy(), theirs.double().numpy(), rtol=1e-5)


def test_baselines_by_name_equal_pytorch_oods_logit_detectors(vlm, batches):
    g, _ = NegvocabDetector(vlm, "msp", id_classes=ID, templates="single").zeroshot.features(batches[0])
    for method, theirs in (
        ("msp", ood_detector.MaxSoftmax(None)),
        ("energy", ood_detector.EnergyBased(None)),
        ("maxlogit", ood_detector.MaxLogit(None)),
    ):
        det = NegvocabDetector(vlm, method, id_classes=ID, templates="single")
        logits = det.zeroshot.params["logit_scale"] * g.double() @ det.zeroshot.id_emb.double().T  # the model's scale
        # ours: float32 cosines x 100 (an ulp of a cosine is 6e-8, x 100); theirs here: float64 logits
        np.testing.assert_allclose(
            det.predict_features(g).numpy(), theirs.predict_logits(logits).numpy(), rtol=1e-5, atol=2e-5
        )


def test_hyperparameters(vlm, batches):
    det = NegLabelDetector(vlm, id_classes=ID, vocabulary=NEG, templates="single")
    assert det.get_hyperparameters() == {"tau": 0.01, "groups": 100, "grouping": "stratified", "seed": 0, "topk": None}
    g, _ = det.zeroshot.features(batches[0])
    det.set_hyperparameters(tau=0.05, groups=3)
    want = negvocab.score(
        "neglabel", g.numpy(), det.zeroshot.id_emb.numpy(), det.zeroshot.neg_emb.numpy(), tau=0.05, groups=3
    )
    np.testing.assert_allclose(det.predict_features(g).numpy(), -want, rtol=1e-6)
    with pytest.raises(ValueError, match="Unknown hyperparameter"):
        det.set_hyperparameters(T=1.0)
    with pytest.raises(InputError, match="groups must be >= 1"):
        det.set_hyperparameters(groups=0)


@pytest.mark.parametrize("ties", [False, True])
def test_oodmetrics_on_our_scores_equal_our_metrics(ties):
    """The anchor: pytorch-ood's OODMetrics (OOD positive, outlier scores) fed -S, accumulated over batches,
    against negvocab's AUROC, AUPR-In/Out and FPR@95 under the openood convention on S."""
    rng = np.random.default_rng(1)
    idt, neg = unit(rng, 10, 16), unit(rng, 40, 16)
    img_id, img_ood = unit(rng, 300, 16), unit(rng, 200, 16)
    s_id, s_ood = (negvocab.score("neglabel", x, idt, neg, groups=5) for x in (img_id, img_ood))
    if ties:  # saturated scores tie often: round to make runs of ties
        s_id, s_ood = np.round(s_id, 2), np.round(s_ood, 2)
    metrics = ood_metrics.OODMetrics()
    for s, label in ((s_id[:150], 0), (s_ood[:120], -1), (s_id[150:], 3), (s_ood[120:], -1)):  # batches, ID labels >= 0
        metrics.update(-torch.from_numpy(s), torch.full((len(s),), label))
    theirs = metrics.compute()
    ours = M.evaluate(
        s_id, s_ood, tpr=0.95, convention="openood", n_boot=0
    )  # AUPR: the trapezoid, as pytorch-ood and OpenOOD
    assert theirs["AUROC"] == pytest.approx(ours["auroc"], abs=1e-12) == M.auroc(s_id, s_ood)
    assert theirs["AUPR-IN"] == pytest.approx(ours["aupr_in"], abs=1e-12) == M.aupr_in(s_id, s_ood, method="trapezoid")
    assert theirs["AUPR-OUT"] == pytest.approx(ours["aupr_out"], abs=1e-12)
    assert (
        theirs["FPR95TPR"]
        == pytest.approx(ours["fpr"], abs=1e-12)
        == M.fpr_at_tpr(s_id, s_ood, 0.95, convention="openood")
    )
    # under the paper's convention AUPR is average precision (sklearn): a different number, said in docs/methods.md
    assert M.aupr_in(s_id, s_ood) != pytest.approx(theirs["AUPR-IN"], abs=1e-6)
