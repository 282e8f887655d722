"""Outputs that are not regular files (devices, FIFOs, symlinks, ``-``) and the one overwrite rule.

Every device node is made with mknod in a temporary folder, never the real /dev.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.core.atomic import atomic_path, write_bytes, write_json, write_text
from negvocab.core.errors import ResourceError
from negvocab.vocab import Vocabulary

runner = CliRunner()


def _null_device(folder: Path) -> Path:
    """A private character device with the numbers of /dev/null (1, 3)."""
    dev = folder / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return dev


def _read_fifo(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    return t, got


def test_a_device_is_written_in_place_never_replaced(tmp_path):
    dev = _null_device(tmp_path)
    write_text(dev, "labels\n")
    write_json(dev, {"a": 1})
    with atomic_path(dev, suffix=".npy") as tmp:  # writers that want a file name
        np.save(tmp, np.zeros(3))
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.stat(dev).st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left beside it


def test_a_fifo_reader_gets_the_whole_output(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t, got = _read_fifo(fifo)
    write_text(fifo, "sofa\nlamp\n")
    t.join(5)
    assert got == [b"sofa\nlamp\n"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_keeps_its_link_and_its_target_is_replaced(tmp_path):
    real = tmp_path / "data" / "vocab.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "vocab.json"
    link.symlink_to(real)
    write_json(link, {"labels": ["a"]})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert json.loads(real.read_text()) == {"labels": ["a"]} and stat.S_IMODE(real.stat().st_mode) == 0o640
    dangling = tmp_path / "new.txt"
    dangling.symlink_to(tmp_path / "data" / "made.txt")
    write_text(dangling, "x\n")
    assert dangling.is_symlink() and (tmp_path / "data" / "made.txt").read_text() == "x\n"


def test_dash_is_standard_output(tmp_path, capfdbinary, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_bytes("-", b"to stdout\n")
    assert capfdbinary.readouterr().out == b"to stdout\n" and not (tmp_path / "-").exists()


def test_a_full_disk_names_the_file_the_free_space_and_the_need(tmp_path, monkeypatch):
    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(
        ResourceError, match=r"cannot write .*out.txt: the disk is full \(.* free in .*, about 5 bytes needed\)"
    ):
        write_text(tmp_path / "out.txt", "12345")
    monkeypatch.undo()
    # numpy's tofile says "N requested and M written" without an errno: still a full disk
    with (
        pytest.raises(ResourceError, match=r"the disk is full .*about 150\.0 KB needed"),
        atomic_path(tmp_path / "e.npy"),
    ):
        raise OSError("153600 requested and 0 written")
    assert list(tmp_path.iterdir()) == []


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-c", "from negvocab.cli import main; main()", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_dash_output_prints_to_stdout_and_the_summary_to_stderr(tmp_path):
    r = _cli("classes", "-f", "txt", "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["tench", "goldfish"] and len(r.stdout.splitlines()) == 1000
    assert "wrote 1000 classes to -" in r.stderr and not (tmp_path / "-").exists()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("sofa\nlamp\n")
    b.write_text("lamp\nkettle\n")
    r = _cli("merge", str(a), str(b), "-o", "-", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["labels"] == ["sofa", "lamp", "kettle"] and "merged" in r.stderr
    assert sorted(tmp_path.iterdir()) == [a, b]


def test_cli_outputs_to_a_device_a_fifo_and_a_symlink(tmp_path):
    dev = _null_device(tmp_path)
    r = runner.invoke(app, ["classes", "-f", "txt", "-o", str(dev)])
    assert r.exit_code == 0 and stat.S_ISCHR(os.lstat(dev).st_mode)  # no --overwrite needed for a stream
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t, got = _read_fifo(fifo)
    a = tmp_path / "a.txt"
    a.write_text("sofa\nlamp\n")
    r = runner.invoke(app, ["merge", str(a), str(a), "-o", str(fifo)])
    t.join(5)
    assert r.exit_code == 0, r.output
    assert json.loads(got[0])["labels"] == ["sofa", "lamp"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    real = tmp_path / "store" / "v.json"
    real.parent.mkdir()
    link = tmp_path / "v.json"
    link.symlink_to(real)
    assert runner.invoke(app, ["merge", str(a), "-o", str(link)]).exit_code == 0  # a dangling link: its target is made
    assert link.is_symlink() and Vocabulary.load(real).labels == ["sofa", "lamp"]


def test_one_overwrite_rule_for_single_file_outputs(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("sofa\nlamp\n")
    out = tmp_path / "u.json"
    out.write_text("precious")
    for args in (["merge", str(a), "-o", str(out)], ["classes", "-o", str(out)], ["filter", str(a), "-o", str(out)]):
        r = runner.invoke(app, args)
        assert (
            r.exit_code == 2
            and r.stderr.strip() == f"error: {out} exists; give --overwrite to replace it, or another output file"
        ), args
        assert out.read_text() == "precious"
    r = runner.invoke(app, ["merge", str(a), "-o", str(out), "--overwrite"])
    assert r.exit_code == 0 and Vocabulary.load(out).labels == ["sofa", "lamp"]


def test_a_claim_removes_only_our_own_half_written_files(tmp_path):
    """A killed run's temporaries of its declared outputs go on the next claim; another program's
    hidden .tmp files in the same folder stay."""
    from negvocab.core.outdir import claim_folder

    ours, theirs = tmp_path / ".results.json.k2j3.tmp", tmp_path / ".editor-swap.tmp"
    work = tmp_path / "cells"
    work.mkdir()
    in_work = work / ".abc.npz.x1.tmp"
    for p in (ours, theirs, in_work):
        p.write_text("x")
    claim_folder(tmp_path, ["results.json"], overwrite=False, work_dirs=["cells"]).release()
    assert not ours.exists() and not in_work.exists() and theirs.exists()
