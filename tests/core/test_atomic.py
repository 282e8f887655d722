"""Atomic writes: the target is whole or untouched, and gets a normal file's permissions."""

from __future__ import annotations

import os
import stat

import pytest

from negvocab.core.atomic import atomic_path, write_json, write_text


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_new_files_get_the_umask_mode_not_mkstemps_0600(tmp_path):
    old = os.umask(0o027)
    try:
        import importlib

        import negvocab.core.atomic as atomic

        atomic = importlib.reload(atomic)  # reads the umask at import
        path = atomic.write_text(tmp_path / "a.txt", "x\n")
        assert _mode(path) == 0o640
    finally:
        os.umask(old)
        importlib.reload(atomic)
    path = write_text(tmp_path / "b.txt", "y\n")
    assert _mode(path) == 0o666 & ~old


def test_an_existing_file_keeps_its_mode(tmp_path):
    path = tmp_path / "v.json"
    path.write_text("{}")
    path.chmod(0o604)
    write_json(path, {"a": 1})
    assert _mode(path) == 0o604 and path.read_text() == '{\n  "a": 1\n}\n'


def test_failure_leaves_the_target_untouched_and_no_temp_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer died")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
