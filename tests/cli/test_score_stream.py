"""``negvocab score`` with a test-time (stream) method: its stream options, its rows marked and
carrying the protocol, its scores those of ``evaluate_stream`` on the same embeddings."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.evaluation.stream_evaluation import evaluate_stream
from tests.scoring.conftest import ID_NAMES

runner = CliRunner()


def _args(tiny, model_args, out, *extra):
    return [
        "score", "--vocab", str(tiny / "negA.txt"), "--id", str(tiny / "id"), "--ood", str(tiny / "ood"),
        "--no-report", "--n-boot", "0", "-o", str(out), *model_args, *extra,
    ]  # fmt: skip


def test_score_runs_adaneg_beside_neglabel_and_records_the_stream(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    extra = ["--method", "neglabel", "--method", "adaneg", "--stream-batch", "4", "--stream-seeds", "3,5"]
    r = runner.invoke(app, _args(tiny, model_args, out, *extra, "--stream-order", "ood_first", "--adaneg-memory", "3"))
    assert r.exit_code == 0, r.output
    assert "adaneg [tt]" in r.output and "[tt] test-time: scores depend on the test stream seen" in r.output
    res = json.loads((out / "results.json").read_text())
    ada = [row for row in res["rows"] if row["method"] == "adaneg"]
    neg = [row for row in res["rows"] if row["method"] == "neglabel"]
    assert ada and neg and all("test_time" not in row for row in neg)
    for row in ada:
        assert (row["test_time"], row["stream_order"], row["stream_batch_size"]) == (True, "ood_first", 4)
        assert row["stream_seeds"] == [3, 5] and row["params"]["adaneg_memory"] == 3
        assert row["fpr_min"] <= row["fpr"] <= row["fpr_max"]
    assert res["stream"]["seeds"] == [3, 5] and res["test_time"] is True
    # the scores are evaluate_stream's on the same embeddings, one stream per seed
    from negvocab.cli.options import load_vlm

    vlm = load_vlm("ViT-B-32", None, "cpu", None, tiny / "cache", True)
    vocab = negvocab.Vocabulary.load(tiny / "negA.txt")
    id_x = vlm.encode_images(negvocab.open_image_set(tiny / "id"))
    ood_x = vlm.encode_images(negvocab.open_image_set(tiny / "ood"))
    cls = vlm.encode_text(ID_NAMES, "single", pos="n")
    negs = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    kw = {"batch_size": 4, "order": "ood_first", "params": {"adaneg_memory": 3}, "n_boot": 0}
    with np.load(out / "scores.npz") as z:
        for s in (3, 5):
            ev = evaluate_stream("adaneg", id_x, {"ood": ood_x}, cls, negs, stream_seed=s, **kw)
            np.testing.assert_array_equal(z[f"id/adaneg@negA@ood#s{s}"], ev.scores["ood"]["id"])
            np.testing.assert_array_equal(z[f"ood/adaneg@negA@ood#s{s}"], ev.scores["ood"]["ood"])
            assert ev.rows[0]["fpr"] in (ada[0]["fpr_min"], ada[0]["fpr_max"])
    with open(out / "results.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {"test_time", "stream_order", "stream_seeds", "fpr_std"} <= set(table[0])
    assert [t["stream_order"] for t in table] == ["", "ood_first"]


def test_score_without_a_stream_method_writes_the_columns_it_always_did(tiny, model_args, tmp_path):
    out = tmp_path / "plain"
    r = runner.invoke(app, _args(tiny, model_args, out, "--method", "neglabel"))
    assert r.exit_code == 0, r.output
    with open(out / "results.csv", newline="") as fh:
        assert "test_time" not in next(csv.reader(fh)) and "[tt]" not in r.output


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--stream-seeds", "0,x"], "--stream-seeds takes distinct integers >= 0"),
        (["--stream-seeds", "1,1"], "--stream-seeds takes distinct integers >= 0"),
        (["--stream-order", "backwards"], "unknown --stream-order 'backwards'"),
        (["--adaneg-proxies", "both"], "unknown --adaneg-proxies 'both'"),
        (["--id-ood-ratio", "-1"], "--id-ood-ratio must be a number > 0"),
    ],
)
def test_bad_stream_options_are_one_line_before_any_model(tiny, model_args, tmp_path, monkeypatch, extra, match):
    from negvocab.vlm import model as vlm_model

    def no_model(*a, **k):
        raise AssertionError("a model was built")

    monkeypatch.setattr(vlm_model.VLM, "__init__", no_model)
    r = runner.invoke(app, _args(tiny, model_args, tmp_path / "o", "--method", "adaneg", *extra))
    assert r.exit_code == 2, r.output
    assert match in r.output and "Traceback" not in r.output
