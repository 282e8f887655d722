"""``negvocab grid run --engine ray --ray-address``: a grid run from the CLI on a separately
started Ray head (``ray start --head``, its own folder and environment) gives the local engine's
results, the driver joined that cluster (it did not start its own), and the workers, whose working
folder and default cache differ from the driver's, wrote into the driver's results and cache folders."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import negvocab

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.xdist_group("ray")  # the clusters these tests start must not overlap (pytest -n)

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]
# the Ray Client server's log line for a client (ray/util/client/server/dataservicer.py)
CLIENT_SEEN = "New data connection from client"
METRICS = ("fpr", "auroc", "aupr_in", "aupr_out", "fpr_ci_low", "auroc_ci_high")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _auth_mode() -> str:
    """Token authentication when a Ray token is at hand (Ray's own default then), else none; the
    head and the driver are given the same mode explicitly."""
    try:
        from ray._raylet import AuthenticationTokenLoader

        return "token" if AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True) else "disabled"
    except (ImportError, AttributeError):
        return "disabled"


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head of 2 CPUs started with ``ray start --head --block`` in a folder of its own (its
    workers run there), in its own process group, which teardown ends (SIGTERM, then SIGKILL)."""
    if shutil.which("ray") is None:
        pytest.skip("the ray command is not installed")
    folder = Path(tempfile.mkdtemp(prefix="nvray", dir="/tmp"))  # short: Ray's socket paths must fit
    port, client_port, mode = _free_port(), _free_port(), _auth_mode()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RAY_AUTH_MODE": mode,
        "NEGVOCAB_CACHE_DIR": str(folder / "head_cache"),
    }
    cmd = [
        "ray",
        "start",
        "--head",
        "--block",
        "--num-cpus",
        "2",
        "--port",
        str(port),
        "--node-ip-address",
        "127.0.0.1",
    ]
    cmd += ["--ray-client-server-port", str(client_port)]  # Ray Client (ray://) too
    cmd += ["--include-dashboard=false", "--disable-usage-stats", "--temp-dir", str(folder / "t")]
    log = open(folder / "head.log", "wb")  # closed in teardown
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while b"Ray runtime started" not in (folder / "head.log").read_bytes():
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail("ray start did not come up:\n" + (folder / "head.log").read_text(errors="replace")[-2000:])
            time.sleep(0.5)
        yield {
            "address": f"127.0.0.1:{port}",
            "client": f"ray://127.0.0.1:{client_port}",
            "folder": folder,
            "auth_mode": mode,
        }
    finally:
        for sig, wait in (
            (signal.SIGTERM, 5),
            (signal.SIGKILL, 10),
        ):  # `ray start --block` may sit out a SIGTERM: not 30 s
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # workers left in the group
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _key(r):
    return (r["model"], r["vocabulary"], r["ood_set"], r["method"], r["convention"])


def _one_model(text: str) -> str:
    """The grid with its first model only (TinyA): quicker, still every vocabulary/set/method."""
    head, _, rest = text.partition('[[models]]\nname = "TinyB"')
    return head + rest[rest.index("\n[id]") :]


def _assert_equals_local(rows, grid_toml, local_text, tmp_path):
    """``rows`` (a Ray run's) equal the local engine's on the grid ``local_text`` (its own cache)."""
    local_toml = grid_toml.with_name(grid_toml.stem + "_local.toml")
    local_toml.write_text(local_text)
    local = negvocab.run_grid(local_toml, tmp_path / "local")
    a, b = {_key(r): r for r in rows}, {_key(r): r for r in local.rows}
    assert a.keys() == b.keys() and len(a) == 30
    for k in a:
        for m in METRICS:
            assert abs(a[k][m] - b[k][m]) <= 1e-6, (k, m)


