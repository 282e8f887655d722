"""The test-time methods compute where their embeddings are (as the batch scorers choose a device:
the device of the tensors given): the same stream from numpy arrays and from torch tensors on a
device gives the same scores, on the CPU here and on CUDA where a GPU exists."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from negvocab.scoring.stream import make_stream, run_stream

K, N, D = 12, 90, 16
NO_GPU = (
    "no CUDA device here: the CPU/GPU equality of the test-time methods runs on a GPU machine (scripts/gpu_check.sh)"
)
DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)]),
]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def world():
    """float64 embeddings shaped like CLIP's: ID images near their prompts, OOD images near some negatives."""
    rng = np.random.default_rng(3)
    ids, negs = _unit(rng.normal(size=(K, D))), _unit(rng.normal(size=(N, D)))
    near_id = _unit(ids[rng.integers(0, K, 40)] + 0.6 * rng.normal(size=(40, D)))
    near_neg = _unit(negs[rng.integers(0, 20, 40)] + 0.6 * rng.normal(size=(40, D)))
    noise = _unit(rng.normal(size=(15, D)) + 2.0 * rng.normal(size=(1, D)))
    return {"ids": ids, "negs": negs, "x": np.concatenate([near_id, near_neg]), "noise": noise}


def _run(name: str, world: dict, device: str | None) -> tuple[np.ndarray, dict]:
    on = (lambda a: torch.from_numpy(a).to(device)) if device else (lambda a: a)
    params = {"active_size": 30, "queue_length": 10} if name == "tanl" else {"adaneg_memory": 3, "adaneg_groups": 3}
    m = make_stream(name, **params)
    extra = {"noise_images": on(world["noise"])} if name == "tanl" else {}
    m.setup(on(world["ids"]), on(world["negs"]), **extra)
    res = run_stream(m, on(world["x"]), stream_batch=16, seed=4)
    return res.scores, res.state


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["tanl", "adaneg"])
def test_the_same_stream_scores_alike_on_the_device_of_its_embeddings(world, name, device):
    want, state = _run(name, world, None)
    got, got_state = _run(name, world, device)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert got_state == state  # the same queues / memory fill
    assert np.ptp(want) > 0.05  # scores that differ (a constant would pass the comparison)
