"""Stream (test-time) methods: the protocol of negvocab.scoring.stream, checked against hand loops."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring.methods import PARAMS, Param, get_method, unregister_method
from negvocab.scoring.stream import (
    StreamMethod,
    make_stream,
    register_stream_method,
    run_stream,
    stream_class,
    stream_order,
    stream_settings,
)


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


@pytest.fixture
def toy():
    """The toy plug-in registered (tests/plugins/toy_stream.py), removed again afterwards."""
    mod = importlib.import_module("tests.plugins.toy_stream")
    mod.register()
    yield mod
    unregister_method(mod.NAME, missing_ok=True)
    for p in mod.PARAMS:  # leave the registry as the other tests expect it
        PARAMS.pop(p.name, None)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    ids = _unit(rng.normal(size=(4, 6)))
    imgs = _unit(np.concatenate([ids[rng.integers(0, 4, 7)] + 0.3 * rng.normal(size=(7, 6)), rng.normal(size=(6, 6))]))
    return imgs, ids, _unit(rng.normal(size=(9, 6)))


def _hand_loop(imgs, ids, perm, batch_size, weight, threshold):
    """The toy, image by image in float64: returns the scores in stream order."""
    total, count, out = np.zeros(imgs.shape[1]), 0, []
    for start in range(0, len(perm), batch_size):
        batch = [imgs[j] for j in perm[start : start + batch_size]]
        scores = []
        for v in batch:
            s = max(sum(v[c] * t[c] for c in range(len(v))) for t in ids)
            if count:
                s -= weight * sum(v[c] * total[c] / count for c in range(len(v)))
            scores.append(s)
        for v, s in zip(batch, scores, strict=True):  # after the whole batch is scored
            if s < threshold:
                total, count = total + v, count + 1
        out += scores
    return np.array(out)


def test_the_toy_equals_a_hand_loop_in_stream_order_and_comes_back_in_row_order(toy, data):
    imgs, ids, _ = data
    m = make_stream("toy_stream", ood_weight=0.8, ood_threshold=0.6).setup(ids)
    res = run_stream(m, imgs, stream_batch=3, order="shuffled", seed=7)
    perm = np.random.default_rng(7).permutation(len(imgs))
    in_stream = _hand_loop(imgs, ids, perm, 3, 0.8, 0.6)
    expected = np.empty(len(imgs))
    for k, j in enumerate(perm):  # stream position k is row j
        expected[j] = in_stream[k]
    np.testing.assert_allclose(res.scores, expected, rtol=0, atol=1e-12)
    assert res.scores.dtype == np.float64
    assert res.stream.tolist() == perm.tolist()
    # the plausible wrong inversions give other numbers
    assert not np.allclose(res.scores, in_stream[perm]) and not np.allclose(res.scores, in_stream)
    assert res.state["ood_remembered"] > 0 and res.state["n_seen"] == len(imgs) and res.state["n_batches"] == 5
    assert res.provenance == {
        "method": "toy_stream",
        "order": "shuffled",
        "batch_size": 3,  # the record keeps its key
        "seed": 7,
        "n": len(imgs),
        "n_batches": 5,
    }


def test_a_stateless_method_scores_every_image_as_itself_whatever_the_order(toy, data):
    imgs, ids, _ = data
    m = make_stream("toy_stream", ood_weight=0.0).setup(ids)  # weight 0: the plain max cosine
    direct = (imgs @ ids.T).max(axis=1)
    for seed in (0, 1, 2):
        np.testing.assert_allclose(run_stream(m, imgs, stream_batch=4, seed=seed).scores, direct, atol=1e-12)


def test_another_seed_or_batch_size_gives_another_recorded_result(toy, data):
    imgs, ids, _ = data
    m = make_stream("toy-stream", {"ood_threshold": 0.6})
    m.setup(ids)
    a, b = run_stream(m, imgs, stream_batch=2, seed=0), run_stream(m, imgs, stream_batch=2, seed=1)
    assert not np.allclose(a.scores, b.scores)
    assert (a.provenance["seed"], b.provenance["seed"]) == (0, 1)
    again = run_stream(m, imgs, stream_batch=2, seed=0)  # run_stream starts from a fresh state
    np.testing.assert_array_equal(again.scores, a.scores)
    c = run_stream(m, imgs, stream_batch=5, seed=0)
    assert not np.allclose(a.scores, c.scores) and c.provenance["batch_size"] == 5


def test_given_order_with_one_batch_is_one_call(toy, data):
    imgs, ids, _ = data
    m = make_stream("toy_stream", ood_threshold=0.6).setup(ids)
    res = run_stream(m, imgs, stream_batch=len(imgs), order="given", seed=5)
    m.reset()
    np.testing.assert_array_equal(res.scores, m.score_batch(imgs))
    assert res.provenance["seed"] is None and res.provenance["n_batches"] == 1
    # in batches of 1 the later images see the earlier ones: not the same as one batch
    assert not np.allclose(run_stream(m, imgs, stream_batch=1, order="given").scores, res.scores)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"stream_batch": 0}, r"stream_batch must be an integer >= 1, got 0"),
        ({"stream_batch": 2.5}, r"stream_batch must be an integer >= 1, got 2.5"),
        ({"stream_batch": True}, r"stream_batch must be an integer >= 1, got True"),
        (
            {"stream_batch": 2, "order": "random"},
            r"unknown order 'random'; choose one of shuffled, given, id_first, ood_first",
        ),
        ({"stream_batch": 2, "seed": -1}, r"seed must be an integer >= 0, got -1"),
    ],
)
def test_stream_settings_are_checked_in_one_line(toy, data, kw, match):
    imgs, ids, _ = data
    m = make_stream("toy_stream").setup(ids)
    with pytest.raises(InputError, match=match) as e:
        run_stream(m, imgs, **kw)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match=r"n must be an integer >= 0"):
        stream_order(-3)


def test_batch_and_stream_methods_do_not_mix(toy, data):
    imgs, ids, _ = data
    for call, match in [
        (lambda: make_stream("mcm"), r"mcm is a batch method: score it with negvocab.score .*toy_stream"),
        (lambda: negvocab.score("toy_stream", imgs, ids), r"toy_stream is a test-time \(stream\) method"),
        (lambda: run_stream("toy_stream", imgs, stream_batch=2), r"run_stream takes a StreamMethod"),
        (lambda: make_stream("toy_stream", tau=0.1), r"toy_stream: unexpected parameter\(s\) tau"),
        (lambda: make_stream("toy_stream", ood_weight=-1.0), r"ood_weight must be a number >= 0, got -1.0"),
        (lambda: make_stream("toy_stream").score_batch(imgs), r"toy_stream is not set up"),
        (lambda: make_stream("toy_stream").setup(ids[:, :3]).score_batch(imgs), r"image_emb has dimension 6"),
    ]:
        with pytest.raises(InputError, match=match) as e:
            call()
        assert "\n" not in str(e.value)


def test_registration_is_in_the_one_registry_and_lazy_targets_resolve(toy):
    m = get_method("Toy-Stream")
    assert (m.name, m.kind, m.params) == ("toy_stream", "stream", ("ood_weight", "ood_threshold"))
    assert get_method("mcm").kind == "batch"
    register_stream_method(
        "toy_lazy", "tests.plugins.toy_stream:RunningMeanOOD", params=("ood_weight", "ood_threshold")
    )
    try:
        assert stream_class("toy_lazy") is toy.RunningMeanOOD
        with pytest.raises(InputError, match="'toy_lazy' is registered already"):
            register_stream_method("toy_lazy", toy.RunningMeanOOD)
    finally:
        unregister_method("toy_lazy")
    with pytest.raises(InputError, match=r"method 'toy_broken' stream .*has no 'NoSuchClass'"):
        register_stream_method("toy_broken", "tests.plugins.toy_stream:NoSuchClass")  # checked when registered
    with pytest.raises(InputError, match="is not a StreamMethod subclass"):
        register_stream_method("toy_wrong", dict)
    with pytest.raises(InputError, match=r"unknown parameter\(s\) nope"):
        register_stream_method("toy_wrong", toy.RunningMeanOOD, params=("nope",))
    # a refused entry leaves no parameter behind (everything is checked before anything is registered)
    with pytest.raises(InputError, match="registered already"):
        register_stream_method("mcm", toy.RunningMeanOOD, params=(Param("leak_p", float, 1.0, "d", "--leak-p"),))
    assert "leak_p" not in PARAMS and get_method("mcm").kind == "batch"


# ----------------------------------------------------------------------------------------------
# the authors' shapes: AdaNeg (a memory bank) and TANL (per-batch choice of negatives) fit as they are
# ----------------------------------------------------------------------------------------------
class AdaNegShaped(StreamMethod):
    """AdaNeg's shape (OpenOOD-VLM ttaprompt_postprocessor.py): a bank of ``cap`` slots per ID class and
    per negative label, initialised with the label's text embedding, filled from confident test images
    (ID-confident into its predicted class, OOD-confident into its predicted negative); the batch is
    written first, then scored against proxies = normalised mean of each bank. Not AdaNeg's maths."""

    def __init__(self, cap: int = 2, gate: float = 0.2) -> None:
        super().__init__(cap=cap, gate=gate)
        self.cap, self.gate = cap, gate

    def init_state(self) -> None:
        text = np.concatenate([self.id_emb, self.neg_emb])
        self.bank = np.zeros((len(text), 1 + self.cap, text.shape[1]))
        self.bank[:, 0] = text
        self.filled = np.ones(len(text), dtype=int)

    def _score(self, x: np.ndarray, labels: np.ndarray) -> np.ndarray:
        e = np.exp(x @ labels.T / 0.1)
        return e[:, : len(self.id_emb)].sum(1) / e.sum(1)

    def step(self, x: np.ndarray) -> np.ndarray:
        k = len(self.id_emb)
        vanilla = self._score(x, np.concatenate([self.id_emb, self.neg_emb]))
        for v, s in zip(x, vanilla, strict=True):
            if s > 1 - self.gate:
                slot = int(np.argmax(v @ self.id_emb.T))
            elif s < self.gate:
                slot = k + int(np.argmax(v @ self.neg_emb.T))
            else:
                continue
            if self.filled[slot] <= self.cap:  # a full bank keeps what it has
                self.bank[slot, self.filled[slot]] = v
                self.filled[slot] += 1
        proxies = _unit(self.bank.sum(1) / self.filled[:, None])
        return 0.5 * (vanilla + self._score(x, proxies))

    def summary(self) -> dict[str, int]:
        return {"bank_images": int(self.filled.sum() - len(self.filled))}


