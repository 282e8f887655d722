"""Work units on the local engine: shards cover each set once in whole batches, a model is loaded
once, score files say who made them, and sharded equals unsharded bit for bit (deterministic)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import negvocab
from negvocab.grid.units import Unit, plan_units
from negvocab.grid.work import ModelWork, open_sets, plan_cells


def _with(toml, extra_grid="", resources=""):
    text = toml.read_text().replace("[grid]\n", f"[grid]\n{extra_grid}")
    toml.write_text(text + (f"\n[resources]\n{resources}" if resources else ""))
    return toml


def test_shards_cover_every_image_once_in_whole_batches(grid_toml):
    cfg = negvocab.load_grid(_with(grid_toml, "batch_size = 4\n", "shard_images = 6\n"))  # 6 -> 8: two batches
    sets = open_sets(cfg)
    cells = plan_cells(cfg, sets)
    work = ModelWork(cfg.models[0], [c for c in cells if c.model == "TinyA"])
    work.missing = {c.id_scores: (c.vocabulary, c.method, "ID") for c in work.cells} | {
        c.ood_scores: (c.vocabulary, c.method, c.ood_set) for c in work.cells
    }
    units = plan_units(cfg, [work], sets)
    assert [u.kind for u in units[-2:]] == ["text", "score"] and units[-1] == Unit("score", "TinyA")
    for name, s in sets.items():
        shards = [u for u in units if u.kind == "image" and u.set_name == name]
        covered = [i for u in shards for i in range(u.start, u.stop)]
        assert covered == list(range(len(s)))  # each image once, in order
        assert all(u.start % 8 == 0 and (u.images == 8 or u.stop == len(s)) for u in shards)
    assert sum(u.images for u in units) == 24 + 10 + 7 + 9


def test_local_engine_loads_each_model_once_and_sharding_changes_no_bit(grid_toml, tmp_path):
    # the per-kind tables a Ray cluster reads run unchanged here
    toml = _with(
        grid_toml,
        "batch_size = 4\n",
        "shard_images = 8\nnum_gpus = 1\n[resources.text]\nnum_cpus = 1\n[resources.score]\nnum_cpus = 1\n",
    )
    sharded = negvocab.run_grid(toml, tmp_path / "sharded", deterministic=True)
    assert sharded.stats["model_loads"] == {
        "TinyA": 1,
        "TinyB": 1,
    }  # 2 x (3+2+1+2 image units + text + score) on one host
    whole = toml.with_name(toml.stem + "_whole.toml")
    whole.write_text(
        toml.read_text()
        .replace("shard_images = 8", "shard_images = 4096")
        .replace(str(tmp_path / "cache"), str(tmp_path / "cache2"))
    )
    unsharded = negvocab.run_grid(whole, tmp_path / "whole", deterministic=True)
    files = sorted(p.name for p in (tmp_path / "sharded" / "scores").glob("*.npz"))
    assert files == sorted(p.name for p in (tmp_path / "whole" / "scores").glob("*.npz")) and len(files) == 2 * 5 * 4
    for name in files:
        with np.load(tmp_path / "sharded" / "scores" / name) as a, np.load(tmp_path / "whole" / "scores" / name) as b:
            assert a["scores"].tobytes() == b["scores"].tobytes()
            meta = json.loads(str(a["meta"]))["made_by"]
    assert (
        meta["engine"] == "local"
        and meta["device"] == "cpu"
        and meta["dtype"] == "fp32"
        and meta["deterministic"] is True
    )
    import torch

    assert meta["versions"]["torch"] == torch.__version__
    # the digests name fp32: a later non-deterministic run (precision left to the device) does not reuse these files
    assert {r["cell"] for r in sharded.rows} == {r["cell"] for r in unsharded.rows}


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("num_gpus = -1", "resources.num_gpus = -1: must be a number >= 0"),
        ("num_cpus = 0", "resources.num_cpus = 0: must be a number > 0"),
        ('memory = "lots"', "resources.memory = 'lots': must be a number of bytes > 0 or a size such as \"16GiB\""),
        ("workers = 1.5", "resources.workers = 1.5: must be a whole number > 0"),
        ("shard_images = true", "resources.shard_images = True: must be a whole number > 0"),
        (
            "gpus = 1",
            "resources.gpus: unknown key; known: num_gpus, num_cpus, memory, workers, shard_images, image, text, score",
        ),
        ("[resources.image]\nnum_cpus = -2", "resources.image.num_cpus = -2: must be a number > 0"),
        ("[resources.text]\nnum_gpus = -0.5", "resources.text.num_gpus = -0.5: must be a number >= 0"),
        ('[resources.score]\nmemory = "0GiB"', "resources.score.memory = 0: must be a number of bytes > 0"),
        ("[resources.score]\nworkers = 2", "resources.score.workers: unknown key; known: num_gpus, num_cpus, memory"),
        ("[resources.gpu]\nnum_gpus = 1", "resources.gpu: unknown key"),
    ],
)
def test_a_bad_resources_table_is_one_line_naming_the_key(grid_toml, table, fragment):
    with pytest.raises(negvocab.core.errors.InputError) as e:
        negvocab.load_grid(_with(grid_toml, resources=table + "\n"))
    assert str(e.value).startswith(f"{grid_toml}: ") and fragment in str(e.value) and "\n" not in str(e.value)


def test_each_unit_kind_has_its_own_request(grid_toml):
    cfg = negvocab.load_grid(
        _with(
            grid_toml,
            resources=(
                'num_gpus = 1\nnum_cpus = 4\nmemory = "8GiB"\n[resources.text]\nnum_cpus '
                "= 1\n[resources.score]\nnum_cpus = 2\n"
            ),
        )
    )
    r = cfg.resources
    assert (r.unit("image").num_gpus, r.unit("image").num_cpus, r.unit("image").memory) == (
        1,
        4,
        8 * 2**30,
    )  # the top level
    assert (r.unit("text").num_gpus, r.unit("text").num_cpus, r.unit("text").memory) == (
        1,
        1,
        8 * 2**30,
    )  # its own CPUs
    assert (r.unit("score").num_gpus, r.unit("score").num_cpus, r.unit("score").memory) == (
        0,
        2,
        None,
    )  # no model: no GPU
    assert r.unit("image").loader_workers() == 3 and r.unit("text").loader_workers() == 0


def test_resources_are_read_and_tie_the_loader_to_the_cpus(grid_toml):
    import os

    cfg = negvocab.load_grid(
        _with(grid_toml, resources='num_gpus = 0.5\nnum_cpus = 3\nmemory = "2GiB"\nworkers = 4\nshard_images = 1000\n')
    )
    r = cfg.resources
    assert (r.num_gpus, r.num_cpus, r.memory, r.workers) == (0.5, 3.0, 2 * 2**30, 4)
    assert r.shard_size(None) == 1024 and r.shard_size(64) == 1024 and r.shard_size(300) == 1200
    assert r.loader_workers() == 2 and r.loader_workers(local=True) == max(0, min(3, os.cpu_count() or 1) - 1)
    from negvocab.grid.resources import Resources

    d = Resources()  # no [resources]: 1 CPU per Ray worker (no loader processes), the local loader's own default
    assert d.cpus == 1.0 and d.loader_workers() == 0 and d.loader_workers(local=True) is None


def test_a_cache_that_cannot_be_written_is_scored_with_the_model(grid_toml, tmp_path, monkeypatch, caplog):
    """The score unit reads the image rows from the cache; when the cache kept none (a full or
    read-only disk), the model scores them instead and the results are the same."""
    toml = _with(
        grid_toml, "batch_size = 4\n"
    )  # loader workers forked: tests/report/test_results.py's released-claim test
    clean = negvocab.run_grid(toml, tmp_path / "clean")
    from negvocab.vlm.cache import EmbeddingStore

    monkeypatch.setattr(EmbeddingStore, "put", lambda self, keys, rows: None)  # nothing reaches the disk
    other = toml.with_name(toml.stem + "_nocache.toml")
    other.write_text(toml.read_text().replace(str(tmp_path / "cache"), str(tmp_path / "cache_unwritable")))
    caplog.set_level("WARNING")
    res = negvocab.run_grid(other, tmp_path / "nocache")
    assert res.status["total"] == clean.status["total"] == {"done": 60, "pending": 0, "failed": 0}
    said = [r.getMessage() for r in caplog.records if "not in the embedding cache" in r.getMessage()]
    assert len(said) == 2 and all("embedding them again with the model" in m for m in said)  # one per model
    a = {(r["model"], r["vocabulary"], r["ood_set"], r["method"], r["convention"]): r for r in clean.rows}
    b = {(r["model"], r["vocabulary"], r["ood_set"], r["method"], r["convention"]): r for r in res.rows}
    assert (
        a.keys() == b.keys()
        and max(abs(a[k]["fpr"] - b[k]["fpr"]) + abs(a[k]["auroc"] - b[k]["auroc"]) for k in a) <= 1e-6
    )


class _Cluster:
    """What the Ray engine asks a cluster before it places workers: its resources (Ray's own keys)."""

    def __init__(self, **resources):
        self.resources = resources

    def cluster_resources(self):
        return dict(self.resources)


def test_placement_fills_every_gpu_and_leaves_room_per_kind(grid_toml):
    from negvocab.grid.ray_engine import _pools, _request

    base = grid_toml.read_text()

    def load(resources=""):
        grid_toml.write_text(base + (f"\n[resources]\n{resources}" if resources else ""))
        return negvocab.load_grid(grid_toml)

    units = [Unit("image", m, "ID", a, a + 8) for m in ("TinyA", "TinyB") for a in range(0, 160, 8)] + [
        Unit(k, m) for m in ("TinyA", "TinyB") for k in ("text", "score")
    ]
    eight = _Cluster(CPU=64.0, GPU=8.0, memory=512.0 * 2**30)
    cfg = load("num_cpus = 4\n")
    ((kinds, opts, n),), _ = _pools(eight, cfg, units)  # 2 models, 8 GPUs: every GPU gets a model worker
    assert kinds == {"image", "text"} and (opts["num_gpus"], opts["num_cpus"], n) == (1.0, 4, 8)
    assert _request(eight, cfg, "score") == {"num_gpus": 0.0, "num_cpus": 1.0}  # scoring: no GPU
    cfg = load('num_cpus = 4\n[resources.text]\nnum_cpus = 1\n[resources.score]\nnum_cpus = 2\nmemory = "1GiB"\n')
    (text, image), spare = _pools(
        eight, cfg, units
    )  # a text pool of one worker per model, the image pool gets the rest
    assert (text[0], text[2], image[0], image[2]) == ({"text"}, 2, {"image"}, 6) and spare["GPU"] == 0
    assert _request(eight, cfg, "score") == {"num_gpus": 0.0, "num_cpus": 2.0, "memory": 2**30}
    cpus = _Cluster(CPU=2.0)
    ((_, opts, n),), _ = _pools(cpus, load(), units)  # no GPU: one CPU each
    assert (opts["num_gpus"], opts["num_cpus"], n) == (0.0, 1.0, 2)
    with pytest.raises(negvocab.core.errors.ResourceError, match="cannot hold one model worker"):
        _pools(cpus, load("num_cpus = 4\n"), units)
    # text workers that would take every CPU leave room for one image worker
    (text, image), spare = _pools(
        _Cluster(CPU=2.0, memory=2.0**30), load('[resources.text]\nnum_cpus = 1\nmemory = "1MiB"\n'), units
    )
    assert (text[2], image[2], spare["CPU"]) == (1, 1, 0)


class _FakeRay:
    """Ray's calls that _Workers makes: actors are names, kills are recorded."""

    def __init__(self):
        self.killed = []

    def remote(self, cls):
        ray = self

        class _Handle:
            def options(self, **opts):
                return self

            def remote(self, *args):
                return f"actor{len(ray.killed)}-{id(args)}"

        return _Handle()

    def kill(self, actor):
        self.killed.append(actor)


def test_a_retired_text_worker_leaves_its_gpu_to_image_shards():
    """Text and image units asking for different resources: once the text pool retires, its GPU
    starts another image worker while shards still wait (and never more than wait, or fit)."""
    from negvocab.grid.ray_engine import _Dispatch, _Workers

    text_opts, image_opts = {"num_gpus": 1.0, "num_cpus": 1}, {"num_gpus": 1.0, "num_cpus": 4}
    pools = [(frozenset({"text"}), text_opts, 1), (frozenset({"image"}), image_opts, 1)]
    workers = _Workers(_FakeRay(), pools, (), {"GPU": 0.0, "CPU": 3.0})
    plan = _Dispatch(
        [Unit("image", "A", "ID", a, a + 8) for a in range(0, 40, 8)] + [Unit("text", "A"), Unit("score", "A")]
    )
    assert workers.grow(plan.waiting) == []  # nothing free yet
    for a, (_, kinds) in list(workers.actors.items()):
        assert plan.next_for(a, kinds) is not None  # the text unit and one shard handed out
    text = next(a for a, (_, kinds) in workers.actors.items() if kinds == {"text"})
    workers.retire(text)
    assert workers.spare == {"GPU": 1.0, "CPU": 4.0}
    (new,) = workers.grow(plan.waiting)  # 4 shards wait: one more image worker (one GPU free)
    assert workers.actors[new][1] == {"image"} and workers.spare == {"GPU": 0.0, "CPU": 0.0}
    assert workers.grow(plan.waiting) == []
    for a in list(workers.actors):
        workers.retire(a)
    assert workers.spare == {"GPU": 2.0, "CPU": 8.0}
    workers.ensure_image_worker()  # (a score unit the cache failed) counted out like any other worker
    assert workers.spare == {"GPU": 1.0, "CPU": 4.0}


def test_a_model_worker_gives_its_loader_the_cpus_of_its_unit(grid_toml, tmp_path):
    import os

    from negvocab.grid.units import ModelHost

    cfg = negvocab.load_grid(_with(grid_toml, "batch_size = 4\n", "num_cpus = 3\n[resources.text]\nnum_cpus = 1\n"))
    sets = open_sets(cfg)
    work = ModelWork(cfg.models[0], [c for c in plan_cells(cfg, sets) if c.model == "TinyA"])
    host = ModelHost(cfg, {"TinyA": work}, sets, str(tmp_path), "local")
    r = host.run(Unit("image", "TinyA", "oodB", 0, 7), collect=False)
    assert "error" not in r and host.vlm.num_workers == min(3, os.cpu_count() or 1) - 1  # the model runs on the third
    assert r["stats"]["failed_images"] == {"oodB": []} and host.loads == {"TinyA": 1}


def test_a_score_file_recomputed_at_the_end_records_who_made_it(grid_toml, tmp_path):
    """finish_cells computes a score file gone since its unit wrote it (a worker that wrote to
    another filesystem) with the model; that file records its maker as every other one does."""
    import json

    from negvocab.grid.work import finish_cells, read_cell

    toml = _with(grid_toml, "batch_size = 4\n")
    negvocab.run_grid(toml, tmp_path / "out")
    cfg = negvocab.load_grid(toml)
    cells = [c for c in plan_cells(cfg, open_sets(cfg)) if c.model == "TinyA"]
    gone = tmp_path / "out" / "scores" / f"{cells[0].ood_scores}.npz"
    made = json.loads(str(np.load(gone)["meta"]))["made_by"]
    gone.unlink()
    (tmp_path / "out" / "cells" / f"{cells[0].digest}.json").unlink()
    work = ModelWork(cfg.models[0], [c for c in cells if read_cell(tmp_path / "out", c) is None])
    finish_cells(cfg, work, tmp_path / "out", {"embed_calls": {}}, None, "ray")
    again = json.loads(str(np.load(gone)["meta"]))["made_by"]
    assert again == {**made, "engine": "ray"} and again["score_device"] == "cpu"


def test_a_gpu_asked_for_scoring_where_there_is_none_is_one_line_before_any_work(grid_toml, tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    toml = _with(grid_toml, "batch_size = 4\n", "[resources.score]\nnum_gpus = 1\n")
    with pytest.raises(
        negvocab.core.errors.ResourceError, match=r"\[resources.score\] num_gpus asks for a GPU.*set num_gpus = 0"
    ):
        negvocab.run_grid(toml, tmp_path / "out")
    assert not list((tmp_path / "cache").glob("image/*/*.npy"))  # before any image was embedded


def test_score_units_on_ray_may_ask_for_a_gpu_the_driver_lacks(grid_toml):
    """On Ray a score task asking for a GPU runs on a GPU node: the driver (a laptop with Ray
    Client, a CPU head node) need not have one; the local engine must."""
    from negvocab.grid.work import score_device

    assert score_device(negvocab.load_grid(grid_toml), "ray") == "cpu"  # no GPU asked
    cfg = negvocab.load_grid(_with(grid_toml, "", "[resources.score]\nnum_gpus = 1\n"))
    assert score_device(cfg, "ray") == "cuda"


def test_a_full_disk_inside_a_unit_stops_the_run_and_fails_no_cell(grid_toml, tmp_path, monkeypatch):
    """A full disk is not the model's fault: the run stops with the disk's line, no cell is marked
    failed, and a rerun with space computes everything."""
    import errno

    from negvocab.core.errors import DiskFullError
    from negvocab.grid import work as W

    toml = _with(grid_toml, "batch_size = 4\n")
    real = W.score_files

    def full(*a, **k):
        raise DiskFullError(errno.ENOSPC, "cannot write scores/x.npz: the disk is full (0 B free in /tmp)")

    monkeypatch.setattr(W, "score_files", full)
    with pytest.raises(DiskFullError, match="the disk is full"):
        negvocab.run_grid(toml, tmp_path / "out")
    assert not list((tmp_path / "out").glob("failures/*")) and not list((tmp_path / "out").glob("cells/*.json"))
    monkeypatch.setattr(W, "score_files", real)
    assert negvocab.run_grid(toml, tmp_path / "out").status["total"] == {"done": 60, "pending": 0, "failed": 0}
