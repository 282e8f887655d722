"""NegRefine's pair texts (negvocab.vlm.pairs) and the pipelines that give them to the negrefine score:
``evaluate_vocabularies`` (``negvocab score``), ``sweep_vocabulary`` (``negvocab sweep``) and the adapters
score exactly what ``negvocab.score`` gives with a ``PairTexts`` of the same model, templates and labels."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import negvocab
from negvocab.adapters.zeroshot import ZeroShot
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses
from negvocab.vlm.pairs import PairTexts, pair_inputs
from tests.vlm.conftest import make_tiny_vlm

CLASSES = ["goldfish", "tabby cat", "oak", "sports car", "tennis ball", "lighthouse"]
NEGS = [f"thing {i}" for i in range(12)]
PARAMS = {"groups": 3, "mm_k_id": 2, "mm_k_neg": 3}


@pytest.fixture(scope="module")
def vlm():
    return make_tiny_vlm(cache=False)


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    rng = np.random.default_rng(3)
    out = {}
    for name in ("id", "ood"):
        root = tmp_path_factory.mktemp(name)
        for i in range(4):
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(root / f"{i}.png")
        out[name] = negvocab.open_image_set(root)
    return out


def _expected(vlm, sets, labels, templates="single"):
    imgs = np.concatenate([vlm.encode_images(sets[k]).embeddings for k in ("id", "ood")])
    id_emb = vlm.encode_text(CLASSES, templates, pos="n")
    neg = vlm.encode_text(labels, templates)
    pairs = PairTexts(vlm, templates, CLASSES, labels)
    return negvocab.score("negrefine", imgs, id_emb, neg, pair_texts=pairs, **PARAMS), imgs


def test_pair_texts_embed_their_texts(vlm):
    p = PairTexts(vlm, "single", CLASSES, NEGS)
    assert p.texts([1, 0], [2, 11]) == ["tabby cat and thing 2", "goldfish and thing 11"]
    got = p(np.array([1, 0]), np.array([2, 11]))
    np.testing.assert_array_equal(got, vlm.encode_text(["tabby cat and thing 2", "goldfish and thing 11"], "single"))
    assert p(np.array([], int), np.array([], int)).shape == (0, vlm.dim)
    assert pair_inputs(("local",), vlm, "single", CLASSES, NEGS) == {}
    assert pair_inputs(("pair_texts",), vlm, "single", CLASSES, None) == {}


def test_evaluate_vocabularies_gives_negrefine_its_pair_texts(vlm, sets):
    vocab = negvocab.Vocabulary.from_labels(NEGS, source="file")
    ev = negvocab.evaluate_vocabularies(
        vlm, sets["id"], {"ood": sets["ood"]}, {"v": vocab}, ["negrefine"],
        id_classes=IdClasses.from_names(CLASSES), templates="single", params=PARAMS, n_boot=0, explain_k=0,
    )  # fmt: skip
    want, _ = _expected(vlm, sets, NEGS)
    got = np.concatenate([ev.scores["negrefine@v"]["id"], ev.scores["negrefine@v"]["ood"]])
    np.testing.assert_array_equal(got, want)
    assert "pair_texts" not in ev.rows[0]["params"] and ev.rows[0]["params"]["mm_k_id"] == 2


def test_sweep_scores_each_size_with_the_pairs_of_its_labels(vlm, sets):
    vocab = negvocab.Vocabulary.from_labels(NEGS, source="file")
    res = negvocab.sweep_vocabulary(
        vlm, sets["id"], {"ood": sets["ood"]}, vocab, [6, 12], method="negrefine", order="given",
        id_classes=IdClasses.from_names(CLASSES), templates="single", params=PARAMS, n_boot=0,
    )  # fmt: skip
    for m in (6, 12):
        want, _ = _expected(vlm, sets, NEGS[:m])
        row = next(r for r in res.rows if r["M"] == m and r["ood_set"] == "ood")
        s_id, s_ood = want[:4], want[4:]
        auroc = np.mean([[float(a > b) + 0.5 * float(a == b) for b in s_ood] for a in s_id])
        assert row["auroc"] == pytest.approx(auroc)


def test_adapter_scores_negrefine(vlm, sets):
    vocab = negvocab.Vocabulary.from_labels(NEGS, source="file")
    det = ZeroShot(vlm, "negrefine", id_classes=CLASSES, vocabulary=vocab, templates="single", **PARAMS)
    want, imgs = _expected(vlm, sets, NEGS)
    # the adapter normalises the features again (float32): equal to rounding
    np.testing.assert_allclose(det.score_features(imgs).numpy(), want, rtol=0, atol=1e-6)


def test_grid_takes_it_and_cli_offers_the_parameters(tmp_path):
    """A grid reads a NegRefine entry (its scoring runs on a model worker: tests/grid/test_grid_stream.py)
    and checks its parameters there, before any model."""
    from negvocab.cli import app
    from negvocab.grid.config import MethodTable, _method

    assert _method("negrefine", 0, "grid.toml").name == "negrefine"
    with pytest.raises(InputError, match=r"grid.toml: methods\[0\]\.params"):
        _method(MethodTable(name="negrefine", params={"mm_weight": "heavy"}), 0, "grid.toml")
    r = CliRunner().invoke(app, ["score", "--help"], terminal_width=200)
    assert r.exit_code == 0 and "--mm-weight" in r.output and "--mm-k-neg" in r.output
