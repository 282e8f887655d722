"""The pytorch-ood detectors against the real pytorch-ood package (0.4.0): its Detector API, its sign, its
own MCM detector on the same embeddings, and its OODMetrics on our scores against our metrics (the anchor)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import metrics as M
from negvocab.scoring.providers import unmade_inputs
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
    # what the search varies, no seed and no topk; the same keys set_hyperparameters takes
    assert det.get_hyperparameters() == {"tau": 0.01, "groups": 100, "grouping": "stratified"}
    assert set(det.get_hyperparameters()) == set(det.hyperparameter_space)
    with pytest.raises(ValueError, match="Unknown hyperparameter"):
        det.set_hyperparameters(seed=1)
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


def test_scores_are_float32_on_the_inputs_device_and_to_moves_the_model(vlm, batches):
    det = NegLabelDetector(vlm, id_classes=ID, vocabulary=NEG, templates="single", groups=4)
    out = det(batches[0])
    assert out.dtype == torch.float32 and out.device == batches[0].device
    g, _ = det.zeroshot.features(batches[0])
    zs = det.zeroshot
    want = -negvocab.score("neglabel", g.numpy(), zs.id_emb.numpy(), zs.neg_emb.numpy(), groups=4)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    assert out.tolist() == (-zs.score_features(g)).float().tolist()  # the float64 scores, rounded once
    assert det.predict_features(g).dtype == torch.float32
    assert det.to("cpu") is det and det.device == torch.device("cpu")
    assert all(p.device.type == "cpu" for p in vlm.model.parameters())


@pytest.mark.gpu
def test_to_cuda_moves_the_model_and_scores_come_back_on_the_inputs_device(vlm, batches):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    det = MCMDetector(vlm, id_classes=ID, templates="single")
    cpu = det(batches[0])
    try:
        det.to("cuda")
        assert all(p.device.type == "cuda" for p in vlm.model.parameters())
        out = det(batches[0].cuda())
        assert out.device.type == "cuda" and out.dtype == torch.float32
        torch.testing.assert_close(out.cpu(), cpu, rtol=1e-4, atol=1e-6)
    finally:
        det.to("cpu")


def test_info_names_each_methods_paper():
    for cls, year, venue in ((NegLabelDetector, 2024, "ICLR"), (EOEDetector, 2024, "ICML"),
                             (MCMDetector, 2022, "NeurIPS"), (GLMCMDetector, 2023, "arXiv")):  # fmt: skip
        assert isinstance(cls.info, api.DetectorInfo) and (cls.info.paper.year, cls.info.paper.venue) == (year, venue)
        assert api.Task.CLASSIFICATION in cls.info.tasks


@pytest.mark.parametrize("method", negvocab.list_methods())
def test_every_detector_names_its_paper_as_the_registry_and_pytorch_ood_do(vlm, method):
    """``info`` on every instance: pytorch-ood's own record for the methods it has (the same Paper object
    its detector carries), else the registry's citation (title, year and any arXiv id)."""
    from negvocab.scoring.methods import get_method

    kw = {"vocabulary": NEG} if get_method(method).needs_negatives else {}
    unmade = unmade_inputs(negvocab.make_detector(method).inputs)
    if unmade:  # a set-up input only its caller can give (ANTS's model provider): one line naming it
        with pytest.raises(InputError, match=f"needs the set-up input\\(s\\) {unmade[0]}"):
            NegvocabDetector(vlm, method, id_classes=ID, templates="single", **kw)
        return
    det = NegvocabDetector(vlm, method, id_classes=ID, templates="single", **kw)
    paper, citation = det.info.paper, get_method(method).paper
    assert isinstance(det.info, api.DetectorInfo) and api.Task.CLASSIFICATION in det.info.tasks
    own = {"msp": "MaxSoftmax", "maxlogit": "MaxLogit", "energy": "EnergyBased", "gen": "GEN"}.get(method)
    if own is not None:
        assert paper == getattr(ood_detector, own).info.paper
    if not re.search(r"\b(19|20)\d\d\b|arXiv:", citation or ""):  # a plug-in's own words (the toy's): no paper
        assert own is None and paper is None
        return
    assert paper.title.casefold() in citation.casefold()
    arxiv = citation.split("arXiv:")[1].split(")")[0] if "arXiv:" in citation else None
    assert str(paper.year) in citation or (arxiv and paper.year == 2000 + int(arxiv[:2]))
    if arxiv:
        assert paper.url.endswith(arxiv)


def test_a_batch_the_model_cannot_take_is_one_line_naming_the_preprocessing(vlm, batches):
    det = MCMDetector(vlm, id_classes=ID, templates="single")
    x = batches[0]
    bad = {
        "uint8 pixels": ((x * 50 + 128).clamp(0, 255).to(torch.uint8), "torch.uint8 pixels, not floats"),
        "wrong size": (torch.nn.functional.interpolate(x, size=64), r"shape \[6, 3, 64, 64\], not \[B, 3, 32, 32\]"),
        "one image": (x[0], r"shape \[3, 32, 32\], not \[B, 3, 32, 32\]"),
        "channels last": (x.permute(0, 2, 3, 1), r"shape \[6, 32, 32, 3\]"),
        "numpy": (x.numpy(), "a ndarray, not a tensor"),
    }
    for images, msg in bad.values():
        with pytest.raises(InputError, match=msg) as err:
            det(images)
        assert "vlm.preprocess" in str(err.value) and "\n" not in str(err.value)
    det(x)  # a right batch still scores


def test_pytorch_oods_grid_search_tries_several_candidates_with_the_default_grid(vlm, batches):
    from pytorch_ood.utils import GridSearch
    from sklearn.metrics import roc_auc_score

    det = EOEDetector(vlm, id_classes=ID, vocabulary=NEG, templates="single", beta=0.5)
    assert det.hyperparameter_space == {"beta": [0.25, 0.5, 1.0], "T": [0.5, 1.0, 2.0]}  # around the values given
    x = torch.cat(batches)
    y = torch.tensor([0] * len(batches[0]) + [-1] * len(batches[1]))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    search = GridSearch(det, None, loader, device="cpu")
    best = search.run()
    assert len(search.results_) == 9 and det.get_hyperparameters() == best
    # each candidate's AUROC by hand: sklearn on negvocab's EOE scores, OOD the positive class of pytorch-ood
    g, _ = det.zeroshot.features(x)
    id_emb, neg_emb = vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single")
    for r in search.results_:
        s = negvocab.score("eoe", g.numpy(), id_emb, neg_emb, **r["params"])
        assert r["score"] == pytest.approx(roc_auc_score(y.numpy() < 0, -s), abs=1e-6)


def test_the_grid_skips_seeds_and_the_models_scale_and_keeps_integers_in_their_limits():
    from negvocab.adapters.zeroshot import search_grid

    grid = search_grid("neglabel", {"tau": 0.01, "groups": 1, "grouping": "random", "seed": 3})
    assert grid == {"tau": [0.005, 0.01, 0.02], "groups": [1, 2], "grouping": ["random", "stratified", "neglabel"]}
    assert search_grid("gen", {"logit_scale": 100.0, "gamma": 0.1, "top_classes": 100}) == {
        "gamma": [0.05, 0.1, 0.2], "top_classes": [50, 100, 200]}  # fmt: skip
