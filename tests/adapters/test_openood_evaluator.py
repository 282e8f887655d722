"""negvocab's postprocessor inside OpenOOD's own ``Evaluator`` (its code, copied and trimmed in
tests/reference/openood/, MIT), CPU-only, on a tiny OpenOOD v1.5 data root: the Evaluator's table equals
``negvocab score --ood openood=ROOT --convention openood`` (no ``--id``: the benchmark's ID set), and its ID
accuracy is the zero-shot top-1 of the ID prompts.

OpenOOD runs in a subprocess with the copy on its path, so that ``negvocab.adapters.openood`` is imported
where ``openood`` is importable (and subclasses its ``BasePostprocessor``) without changing this process.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from negvocab.cli import app
from tests.scoring.conftest import RANDOM_VIT

ROOT = Path(__file__).resolve().parents[2]
#: OpenOOD's code: the trimmed copy, or a full checkout ($NEGVOCAB_OPENOOD_CHECKOUT) run by another interpreter
#: ($NEGVOCAB_OPENOOD_PYTHON: a venv set up by the recipe of docs/howto/ecosystem.md)
OPENOOD = Path(os.environ.get("NEGVOCAB_OPENOOD_CHECKOUT") or ROOT / "tests" / "reference" / "openood")
OPENOOD_PYTHON = os.environ.get("NEGVOCAB_OPENOOD_PYTHON") or sys.executable
ID = ["goldfish", "tench", "great white shark", "rooster", "hen"]
NEG = ["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "carpet", "lamp", "river", "castle"]

#: every list OpenOOD v1.5's DATA_INFO['imagenet'] opens (benchmark_imglist/imagenet/*.txt, "path label" lines,
#: -1 for OOD), paths under images_largescale/ (Textures: images_classic/), with the number of images each
LISTS = {
    "train_imagenet.txt": ("imagenet_1k/train", 2, 0),
    "val_imagenet.txt": ("imagenet_1k/val", 2, 0),
    "test_imagenet.txt": ("imagenet_1k/val", 7, 0),
    "test_imagenet_v2.txt": ("imagenet_v2", 2, 0),
    "test_imagenet_c.txt": ("imagenet_c", 2, 0),
    "test_imagenet_r.txt": ("imagenet_r", 2, 0),
    "test_imagenet_es.txt": ("imagenet_es", 2, 0),
    "val_openimage_o.txt": ("openimage_o/val", 2, -1),
    "test_ssb_hard.txt": ("ssb_hard", 3, -1),
    "test_ninco.txt": ("ninco", 4, -1),
    "test_inaturalist.txt": ("inaturalist", 3, -1),
    "test_textures.txt": ("texture", 3, -1),
    "test_openimage_o.txt": ("openimage_o", 4, -1),
}

SCRIPT = r"""
import json, sys
from pathlib import Path

import torch

torch.set_num_threads(2)
import openood.evaluation_api.postprocessor as registry
import openood.postprocessors
from openood.evaluation_api import Evaluator

import negvocab
from negvocab.adapters.openood import NegvocabPostprocessor, ZeroShotNet

