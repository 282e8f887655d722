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
    work.missing = {c.id_scores: (c.vocabulary, c.method, "ID") for c in work.cells} | {c.ood_scores: (c.vocabulary, c.method, c.ood_set) for c in work.cells}
    units = plan_units(cfg, [work], sets)
    assert [u.kind for u in units[-2:]] == ["text", "score"] and units[-1] == Unit("score", "TinyA")
    for name, s in sets.items():
        shards = [u for u in units if u.kind == "image" and u.set_name == name]
        covered = [i for u in shards for i in range(u.start, u.stop)]
        assert covered == list(range(len(s)))  # each image once, in order
        assert all(u.start % 8 == 0 and (u.images == 8 or u.stop == len(s)) for u in shards)
    assert sum(u.images for u in units) == 24 + 10 + 7 + 9


def test_local_engine_loads_each_model_once_and_sharding_changes_no_bit(grid_toml, tmp_path):
    toml = _with(grid_toml, "batch_size = 4\n", "shard_images = 8\n")
    sharded = negvocab.run_grid(toml, tmp_path / "sharded", deterministic=True)
    assert sharded.stats["model_loads"] == {"TinyA": 1, "TinyB": 1}  # 2 x (3+2+1+2 image units + text + score) on one host
    whole = toml.with_name(toml.stem + "_whole.toml")
    whole.write_text(toml.read_text().replace("shard_images = 8", "shard_images = 4096").replace(str(tmp_path / "cache"), str(tmp_path / "cache2")))
    unsharded = negvocab.run_grid(whole, tmp_path / "whole", deterministic=True)
    files = sorted(p.name for p in (tmp_path / "sharded" / "scores").glob("*.npz"))
    assert files == sorted(p.name for p in (tmp_path / "whole" / "scores").glob("*.npz")) and len(files) == 2 * 5 * 4
    for name in files:
        with np.load(tmp_path / "sharded" / "scores" / name) as a, np.load(tmp_path / "whole" / "scores" / name) as b:
            assert a["scores"].tobytes() == b["scores"].tobytes()
            meta = json.loads(str(a["meta"]))["made_by"]
    assert meta["engine"] == "local" and meta["device"] == "cpu" and meta["dtype"] == "fp32" and meta["deterministic"] is True
    import torch

    assert meta["versions"]["torch"] == torch.__version__
    # the digests name fp32: a later non-deterministic run (precision left to the device) does not reuse these files
    assert {r["cell"] for r in sharded.rows} == {r["cell"] for r in unsharded.rows}


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("num_gpus = -1", "num_gpus must be a number >= 0"),
        ("num_cpus = 0", "num_cpus must be a number > 0"),
        ('memory = "lots"', "memory must be bytes"),
        ("workers = 1.5", "workers must be a whole number"),
        ("gpus = 1", "unknown key(s) gpus"),
    ],
)
def test_a_bad_resources_table_is_one_line_naming_the_key(grid_toml, table, fragment):
    with pytest.raises(negvocab.errors.InputError) as e:
        negvocab.load_grid(_with(grid_toml, resources=table + "\n"))
    assert fragment in str(e.value) and "[resources]" in str(e.value) and "\n" not in str(e.value)


def test_resources_are_read_and_tie_the_loader_to_the_cpus(grid_toml):
    import os

    cfg = negvocab.load_grid(_with(grid_toml, resources='num_gpus = 0.5\nnum_cpus = 3\nmemory = "2GiB"\nworkers = 4\nshard_images = 1000\n'))
    r = cfg.resources
    assert (r.num_gpus, r.num_cpus, r.memory, r.workers) == (0.5, 3.0, 2 * 2**30, 4)
    assert r.shard_size(None) == 1024 and r.shard_size(64) == 1024 and r.shard_size(300) == 1200
    assert r.loader_workers() == 2 and r.loader_workers(local=True) == max(0, min(3, os.cpu_count() or 1) - 1)
    from negvocab.grid.resources import Resources

    d = Resources()  # no [resources]: 1 CPU per Ray worker (no loader processes), the local loader's own default
    assert d.cpus == 1.0 and d.loader_workers() == 0 and d.loader_workers(local=True) is None
