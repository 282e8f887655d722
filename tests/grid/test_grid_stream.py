"""A grid runs a test-time (stream) method: each cell is one stream of the ID set and its OOD set (the ID
scores are that cell's own), its row carries the stream, and its numbers are evaluate_stream's."""

from __future__ import annotations

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.evaluation.stream_inputs import noise_image_features
from negvocab.grid.work import load_model, open_sets

GRID = """
[grid]
templates = "single"
id_classes = "classes.txt"
n_boot = 0
device = "cpu"
cache_dir = "{cache}"

[[models]]
name = "TinyA"
model_config = "TinyA.json"
random_weights = true

[id]
path = "id"

[ood]
oodA = "oodA"
oodB = "oodB"

[vocabularies]
A = "vocabA.txt"

[[methods]]
name = "neglabel"

[[methods]]
name = "adaneg"
params = {{ adaneg_memory = 3, adaneg_groups = 2 }}
stream = {{ order = "id_first", stream_batch = 5, seed = 4 }}
"""


def test_a_grid_scores_a_stream_method_cell_by_cell(grid_files, tmp_path):
    toml = grid_files / f"grid_stream_{tmp_path.name}.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache"))
    res = negvocab.run_grid(toml, tmp_path / "out")
    rows = {(r["method"], r["ood_set"]): r for r in res.rows}
    assert ("adaneg", "oodA") in rows and ("neglabel", "oodA") in rows
    assert "test_time" not in rows[("neglabel", "oodA")] or not rows[("neglabel", "oodA")]["test_time"]
    cfg = negvocab.load_grid(toml)
    sets = open_sets(cfg)
    vlm = load_model(cfg, cfg.models[0])
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vocab = negvocab.Vocabulary.load(cfg.path("vocabA.txt"))
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    id_x = vlm.encode_images(sets["ID"]).embeddings
    for name in ("oodA", "oodB"):
        row = rows[("adaneg", name)]
        assert (row["test_time"], row["stream_order"], row["stream_batch_size"], row["stream_seed"]) == (
            True,
            "id_first",
            5,
            4,
        )
        ev = evaluate_stream(
            "adaneg",
            id_x,
            {name: vlm.encode_images(sets[name]).embeddings},
            cls,
            neg,
            stream_batch=5,
            order="id_first",
            stream_seed=4,
            params={"adaneg_memory": 3, "adaneg_groups": 2},
            n_boot=0,
        )
        assert row["fpr"] == pytest.approx(ev.rows[0]["fpr"], abs=1e-12)
        assert row["auroc"] == pytest.approx(ev.rows[0]["auroc"], abs=1e-12)
    # each cell's ID scores are its own stream's: two ID score files, not one shared
    cells = [c for c in negvocab.grid.work.plan_cells(cfg, sets) if c.method == "adaneg"]
    assert len({c.id_scores for c in cells}) == len({c.ood_set for c in cells}) == 2
    import csv

    res.write(tmp_path / "tables")
    with open(tmp_path / "tables" / "table.csv", newline="") as fh:
        table = [r for r in csv.DictReader(fh) if r["method"] == "adaneg"]
    assert table and all(
        (r["test_time"], r["stream_order"], r["stream_seed"]) == ("True", "id_first", "4") for r in table
    )
    again = negvocab.run_grid(toml, tmp_path / "out")  # resumes: nothing to compute, the same rows
    assert [r["auroc"] for r in again.rows] == [r["auroc"] for r in res.rows]
    assert np.isfinite([r["auroc"] for r in res.rows]).all()


def test_a_stream_table_is_checked_before_any_model(grid_files, tmp_path):
    for stream, match in [
        ('{ order = "backwards" }', "unknown order 'backwards'"),
        ("{ batches = 3 }", r"unknown stream setting\(s\) batches"),
        ("{ id_ood_ratio = 0 }", "id_ood_ratio must be a number > 0"),
    ]:
        toml = grid_files / f"grid_stream_bad_{tmp_path.name}.toml"
        text = GRID.format(cache=tmp_path / "cache").replace(
            'stream = { order = "id_first", stream_batch = 5, seed = 4 }', f"stream = {stream}"
        )
        toml.write_text(text)
        with pytest.raises(InputError, match=match) as e:
            negvocab.load_grid(toml)
        assert "methods[1].stream" in str(e.value)
    toml.write_text(
        GRID.format(cache=tmp_path / "cache").replace('name = "neglabel"', 'name = "neglabel"\nstream = { seed = 1 }')
    )
    with pytest.raises(InputError, match="neglabel is a batch method; a stream table is for test-time methods"):
        negvocab.load_grid(toml)


