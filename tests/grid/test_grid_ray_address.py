"""``negvocab grid run --engine ray --ray-address``: a grid run from the CLI on a separately
started Ray head (``ray start --head``, its own folder and environment) gives the local engine's
results, the driver joined that cluster (it did not start its own), and the workers, whose working
folder and default cache differ from the driver's, wrote into the driver's results and cache folders."""

from __future__ import annotations

import os
import re
import secrets
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


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head of 2 CPUs started with ``ray start --head --block`` in a folder of its own (its
    workers run there), in its own process group, which teardown ends (SIGTERM, then SIGKILL)."""
    if shutil.which("ray") is None:
        pytest.skip("the ray command is not installed")
    folder = Path(tempfile.mkdtemp(prefix="nvray", dir="/tmp"))  # short: Ray's socket paths must fit
    port, client_port = _free_port(), _free_port()
    # token authentication (Ray 2.60's default once a token exists), with a token of its own: the
    # drivers get it in their environment from the start, whatever ~/.ray holds on this machine
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEGVOCAB_CACHE_DIR": str(folder / "head_cache"), **auth}
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
            "auth": auth,
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
        **ray_head["auth"],
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
    from negvocab.core.errors import ResourceError

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        with pytest.raises(ResourceError, match=r"already connected to the Ray cluster at .*not 127\.0\.0\.1"):
            negvocab.run_grid(grid_toml, tmp_path / "out", engine="ray", ray_address=ray_head["address"])
    finally:
        ray.shutdown()


def _head_logs(ray_head: dict, pattern: str = "ray_client_server*") -> str:
    """The head's Ray logs named ``pattern``, for a failure message (the head's folder goes at teardown)."""
    return "".join(
        f"== {p.name}\n" + p.read_text(errors="replace")[-3000:]
        for p in sorted((ray_head["folder"] / "t").glob(f"session_*/logs/{pattern}"))
    )


def test_a_grid_through_ray_client_equals_the_local_engine(ray_head, grid_toml, tmp_path):
    """``ray://HOST:PORT`` (Ray Client, the ``[ray]`` extra's grpcio): the driver runs here, the
    units on the head's workers, and the results equal the local engine's. The driver is a process
    of its own with the cluster's token in its environment from the start, as a user's is (Ray reads
    the mode when it is imported)."""
    import grpc  # noqa: F401  (what Ray Client needs; negvocab[ray] installs ray[client])

    text = _one_model(grid_toml.read_text())
    grid_toml.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(REPO), **ray_head["auth"]}
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "client"
    cmd = [*CLI, "grid", "run", str(grid_toml), "-o", str(out), "--engine", "ray", "--ray-address", ray_head["client"]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:] + _head_logs(ray_head)
    assert "30 cells (30 done, 0 pending, 0 failed)" in proc.stdout, proc.stdout
    assert CLIENT_SEEN in _head_logs(ray_head), "the head's Ray Client server saw no client"
    on_ray = negvocab.run_grid(grid_toml, out)  # every cell stored: nothing runs, rows read back
    _assert_equals_local(
        on_ray.rows, grid_toml, text.replace(str(tmp_path / "cache"), str(tmp_path / "cache_local")), tmp_path
    )


# a driver whose Ray Client gives up after a few seconds (Ray's own back-off: 5 s up to 30 s per attempt)
_QUICK_CLIENT = """
import sys
from ray.util.client import worker
worker.INITIAL_TIMEOUT_SEC, worker.MAX_TIMEOUT_SEC = 1, 2
from negvocab.cli import main
main()
"""


def test_a_ray_client_without_the_token_is_told_about_token_authentication(ray_head, grid_toml, tmp_path):
    """A token cluster's Ray Client server ignores a client without its token, which then times
    out: the one line says that token authentication may be why and what to set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(REPO)
    cmd = [sys.executable, "-c", _QUICK_CLIENT, "grid", "run", str(grid_toml), "-o", str(tmp_path / "o")]
    cmd += ["--engine", "ray", "--ray-address", ray_head["client"]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert f"could not connect to the Ray cluster at {ray_head['client']}: " in line, proc.stderr[-3000:]
    assert "RAY_AUTH_MODE=token" in line and "timeout" in line, line


def test_a_failed_ray_client_connection_says_why(grid_toml, tmp_path, monkeypatch):
    """Nothing listens at the address: the one line names the address and Ray's reason (not an
    empty text after a colon)."""
    from ray.util.client import worker as client_worker

    from negvocab.core.errors import ResourceError

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


class _FlakyRay:
    """``ray`` as ``_start`` uses it, whose ``init`` raises the given errors in turn, then connects.
    The first error's text is Ray Client's own (ray/util/client/worker.py and server/proxier.py)."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors, self.calls, self.connected = list(errors), 0, False

    def init(self, **kwargs) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        self.connected = True

    def is_initialized(self) -> bool:
        return self.connected

    def shutdown(self) -> None:
        self.connected = False


def _init_failure(reason: str) -> ConnectionAbortedError:
    return ConnectionAbortedError(
        "Initialization failure from server:\nTraceback (most recent call last):\n"
        f'  File "proxier.py", line 772, in Datapath\n    raise RuntimeError(\n{reason}\n'
    )


# the three ways the head's per-client server was seen not to come up (Ray 2.60, under load)
_DIED_AS = [
    "RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err for detailed logs.",
    "psutil.ZombieProcess: PID still exists but it's a zombie (pid=24065)",
    "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err` and "
    "`ray_client_server_23000.err` on the head node of the cluster for the relevant logs.",
]
_DIED = _init_failure(_DIED_AS[0])


@pytest.mark.parametrize("reason", _DIED_AS)
def test_a_ray_client_server_that_died_at_start_up_is_connected_again(reason, monkeypatch, caplog):
    """The head's per-client server dying at start-up (seen under load) is transient: the driver
    connects again, with a warning; anything else, or a third such failure, is one line at once."""
    from negvocab.core.errors import ResourceError
    from negvocab.grid import ray_engine

    monkeypatch.setattr(ray_engine.time, "sleep", lambda s: None)
    flaky = _FlakyRay(_init_failure(reason), _init_failure(reason))
    assert ray_engine._start(flaky, "ray://h:1") is True and flaky.calls == 3 and flaky.connected
    assert caplog.text.count("could not start a server for this client") == 2

    dead = _FlakyRay(*[_DIED] * ray_engine.CLIENT_ATTEMPTS)
    with pytest.raises(
        ResourceError, match=r"^could not connect to the Ray cluster at ray://h:1: Initialization failure"
    ):
        ray_engine._start(dead, "ray://h:1")
    assert dead.calls == ray_engine.CLIENT_ATTEMPTS

    for address, error in (("ray://h:1", ConnectionError("ray client connection timeout")), ("h:1", _DIED)):
        once = _FlakyRay(error)
        with pytest.raises(ResourceError):
            ray_engine._start(once, address)
        assert once.calls == 1, address  # only Ray Client's start-up failure is tried again
