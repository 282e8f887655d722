"""Image-list paths stay inside the list's root unless the user says otherwise."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.data import image_list


@pytest.fixture
def lists(tiny, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(tiny / "id", root / "imgs")
    outside = tmp_path / "elsewhere.png"
    shutil.copy(next((tiny / "id").iterdir()), outside)
    return root, outside


@pytest.mark.parametrize("entry", ["../elsewhere.png", "imgs/../../elsewhere.png", "ABS"])
def test_paths_leaving_the_root_are_refused_by_default(lists, entry):
    root, outside = lists
    entry = str(outside) if entry == "ABS" else entry
    lst = root / "list.txt"
    lst.write_text(f"imgs/id0.png\n{entry}\n")
    with pytest.raises(
        InputError,
        match=rf"list.txt:2: .* leaves {root}, .*; give the right root, or allow_outside_root=True",
    ):
        image_list(lst)
    assert image_list(lst, allow_outside_root=True).paths[1].endswith("elsewhere.png")


def test_absolute_paths_inside_the_root_and_symlinked_folders_are_fine(lists):
    root, _ = lists
    (root / "linked").symlink_to(root / "imgs")  # a symlinked data folder is a usual layout
    lst = root / "list.csv"
    lst.write_text(f"path,label\n{root / 'imgs' / 'id1.png'},a\nlinked/id2.png,b\n")
    assert len(image_list(lst)) == 2


def test_cli_refuses_in_one_line_and_the_flag_allows(lists, tmp_path):
    root, outside = lists
    lst = root / "ood.txt"
    lst.write_text("../../../../../../../../etc/passwd\n")
    r = CliRunner().invoke(
        app, ["score", "--id", str(root / "imgs"), "--ood", str(lst), "--method", "mcm", "-o", str(tmp_path / "r")]
    )
    assert (
        r.exit_code == 2
        and "the folder the list's paths resolve against; give the right --image-root" in r.stderr
        and len(r.stderr.strip().splitlines()) == 1
    )
    lst.write_text(f"{outside}\n")
    r = CliRunner().invoke(
        app,
        [
            "score",
            "--id",
            str(root / "imgs"),
            "--ood",
            str(lst),
            "--method",
            "mcm",
            "--allow-outside-root",
            "-o",
            str(tmp_path / "r"),
        ],
    )
    assert r.exit_code == 2 and "--pretrained" in r.stderr  # past the list: the next check is the missing weights
