"""The pytorch-ood adapter hosts test-time methods: its batches form one stream, scored as run_stream
scores it; reset() starts a new stream; TANL's noise images are made by the input registry from the
model, as the evaluation makes them."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.scoring.tanl import noise_image_features
from tests.adapters.conftest import ID, NEG

pytest.importorskip("pytorch_ood.api")
from negvocab.adapters.pytorch_ood import NegvocabDetector


def _features(vlm, batches):
    det = NegvocabDetector(vlm, "mcm", id_classes=ID, templates="single")
    return np.concatenate([det.zeroshot.features(b)[0].numpy() for b in batches])


@pytest.mark.parametrize(
    ("method", "params", "inputs"),
    [("adaneg", {"adaneg_memory": 3}, lambda vlm, seed: {}),
     ("tanl", {"active_size": 6, "queue_length": 4, "seed": 2},
      lambda vlm, seed: {"noise_images": noise_image_features(vlm, seed)})],
)  # fmt: skip
def test_the_adapter_scores_its_batches_as_one_stream(vlm, batches, method, params, inputs):
    det = NegvocabDetector(vlm, method, id_classes=ID, vocabulary=NEG, templates="single", **params)
    assert det.zeroshot.test_time and "seed" not in det.hyperparameter_space
    g = _features(vlm, batches)  # 11 images
    torch = pytest.importorskip("torch")
    got = np.concatenate([det.predict_features(torch.from_numpy(g[i : i + 4])).numpy() for i in range(0, 11, 4)])

    ref = negvocab.make_stream(method, params).setup(
        vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single"), **inputs(vlm, params.get("seed", 0))
    )
    want = negvocab.run_stream(ref, g, stream_batch=4, order="given").scores
    np.testing.assert_allclose(got, -want, rtol=1e-5, atol=1e-12)  # outlier score = -(negvocab score)

    state = det.zeroshot.detector
    assert (state.n_seen, state.n_batches) == (11, 3)  # one stream, not three fresh ones
    det.reset()
    assert (state.n_seen, state.n_batches) == (0, 0)
    np.testing.assert_array_equal(det.predict_features(torch.from_numpy(g[:4])).numpy(), got[:4])


def test_changing_a_hyperparameter_starts_a_new_stream(vlm, batches):
    torch = pytest.importorskip("torch")
    det = NegvocabDetector(vlm, "adaneg", id_classes=ID, vocabulary=NEG, templates="single", adaneg_memory=3)
    g = torch.from_numpy(_features(vlm, batches))
    first = det.predict_features(g[:4]).numpy()
    det.predict_features(g[4:])
    det.set_hyperparameters(adaneg_lambda=0.1)  # the default again: only the stream is new
    np.testing.assert_array_equal(det.predict_features(g[:4]).numpy(), first)
