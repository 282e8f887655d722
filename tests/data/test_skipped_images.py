"""Images that cannot be looked at (an unreadable sub-folder, a dangling link) are reported, not dropped.

The tests run as root in CI containers, where chmod 000 does not stop reading: the unreadable
folder is made by refusing ``os.scandir`` on it (what the kernel does for a user without rights).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.data import open_image_set


@pytest.fixture
def messy(tiny, tmp_path, monkeypatch):
    """ood/ with 4 images in class folders, plus locked/ (2 images, cannot be listed) and a dangling link."""
    root = tmp_path / "ood"
    shutil.copytree(tiny / "ood", root)
    (root / "locked").mkdir()
    for name in ("a.png", "b.png"):
        shutil.copy(next((tiny / "id").iterdir()), root / "locked" / name)
    (root / "kite_toy" / "gone.png").symlink_to(tmp_path / "deleted.png")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(root / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return root


def test_an_unreadable_folder_and_a_dangling_link_are_reported(messy, caplog):
    s = open_image_set(messy, layout="folder")
    assert len(s) == 4
    assert [(os.path.basename(p), why.split(" (")[0]) for p, why in s.info["skipped"]] == [
        ("gone.png", "dangling symbolic link"),
        ("locked", "unreadable folder"),
    ]
    assert "2 unreadable folders or broken links skipped" in caplog.text
    # class folders: the locked one is a class whose images cannot be listed
    s = open_image_set(messy)
    assert s.info["layout"] == "class-folders" and len(s) == 4 and len(s.info["skipped"]) == 2


def test_embed_lists_them_with_the_unreadable_images(messy, tiny, tmp_path):
    out = tmp_path / "emb"
    model = ["--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--cache-dir", str(tiny / "cache")]
    r = CliRunner().invoke(app, ["embed", "--images", str(messy), "-o", str(out), *model])
    assert r.exit_code == 0, r.output
    assert "warning: 2 unreadable images skipped" in r.stderr
    failed = json.loads((out / "manifest.json").read_text())["failed"]
    assert sorted(os.path.basename(f["path"]) for f in failed) == ["gone.png", "locked"]
