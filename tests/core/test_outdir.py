"""The atomic commit of a results folder: the marker comes last, so it never vouches for a partial set
(issue 34: moving the marker first was caught by one test only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import negvocab.core.outdir as outdir

FILES = ("a.csv", "grid.json", "table.md", "zz.csv")  # the marker sorts in the middle


def _write(folder: Path, word: str, *, overwrite: bool) -> None:
    with outdir.staged_folder(folder, FILES, "grid.json", overwrite=overwrite) as stage:
        for name in FILES:
            (stage / name).write_text(f"{word} {name}")


def test_the_marker_is_moved_in_last(tmp_path, monkeypatch):
    real, order = os.replace, []

    def record(src, dst):
        if Path(src).parent.name == outdir.COMMIT_DIR:
            order.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(outdir.os, "replace", record)
    _write(tmp_path / "res", "new", overwrite=False)
    assert order[-1] == "grid.json" and sorted(order) == sorted(FILES)


@pytest.mark.parametrize("moves", range(len(FILES)))
def test_a_kill_at_any_move_leaves_no_marker_beside_a_partial_set(tmp_path, monkeypatch, moves):
    folder = tmp_path / "res"
    _write(folder, "old", overwrite=False)
    real, done = os.replace, []

    def dies(src, dst):
        if Path(src).parent.name == outdir.COMMIT_DIR:
            if len(done) == moves:
                raise KeyboardInterrupt
            done.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(outdir.os, "replace", dies)
    with pytest.raises(KeyboardInterrupt):
        _write(folder, "new", overwrite=True)
    marker = folder / "grid.json"
    # a marker present vouches for its own run's files only: every file new, or the marker gone
    assert not marker.exists() or all((folder / n).read_text() == f"new {n}" for n in FILES), done
    monkeypatch.setattr(outdir.os, "replace", real)
    outdir.claim_folder(folder, FILES, overwrite=True).release()  # the next run rolls the commit forward
    assert all((folder / n).read_text() == f"new {n}" for n in FILES)
