"""The adapters' core: ID prompts and negatives embedded once with the model, batches scored as negvocab.score does."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.adapters.zeroshot import ZeroShot, as_id_classes, as_vocabulary
from negvocab.core.errors import InputError
from tests.adapters.conftest import ID, NEG


def _features(vlm, x):
    with torch.no_grad():
        g = vlm.model.encode_image(x).double()
    return (g / g.norm(dim=-1, keepdim=True)).float().numpy()


@pytest.mark.parametrize("method", ["neglabel", "eoe", "mcm", "energy", "gen"])
def test_scores_equal_negvocab_score_on_the_same_embeddings(vlm, batches, method):
    x = batches[0]
    zs = ZeroShot(vlm, method, id_classes=ID, vocabulary=NEG, templates="single")
    g, local = zs.features(x)
    assert local is None
    np.testing.assert_allclose(g.numpy(), _features(vlm, x), atol=1e-5)
    id_emb, neg_emb = vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single")
    scale = (
        {"logit_scale": float(vlm.model.logit_scale.detach().exp())} if method in ("energy", "gen") else {}
    )  # the model's own
    want = negvocab.score(method, _features(vlm, x), id_emb, neg_emb, **scale)
    np.testing.assert_allclose(zs.score_features(g).numpy(), want, rtol=1e-5, atol=1e-9)


def test_the_baselines_take_the_models_logit_scale_unless_given(vlm):
    """open_clip initialises logit_scale to log(1/0.07); CLIP's released weights have 100."""
    assert ZeroShot(vlm, "msp", id_classes=ID).params["logit_scale"] == pytest.approx(1 / 0.07, rel=1e-6)
    assert ZeroShot(vlm, "msp", id_classes=ID, logit_scale=100.0).params["logit_scale"] == 100.0
    assert "logit_scale" not in ZeroShot(vlm, "mcm", id_classes=ID).params


def test_glmcm_takes_the_patch_features(vlm, batches):
    zs = ZeroShot(vlm, "glmcm", id_classes=ID, templates="single", lam=0.5)
    g, local = zs.features(batches[0])
    assert local is not None and local.shape[:1] == (6,)
    want = negvocab.score("glmcm", g.numpy(), vlm.encode_text(ID, "single", pos="n"), local=local.numpy(), lam=0.5)
    np.testing.assert_allclose(zs.score_features(g, local).numpy(), want, rtol=1e-5)
    with pytest.raises(InputError, match="glmcm needs the patch features"):
        zs.score_features(g)


def test_inputs_are_checked_in_one_line(vlm, tmp_path):
    with pytest.raises(InputError, match="neglabel needs a negative vocabulary"):
        ZeroShot(vlm, "neglabel", id_classes=ID)
    with pytest.raises(InputError, match=r"neglabel: unexpected parameter\(s\) T"):
        ZeroShot(vlm, "neglabel", id_classes=ID, vocabulary=NEG, T=1.0)
    with pytest.raises(InputError, match="unknown method 'nope'"):
        ZeroShot(vlm, "nope")
    with pytest.raises(InputError, match="not one string"):
        as_id_classes("goldfish")
    assert len(as_id_classes(None).names) == 1000
    (tmp_path / "neg.txt").write_text("sofa\nlamp\n")
    assert as_vocabulary(tmp_path / "neg.txt").labels == ["sofa", "lamp"] and as_vocabulary(["a", "b"]).labels == [
        "a",
        "b",
    ]


def test_parameters_change_and_are_checked(vlm, batches):
    zs = ZeroShot(vlm, "neglabel", id_classes=ID, vocabulary=NEG, templates="single", groups=3)
    g, _ = zs.features(batches[1])
    assert zs.hyperparameters["groups"] == 3 and zs.hyperparameters["tau"] == 0.01
    zs.set_params(tau=0.05)
    want = negvocab.score("neglabel", g.numpy(), zs.id_emb.numpy(), zs.neg_emb.numpy(), groups=3, tau=0.05)
    np.testing.assert_allclose(zs.score_features(g).numpy(), want, rtol=1e-6)
    with pytest.raises(InputError, match="tau must be a positive number"):
        zs.set_params(tau=-1.0)
    assert zs.classify(g).tolist() == (g @ zs.id_emb.T).argmax(-1).tolist()
