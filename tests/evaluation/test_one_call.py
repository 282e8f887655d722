"""One evaluation call for methods of both kinds: ``evaluate_vocabularies`` scores batch and test-time
methods together (``stream=`` the test-time methods' stream) and equals scoring each kind alone and merging;
the old ``evaluate_stream_vocabularies`` still works for one release, with a warning."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.evaluation.stream_evaluation import evaluate_stream_vocabularies, merge_evaluations
from negvocab.scoring.stream import make_stream, run_stream
from tests.evaluation.test_evaluate import FakeVLM
from tests.evaluation.test_tuning import _set
from tests.evaluation.test_tuning_protocol import _inputs

STREAM = {"stream_batch": 8, "order": "shuffled", "stream_seed": [0, 1]}
RUN = {"templates": "single", "n_boot": 0, "explain_k": 0}


def _sets():
    return _set("id", 30), {"far": _set("far", 20), "near": _set("near", 12)}


def test_batch_and_test_time_methods_in_one_call_equal_each_kind_alone_merged():
    classes, vocab = _inputs()
    id_set, oods = _sets()
    run = {**RUN, "id_classes": classes}
    both = evaluate_vocabularies(
        FakeVLM(), id_set, oods, {"v": vocab}, ["adaneg", "neglabel", "mcm"], stream=STREAM, **run
    )
    batch = evaluate_vocabularies(FakeVLM(), id_set, oods, {"v": vocab}, ["neglabel", "mcm"], **run)
    alone = evaluate_vocabularies(FakeVLM(), id_set, oods, {"v": vocab}, ["adaneg"], stream=STREAM, **run)
    merged = merge_evaluations(batch, alone)
    drop = ("seconds",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in both.rows] == [
        {k: v for k, v in r.items() if k not in drop} for r in merged.rows
    ]
    assert both.scores.keys() == merged.scores.keys()
    for key, s in both.scores.items():
        for side in ("id", "ood"):
            np.testing.assert_array_equal(s[side], merged.scores[key][side])
    assert both.meta["test_time"] is True and both.meta["stream"]["seeds"] == [0, 1]
    clock = ("seconds", "created")
    assert {k: v for k, v in both.meta.items() if k not in clock} == {
        k: v for k, v in merged.meta.items() if k not in clock
    }
    # the batch rows first, then the test-time rows (near / far / mean each)
    assert [r["method"] for r in both.rows] == ["neglabel"] * 3 + ["mcm"] * 3 + ["adaneg"] * 3


def test_the_test_time_scores_are_the_stream_method_run_by_hand():
    """Independent of the pipeline: AdaNeg run on the ID + far stream (seed 0) from a fresh state."""
    classes, vocab = _inputs()
    id_set, oods = _sets()
    stream = {"stream_batch": 8, "stream_seed": 0, "order": "shuffled"}
    ev = evaluate_vocabularies(
        FakeVLM(), id_set, oods, {"v": vocab}, ["adaneg"], stream=stream, id_classes=classes, **RUN
    )
    vlm = FakeVLM()
    detector = make_stream("adaneg").setup(
        vlm.encode_text(list(classes.names), "single"), vlm.encode_text(list(vocab.labels), "single")
    )
    x_id, x_far = vlm.encode_images(id_set).embeddings, vlm.encode_images(oods["far"]).embeddings
    s = np.asarray(run_stream(detector, np.concatenate([x_id, x_far]), stream_batch=8, seed=0).scores)
    got = ev.scores["adaneg@v@far"]
    np.testing.assert_allclose(got["id"], s[: len(x_id)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["ood"][: len(x_far)], s[len(x_id) :], rtol=0, atol=1e-12)
    assert np.isnan(got["ood"][len(x_far) :]).all()  # the near set's images were not in the far stream


@pytest.mark.parametrize(
    ("methods", "stream", "message"),
    [
        (["adaneg"], None, r"^adaneg: test-time method\(s\) score a stream; give it"),
        (["neglabel"], {"stream_batch": 8}, r"^stream is the test-time methods' stream; no test-time method"),
        (["adaneg"], {"stream_batch": 8, "batch": 2}, r"^stream: unknown key\(s\) batch; keys: stream_batch, "),
        (["adaneg"], {"order": "shuffled"}, r"^stream: stream_batch is missing"),
        (["adaneg", "neglabel"], {"stream_batch": 0}, r"stream_batch"),
    ],
)
def test_a_wrong_stream_is_one_line_before_any_image_is_encoded(methods, stream, message):
    classes, vocab = _inputs()
    id_set, oods = _sets()

    class NoImages(FakeVLM):
        def encode_images(self, *a, **k):
            raise AssertionError("an image was encoded before the arguments were checked")

    with pytest.raises(InputError, match=message):
        evaluate_vocabularies(NoImages(), id_set, oods, {"v": vocab}, methods, stream=stream, id_classes=classes, **RUN)


def test_the_old_stream_call_warns_and_equals_the_one_call():
    classes, vocab = _inputs()
    id_set, oods = _sets()
    run = {"templates": "single", "n_boot": 0, "id_classes": classes}
    with pytest.warns(DeprecationWarning, match="evaluate_stream_vocabularies is deprecated"):
        old = evaluate_stream_vocabularies(FakeVLM(), id_set, oods, {"v": vocab}, ["adaneg"], **STREAM, **run)
    new = evaluate_vocabularies(FakeVLM(), id_set, oods, {"v": vocab}, ["adaneg"], stream=STREAM, **run)
    assert [r["fpr"] for r in old.rows] == [r["fpr"] for r in new.rows] and len(old.rows) == 3
    with pytest.warns(DeprecationWarning), pytest.raises(InputError, match="neglabel is a batch method"):
        evaluate_stream_vocabularies(FakeVLM(), id_set, oods, {"v": vocab}, ["neglabel"], **STREAM, **run)
