"""The Ray engine on a local 2-CPU cluster (one per module): image sets split into shards on two
model workers, models loaded once per worker, progress and workers' warnings on the driver,
bit-identical deterministic scores, and a worker killed mid-grid leaves no duplicated or torn
cache entry."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import threading
import time

import numpy as np
import pytest

import negvocab

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")  # the clusters these tests start must not overlap (pytest -n)


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _key(r):
    return (r["model"], r["vocabulary"], r["ood_set"], r["method"], r["convention"])


def _pids_titled(title):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if fh.read().split(b"\0")[0].decode(errors="replace").startswith(title):
                        out.append(int(entry))
            except OSError:
                continue
    return out


def _check_cache(root):
    """Every committed shard verifies, and no image key is stored twice in one store."""
    stores = 0
    for store in (root / "image").iterdir():
        keys = []
        for manifest in store.glob("*.json"):
            if manifest.name == "key.json":
                continue
            info = json.loads(manifest.read_text())
            data = (store / f"{manifest.stem}.npy").read_bytes()
            assert hashlib.sha256(data).hexdigest() == info["sha256"], manifest
            keys += info["keys"]
        assert len(keys) == len(set(keys)), f"duplicated cache entries in {store}"
        stores += 1
    assert stores >= 1


def _scores(out):
    """{score file: (scores, meta)} of a grid output folder."""
    got = {}
    for path in sorted((out / "scores").glob("*.npz")):
        with np.load(path, allow_pickle=False) as z:
            got[path.name] = (z["scores"].copy(), json.loads(str(z["meta"])).get("made_by", {}))
    return got


def test_shards_on_separate_workers_models_loaded_once_per_worker_and_bit_identical_to_local(
    cluster, grid_toml, grid_files, tmp_path, caplog, monkeypatch
):
    """Shards of one set run as separate units on both actors, the cached embeddings equal an
    unsharded encoding, each model is loaded at most once per actor, progress lines come while
    units run, a worker's warning reaches the driver's log, and --deterministic score files hold
    the local engine's scores bit for bit."""
    import negvocab.core.progress as P
    import negvocab.grid.ray_engine as R
    from negvocab.grid.units import deterministic_config
    from negvocab.grid.work import load_model, open_sets

    bad = grid_files / "oodD"
    if not bad.exists():
        from tests.grid.conftest import _images

        _images(bad, 5, np.random.default_rng(7))
        (bad / "im_truncated.png").write_bytes((bad / "im000.png").read_bytes()[:40])  # a download cut short
    text = (
        grid_toml.read_text()
        .replace("[grid]\n", "[grid]\nbatch_size = 4\n")
        .replace('oodC = "oodC"', 'oodC = "oodC"\noodD = "oodD"')
    )
    text += "\n[resources]\nshard_images = 8\nnum_cpus = 1\n"
    text = text.replace(
        '[[models]]\nname = "TinyB"\nmodel_config = "TinyB.json"\nrandom_weights = true\nseed = 1\n', ""
    )  # one model, two workers
    grid_toml.write_text(text)
    monkeypatch.setenv(P.EVERY_ENV, "0.3")  # a line every 0.3 s, configurable without code
    monkeypatch.setattr(R, "WAIT_S", 0.1)
    caplog.set_level(logging.INFO)
    on_ray = negvocab.run_grid(grid_toml, tmp_path / "ray", engine="ray", deterministic=True)
    assert on_ray.status["total"] == {"done": 40, "pending": 0, "failed": 0}

    done = [r for r in caplog.records if r.name == "negvocab.grid.ray_engine" and " done on " in r.getMessage()]
    id_shards = {
        r.getMessage().split(" done on worker ")[0]: r.worker_pid for r in done if ": image ID[" in r.getMessage()
    }
    assert sorted(id_shards) == sorted(f"TinyA: image ID[{a}:{a + 8}]" for a in (0, 8, 16))
    assert len(set(id_shards.values())) == 2, "the shards of one set ran on one worker only"
    units = len(done)
    assert units == 3 + 2 + 1 + 2 + 1 + 2 and on_ray.stats["model_loads"] == {
        "TinyA": 2
    }  # 11 units, one load per worker
    scored = [r for r in done if " done on a score task " in r.getMessage()]  # a Ray task of its own, no model
    assert [r.getMessage().split(" done on ")[0] for r in scored] == ["TinyA: score"] and scored[
        0
    ].worker_pid not in id_shards.values()
    ticks = [
        r.getMessage() for r in caplog.records if r.name == "negvocab.core.progress" and "units/s" in r.getMessage()
    ]
    assert any(f"/{units} units" in t and "images/s" in t for t in ticks)
    counts = [t.split(" units")[0] for t in ticks]
    assert len(counts) > len(set(counts)), "no line while a unit was running (every line came with a finished unit)"
    warned = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "negvocab.grid.ray_engine"
    ]
    assert any("image oodD[0:6]" in w and "could not be read" in w for w in warned), warned

    # the cached (sharded, Ray) ID embeddings equal an unsharded encoding here, without the cache
    torch = pytest.importorskip("torch")
    cfg = deterministic_config(negvocab.load_grid(grid_toml))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for spec in cfg.models[:1]:
            vlm = load_model(cfg, spec)
            cached = vlm.encode_images(open_sets(cfg)["ID"], batch_size=4, num_workers=0).embeddings
            vlm.cache_enabled = False
            fresh = vlm.encode_images(open_sets(cfg)["ID"], batch_size=4, num_workers=0).embeddings
            assert np.array_equal(cached, fresh), float(np.abs(cached - fresh).max())
    finally:
        torch.set_num_threads(threads)

    local_toml = grid_toml.with_name(grid_toml.stem + "_local.toml")
    local_toml.write_text(text.replace(str(tmp_path / "cache"), str(tmp_path / "cache_local")))
    local = negvocab.run_grid(local_toml, tmp_path / "local", deterministic=True)
    a, b = _scores(tmp_path / "ray"), _scores(tmp_path / "local")
    assert a.keys() == b.keys() and len(a) == (1 + 4) * 5  # (mcm + neglabel x 4 vocabularies) x 5 sets
    for name in a:
        assert a[name][0].tobytes() == b[name][0].tobytes(), name
        assert (a[name][1]["engine"], b[name][1]["engine"]) == ("ray", "local")
        assert (
            a[name][1]["device"] == "cpu"
            and a[name][1]["dtype"] == "fp32"
            and a[name][1]["versions"]["torch"] == torch.__version__
        )
    assert {_key(r): r["fpr"] for r in on_ray.rows} == {_key(r): r["fpr"] for r in local.rows}
    _check_cache(tmp_path / "cache")


