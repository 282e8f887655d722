"""scripts/setup.sh as a newcomer runs it, in --dry-run (nothing installed): each step said as it starts,
pip's progress kept (no -q), what it installs and how big, the CPU-only torch offered where no GPU is
found (and installed from PyPI's build where PyTorch's index cannot be reached), an existing .venv reused."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _checkout(tmp_path: Path) -> Path:
    """A folder holding scripts/setup.sh alone (the script works from its checkout's root)."""
    (tmp_path / "repo" / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "repo" / "scripts" / "setup.sh")
    return tmp_path / "repo"


def _setup(repo: Path, *args: str, gpu: bool = False, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The script in --dry-run, with python3 a system interpreter (no active venv) and nvidia-smi present
    (a stub listing one GPU) or absent."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "nvidia-smi"
    if gpu:
        stub.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-0)'\n")
        stub.chmod(0o755)
    elif stub.exists():
        stub.unlink()
    path = os.pathsep.join([str(bin_dir), *(p for p in os.environ["PATH"].split(os.pathsep) if "nvidia" not in p)])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)} | {"PATH": path}
    if shutil.which("nvidia-smi", path=path) and not gpu:
        pytest.skip("this machine has nvidia-smi on PATH outside the stub folder")
    return subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "--dry-run", *args], capture_output=True,
                          text=True, env=env, timeout=60)  # fmt: skip


def test_each_step_is_said_and_pip_shows_its_progress(tmp_path):
    r = _setup(_checkout(tmp_path), "--system", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    steps = [ln for ln in r.stderr.splitlines() if ln.startswith("setup: [")]
    assert [s.split("]")[0] for s in steps] == [f"setup: [{i}/5" for i in range(1, 6)]
    pips = [ln for ln in r.stderr.splitlines() if "-m pip install" in ln]
    assert len(pips) == 2 and all(" -q" not in p and "--progress-bar on" in p for p in pips)
    assert "6.9 GB" in r.stderr and "3.2 GB" in r.stderr and "CUDA" in r.stderr  # what it installs, how big
    assert not (tmp_path / "repo" / ".venv").exists()  # a dry run installs and creates nothing


def test_without_a_gpu_the_cpu_build_is_offered_and_with_one_not(tmp_path):
    repo = _checkout(tmp_path)
    cpu = _setup(repo, "--system", tmp_path=tmp_path)
    assert "no NVIDIA GPU found" in cpu.stderr and "bash scripts/setup.sh --cpu-torch" in cpu.stderr
    torch_line = next(ln for ln in cpu.stderr.splitlines() if ln.endswith("torch torchvision"))
    assert "--index-url" not in torch_line  # offered, not imposed: PyPI's build unless asked
    gpu = _setup(repo, "--system", gpu=True, tmp_path=tmp_path)
    assert gpu.returncode == 0 and "no NVIDIA GPU found" not in gpu.stderr


def test_cpu_torch_installs_from_pytorchs_cpu_index_and_says_how_to_get_cuda(tmp_path):
    r = _setup(_checkout(tmp_path), "--system", "--cpu-torch", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    torch_line = next(ln for ln in r.stderr.splitlines() if ln.endswith("torch torchvision"))
    assert f"--index-url {CPU_INDEX}" in torch_line and "--extra-index-url https://pypi.org/simple" in torch_line
    assert "for the CUDA build run setup.sh without --cpu-torch" in r.stderr


def test_an_existing_venv_is_reused_and_a_missing_one_is_new(tmp_path):
    repo = _checkout(tmp_path)
    new = _setup(repo, tmp_path=tmp_path)
    assert "a new virtual environment" in new.stderr and "+ python3 -m venv .venv" in new.stderr
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(shutil.which("python3"))
    again = _setup(repo, tmp_path=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "reusing .venv" in again.stderr and "a new virtual environment" not in again.stderr
    assert "python3 -m venv" not in again.stderr


def test_a_bad_option_is_refused():
    r = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--gpu"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage: bash scripts/setup.sh" in r.stderr