class TanlShaped(StreamMethod):
    """TANL's shape (OpenOOD-VLM activated_neg_postprocessor.py): the whole corpus as ``neg_emb``,
    noise-image features as a set-up input; queues of corpus activations of OOD-looking (seeded by
    the noise images) and ID-looking (seeded by the ID prompts) images; per batch the ``k`` corpus
    labels most activated by OOD-looking minus ID-looking images are the negatives; an adaptive
    threshold (median of recent scores); scored, then the queues updated. Not TANL's maths."""

    inputs = ("noise_images",)

    def __init__(self, k: int = 3, queue: int = 8) -> None:
        super().__init__(k=k, queue=queue)
        self.k, self.queue = k, queue

    def _act(self, x: np.ndarray) -> np.ndarray:
        e = np.exp(x @ self.neg_emb.T / 0.1)
        return e / e.sum(1, keepdims=True)

    def init_state(self) -> None:
        self.pos, self.neg = self._act(self.id_emb), self._act(self.extra["noise_images"])
        self.recent: list[float] = []
        self.chosen: list[list[int]] = []

    def step(self, x: np.ndarray) -> np.ndarray:
        pick = np.argsort(-(self.neg.mean(0) - self.pos.mean(0)), kind="stable")[: self.k]
        self.chosen.append(pick.tolist())
        e = np.exp(np.concatenate([x @ self.id_emb.T, x @ self.neg_emb[pick].T], axis=1) / 0.1)
        scores = e[:, : len(self.id_emb)].sum(1) / e.sum(1)
        self.recent = (self.recent + scores.tolist())[-self.queue :]
        thr = float(np.median(self.recent))
        act = self._act(x)
        self.pos = np.concatenate([self.pos, act[scores > thr]])[-self.queue :]
        self.neg = np.concatenate([self.neg, act[scores < thr]])[-self.queue :]
        return scores

    def summary(self) -> dict[str, object]:
        return {"chosen": self.chosen[-1] if self.chosen else []}