def test_a_worker_killed_mid_grid_gives_the_same_results(cluster, grid_toml, grid_files, tmp_path):
    text = (
        grid_toml.read_text().replace('path = "id"', 'path = "id_big"').replace("[grid]\n", "[grid]\nbatch_size = 4\n")
        + "\n[resources]\nshard_images = 100\n"
    )
    big = grid_files / "id_big"
    if not big.exists():
        from tests.grid.conftest import _images

        _images(big, 300, np.random.default_rng(5))
    grid_toml.write_text(text)
    killed = []

    def killer():
        """Kill a model worker (Ray titles an actor running a call ``ray::ModelHost.run``) once
        it has run for a while: it is embedding a shard of the 300 images then."""
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for pid in _pids_titled("ray::ModelHost.run"):
                time.sleep(1.5)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.2)

    th = threading.Thread(target=killer)
    th.start()
    on_ray = negvocab.run_grid(grid_toml, tmp_path / "ray", engine="ray")
    th.join()
    assert killed, "the model task was never seen running"
    assert on_ray.status["total"]["done"] == 60
    local_toml = grid_toml.with_name(grid_toml.stem + "_local.toml")
    local_toml.write_text(text.replace(str(tmp_path / "cache"), str(tmp_path / "cache_local")))
    local = negvocab.run_grid(local_toml, tmp_path / "local")
    a, b = {_key(r): r for r in on_ray.rows}, {_key(r): r for r in local.rows}
    assert max(abs(a[k][m] - b[k][m]) for k in a for m in ("fpr", "auroc", "aupr_in")) <= 1e-6
    _check_cache(tmp_path / "cache")


def test_text_and_image_pools_of_their_own_finish_the_grid(cluster, grid_toml, tmp_path, caplog):
    """Text units asking for other resources than image units get a pool of their own on a real
    cluster (one text worker, room left for one image worker) and the grid finishes. Whether the
    retired text worker's CPU starts a second image worker depends on timing here (tiny shards
    may all be done first): tests/grid/test_grid_units.py checks that hand-over exactly."""
    text = grid_toml.read_text().replace("[grid]\n", "[grid]\nbatch_size = 4\n")
    text = text.replace(
        '[[models]]\nname = "TinyB"\nmodel_config = "TinyB.json"\nrandom_weights = true\nseed = 1\n', ""
    )  # one model
    grid_toml.write_text(
        text + '\n[resources]\nshard_images = 4\nnum_cpus = 1\n[resources.text]\nnum_cpus = 1\nmemory = "64MiB"\n'
    )
    caplog.set_level(logging.INFO)
    res = negvocab.run_grid(grid_toml, tmp_path / "ray", engine="ray")
    assert res.status["total"] == {"done": 30, "pending": 0, "failed": 0}
    said = [r.getMessage() for r in caplog.records if r.name == "negvocab.grid.ray_engine"]
    assert (
        "1 model workers for text units (0 GPUs, 1 CPUs each)" in said
        and "1 model workers for image units (0 GPUs, 1 CPUs each)" in said
    )


def test_negrefine_and_tanl_cells_on_ray_equal_the_local_engine(cluster, grid_toml, tmp_path, caplog):
    """On Ray, a score task that meets NegRefine (texts embedded as it scores) hands its unit to a model
    worker, and TANL's noise images come from the text unit: both give the local engine's numbers."""
    text = grid_toml.read_text().replace(
        '[[models]]\nname = "TinyB"\nmodel_config = "TinyB.json"\nrandom_weights = true\nseed = 1\n', ""
    )  # one model
    text += '\n[[methods]]\nname = "negrefine"\n\n[[methods]]\nname = "tanl"\nstream = { batch_size = 3, seed = 1 }\n'
    grid_toml.write_text(text)
    caplog.set_level(logging.INFO)
    on_ray = negvocab.run_grid(grid_toml, tmp_path / "ray", engine="ray")
    assert on_ray.status["total"]["failed"] == 0 and on_ray.status["total"]["pending"] == 0
    said = [r.getMessage() for r in caplog.records if r.name == "negvocab.grid.ray_engine"]
    assert any("negrefine embeds a text per image and ID class as it scores" in m for m in said), said
    local = negvocab.run_grid(grid_toml, tmp_path / "local")  # the same cache: every embedding read back
    a, b = {_key(r): r for r in on_ray.rows}, {_key(r): r for r in local.rows}
    assert a.keys() == b.keys() and {k[3] for k in a} >= {"negrefine", "tanl"}
    for k in a:
        assert a[k]["auroc"] == pytest.approx(b[k]["auroc"], abs=1e-9) and a[k]["fpr"] == pytest.approx(
            b[k]["fpr"], abs=1e-9
        ), k
