"""evaluate_stream: one stream per OOD set, metrics from that stream's scores, rows marked test-time."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.row import ROW_COLUMNS
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import PARAMS, unregister_method
from negvocab.scoring.stream import make_stream, run_stream


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


@pytest.fixture
def toy():
    mod = importlib.import_module("tests.plugins.toy_stream")
    mod.register()
    yield mod
    unregister_method(mod.NAME, missing_ok=True)
    for p in mod.PARAMS:  # leave the registry as the other tests expect it
        PARAMS.pop(p.name, None)


@pytest.fixture
def sets():
    rng = np.random.default_rng(11)
    ids = _unit(rng.normal(size=(5, 8)))
    id_x = _unit(ids[rng.integers(0, 5, 9)] + 0.4 * rng.normal(size=(9, 8)))
    oods = {"far": _unit(rng.normal(size=(7, 8))), "near": _unit(ids[rng.integers(0, 5, 6)] + rng.normal(size=(6, 8)))}
    return id_x, oods, ids


def _auroc(s_id, s_ood):
    """P(ID score > OOD score) + ties / 2, over every pair."""
    return float(np.mean([(a > b) + 0.5 * (a == b) for a in s_id for b in s_ood]))


def test_each_ood_set_is_one_stream_with_the_id_set_and_its_rows_say_so(toy, sets):
    id_x, oods, ids = sets
    params = {"ood_threshold": 0.55}
    ev = evaluate_stream("toy_stream", id_x, oods, ids, stream_batch=4, stream_seed=3, params=params, n_boot=50)
    m = make_stream("toy_stream", params).setup(ids)
    for row, (name, ood) in zip(ev.rows, oods.items(), strict=False):
        res = run_stream(m, np.concatenate([id_x, ood]), stream_batch=4, order="shuffled", seed=3)
        np.testing.assert_array_equal(ev.scores[name]["id"], res.scores[: len(id_x)])
        np.testing.assert_array_equal(ev.scores[name]["ood"], res.scores[len(id_x) :])
        assert row["ood_set"] == name
        assert row["auroc"] == pytest.approx(_auroc(res.scores[: len(id_x)], res.scores[len(id_x) :]), abs=1e-12)
        assert row["fpr"] == M.fpr_at_tpr(res.scores[: len(id_x)], res.scores[len(id_x) :], 0.95)
        assert (row["test_time"], row["stream_order"], row["stream_batch_size"], row["stream_seed"]) == (
            True,
            "shuffled",
            4,
            3,
        )
        assert row["params"] == {"ood_weight": 1.0, "ood_threshold": 0.55} and row["n_id"] == len(id_x)
    # the ID scores come from each set's own stream, so they differ between the sets
    assert not np.allclose(ev.scores["far"]["id"], ev.scores["near"]["id"])
    mean = ev.rows[-1]
    assert mean["ood_set"] == "mean" and len(ev.rows) == 3 and mean["test_time"] is True
    for key in ("fpr", "auroc", "aupr_in", "aupr_out"):
        assert mean[key] == pytest.approx((ev.rows[0][key] + ev.rows[1][key]) / 2)
    assert mean["n_ood"] == 13 and mean["auroc_ci_low"] <= mean["auroc"] <= mean["auroc_ci_high"]
    assert ev.meta["stream"]["seed"] == 3 and ev.meta["test_time"] is True
    # the one row of every results file, then the stream's fields
    assert list(ev.rows[0])[: len(ROW_COLUMNS)] == list(ROW_COLUMNS) and ev.rows[0]["test_time"] is True


def test_another_stream_seed_is_another_recorded_result(toy, sets):
    id_x, oods, ids = sets
    kw = {"stream_batch": 3, "params": {"ood_threshold": 0.55}, "n_boot": 0}
    a = evaluate_stream("toy_stream", id_x, oods["far"], ids, stream_seed=0, **kw)
    b = evaluate_stream("toy_stream", id_x, oods["far"], ids, stream_seed=1, **kw)
    assert not np.allclose(a.scores["ood"]["ood"], b.scores["ood"]["ood"])
    assert (a.rows[0]["stream_seed"], b.rows[0]["stream_seed"]) == (0, 1) and len(a.rows) == 1
    given = evaluate_stream("toy_stream", id_x, {"far": oods["far"]}, ids, order="given", stream_seed=5, **kw)
    assert given.rows[0]["stream_order"] == "given" and given.rows[0]["stream_seed"] is None


def test_what_evaluate_stream_cannot_serve_is_one_line_before_any_scoring(toy, sets):
    id_x, oods, ids = sets
    for kw, match in [
        ({"method": "neglabel"}, r"neglabel is a batch method"),
        ({"stream_batch": 0}, r"stream_batch must be an integer >= 1, got 0"),
        ({"order": "backwards"}, r"unknown order 'backwards'"),
        ({"stream_seed": -2}, r"seed must be an integer >= 0, got -2"),
        ({"convention": "mine"}, r"unknown convention 'mine'"),
        ({"params": {"groups": 3}}, r"toy_stream: unexpected parameter\(s\) groups"),
        ({"ood_sets": {"mean": oods["far"]}}, r"OOD set name 'mean' is not allowed"),
        ({"id_set": "id/"}, r"id_set: pass image embeddings .* or image sets together with vlm="),
    ]:
        args = {"method": "toy_stream", "id_set": id_x, "ood_sets": oods, "id_emb": ids, "stream_batch": 2, **kw}
        with pytest.raises(InputError, match=match) as e:
            evaluate_stream(**args)
        assert "\n" not in str(e.value)


def test_image_embeddings_and_an_unregistered_instance_are_accepted(toy, sets):
    from negvocab.vlm.images import ImageEmbeddings

    id_x, oods, ids = sets
    wrapped = ImageEmbeddings([f"i{k}.png" for k in range(len(id_x))], id_x)
    det = toy.RunningMeanOOD(ood_weight=1.0, ood_threshold=0.55)  # not through the registry
    ev = evaluate_stream(det, wrapped, {"far": oods["far"]}, ids, stream_batch=4, n_boot=0)
    plain = evaluate_stream(det, id_x, {"far": oods["far"]}, ids, stream_batch=4, n_boot=0)
    np.testing.assert_array_equal(ev.scores["far"]["ood"], plain.scores["far"]["ood"])
    assert ev.rows[0]["method"] == "RunningMeanOOD" and ev.rows[0]["params"]["ood_threshold"] == 0.55
    with pytest.raises(InputError, match="an instance was built with its own"):
        evaluate_stream(det, id_x, oods, ids, stream_batch=4, params={"ood_weight": 2.0})


def test_several_stream_seeds_report_their_spread_and_each_seed_is_kept(toy, sets):
    id_x, oods, ids = sets
    kw = {"stream_batch": 3, "params": {"ood_threshold": 0.55}, "n_boot": 20}
    ev = evaluate_stream("toy_stream", id_x, oods, ids, stream_seed=[0, 1, 2], **kw)
    singles = [evaluate_stream("toy_stream", id_x, oods, ids, stream_seed=s, **kw) for s in (0, 1, 2)]
    assert list(ev.by_seed) == [0, 1, 2] and [r["ood_set"] for r in ev.rows] == ["far", "near", "mean"]
    for k, row in enumerate(ev.rows):
        for m in ("fpr", "auroc", "aupr_in", "aupr_out"):
            vals = [s.rows[k][m] for s in singles]
            assert row[m] == pytest.approx(sum(vals) / 3, abs=1e-12)
            assert row[f"{m}_std"] == pytest.approx(float(np.std(vals, ddof=1)), abs=1e-12)
            assert (row[f"{m}_min"], row[f"{m}_max"]) == (min(vals), max(vals))
        assert row["stream_seeds"] == [0, 1, 2] and row["stream_seed"] is None and row["auroc_ci_low"] is None
        assert row["test_time"] is True
    assert any(row["auroc_std"] > 0 for row in ev.rows)  # the toy's result moves with the stream
    np.testing.assert_array_equal(ev.by_seed[1].scores["far"]["ood"], singles[1].scores["far"]["ood"])
    assert ev.meta["stream"]["seeds"] == [0, 1, 2]
    with pytest.raises(InputError, match="a seed is repeated"):
        evaluate_stream("toy_stream", id_x, oods, ids, stream_seed=[1, 1], **kw)


def test_an_id_ood_ratio_subsamples_the_larger_side_with_the_stream_seed(toy, sets):
    id_x, oods, ids = sets
    kw = {"stream_batch": 2, "params": {"ood_threshold": 0.55}, "n_boot": 0}
    ev = evaluate_stream("toy_stream", id_x, {"far": oods["far"]}, ids, stream_seed=4, id_ood_ratio=0.5, **kw)
    kept = ev.kept["far"]
    assert len(kept["ood"]) == 7 and len(kept["id"]) == 4  # 7 OOD whole; ID cut to round(0.5 x 7) = 4
    row = ev.rows[0]
    assert (row["n_id"], row["n_ood"], row["id_ood_ratio"]) == (4, 7, 0.5)
    m = make_stream("toy_stream", {"ood_threshold": 0.55}).setup(ids)
    res = run_stream(m, np.concatenate([id_x[kept["id"]], oods["far"]]), stream_batch=2, seed=4)
    np.testing.assert_array_equal(ev.scores["far"]["id"], res.scores[:4])


@pytest.mark.parametrize("order", ["id_first", "ood_first"])
def test_split_orders_feed_one_whole_part_before_the_other(toy, sets, order):
    id_x, oods, ids = sets
    kw = {"stream_batch": 2, "params": {"ood_threshold": 0.55}, "n_boot": 0}
    ev = evaluate_stream("toy_stream", id_x, {"far": oods["far"]}, ids, order=order, stream_seed=1, **kw)
    perm = ev.streams["far"].stream
    first = perm[: len(id_x)] if order == "id_first" else perm[: len(oods["far"])]
    assert (first < len(id_x)).all() == (order == "id_first") and (first >= len(id_x)).all() == (order == "ood_first")
    assert ev.rows[0]["stream_order"] == order and ev.rows[0]["stream_seed"] == 1


def test_a_benchmarks_id_set_names_the_label_space_streams_score_against(toy):
    """As evaluate_vocabularies: an ID set tagged with its benchmark's classes (CUB-200's, by
    open_id_set) is scored against those names, and the results name that label space (published figures
    of ImageNet-1k are matched on it); it was ImageNet-1k's whatever the ID set."""
    from negvocab.data.benchmarks import classes_file
    from negvocab.data.images import ImageSet
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from negvocab.labels.imagenet import read_id_classes
    from tests.evaluation.test_evaluate import FakeVLM

    class Seen(FakeVLM):
        texts: list[str] = []

        def encode_text(self, labels, templates="paper8", *, pos=None, progress=None):
            self.texts.extend(labels)
            return super().encode_text(labels, templates, pos=pos, progress=progress)

    id_set = ImageSet("cub", [f"/id/{i}.png" for i in range(12)], [f"i{i}" for i in range(12)])
    ood = ImageSet("far", [f"/ood/{i}.png" for i in range(9)], [f"o{i}" for i in range(9)])
    cub = read_id_classes(classes_file("cub200"))
    kw = {"stream": {"stream_batch": 4}, "templates": "single", "n_boot": 0}
    for info, want in (({"id_classes": "cub200"}, cub), ({}, None)):
        vlm = Seen()
        vlm.texts = []
        tagged = ImageSet(id_set.name, id_set.paths, id_set.ids, info=info)
        ev = evaluate_vocabularies(vlm, tagged, {"far": ood}, {}, [toy.NAME], **kw)
        if want is None:  # a user's own set: ImageNet-1k, as before
            assert ev.meta["id_classes"] == "imagenet1k" and len(vlm.texts) == 1000
        else:
            assert ev.meta["id_classes"] == "custom:cub200.txt" == want.dataset
            assert vlm.texts == list(want.names) and "Laysan Albatross" in vlm.texts
