"""A builder defined outside negvocab, registered through the public API only (a plug-in).

``toy``: the words given, ranked farthest first from the ID classes by their text embeddings'
largest cosine to any class, then every ``stride``-th kept (an option no built-in builder has).
Load it with ``NEGVOCAB_PLUGINS=tests.plugins.toy_builder`` or a grid's ``plugins = [...]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import Field

import negvocab

WORDS = ["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "carpet", "lamp", "river", "castle"]


class ToyOptions(negvocab.BuilderOptions):
    """Toy: the words given, farthest first from the ID classes, every stride-th kept."""

    words: list[str] = Field(default_factory=lambda: list(WORDS), min_length=1, description="a non-empty list of words")
    stride: int = Field(1, ge=1, le=5, description="an integer between 1 and 5 (keep every stride-th ranked word)")
    templates: str = Field("paper8", description="a template preset or a template with {}")
    id_classes: Path | None = Field(None, description="a file with one ID class name a line (default: ImageNet-1k)")


def build_toy(
    vlm: negvocab.VLM, *, words: list[str], stride: int, templates: str, id_classes: Path | None
) -> negvocab.Vocabulary:
    """Rank ``words`` by their largest cosine to an ID class (ascending), keep every ``stride``-th."""
    classes = negvocab.read_id_classes(id_classes) if id_classes is not None else negvocab.imagenet1k()
    w = np.asarray(vlm.encode_text(words, templates), dtype=np.float64)
    c = np.asarray(vlm.encode_text(list(classes.names), templates), dtype=np.float64)
    closeness = (w @ c.T).max(axis=1)
    order = np.argsort(closeness, kind="stable")[::stride]
    labels = [words[i] for i in order]
    meta = {words[i]: {"rank": r + 1, "closeness": float(closeness[i])} for r, i in enumerate(order)}
    return negvocab.Vocabulary.from_labels(
        labels, source="toy", meta=meta, settings={"stride": stride, "model": vlm.identity}
    )


def register() -> None:
    """Register ``toy`` (again: a test may have removed it)."""
    negvocab.register_builder(
        "toy",
        f"{__name__}:build_toy",
        options=ToyOptions,
        source="toy",
        ranked=True,
        needs=("vlm",),
        paper="none: a test plug-in",
        texts=lambda options, n_classes: len(options.words) + n_classes,
        replace=True,
    )


def unregister() -> None:
    """Remove ``toy`` everywhere a test may have put it: the registry, and the ``build toy`` command, its
    examples and the ``build`` help of this process's CLI (a CLI test that ran while ``toy`` was registered
    gave it a command; left there, later tests would see a command without a builder)."""
    from negvocab.builders.registry import list_builders, unregister_builder
    from negvocab.cli import build_app
    from negvocab.cli.build_generic import build_help
    from negvocab.cli.examples import EXAMPLES

    if "toy" in list_builders():
        unregister_builder("toy")
    build_app.registered_commands[:] = [c for c in build_app.registered_commands if c.name != "toy"]
    EXAMPLES.pop("build toy", None)
    build_app.info.help = build_help()


register()
