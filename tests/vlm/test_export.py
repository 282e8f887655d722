"""Embedding exports: the files round-trip, damage is caught, and ``negvocab embed`` writes what the
library computes."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.vlm.export import load_embeddings, save_embeddings

runner = CliRunner()
MODEL = {"name": "m", "random_weights": True}


def _export(tmp_path, n=5, d=4):
    emb = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
    rows = [{"label": f"label, {i}"} for i in range(n)]  # a comma must survive the CSV
    return save_embeddings(tmp_path / "out", emb, rows, model=MODEL, templates="single"), emb, rows


def test_round_trip_and_plain_readers(tmp_path):
    out, emb, rows = _export(tmp_path)
    got, got_rows, manifest = load_embeddings(out, mmap=True)
    np.testing.assert_array_equal(got, emb)
    assert [r["label"] for r in got_rows] == [r["label"] for r in rows] and got_rows[2]["row"] == "2"
    assert manifest["n"] == 5 and manifest["dim"] == 4 and manifest["random_weights"] is True
    assert manifest["templates"] == "single" and manifest["model"] == MODEL
    np.testing.assert_array_equal(np.load(out / "embeddings.npy"), emb)  # no negvocab needed to read it
    assert list(csv.DictReader((out / "rows.csv").open()))[4]["label"] == "label, 4"


@pytest.mark.parametrize("damage", ["flip a byte", "drop the manifest", "truncate rows"])
def test_damaged_exports_are_refused(tmp_path, damage):
    out, _, _ = _export(tmp_path)
    if damage == "flip a byte":
        data = bytearray((out / "embeddings.npy").read_bytes())
        data[-1] ^= 0xFF
        (out / "embeddings.npy").write_bytes(bytes(data))
    elif damage == "drop the manifest":
        (out / "manifest.json").unlink()
    else:
        (out / "rows.csv").write_text("row,label\n0,x\n")
    with pytest.raises(InputError, match="export again"):
        load_embeddings(out)


def test_rows_must_match(tmp_path):
    with pytest.raises(InputError, match="do not match 2 rows"):
        save_embeddings(tmp_path, np.zeros((3, 2)), [{}, {}], model=MODEL)


def _model_args(tmp_path):
    return ["--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]


def test_cli_vocabulary_export_equals_encode_text(vit, tmp_path):
    labels = ["violin", "glacier", "paper towel holder"]
    (tmp_path / "v.txt").write_text("\n".join(labels) + "\n")
    r = runner.invoke(
        app,
        [
            "embed",
            "--vocab",
            str(tmp_path / "v.txt"),
            "-t",
            "single",
            "-o",
            str(tmp_path / "e"),
            *_model_args(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "RANDOM WEIGHTS" in r.output
    emb, rows, manifest = load_embeddings(tmp_path / "e")
    np.testing.assert_allclose(emb, vit.encode_text(labels, "single"), atol=1e-6, rtol=0)
    assert [r["label"] for r in rows] == labels and manifest["kind"] == "text"
    assert manifest["model"]["name"] == "ViT-B-32" and manifest["random_weights"] is True


def test_cli_image_export_skips_and_lists_the_corrupt_file(vit, image_dir, tmp_path):
    r = runner.invoke(app, ["embed", "--images", str(image_dir), "-o", str(tmp_path / "e"), *_model_args(tmp_path)])
    assert r.exit_code == 0, r.output
    emb, rows, manifest = load_embeddings(tmp_path / "e")
    assert len(rows) == 5 and [f["path"] for f in manifest["failed"]] == [str(image_dir / "broken.jpg")]
    direct = vit.encode_images([row["path"] for row in rows])
    np.testing.assert_allclose(emb, direct.embeddings, atol=1e-5, rtol=0)
    assert {row["id"] for row in rows} == {"img0", "img1", "img2", "img3", "sub/gray"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "exactly one of --vocab FILE, --classes or --images PATH"),
        (["--classes", "--images", "."], "exactly one of"),
        (["--id-classes", "x.txt", "--images", "."], "--id-classes goes with --classes"),
        (["--vocab", "missing.json"], "missing.json"),
        (["--images", ".", "--image-root", "."], "--image-root applies to image lists only"),
    ],
)
def test_cli_bad_input_is_one_line(tmp_path, extra, message):
    r = runner.invoke(app, ["embed", "-o", str(tmp_path / "e"), *extra, *_model_args(tmp_path)])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_cli_classes_export_rows_are_wnids(tmp_path):
    (tmp_path / "c.txt").write_text("n01440764\nn01443537\n")
    r = runner.invoke(
        app,
        [
            "embed",
            "--classes",
            "--id-classes",
            str(tmp_path / "c.txt"),
            "-t",
            "single",
            "-o",
            str(tmp_path / "e"),
            *_model_args(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    _, rows, manifest = load_embeddings(tmp_path / "e")
    assert [(r["wnid"], r["label"]) for r in rows] == [("n01440764", "tench"), ("n01443537", "goldfish")]
    assert json.loads((tmp_path / "e" / "manifest.json").read_text())["id_classes"].endswith("c.txt")


def test_an_export_never_overwrites_other_files(tmp_path):
    emb = np.zeros((1, 2), dtype=np.float32)
    foreign = tmp_path / "run"
    foreign.mkdir()
    (foreign / "manifest.json").write_text('{"journal_version": 1}')
    with pytest.raises(InputError, match="not an earlier embeddings export"):
        save_embeddings(foreign, emb, [{}], model=MODEL)
    assert (foreign / "manifest.json").read_text() == '{"journal_version": 1}'
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"holds notes.txt"):
        save_embeddings(tmp_path / "data", emb, [{}], model=MODEL)
    out, _, _ = _export(tmp_path)
    save_embeddings(out, emb, [{"label": "x"}], model=MODEL)  # an earlier export is replaced
    assert load_embeddings(out)[0].shape == (1, 2)


@pytest.mark.parametrize("edit", [{"files": "x"}, {"n": None}, {"files": {}}])
def test_a_hand_edited_manifest_is_refused(tmp_path, edit):
    out, _, _ = _export(tmp_path)
    doc = json.loads((out / "manifest.json").read_text())
    doc.update(edit)
    (out / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="incomplete manifest"):
        load_embeddings(out)


def test_an_interrupted_export_is_unfinished_and_can_be_written_again(tmp_path, monkeypatch):
    # killed after embeddings.npy: the folder is known as ours (the same command may write it
    # again) and is never read as a finished export
    import negvocab.vlm.export as export_mod

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(export_mod, "write_text", killed)  # rows.csv is written after embeddings.npy
    with pytest.raises(KeyboardInterrupt):
        _export(tmp_path)
    assert (tmp_path / "out" / "embeddings.npy").is_file()
    with pytest.raises(InputError, match="an unfinished export .*export again"):
        load_embeddings(tmp_path / "out")
    monkeypatch.undo()
    out, emb, _ = _export(tmp_path)
    np.testing.assert_array_equal(load_embeddings(out)[0], emb)
