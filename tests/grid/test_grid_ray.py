"""The Ray engine on a local 2-CPU cluster (one per module): same results as the local engine, a
large set through Ray Data, and a worker killed mid-grid leaves no duplicated or torn cache entry."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time

import numpy as np
import pytest

import negvocab

ray = pytest.importorskip("ray")


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


def test_ray_equals_local_and_ray_data_embeds_large_sets(cluster, grid_toml, tmp_path):
    text = grid_toml.read_text().replace("[grid]\n", "[grid]\nray_data_min_images = 20\n")  # the 24 ID images go through Ray Data
    grid_toml.write_text(text)
    on_ray = negvocab.run_grid(grid_toml, tmp_path / "ray", engine="ray")
    local_toml = grid_toml.with_name(grid_toml.stem + "_local.toml")
    local_toml.write_text(text.replace(str(tmp_path / "cache"), str(tmp_path / "cache_local")))
    local = negvocab.run_grid(local_toml, tmp_path / "local")
    assert on_ray.status["total"] == {"done": 60, "pending": 0, "failed": 0}
    a, b = {_key(r): r for r in on_ray.rows}, {_key(r): r for r in local.rows}
    assert a.keys() == b.keys()
    for k in a:
        for m in ("fpr", "auroc", "aupr_in", "aupr_out", "fpr_ci_low", "auroc_ci_high"):
            assert abs(a[k][m] - b[k][m]) <= 1e-6, (k, m)
    _check_cache(tmp_path / "cache")


def test_a_worker_killed_mid_grid_gives_the_same_results(cluster, grid_toml, grid_files, tmp_path):
    text = grid_toml.read_text().replace('path = "id"', 'path = "id_big"').replace("[grid]\n", "[grid]\nbatch_size = 4\n")
    big = grid_files / "id_big"
    if not big.exists():
        from tests.grid.conftest import _images

        _images(big, 300, np.random.default_rng(5))
    grid_toml.write_text(text)
    killed = []

    def killer():
        """Kill the worker process running TinyA's task (Ray titles it ``ray::<task name>``) once
        it has run for a while: it is embedding the 300 images then."""
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for pid in _pids_titled("ray::negvocab-grid:TinyA"):
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
