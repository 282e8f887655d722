"""Set-up inputs a model can make for a stream method: TANL's noise-image features, made by
evaluate_stream from the VLM when the caller gives none, equal to encoding TANL's noise pixels directly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import negvocab
from negvocab.core.errors import InputError
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.evaluation.stream_inputs import noise_image_features, stream_setup_inputs
from negvocab.scoring.stream import StreamMethod, make_stream, run_stream
from negvocab.scoring.tanl import noise_pixels


@pytest.fixture(scope="module")
def rw(tiny):
    return negvocab.VLM("ViT-B-32", random_weights=True, device="cpu", cache_dir=tiny / "cache")


def test_noise_features_are_the_model_on_tanl_noise_pixels(rw):
    got = noise_image_features(rw, seed=2)
    with torch.inference_mode():
        want = F.normalize(rw.model.encode_image(noise_pixels(2)).float(), dim=-1).numpy()
    assert got.shape == (15, rw.dim)
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)
    assert not np.allclose(got, noise_image_features(rw, seed=3))  # the seed draws other noise


def test_evaluate_stream_makes_them_from_the_vlm(rw, tiny):
    id_set, ood_set = negvocab.open_image_set(tiny / "id"), negvocab.open_image_set(tiny / "ood")
    classes = negvocab.read_id_classes(tiny / "classes.txt")
    id_emb = rw.encode_text(list(classes.names), "single", pos="n")
    corpus = rw.encode_text(["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "lamp", "river"], "single")
    params = {"active_size": 5, "queue_length": 4, "seed": 1}
    ev = evaluate_stream(
        "tanl", id_set, {"ood": ood_set}, id_emb, corpus, vlm=rw, stream_batch=3, order="given", params=params, n_boot=0
    )
    assert ev.rows[0]["test_time"] and ev.rows[0]["method"] == "tanl"
    method = make_stream("tanl", params).setup(id_emb, corpus, noise_images=noise_image_features(rw, seed=1))
    x = np.concatenate([rw.encode_images(id_set).embeddings, rw.encode_images(ood_set).embeddings])
    want = run_stream(method, x, stream_batch=3, order="given").scores
    got = np.concatenate([ev.scores["ood"]["id"], ev.scores["ood"]["ood"]])
    np.testing.assert_array_equal(got, want)


def test_what_no_model_can_make_is_named():
    class Needs(StreamMethod):
        inputs = ("depth_maps",)

    m = Needs()
    assert stream_setup_inputs(m, None, {"x": 1}) == {"x": 1}  # without a VLM: as given
    with pytest.raises(InputError, match="depth_maps"):
        stream_setup_inputs(m, object())  # type: ignore[arg-type]