def test_a_grid_runs_tanl_with_the_noise_images_its_model_makes(grid_files, tmp_path):
    """TANL's set-up needs noise-image features, which only a model makes: the grid's text unit makes
    them and its score units (no model) use them. Before, every cell of the model failed (neglabel's
    too): "tanl needs the set-up input(s) noise_images"."""
    toml = grid_files / f"grid_tanl_{tmp_path.name}.toml"
    text = GRID.format(cache=tmp_path / "cache").replace(
        'name = "adaneg"\nparams = { adaneg_memory = 3, adaneg_groups = 2 }', 'name = "tanl"\nparams = { seed = 2 }'
    )
    toml.write_text(text)
    res = negvocab.run_grid(toml, tmp_path / "out")
    assert res.status["total"] == {"done": 4, "pending": 0, "failed": 0}
    rows = {(r["method"], r["ood_set"]): r for r in res.rows}
    cfg = negvocab.load_grid(toml)
    sets = open_sets(cfg)
    vlm = load_model(cfg, cfg.models[0])
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vocab = negvocab.Vocabulary.load(cfg.path("vocabA.txt"))
    cls = vlm.encode_text(list(classes.names), "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    id_x = vlm.encode_images(sets["ID"]).embeddings
    for name in ("oodA", "oodB"):
        ev = evaluate_stream(
            "tanl",
            id_x,
            {name: vlm.encode_images(sets[name]).embeddings},
            cls,
            neg,
            stream_batch=5,
            order="id_first",
            stream_seed=4,
            params={"seed": 2},
            setup_inputs={"noise_images": noise_image_features(vlm, seed=2)},  # made here, by the same model
            n_boot=0,
        )
        assert rows[("tanl", name)]["fpr"] == pytest.approx(ev.rows[0]["fpr"], abs=1e-12)
        assert rows[("tanl", name)]["auroc"] == pytest.approx(ev.rows[0]["auroc"], abs=1e-12)


def test_a_stream_method_whose_set_up_no_model_makes_is_refused_before_any_model(grid_files, tmp_path):
    from negvocab.scoring.methods import unregister_method
    from negvocab.scoring.stream import StreamMethod, register_stream_method

    class NeedsPrototypes(StreamMethod):
        inputs = ("prototypes",)

        def _score(self, x):
            return np.zeros(len(x))

    register_stream_method("needs_prototypes", NeedsPrototypes)
    try:
        toml = grid_files / f"grid_proto_{tmp_path.name}.toml"
        text = GRID.format(cache=tmp_path / "cache").replace(
            'name = "adaneg"\nparams = { adaneg_memory = 3, adaneg_groups = 2 }', 'name = "needs_prototypes"'
        )
        toml.write_text(text)
        with pytest.raises(InputError, match=r"methods\[1\]\.name: needs_prototypes needs set-up input\(s\) a grid "
                           "cannot make: prototypes"):  # fmt: skip
            negvocab.load_grid(toml)
    finally:
        unregister_method("needs_prototypes", missing_ok=True)


def test_a_grid_scores_negrefine_with_its_model(grid_files, tmp_path):
    """NegRefine embeds a text per image and ID class as it scores, which a score unit without a model
    cannot: the model's score unit runs with the model instead (refused at reading before). Its rows
    equal the scores of the method on the same embeddings with pair texts made by the same model."""
    from negvocab.scoring import metrics as M
    from negvocab.scoring.scores import score
    from negvocab.vlm.pairs import PairTexts

    toml = grid_files / f"grid_negrefine_{tmp_path.name}.toml"
    text = GRID.format(cache=tmp_path / "cache")
    text = text[: text.index('[[methods]]\nname = "adaneg"')] + '[[methods]]\nname = "negrefine"\n'
    toml.write_text(text)
    res = negvocab.run_grid(toml, tmp_path / "out")
    assert res.status["total"] == {"done": 4, "pending": 0, "failed": 0}
    rows = {(r["method"], r["ood_set"]): r for r in res.rows}
    cfg = negvocab.load_grid(toml)
    sets = open_sets(cfg)
    vlm = load_model(cfg, cfg.models[0])
    names = list(negvocab.read_id_classes(cfg.path(cfg.id_classes)).names)
    labels = list(negvocab.Vocabulary.load(cfg.path("vocabA.txt")).labels)
    cls = vlm.encode_text(names, "single", pos="n")
    neg = vlm.encode_text(labels, "single")
    pairs = PairTexts(vlm, "single", names, labels)
    s_id = np.asarray(score("negrefine", vlm.encode_images(sets["ID"]).embeddings, cls, neg, pair_texts=pairs))
    for name in ("oodA", "oodB"):
        s_ood = np.asarray(score("negrefine", vlm.encode_images(sets[name]).embeddings, cls, neg, pair_texts=pairs))
        assert rows[("negrefine", name)]["fpr"] == pytest.approx(M.fpr_at_tpr(s_id, s_ood, 0.95), abs=1e-12)
        assert rows[("negrefine", name)]["auroc"] == pytest.approx(M.auroc(s_id, s_ood), abs=1e-12)
    # the stored scores themselves (this toy's FPR and AUROC happen to equal NegLabel's)
    from negvocab.grid.work import load_score_file, plan_cells

    cell = next(c for c in plan_cells(cfg, sets) if c.method == "negrefine" and c.ood_set == "oodA")
    stored = load_score_file(tmp_path / "out" / "scores" / f"{cell.id_scores}.npz")
    assert stored is not None
    np.testing.assert_allclose(stored[0], s_id, rtol=0, atol=1e-12)
    id_x = vlm.encode_images(sets["ID"]).embeddings
    assert not np.allclose(s_id, np.asarray(score("neglabel", id_x, cls, neg)))  # the check tells the two apart


def test_several_stream_seeds_give_a_cell_each_and_their_spread_as_score_gives_it(grid_files, tmp_path):
    """stream = {seeds = [0, 1, 2]}: a cell per seed (adaneg#s0, ...), and a row per OOD set and mean
    with the spread over the seeds, equal to evaluate_stream's rows over the same three seeds."""
    toml = grid_files / f"grid_seeds_{tmp_path.name}.toml"
    toml.write_text(
        GRID.format(cache=tmp_path / "cache").replace(
            'stream = { order = "id_first", stream_batch = 5, seed = 4 }',
            'stream = { order = "shuffled", stream_batch = 5, seeds = [0, 1, 2] }',
        )
    )
    cfg = negvocab.load_grid(toml)
    assert [m.display for m in cfg.methods] == ["neglabel", "adaneg#s0", "adaneg#s1", "adaneg#s2"]
    res = negvocab.run_grid(toml, tmp_path / "out")
    sets = open_sets(cfg)
    vlm = load_model(cfg, cfg.models[0])
    classes = negvocab.read_id_classes(cfg.path(cfg.id_classes))
    vocab = negvocab.Vocabulary.load(cfg.path("vocabA.txt"))
    ev = evaluate_stream(
        "adaneg",
        vlm.encode_images(sets["ID"]).embeddings,
        {n: vlm.encode_images(sets[n]).embeddings for n in ("oodA", "oodB")},
        vlm.encode_text(list(classes.names), "single", pos="n"),
        vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech()),
        stream_batch=5,
        order="shuffled",
        stream_seed=[0, 1, 2],
        params={"adaneg_memory": 3, "adaneg_groups": 2},
        n_boot=0,
    )
    want = {r["ood_set"]: r for r in ev.rows}
    got = {r["ood_set"]: r for r in res.table() if r["method"] == "adaneg"}
    assert set(got) == {"oodA", "oodB", "mean"} == set(want)
    for name, row in got.items():
        assert row["stream_seeds"] == [0, 1, 2] and row["n_stream_seeds"] == 3 and row["stream_seed"] is None
        for m in ("fpr", "auroc"):
            for k in (m, f"{m}_std", f"{m}_min", f"{m}_max"):
                assert row[k] == pytest.approx(want[name][k], abs=1e-12), (name, k)
        per_seed = [r["auroc"] for r in res.table() if r["ood_set"] == name and r["method"].startswith("adaneg#s")]
        assert len(per_seed) == 3 and row["auroc_std"] == pytest.approx(np.std(per_seed, ddof=1), abs=1e-12)
    assert got["mean"]["fpr_ci_low"] is None  # the seeds are the spread: no bootstrap interval
    text = res.pivot("auroc", rows="method").to_markdown()
    assert "adaneg (stream shuffled, batch 5, seeds 0, 1, 2)" in text and "| adaneg [tt] |" in text
    assert "± after a [tt] value: the sample sd over its stream seeds" in text
    for bad, match in (("[0]", "two or more distinct"), ("[1, 1]", "two or more distinct"), ('["a", 2]', "integers")):
        toml.write_text(toml.read_text().replace("seeds = [0, 1, 2]", f"seeds = {bad}"))
        with pytest.raises(InputError, match=rf"methods\[1\].stream.seeds = .*{match}"):
            negvocab.load_grid(toml)
        toml.write_text(toml.read_text().replace(f"seeds = {bad}", "seeds = [0, 1, 2]"))