def test_cli_on_an_existing_cluster_equals_local(ray_head, grid_toml, tmp_path):
    if ray.is_initialized():
        ray.shutdown()
    text = _one_model(grid_toml.read_text())
    text = re.sub(r'cache_dir = ".*"\n', "", text)  # the default cache: this driver's, not the head's
    grid_toml.write_text(text)
    driver_cache = tmp_path / "driver_cache"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RAY_AUTH_MODE": ray_head["auth_mode"],
        "NEGVOCAB_CACHE_DIR": str(driver_cache),
    }
    env.pop("RAY_ADDRESS", None)
    cwd = tmp_path / "here"
    cwd.mkdir()
    cmd = [
        *CLI,
        "grid",
        "run",
        str(grid_toml),
        "-o",
        "rel_out",
        "--engine",
        "ray",
        "--ray-address",
        ray_head["address"],
    ]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    assert "30 cells (30 done, 0 pending, 0 failed)" in stdout, stdout

    # the driver joined the head's cluster: the head registered a job of this driver process
    gcs_log = next((ray_head["folder"] / "t").glob("session_*/logs/gcs_server.out")).read_text(errors="replace")
    assert f"driver_pid={proc.pid}" in gcs_log, "the grid's driver never registered with the given cluster"
    assert "Started a local Ray instance" not in stderr
    assert "score files the Ray workers wrote are not in" not in stderr  # nothing computed twice, on the driver
    # the workers (another folder, another default cache) wrote into the driver's folders
    assert (cwd / "rel_out" / "cells").is_dir() and not (ray_head["folder"] / "rel_out").exists()
    assert any((driver_cache / "embeddings").rglob("*.npy")) and not (ray_head["folder"] / "head_cache").exists()

    on_ray = negvocab.run_grid(grid_toml, cwd / "rel_out")  # every cell stored: nothing runs, rows read back
    assert on_ray.status["total"] == {"done": 30, "pending": 0, "failed": 0}
    _assert_equals_local(
        on_ray.rows,
        grid_toml,
        text.replace("[grid]\n", f'[grid]\ncache_dir = "{tmp_path / "cache_local"}"\n'),
        tmp_path,
    )


def test_already_connected_elsewhere_is_refused_in_one_line(ray_head, grid_toml, tmp_path):
    """A driver already connected to one cluster (a notebook) asked to run on another is told so,
    not run silently on the first."""
    from negvocab.errors import ResourceError

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(ResourceError, match=r"already connected to the Ray cluster at .*not 127\.0\.0\.1"):
            negvocab.run_grid(grid_toml, tmp_path / "out", engine="ray", ray_address=ray_head["address"])
    finally:
        ray.shutdown()


def test_a_grid_through_ray_client_equals_the_local_engine(ray_head, grid_toml, tmp_path, monkeypatch):
    """``ray://HOST:PORT`` (Ray Client, the ``[ray]`` extra's grpcio): the driver runs here, the
    units on the head's workers, and the results equal the local engine's."""
    import grpc  # noqa: F401  (what Ray Client needs; negvocab[ray] installs ray[client])

    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setenv("RAY_AUTH_MODE", ray_head["auth_mode"])
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    text = _one_model(grid_toml.read_text())
    grid_toml.write_text(text)
    on_ray = negvocab.run_grid(grid_toml, tmp_path / "client", engine="ray", ray_address=ray_head["client"])
    assert on_ray.status["total"] == {"done": 30, "pending": 0, "failed": 0} and not ray.is_initialized()
    logs = "".join(
        p.read_text(errors="replace") for p in (ray_head["folder"] / "t").glob("session_*/logs/ray_client_server*")
    )
    assert CLIENT_SEEN in logs, "the head's Ray Client server saw no client"
    _assert_equals_local(
        on_ray.rows, grid_toml, text.replace(str(tmp_path / "cache"), str(tmp_path / "cache_local")), tmp_path
    )


def test_a_failed_ray_client_connection_says_why(grid_toml, tmp_path, monkeypatch):
    """Nothing listens at the address: the one line names the address and Ray's reason (not an
    empty text after a colon)."""
    from ray.util.client import worker as client_worker

    from negvocab.errors import ResourceError

    monkeypatch.setattr(
        client_worker, "INITIAL_TIMEOUT_SEC", 1
    )  # Ray Client's own back-off: 5 s up to 30 s per attempt
    monkeypatch.setattr(client_worker, "MAX_TIMEOUT_SEC", 2)

    if ray.is_initialized():
        ray.shutdown()
    address = f"ray://127.0.0.1:{_free_port()}"
    with pytest.raises(ResourceError) as e:
        negvocab.run_grid(grid_toml, tmp_path / "out", engine="ray", ray_address=address)
    line = str(e.value)
    assert line.startswith(f"could not connect to the Ray cluster at {address}: ") and "\n" not in line
    assert line.rsplit(": ", 1)[1].strip(), line  # a reason after the colon
