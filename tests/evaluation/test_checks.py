"""Warnings for common mistakes: ID images in the OOD set, ID names in a vocabulary, a huge vocabulary."""

from __future__ import annotations

import logging
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.evaluation.checks import common_mistakes, id_names_in, shared_images
from negvocab.labels.imagenet import IdClasses
from negvocab.vocab import Vocabulary

CLASSES = IdClasses.from_names(["goldfish", "tench", "great white shark"])


def test_shared_images_by_path_link_and_content(tiny, tmp_path):
    ids = sorted(str(p) for p in (tiny / "id").iterdir())
    ood = sorted(str(p) for p in (tiny / "ood").rglob("*.png"))
    assert shared_images(ids, ood) == []
    copy = tmp_path / "copy.png"
    shutil.copy(ids[2], copy)  # the same bytes under another name
    link = tmp_path / "link.png"
    link.symlink_to(ids[3])
    assert shared_images(ids, [*ood, str(copy), str(link)]) == [str(link), str(copy)]
    assert shared_images(ids, ids) == ids


def test_id_names_in_a_vocabulary():
    assert id_names_in(["sofa", "Goldfish", " tench", "lamp"], CLASSES.names) == ["Goldfish", " tench"]


class SlowVLM:
    """Encodes the probe in 0.05 s of a fake clock (512 labels: 10,240 labels/s): no wall clock."""

    device = "cpu"
    now = [0.0]

    def encode_text(self, labels, templates, pos=None, progress=False):
        assert pos is not None and len(pos) == len(labels)  # the probe's parts of speech, not the vocabulary's
        self.now[0] += 0.05
        return np.zeros((len(labels), 2), np.float32)


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch):
    """checks.py's timer reads SlowVLM's clock: the estimate is exact whatever the machine's load."""
    import types

    from negvocab.evaluation import checks

    monkeypatch.setattr(checks, "time", types.SimpleNamespace(perf_counter=lambda: SlowVLM.now[0]))


def test_common_mistakes_say_each_one_once(tiny, caplog):
    ids = sorted(str(p) for p in (tiny / "id").iterdir())

    class Set:
        def __init__(self, paths):
            self.paths = paths

    huge = Vocabulary.from_labels([f"w{i}" for i in range(1_000_000)], source="file")
    with caplog.at_level(logging.WARNING):
        notes = common_mistakes(
            SlowVLM(),
            Set(ids),
            {"same": Set(ids)},
            {"names": Vocabulary.from_labels(["tench", "sofa"], source="file"), "big": huge},
            CLASSES,
            "single",
        )
    assert len(notes) == 3 and all(n in caplog.text for n in notes)
    assert notes[0].startswith("the ID set and the OOD set same are the same images")
    assert (
        notes[1] == "vocabulary names: 1 of 2 labels are ID class names (e.g. 'tench'); "
        "NegLabel counts them against ID images: remove them with `negvocab filter`"
    )
    assert notes[2] == (
        "vocabulary big: 1,000,000 labels; encoding them takes about 2 min on cpu "
        "(10,240 labels/s measured; cached for the next runs)"
    )
    assert common_mistakes(SlowVLM(), Set(ids[:3]), {"other": Set(ids[3:])}, {}, CLASSES, "single") == []


def test_score_warns_when_id_and_ood_are_the_same_folder(tiny, model_args, tmp_path, caplog):
    args = [
        "score",
        "--id",
        str(tiny / "id"),
        "--ood",
        str(tiny / "id"),
        "--method",
        "mcm",
        "--n-boot",
        "0",
        "-o",
        str(tmp_path / "r"),
        *model_args,
    ]
    with caplog.at_level(logging.WARNING):
        r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "the ID set and the OOD set id are the same images" in caplog.text