@pytest.mark.parametrize("shaped", ["adaneg", "tanl", "toy"])
def test_a_batch_scores_never_depend_on_later_batches(toy, data, shaped):
    """The protocol's one rule, for all three shapes: the first b batches score the same whether or not
    the stream goes on (state may include the batch itself, never a later one)."""
    imgs, ids, neg = data
    rng = np.random.default_rng(0)
    noise = _unit(rng.normal(size=(3, 6)))
    method = {
        "adaneg": lambda: AdaNegShaped().setup(ids, neg),
        "tanl": lambda: TanlShaped().setup(ids, neg, noise_images=noise),
        "toy": lambda: make_stream("toy_stream", ood_threshold=0.6).setup(ids),
    }[shaped]()
    full = run_stream(method, imgs, stream_batch=3, order="given")
    for cut in (3, 6, 9):
        head = run_stream(method, imgs[:cut], stream_batch=3, order="given")
        np.testing.assert_array_equal(head.scores, full.scores[:cut])
    # and the state matters: the last batch alone, from a fresh state, scores differently
    alone = run_stream(method, imgs[9:], stream_batch=3, order="given")
    assert not np.allclose(alone.scores, full.scores[9:])


def test_the_adaneg_shape_keeps_a_bounded_bank_filled_by_confident_images(data):
    imgs, ids, neg = data
    m = AdaNegShaped(cap=2, gate=0.45).setup(ids, neg)
    res = run_stream(m, np.repeat(imgs, 3, axis=0), stream_batch=4, order="shuffled", seed=1)
    assert 0 < res.state["bank_images"] <= 2 * (len(ids) + len(neg))
    assert m.filled.max() == 3  # some bank full: its cap holds
    with pytest.raises(InputError, match="AdaNegShaped needs negative label embeddings"):
        m.needs_negatives = True
        m.setup(ids)


