"""``negvocab embed``: export text or image embeddings as ``embeddings.npy`` + ``rows.csv`` + manifest."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.options import (
    AllowOutsideOpt,
    IdClassesOpt,
    ImageRootOpt,
    ModelOptions,
    OverwriteOpt,
    TemplatesOpt,
    load_vlm,
    option_group,
)
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout
from negvocab.core.errors import InputError
from negvocab.data import open_image_set
from negvocab.labels.imagenet import read_id_classes
from negvocab.vlm.export import MANIFEST_FILE, check_export_folder, save_embeddings
from negvocab.vocab import Vocabulary

__all__ = ["embed"]


def _finished_export(manifest: Path) -> bool:
    """Whether ``manifest`` is a finished export's (an interrupted one is written again freely)."""
    import json

    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("complete") is not False
    except (OSError, ValueError, AttributeError):
        return manifest.exists()


@app.command("embed")
@option_group("vlm", ModelOptions)
def embed(
    *,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Folder to write embeddings.npy, rows.csv and manifest.json to.")
    ],
    vocab: Annotated[
        Path | None, typer.Option("--vocab", "-V", help="Embed the labels of this vocabulary (JSON/TXT).")
    ] = None,
    classes: Annotated[
        bool, typer.Option("--classes", help="Embed the ID class names (ImageNet-1k, or --id-classes).")
    ] = False,
    images: Annotated[
        Path | None, typer.Option("--images", help="Embed these images: a folder, class folders or an image list.")
    ] = None,
    id_classes: IdClassesOpt = None,
    image_root: ImageRootOpt = None,
    allow_outside_root: AllowOutsideOpt = False,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
    overwrite: OverwriteOpt = False,
) -> None:
    """Export embeddings for your own analysis (float32, L2-normalised, rows aligned with rows.csv)."""
    if sum([vocab is not None, classes, images is not None]) != 1:
        raise InputError("give exactly one of --vocab FILE, --classes or --images PATH")
    if id_classes is not None and not classes:
        raise InputError("--id-classes goes with --classes")
    if image_root is not None and not (images is not None and images.is_file()):
        raise InputError("--image-root applies to image lists only: give --images as a list file")
    if is_stdout(output):
        raise InputError(
            "-o -: embed writes a folder of files (embeddings.npy, rows.csv, manifest.json); give a folder"
        )
    check_export_folder(output)
    check_output(output / MANIFEST_FILE, overwrite=overwrite or not _finished_export(output / MANIFEST_FILE))
    if vocab is not None:
        source = Vocabulary.load(vocab)
        if len(source) == 0:
            raise InputError(f"{vocab}: the vocabulary is empty; nothing to embed")
    elif images is not None:
        image_set = open_image_set(images, image_root=image_root, allow_outside_root=allow_outside_root)
    else:
        id_space = read_id_classes(id_classes)

    model = load_vlm(**asdict(vlm))
    info: dict[str, object]
    if vocab is not None:
        emb = model.encode_text(list(source.labels), templates, pos=source.parts_of_speech(), progress=True)
        rows = [{"label": label} for label in source.labels]
        info = {"kind": "text", "templates": templates, "vocabulary": str(vocab), "vocab_sha256": source.sha256}
    elif images is not None:
        encoded = model.encode_images(image_set, progress=True)
        label_of = dict(zip(image_set.paths, image_set.labels or [""] * len(image_set), strict=True))
        emb = encoded.embeddings
        rows = [{"id": i, "path": p, "label": label_of[p]} for i, p in zip(encoded.ids, encoded.paths, strict=True)]
        info = {
            "kind": "images",
            "images": str(images),
            "failed": [{"path": p, "reason": r} for p, r in encoded.failed],
        }
        if encoded.failed:
            typer.echo(f"warning: {len(encoded.failed)} unreadable images skipped (listed in the manifest)", err=True)
    else:
        emb = model.encode_text(list(id_space.names), templates, progress=True)
        rows = [{"wnid": w, "label": n} for w, n in zip(id_space.wnids, id_space.names, strict=True)]
        info = {"kind": "text", "templates": templates, "id_classes": str(id_classes) if id_classes else "imagenet1k"}
    with writing(output):
        save_embeddings(output, emb, rows, model=model.identity, **info)
    if model.random_weights:
        typer.echo("RANDOM WEIGHTS: these embeddings are meaningless outside tests (the manifest says so)", err=True)
    typer.echo(f"{output}: {emb.shape[0]} x {emb.shape[1]} embeddings ({info['kind']})")