root, vocab, out = sys.argv[1:4]
ids = json.loads(sys.argv[4])
assert issubclass(NegvocabPostprocessor, openood.postprocessors.BasePostprocessor)
# OpenOOD's ID-accuracy loop moves each batch with .cuda(): the identity on this CPU-only run
torch.Tensor.cuda = lambda self, *a, **k: self
vlm = negvocab.VLM("ViT-B-32", random_weights=True, device="cpu", cache=False)
net = ZeroShotNet(vlm, id_classes=ids, templates="single")
args = {"method": "neglabel", "vocabulary": vocab, "params": {"groups": 2}}
config = {"postprocessor": {"name": "negvocab", "APS_mode": False, "postprocessor_args": args}}
kw = dict(data_root=root, preprocessor=vlm.preprocess, batch_size=4, num_workers=0)
tables = {}
ev = Evaluator(net, "imagenet", postprocessor=NegvocabPostprocessor(config), **kw)
tables["instance"] = ev.eval_ood(progress=False).to_dict(orient="index")
tables["id_preds"] = ev.scores["id_preds"].tolist()
tables["id_conf"] = ev.scores["id"]["test"][1].tolist()
# OpenOOD's registry: the name in its postprocessors dict, the arguments in configs/postprocessors/negvocab.yml
registry.postprocessors["negvocab"] = NegvocabPostprocessor
cfg = Path(out) / "configs" / "postprocessors"
cfg.mkdir(parents=True)
(cfg / "negvocab.yml").write_text(
    "postprocessor:\n  name: negvocab\n  APS_mode: False\n  postprocessor_args:\n    method: neglabel\n"
    f"    vocabulary: {vocab}\n    params:\n      groups: 2\n"
)
pp = registry.get_postprocessor(str(Path(out) / "configs"), "negvocab", "imagenet")  # what Evaluator does by name
assert isinstance(pp, NegvocabPostprocessor) and not pp.APS_mode
pp.setup(net, ev.dataloader_dict["id"], ev.dataloader_dict["ood"])
tables["registry_id_conf"] = pp.inference(net, ev.dataloader_dict["id"]["test"], False)[1].tolist()
(Path(out) / "tables.json").write_text(json.dumps(tables))
"""


def _image(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(path)


@pytest.fixture(scope="module")
def openood_v15_root(tmp_path_factory):
    """A tiny OpenOOD v1.5 root with every list and folder its Evaluator opens for id_name 'imagenet'
    (so that its data_setup downloads nothing)."""
    root = tmp_path_factory.mktemp("openood15")
    lists = root / "benchmark_imglist" / "imagenet"
    lists.mkdir(parents=True)
    for i, (name, (folder, n, label)) in enumerate(LISTS.items()):
        base = root / ("images_classic" if folder == "texture" else "images_largescale")
        lines = []
        for j in range(n):
            rel = f"{folder}/img_{j:03d}.png"
            _image(base / rel, 100 * i + j)
            lines.append(f"{rel} {j % len(ID) if label == 0 else -1}")
        (lists / name).write_text("\n".join(lines) + "\n")
    return root


def test_openoods_evaluator_takes_the_postprocessor_and_equals_negvocab_score(openood_v15_root, tmp_path):
    vocab, classes = tmp_path / "neg.txt", tmp_path / "classes.txt"
    vocab.write_text("\n".join(NEG) + "\n")
    classes.write_text("\n".join(ID) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(OPENOOD), str(ROOT)])}
    run = subprocess.run(
        [OPENOOD_PYTHON, "-c", SCRIPT, str(openood_v15_root), str(vocab), str(tmp_path), json.dumps(ID)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tables = json.loads((tmp_path / "tables.json").read_text())
    # by name from OpenOOD's registry (its get_postprocessor, as Evaluator(postprocessor_name=...)), or as an instance
    assert tables["registry_id_conf"] == tables["id_conf"]
    ours = tmp_path / "res"
    r = CliRunner().invoke(
        app,
        [
            "score",
            "--ood",
            f"openood={openood_v15_root}",
            "--vocab",
            str(vocab),
            "--method",
            "neglabel",
            "--groups",
            "2",
            "--convention",
            "openood",
            "--n-boot",
            "0",
            "--no-report",
            "-o",
            str(ours),
            *RANDOM_VIT,
            "--id-classes",
            str(classes),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],  # fmt: skip
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    rows = {row["ood_set"]: row for row in csv.DictReader((ours / "results.csv").open())}
    from negvocab.adapters.openood import OPENOOD_SET_NAMES as names  # OpenOOD's rows -> ours

    theirs = tables["instance"]
    assert list(theirs) == list(names)
    for their_name, our_name in names.items():
        got = {k: float(rows[our_name][k]) * 100 for k in ("fpr", "auroc", "aupr_in", "aupr_out")}
        want = theirs[their_name]
        assert got == pytest.approx(
            {"fpr": want["FPR@95"], "auroc": want["AUROC"], "aupr_in": want["AUPR_IN"], "aupr_out": want["AUPR_OUT"]},
            abs=1e-9,
        ), their_name
    # the ID scores are negvocab's, image by image (OpenOOD's conf = negvocab's score, high = ID)
    stored = np.load(ours / "scores.npz")
    np.testing.assert_allclose(tables["id_conf"], stored[f"id/neglabel@{vocab.stem}"], rtol=1e-6, atol=1e-9)
    # OpenOOD's ACC column: net(x).argmax(1) of the ZeroShotNet against the list's labels, by hand here
    labels = [
        int(line.split()[1]) for line in (openood_v15_root / "benchmark_imglist/imagenet/test_imagenet.txt").open()
    ]
    acc = 100 * np.mean(np.array(tables["id_preds"]) == np.array(labels))
    assert {round(v["ACC"], 9) for v in theirs.values()} == {round(acc, 9)}
    # negvocab's own id_accuracy column (zero-shot top-1 with the ID prompts) is OpenOOD's ACC
    assert {round(float(r["id_accuracy"]) * 100, 9) for r in rows.values()} == {round(acc, 9)}