def test_the_tanl_shape_takes_its_corpus_and_noise_images_at_setup_and_moves_its_choice(data):
    imgs, ids, neg = data
    with pytest.raises(InputError, match=r"TanlShaped needs the set-up input\(s\) noise_images"):
        TanlShaped().setup(ids, neg)
    with pytest.raises(InputError, match=r"unexpected set-up input\(s\) corpus; accepted: noise_images"):
        TanlShaped().setup(ids, neg, noise_images=imgs[:2], corpus=neg)
    m = TanlShaped(k=3, queue=6).setup(ids, neg, noise_images=_unit(np.random.default_rng(1).normal(size=(3, 6))))
    run_stream(m, imgs, stream_batch=2, order="given")
    assert len(m.chosen) == 7 and len({tuple(c) for c in m.chosen}) > 1  # the negatives change over the stream


def test_the_toy_registers_as_a_plug_in(monkeypatch):
    import sys

    from negvocab.core import plugins

    unregister_method("toy_stream", missing_ok=True)
    monkeypatch.setattr(plugins, "_loaded", [])
    monkeypatch.delitem(sys.modules, "tests.plugins.toy_stream", raising=False)
    monkeypatch.setenv(plugins.ENV_VAR, "tests.plugins.toy_stream")
    try:
        assert "tests.plugins.toy_stream" in plugins.load_plugins()
        assert get_method("toy_stream").kind == "stream"
    finally:
        unregister_method("toy_stream", missing_ok=True)
        for name in ("ood_weight", "ood_threshold"):
            PARAMS.pop(name, None)


