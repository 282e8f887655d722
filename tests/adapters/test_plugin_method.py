"""A plug-in's method (tests/plugins/toy_method.py) through the adapters: the pytorch-ood detector and
the OpenOOD-style postprocessor serve it by name, against the toy formula by hand on the same features."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins
from tests.adapters.conftest import ID, NEG
from tests.plugins import toy_method as T

api = pytest.importorskip("pytorch_ood.api")
from negvocab.adapters.pytorch_ood import NegvocabDetector  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def plugin():
    load_plugins(["tests.plugins.toy_method"])


def test_the_pytorch_ood_detector_serves_a_plugin_method(vlm, batches):
    det = NegvocabDetector(vlm, "toymargin", id_classes=ID, vocabulary=NEG, templates="single", margin=0.4)
    assert isinstance(det, api.Detector) and det.get_hyperparameters() == {"margin": 0.4}
    x = batches[1]
    g, local = det.zeroshot.features(x)
    assert local is None  # the toy takes no patch features
    want = T.reference(g.numpy(), vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single"), 0.4)
    np.testing.assert_allclose(det.predict(x).numpy(), -want, rtol=0, atol=1e-6)  # outlier score = -score
    det.set_hyperparameters(margin=1.5)
    np.testing.assert_allclose(
        det.predict_features(g).numpy(),
        -T.reference(g.numpy(), det.zeroshot.id_emb.numpy(), det.zeroshot.neg_emb.numpy(), 1.5),
        atol=1e-6,
    )
    with pytest.raises(InputError, match="margin must be a positive number, got 0"):
        det.set_hyperparameters(margin=0)
    with pytest.raises(InputError, match="toymargin needs a negative vocabulary"):
        NegvocabDetector(vlm, "toymargin", id_classes=ID, templates="single")


def test_the_openood_postprocessor_serves_a_plugin_method(vlm, batches):
    from types import SimpleNamespace

    import torch

    from negvocab.adapters.openood import NegvocabPostprocessor

    args = SimpleNamespace(
        method="toymargin", vocabulary=NEG, id_classes=ID, templates="single", params={"margin": 0.8}
    )
    post = SimpleNamespace(
        name="negvocab", APS_mode=True, postprocessor_args=args, postprocessor_sweep={"margin_list": [0.2, 0.8]}
    )
    pp = NegvocabPostprocessor(SimpleNamespace(postprocessor=post), vlm=vlm)
    pp.setup(vlm.model)
    x = torch.cat(batches)
    g, _ = pp.zeroshot.features(x)  # type: ignore[union-attr]
    id_emb, neg_emb = vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single")
    _, conf = pp.postprocess(vlm.model, x)
    np.testing.assert_allclose(conf.numpy(), T.reference(g.numpy(), id_emb, neg_emb, 0.8), atol=1e-6)
    pp.set_hyperparam([0.2])
    assert pp.get_hyperparam() == [0.2]
    np.testing.assert_allclose(
        pp.postprocess(vlm.model, x)[1].numpy(), T.reference(g.numpy(), id_emb, neg_emb, 0.2), atol=1e-6
    )
