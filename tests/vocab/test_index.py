"""knn: FAISS and the torch fallback give the same exact neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.vocab.index import have_faiss, have_faiss_gpu, knn


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def check_same(D1, I1, D2, I2, q, x):
    assert D1.shape == D2.shape and I1.dtype == I2.dtype == np.int64 and D1.dtype == D2.dtype == np.float32
    np.testing.assert_allclose(D1, D2, atol=1e-6)
    differ = I1 != I2
    if differ.any():  # only exact ties may swap places
        sims = np.einsum("nd,nkd->nk", q.astype(np.float64), x[I1].astype(np.float64))
        sims2 = np.einsum("nd,nkd->nk", q.astype(np.float64), x[I2].astype(np.float64))
        np.testing.assert_allclose(sims[differ], sims2[differ], atol=1e-6)


@pytest.mark.skipif(not have_faiss(), reason="faiss not installed")
@pytest.mark.parametrize("k,batch", [(1, 65536), (10, 7), (51, 100)])
def test_faiss_equals_torch(k, batch):
    rng = np.random.default_rng(k)
    q, x = unit(rng, 333, 48), unit(rng, 1000, 48)
    D1, I1 = knn(q, x, k, backend="faiss", batch_size=batch)
    D2, I2 = knn(q, x, k, backend="torch", batch_size=batch)
    check_same(D1, I1, D2, I2, q, x)
    assert (np.diff(D1, axis=1) <= 0).all()  # descending
    # against the direct float64 top-k
    sims = q.astype(np.float64) @ x.astype(np.float64).T
    top = -np.sort(-sims, axis=1)[:, :k]
    np.testing.assert_allclose(D1, top, atol=1e-6)


def test_torch_fallback_when_faiss_is_missing(monkeypatch):
    import negvocab.vocab.index as index

    rng = np.random.default_rng(0)
    q, x = unit(rng, 50, 16), unit(rng, 80, 16)
    D_auto, I_auto = knn(q, x, 5)
    monkeypatch.setattr(index, "have_faiss", lambda: False)
    D, I = knn(q, x, 5)
    check_same(D, I, D_auto, I_auto, q, x)
    with pytest.raises(InputError, match="faiss is not installed"):
        knn(q, x, 5, backend="faiss")


def test_torch_backend_takes_device_auto():
    rng = np.random.default_rng(2)
    q, x = unit(rng, 30, 16), unit(rng, 40, 16)
    D1, I1 = knn(q, x, 5, device="auto", backend="torch")
    D2, I2 = knn(q, x, 5, device="cpu", backend="torch")
    np.testing.assert_array_equal(I1, I2)


def test_bad_arguments():
    x = np.eye(4, dtype=np.float32)
    with pytest.raises(InputError, match="between 1 and"):
        knn(x, x, 5)
    with pytest.raises(InputError, match="dimension"):
        knn(x, np.eye(3), 1)
    with pytest.raises(InputError, match="2-d"):
        knn(x[0], x, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["faiss", "torch"])
def test_knn_on_cuda_equals_cpu(backend):
    if backend == "faiss" and not have_faiss_gpu():
        pytest.skip("faiss without GPU support here: knn would search on the CPU")
    rng = np.random.default_rng(1)
    q, x = unit(rng, 2000, 64), unit(rng, 1000, 64)
    D1, I1 = knn(q, x, 51, device="cuda", backend=backend, batch_size=512)
    D2, I2 = knn(q, x, 51, device="cpu", backend="torch")
    check_same(D1, I1, D2, I2, q, x)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_rows_are_refused_not_ranked(bad):
    from negvocab.builders.wordnet import farthest_first

    rng = np.random.default_rng(3)
    cand, ids = unit(rng, 6, 8), unit(rng, 4, 8)
    cand[4, 2] = bad
    with pytest.raises(InputError, match=r"candidate_emb: 1 of 6 rows contain NaN or inf \(first: row 4\)"):
        farthest_first(cand, ids)
    with pytest.raises(InputError, match=r"keys: 1 of 6 rows"):
        knn(ids, cand, 2)
    ids[0, 0] = bad
    with pytest.raises(InputError, match=r"id_emb: 1 of 4 rows"):
        farthest_first(np.nan_to_num(cand), ids)


def test_k_is_an_integer_of_any_kind():
    rng = np.random.default_rng(4)
    q, x = unit(rng, 3, 8), unit(rng, 5, 8)
    D, I = knn(q, x, np.int64(2))
    np.testing.assert_array_equal(I, knn(q, x, 2)[1])
    for bad in (2.5, "2"):
        with pytest.raises(InputError, match="k must be an integer"):
            knn(q, x, bad)


def test_device_auto_puts_the_index_on_the_gpu_when_faiss_can(monkeypatch):
    # faiss-gpu cannot run here: the GPU side is faked, and the test checks that device="auto"
    # takes it, as device=None does (it searched on the CPU before)
    faiss = pytest.importorskip("faiss")
    import negvocab.vocab.index as index_mod

    moved: list[int] = []
    monkeypatch.setattr(index_mod, "have_faiss_gpu", lambda: True)
    monkeypatch.setattr(index_mod, "_gpu_resources", lambda gpu_id: None)
    monkeypatch.setattr(
        faiss, "index_cpu_to_gpu", lambda res, gpu_id, index: moved.append(gpu_id) or index, raising=False
    )
    q = np.eye(3, dtype=np.float32)
    for device in ("auto", None):
        D, I = knn(q, q, k=1, device=device)
        assert I.ravel().tolist() == [0, 1, 2]
    assert moved == [0, 0]
    knn(q, q, k=1, device="cpu")
    assert moved == [0, 0]