def test_id_first_and_ood_first_put_each_part_whole_and_shuffle_within(toy, data):
    imgs, ids, _ = data
    n, n_id = len(imgs), 7
    for order, head in (("id_first", range(n_id)), ("ood_first", range(n_id, n))):
        perm = stream_order(n, order=order, seed=4, n_id=n_id)
        assert sorted(perm.tolist()) == list(range(n))
        assert set(perm[: len(head)].tolist()) == set(head)  # the whole first part comes first
        assert perm[: len(head)].tolist() != sorted(head)  # shuffled inside it (seed 4)
    rng = np.random.default_rng(4)  # the stated draw: ID part, then OOD part, from one generator
    a, b = rng.permutation(n_id), n_id + rng.permutation(n - n_id)
    assert stream_order(n, order="ood_first", seed=4, n_id=n_id).tolist() == [*b, *a]
    m = make_stream("toy_stream", ood_threshold=0.6).setup(ids)
    res = run_stream(m, imgs, stream_batch=3, order="id_first", seed=4, n_id=n_id)
    assert res.provenance["n_id"] == n_id and res.provenance["seed"] == 4
    with pytest.raises(InputError, match="order 'ood_first' needs n_id"):
        run_stream(m, imgs, stream_batch=3, order="ood_first")


def test_stream_mix_keeps_the_ratio_and_the_smaller_side_whole():
    from negvocab.scoring.stream import stream_mix

    i, o = stream_mix(100, 30, ratio=1.0, seed=2)
    assert len(i) == 30 and o.tolist() == list(range(30)) and len(set(i.tolist())) == 30 and i.max() < 100
    i, o = stream_mix(100, 30, ratio=0.5, seed=2)  # 100 ID for 200 OOD wanted: OOD is short, ID cut to 15
    assert (len(i), len(o)) == (15, 30)
    i, o = stream_mix(10, 30, ratio=1.0, seed=2)
    assert i.tolist() == list(range(10)) and len(o) == 10
    assert stream_mix(10, 30, ratio=1.0, seed=3)[1].tolist() != o.tolist()  # another seed, another draw
    assert [len(a) for a in stream_mix(10, 30, seed=2)] == [10, 30]  # no ratio: all
    for bad in (0, -1.0, float("nan"), True, "1"):
        with pytest.raises(InputError, match="id_ood_ratio must be a number > 0"):
            stream_mix(10, 30, ratio=bad)


def test_the_stream_batchs_old_name_works_for_one_release_with_a_warning(toy, data):
    imgs, ids, _ = data
    m = make_stream("toy_stream").setup(ids)
    want = run_stream(m, imgs, stream_batch=3, seed=2).scores
    with pytest.warns(DeprecationWarning, match="'batch_size' is renamed 'stream_batch'"):
        old = run_stream(m, imgs, batch_size=3, seed=2).scores
    np.testing.assert_array_equal(old, want)
    with pytest.warns(DeprecationWarning, match="stream settings: 'batch_size' is renamed 'stream_batch'"):
        assert stream_settings({"batch_size": 5})["stream_batch"] == 5
    with pytest.raises(InputError, match="give stream_batch .* or batch_size .*, not both"):
        run_stream(m, imgs, stream_batch=3, batch_size=3)


def test_a_long_stream_logs_images_per_second_and_eta(monkeypatch, caplog):
    """Every batch counts its images; with the log interval at its smallest each batch logs a line."""

    class Slow(StreamMethod):
        def step(self, x):
            return np.zeros(len(x))

    monkeypatch.setenv("NEGVOCAB_PROGRESS_EVERY_S", "1e-9")
    m = Slow().setup(np.eye(3))
    with caplog.at_level("INFO", logger="negvocab.core.progress"):
        run_stream(m, np.eye(3)[[0, 1, 2, 0, 1, 2, 0]], stream_batch=3, order="given")
    lines = [r.getMessage() for r in caplog.records if r.name == "negvocab.core.progress"]
    assert [line.split(" images")[0] for line in lines] == ["Slow stream: 3/7", "Slow stream: 6/7", "Slow stream: 7/7"]
    assert all("images/s" in line and "ETA" in line for line in lines)
