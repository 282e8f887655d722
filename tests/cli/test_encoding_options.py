"""--batch-size and --num-workers on every command that encodes, and they reach the encoders."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from negvocab.cli import app, load_commands
from tests.vlm.conftest import image_dir  # noqa: F401 (fixture)

runner = CliRunner()


def _command(*path: str):
    load_commands()  # every command, not only those imported so far
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("negvocab", list(path), resilient_parsing=True)
    for name in path:
        cmd = cmd.get_command(ctx, name)
    return {o for p in cmd.params for o in getattr(p, "opts", [])}


@pytest.mark.parametrize(
    ("path", "images"),
    [(("score",), True), (("sweep",), True), (("embed",), True), (("demo",), True), (("build", "wordnet"), False)],
)
def test_every_encoding_command_has_them(path, images):
    opts = _command(*path)
    assert "--batch-size" in opts
    assert ("--num-workers" in opts) is images  # build wordnet encodes text only: no workers to set


def test_they_reach_the_encoders(image_dir, tmp_path, monkeypatch):  # noqa: F811
    import negvocab.vlm.images as images_mod
    import negvocab.vlm.text as text_mod

    seen = {}
    real_encode, real_prompts = images_mod._encode, text_mod.encode_prompts

    def spy_encode(vlm, items, todo, local, is_dataset, batch_size, num_workers, *rest):
        seen["images"] = (batch_size, num_workers)
        return real_encode(vlm, items, todo, local, is_dataset, batch_size, num_workers, *rest)

    def spy_prompts(vlm, prompts, *, batch_size=None, **kw):
        seen["text"] = batch_size
        return real_prompts(vlm, prompts, batch_size=batch_size, **kw)

    monkeypatch.setattr(images_mod, "_encode", spy_encode)
    monkeypatch.setattr(text_mod, "encode_prompts", spy_prompts)
    model = ["--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    r = runner.invoke(
        app,
        [
            "embed",
            "--images",
            str(image_dir),
            "-o",
            str(tmp_path / "i"),
            "--batch-size",
            "2",
            "--num-workers",
            "0",
            *model,
        ],
    )
    assert r.exit_code == 0, r.output
    assert seen["images"] == (2, 0)
    (tmp_path / "v.txt").write_text("violin\nglacier\n")
    r = runner.invoke(
        app,
        [
            "embed",
            "--vocab",
            str(tmp_path / "v.txt"),
            "-t",
            "single",
            "-o",
            str(tmp_path / "t"),
            "--batch-size",
            "3",
            *model,
        ],
    )
    assert r.exit_code == 0, r.output
    assert seen["text"] == 3
