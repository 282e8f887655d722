"""Warnings for common mistakes: ID images in the OOD set, ID names in a vocabulary, a huge vocabulary."""

from __future__ import annotations

import logging
import shutil
import time

import numpy as np
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
    device = "cpu"

    def encode_text(self, labels, templates, pos=None, progress=False):
        time.sleep(0.05)  # 512 labels in 0.05 s: about 10,000 labels/s
        return np.zeros((len(labels), 2), np.float32)


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
    assert (
        notes[2].startswith("vocabulary big: 1,000,000 labels; encoding them takes about ")
        and " min on cpu" in notes[2]
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
