"""A full disk during ``embed`` or in the embedding cache says so: which file system, how much is needed."""

from __future__ import annotations

import logging

import numpy as np
from typer.testing import CliRunner

from negvocab.cli import app


def test_embed_on_a_full_disk_says_the_disk_is_full(tiny, tmp_path, monkeypatch, caplog):
    real = np.save

    def full(file, arr, **kw):  # what ndarray.tofile reports on a full disk: no errno
        raise OSError("153600 requested and 14304 written")

    monkeypatch.setattr(np, "save", full)
    out = tmp_path / "emb"
    model = [
        "--model",
        "ViT-B-32",
        "--random-weights",
        "--device",
        "cpu",
        "--templates",
        "single",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    with caplog.at_level(logging.WARNING):
        r = CliRunner().invoke(app, ["embed", "--vocab", str(tiny / "negA.txt"), "-o", str(out), *model])
    assert r.exit_code == 2, r.output
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]  # log lines (warnings) may precede it
    assert len(errors) == 1 and "requested and" not in r.stderr
    line = errors[0]
    assert (
        line.startswith(f"error: cannot write {out / 'embeddings.npy'}: the disk is full (")
        and "free in" in line
        and "needed" in line
    )
    # the cache could not be written either: a warning that says why, and the run went on to the export
    assert "cannot write the embedding cache" in caplog.text and "the disk is full" in caplog.text
    assert not (out / "embeddings.npy").exists() and not list(out.glob(".*.tmp"))
    monkeypatch.setattr(np, "save", real)
    r = CliRunner().invoke(app, ["embed", "--vocab", str(tiny / "negA.txt"), "-o", str(out), *model])
    assert r.exit_code == 0, r.output  # an interrupted export is written again without --overwrite
