"""Report images found wherever the report is built: a path relative to where `score` ran is looked
up against the results folder and the folders above it; the images found nowhere are said."""

from __future__ import annotations

import logging

import numpy as np
from PIL import Image

from negvocab.report.html import write_report
from negvocab.report.thumbs import Thumbnails
from tests.report.test_html import _study


def test_a_relative_path_is_found_from_another_working_directory(tmp_path, monkeypatch, caplog):
    study = tmp_path / "study"
    (study / "imgs").mkdir(parents=True)
    (study / "results").mkdir()
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(study / "imgs" / "a.png")
    thumbs = Thumbnails()
    thumbs.base = study / "results"
    monkeypatch.chdir(tmp_path)  # the report is built from the study's parent; score ran inside the study
    assert thumbs.where("imgs/a.png") == study / "imgs" / "a.png" and thumbs("imgs/a.png") is not None
    assert thumbs("imgs/gone.png") is None and thumbs.missing == {study / "results": ["imgs/gone.png"]}
    with caplog.at_level(logging.WARNING):
        line = thumbs.note(study / "results")
    assert line.startswith("1 image(s) not found (e.g. imgs/gone.png)") and line in caplog.text
    assert thumbs.note(study / "sweep") is None
    monkeypatch.chdir(study)  # where score ran: found as given
    assert Thumbnails().where("imgs/a.png").resolve() == (study / "imgs" / "a.png").resolve()


def test_the_report_says_which_images_it_did_not_find(tmp_path):
    study, _ = _study(tmp_path)  # its scores name /nonexistent/*.png
    out = write_report([study], tmp_path / "r.html")
    text = out.read_text()
    assert "image(s) not found (e.g. /nonexistent/" in text
