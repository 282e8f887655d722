"""The score/sweep pipeline on a stand-in model with deterministic synthetic embeddings (no open_clip)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError, ResourceError
from negvocab.data.images import ImageSet
from negvocab.evaluation import evaluate, sweeps
from negvocab.report import results
from negvocab.vlm.images import ImageEmbeddings


def _vec(key: str, d: int = 16) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    x = np.random.default_rng(seed).normal(size=d)
    return (x / np.linalg.norm(x)).astype(np.float32)


class FakeVLM:
    """The part of negvocab.VLM the pipeline uses; embeddings are a hash of the text or path."""

    name, pretrained, random_weights, device, dim = "fake", None, True, "cpu", 16
    identity = {"name": "fake"}

    def encode_images(self, image_set, *, local_features=False, progress=None):
        rows = [(p, i) for p, i in zip(image_set.paths, image_set.ids, strict=True) if "broken" not in p]
        failed = [(p, "UnidentifiedImageError: corrupt") for p in image_set.paths if "broken" in p]  # as VLM skips them
        emb = np.stack([_vec(p) for p, _ in rows])
        local = np.stack([np.stack([_vec(f"{p}#{j}") for j in range(3)]) for p, _ in rows]) if local_features else None
        return ImageEmbeddings(
            paths=[p for p, _ in rows], embeddings=emb, local=local, failed=failed, ids=[i for _, i in rows]
        )

    def encode_text(self, labels, templates="paper8", *, pos=None, progress=None):
        return np.stack([_vec(f"{templates}:{x}") for x in labels])


@pytest.fixture
def sets():
    ids = [f"/id/{i}.png" for i in range(30)]
    oods = [f"/ood/{i}.png" for i in range(12)]
    return (
        ImageSet("id", ids, [f"i{i}" for i in range(30)]),
        ImageSet("ood", oods, [f"o{i}" for i in range(12)]),
    )


@pytest.fixture
def classes():
    return negvocab.imagenet1k().subset(list(negvocab.imagenet1k().wnids[:20]))


def test_evaluate_with_topk_bounds_and_glmcm(sets, classes, tmp_path):
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(40)], source="file")
    vlm = FakeVLM()
    ev = evaluate.evaluate_vocabularies(
        vlm, *sets, {"v": vocab}, ["neglabel", "glmcm"], id_classes=classes, templates="single",
        params={"topk": 5, "groups": 4}, n_boot=30,
    )  # fmt: skip
    row = ev.rows[0]
    assert row["topk"] == 5 and row["topk_max_gap"] > 0 and row["random_weights"] is True
    # the exact NegLabel score lies within the stored certified bounds
    imgs = np.stack([_vec(p) for p in sets[0].paths + sets[1].paths])
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    neg = np.stack([_vec(f"single:{x}") for x in vocab.labels])
    exact = negvocab.score("neglabel", imgs, cls, neg, groups=4)
    upper = np.r_[ev.scores["neglabel@v"]["id"], ev.scores["neglabel@v"]["ood"]]
    lower = np.r_[ev.scores["neglabel@v/lower"]["id"], ev.scores["neglabel@v/lower"]["ood"]]
    assert np.all(lower <= exact + 1e-5) and np.all(exact <= upper + 1e-5)
    # the stored bound on the omitted mass is log((M - k) e^{s_k}), s_k the k-th largest logit
    kth = np.sort(imgs.astype(np.float64) @ neg.astype(np.float64).T, 1)[:, -5] / 0.01
    bound = np.r_[ev.scores["neglabel@v/log_omitted_bound"]["id"], ev.scores["neglabel@v/log_omitted_bound"]["ood"]]
    np.testing.assert_allclose(bound, np.log(40 - 5) + kth, rtol=1e-5)
    assert row["topk_max_log_omitted_bound"] == pytest.approx(bound.max())
    # GL-MCM took the local features
    glmcm = negvocab.score(
        "glmcm",
        imgs,
        cls,
        local=np.stack([np.stack([_vec(f"{p}#{j}") for j in range(3)]) for p in sets[0].paths + sets[1].paths]),
    )
    np.testing.assert_allclose(np.r_[ev.scores["glmcm"]["id"], ev.scores["glmcm"]["ood"]], glmcm, atol=1e-6)
    out = results.write_results(ev, tmp_path / "r")
    doc = json.loads((out / "results.json").read_text())
    assert doc["rows"][0]["topk_max_gap"] == pytest.approx(row["topk_max_gap"])
    table = results.format_table(ev.rows)
    assert "paper" in table and "neglabel k=5" in table  # a top-k estimate is marked as such
    assert set(np.load(out / "scores.npz").files) >= {"id/neglabel@v/lower", "ood/glmcm", "ood_image_ids"}


def test_methods_with_negatives_need_a_vocabulary(sets, classes):
    with pytest.raises(InputError, match="need a vocabulary"):
        evaluate.evaluate_vocabularies(FakeVLM(), *sets, {}, ["neglabel"], id_classes=classes)


def test_sweep_vocabulary_equals_per_size_evaluation(sets, classes, tmp_path):
    vocab = negvocab.Vocabulary.from_labels([f"w{j}" for j in range(60)], source="wordnet")
    oracle = negvocab.Vocabulary.from_labels(["x", "y"], source="oracle", settings={"oracle": True})
    vlm = FakeVLM()
    res = sweeps.sweep_vocabulary(
        vlm,
        *sets,
        vocab,
        "10,30,60",
        references={"oracle": oracle},
        id_classes=classes,
        templates="single",
        params={"groups": 5},
        n_boot=20,
    )
    for r in res.rows:
        ev = evaluate.evaluate_vocabularies(
            vlm,
            *sets,
            {"v": vocab.head(r["M"])},
            ["neglabel"],
            id_classes=classes,
            templates="single",
            params={"groups": 5},
            n_boot=0,
        )
        assert r["fpr"] == pytest.approx(ev.rows[0]["fpr"]) and r["auroc"] == pytest.approx(
            ev.rows[0]["auroc"], abs=1e-9
        )
    assert res.references[0]["oracle"] is True and res.references[0]["M"] == 2
    out = results.write_sweep(
        res, tmp_path / "s", plot_formats=["PDF", ".svg"]
    )  # as the CLI takes them: case and dot ignored
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG" and json.loads((out / "sweep.json").read_text())[
        "random_weights"
    ]
    assert (out / "sweep.pdf").read_bytes()[:5] == b"%PDF-" and b"<svg" in (out / "sweep.svg").read_bytes()[:2000]
    assert sorted(p.name for p in out.iterdir()) == ["sweep.csv", "sweep.json", "sweep.pdf", "sweep.png", "sweep.svg"]
    with pytest.raises(InputError, match="unknown plot format 'jpg'"):
        results.write_sweep(res, tmp_path / "s2", plot_formats=["jpg"])


def test_sweeping_an_unranked_vocabulary_warns(sets, classes, caplog):
    kw = {"id_classes": classes, "templates": "single", "params": {"groups": 2}, "n_boot": 0}
    ranked = negvocab.Vocabulary.from_labels(
        ["a", "b", "c"], source="file", meta={x: {"rank": i} for i, x in enumerate("abc")}
    )
    with caplog.at_level(logging.WARNING):
        sweeps.sweep_vocabulary(FakeVLM(), *sets, ranked, "2,3", **kw)
    assert "carries no ranking" not in caplog.text
    gpt = negvocab.Vocabulary.from_labels(["a", "b", "c"], source="gpt")
    with caplog.at_level(logging.WARNING):
        sweeps.sweep_vocabulary(FakeVLM(), *sets, gpt, "2,3", **kw)
    assert "sweeping a gpt vocabulary that carries no ranking" in caplog.text


def test_unreadable_images_are_reported_and_the_rest_stay_aligned(sets, classes, tmp_path):
    id_set, ood_set = sets
    broken = ImageSet(
        "ood", [*ood_set.paths[:5], "/ood/broken.png", *ood_set.paths[5:]], [*ood_set.ids[:5], "bad", *ood_set.ids[5:]]
    )
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(20)], source="file")
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), id_set, broken, {"v": vocab}, ["neglabel"], id_classes=classes, templates="single", n_boot=0
    )
    assert ev.meta["failed_images"] == [["/ood/broken.png", "UnidentifiedImageError: corrupt"]]
    assert ev.ood_images == list(zip(ood_set.ids, ood_set.paths, strict=True)) and ev.rows[0]["n_ood"] == 12
    # each stored score belongs to the image whose id sits next to it
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    neg = np.stack([_vec(f"single:{x}") for x in vocab.labels])
    want = negvocab.score("neglabel", np.stack([_vec(p) for p in ood_set.paths]), cls, neg)
    np.testing.assert_allclose(ev.scores["neglabel@v"]["ood"], want, atol=1e-6)
    sw = sweeps.sweep_vocabulary(
        FakeVLM(), id_set, broken, vocab, [5, 20], id_classes=classes, templates="single", n_boot=0
    )
    assert sw.meta["failed_images"] == ev.meta["failed_images"] and sw.meta["n_ood"] == 12


def test_temperature_reaches_each_scorer(sets, classes):
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(20)], source="file")
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(), *sets, {"v": vocab}, ["mcm", "eoe", "neglabel_eoe"], id_classes=classes, templates="single",
        params={"T": 0.3, "penalty_T": 0.5, "tau": 0.02, "groups": 4}, n_boot=0, explain_k=0,
    )  # fmt: skip
    imgs = np.stack([_vec(p) for p in sets[0].paths + sets[1].paths])
    cls = np.stack([_vec(f"single:{n}") for n in classes.names])
    neg = np.stack([_vec(f"single:{x}") for x in vocab.labels])
    for key, want in [
        ("mcm", negvocab.score("mcm", imgs, cls, T=0.3)),
        ("eoe@v", negvocab.score("eoe", imgs, cls, neg, T=0.3)),
        # T is MCM's and EOE's; the NegLabel + EOE penalty has its own temperature
        ("neglabel_eoe@v", negvocab.score("neglabel_eoe", imgs, cls, neg, penalty_T=0.5, tau=0.02, groups=4)),
    ]:
        np.testing.assert_allclose(np.r_[ev.scores[key]["id"], ev.scores[key]["ood"]], want, atol=1e-6, err_msg=key)
    assert not np.allclose(ev.scores["mcm"]["id"], negvocab.score("mcm", imgs, cls)[:30])  # T=1 differs


def test_precomputed_image_embeddings_score_like_the_image_sets(sets, classes):
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(20)], source="file")
    vlm = FakeVLM()
    kw = {"id_classes": classes, "templates": "single", "params": {"groups": 4}, "n_boot": 0, "explain_k": 0}
    from_sets = evaluate.evaluate_vocabularies(vlm, *sets, {"v": vocab}, ["neglabel", "glmcm"], **kw)
    embedded = [vlm.encode_images(s, local_features=True) for s in sets]
    from_emb = evaluate.evaluate_vocabularies(vlm, *embedded, {"v": vocab}, ["neglabel", "glmcm"], **kw)
    assert from_emb.id_images == from_sets.id_images and from_emb.ood_images == from_sets.ood_images
    for key in ("neglabel@v", "glmcm"):
        np.testing.assert_array_equal(from_emb.scores[key]["ood"], from_sets.scores[key]["ood"])
    assert from_emb.meta["id_set"] == {"name": "given embeddings", "n": 30, "embeddings_given": True}
    without_local = [vlm.encode_images(s) for s in sets]
    with pytest.raises(InputError, match="local_features=True"):
        evaluate.evaluate_vocabularies(vlm, *without_local, {"v": vocab}, ["glmcm"], **kw)
    other = ImageEmbeddings(paths=["/a.png"], embeddings=np.eye(1, 8, dtype=np.float32))
    with pytest.raises(InputError, match="dimension 8, fake embeds in 16"):
        evaluate.evaluate_vocabularies(vlm, other, embedded[1], {"v": vocab}, ["neglabel"], **kw)
    with pytest.raises(InputError, match="1 paths, 2 ids, 1 embeddings must be aligned"):
        ImageEmbeddings(paths=["/a.png"], embeddings=np.eye(1, 16, dtype=np.float32), ids=["a", "b"])
    with pytest.raises(InputError, match=r"embeddings must be \[n, d\], got shape \(16,\)"):
        ImageEmbeddings(paths=["/a.png"], embeddings=np.ones(16, dtype=np.float32))
    same = {"name": "fake", "preprocessing": {"mean": [0.5], "from": "tag openai"}}
    vlm.identity = {"name": "fake", "preprocessing": {"mean": [0.5], "from": "model config"}}  # only provenance differs
    evaluate.evaluate_vocabularies(
        vlm,
        ImageEmbeddings(paths=embedded[0].paths, embeddings=embedded[0].embeddings, model=same),
        embedded[1],
        {"v": vocab},
        ["neglabel"],
        **kw,
    )
    foreign = ImageEmbeddings(paths=embedded[0].paths, embeddings=embedded[0].embeddings, model={"name": "ViT-B-16"})
    with pytest.raises(InputError, match="made by another model \\(name differs from fake's\\)"):
        evaluate.evaluate_vocabularies(vlm, foreign, embedded[1], {"v": vocab}, ["neglabel"], **kw)


def test_T_alone_warns_that_the_neglabel_eoe_penalty_takes_penalty_T(sets, classes, caplog):
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(8)], source="file")
    kw = {"id_classes": classes, "templates": "single", "n_boot": 0, "explain_k": 0}
    with caplog.at_level(logging.WARNING):
        evaluate.evaluate_vocabularies(
            FakeVLM(), *sets, {"v": vocab}, ["neglabel_eoe"], params={"T": 1.0, "groups": 2}, **kw
        )
    assert "neglabel_eoe's penalty takes penalty_T" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        evaluate.evaluate_vocabularies(
            FakeVLM(), *sets, {"v": vocab}, ["neglabel_eoe"], params={"penalty_T": 1.0, "groups": 2}, **kw
        )
    assert "penalty_T" not in caplog.text


def test_a_full_disk_during_a_rewrite_leaves_the_earlier_run_whole(sets, classes, tmp_path, monkeypatch):
    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(8)], source="file")
    ev = evaluate.evaluate_vocabularies(
        FakeVLM(),
        *sets,
        {"v": vocab},
        ["neglabel"],
        id_classes=classes,
        templates="single",
        params={"groups": 2},
        n_boot=0,
        explain_k=0,
    )
    out = results.write_results(ev, tmp_path / "res")
    assert (out / "results.json").exists()
    real = results.write_text

    def fail_on_scores_csv(path, text):
        if Path(path).name == "scores.csv":
            raise OSError(28, "No space left on device")
        return real(path, text)

    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InputError, match="earlier run"):  # the API refuses as the CLI does
        results.write_results(ev, out)
    ev.rows[0]["fpr"] = 0.123  # the new run differs, so a mixed folder would show
    monkeypatch.setattr(results, "write_text", fail_on_scores_csv)
    with pytest.raises(ResourceError, match="the disk is full"):
        results.write_results(ev, out, overwrite=True)
    assert {
        p.name: p.read_bytes() for p in out.iterdir()
    } == before  # every file the earlier run's, nothing staged left
    monkeypatch.undo()
    results.write_results(ev, out, overwrite=True)
    assert json.loads((out / "results.json").read_text())["rows"][0]["fpr"] == 0.123
    assert "0.123" in (out / "results.csv").read_text() and sorted(p.name for p in out.iterdir()) == sorted(before)


def test_a_bad_template_preset_fails_a_sweep_before_any_image_is_encoded(sets, classes):
    class NoImages(FakeVLM):
        def encode_images(self, *a, **k):
            raise AssertionError("images were encoded before the templates were checked")

    vocab = negvocab.Vocabulary.from_labels(["a", "b", "c"], source="wordnet")
    with pytest.raises(InputError, match="nonesuch"):
        sweeps.sweep_vocabulary(NoImages(), *sets, vocab, "2,3", id_classes=classes, templates="nonesuch", n_boot=0)


@pytest.mark.parametrize(("kw", "match"), [({"templates": "nonesuch"}, "nonesuch"), ({"explain_k": -1}, "explain_k")])
def test_bad_templates_or_explain_k_fail_an_evaluation_before_any_image_is_encoded(sets, classes, kw, match):
    class NoImages(FakeVLM):
        def encode_images(self, *a, **k):
            raise AssertionError("images were encoded before the arguments were checked")

    vocab = negvocab.Vocabulary.from_labels(["a", "b", "c"], source="wordnet")
    with pytest.raises(InputError, match=match):
        negvocab.evaluate_vocabularies(
            NoImages(), *sets, {"v": vocab}, ["neglabel"], id_classes=classes, n_boot=0, **kw
        )


def test_evaluate_and_a_sweeps_references_score_through_the_methods_detector(sets, classes, monkeypatch):
    """The pipelines hold a batch method as its detector (set up on the ID side, then ``score_batch``):
    what the detector returns is what the rows measure, so a detector that negates its scores turns
    every AUROC into one minus itself."""
    from negvocab.scoring.detector import BatchDetector

    vocab = negvocab.Vocabulary.from_labels([f"neg{j}" for j in range(40)], source="file")
    run = dict(id_classes=classes, templates="single", n_boot=0)
    plain = evaluate.evaluate_vocabularies(FakeVLM(), *sets, {"v": vocab}, ["neglabel", "mcm"], **run)
    sweep_plain = sweeps.sweep_vocabulary(FakeVLM(), *sets, vocab, [10], references={"r": vocab}, **run)
    step = BatchDetector.step
    monkeypatch.setattr(BatchDetector, "step", lambda self, z, **kw: -step(self, z, **kw))
    flipped = evaluate.evaluate_vocabularies(FakeVLM(), *sets, {"v": vocab}, ["neglabel", "mcm"], **run)
    for a, b in zip(plain.rows, flipped.rows, strict=True):
        assert a["auroc"] != 0.5 and b["auroc"] == pytest.approx(1 - a["auroc"])
    np.testing.assert_array_equal(flipped.scores["mcm"]["id"], -plain.scores["mcm"]["id"])
    sweep_flipped = sweeps.sweep_vocabulary(FakeVLM(), *sets, vocab, [10], references={"r": vocab}, **run)
    assert sweep_flipped.references[0]["auroc"] == pytest.approx(1 - sweep_plain.references[0]["auroc"])
