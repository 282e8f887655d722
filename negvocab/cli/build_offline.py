"""``negvocab build siblings`` and ``negvocab build mined``: vocabularies that need no LLM.

``siblings`` takes each ID class's WordNet co-hyponyms (the free, offline analogue of GPT
siblings); ``mined`` keeps the candidates that unlabelled images from the deployment point to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from negvocab.cli.app import build_app
from negvocab.cli.files import check_output, writing
from negvocab.cli.options import (
    CacheDirOpt,
    DeviceOpt,
    ModelOpt,
    PrecisionOpt,
    PresetTagOpt,
    PretrainedOpt,
    RandomWeightsOpt,
    TemplatesOpt,
    load_vlm,
)

OutOpt = Annotated[Path, typer.Option("--output", "-o", help="Vocabulary file to write (.json; .txt writes one label a line).")]


def _warn(vlm: object) -> str:
    return " (RANDOM weights: not a real vocabulary)" if getattr(vlm, "random_weights", False) else ""


@build_app.command("siblings")
def build_siblings(
    output: OutOpt,
    per_class: Annotated[int, typer.Option("--per-class", "-K", help="Labels kept per ID class (K), closest to the class first.")] = 20,
    levels: Annotated[
        int, typer.Option("--levels", "-L", help="Hypernym steps up to widen to for classes with fewer than K siblings (1: siblings only).")
    ] = 1,
    id_classes: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--id-classes",
            help="ID classes: a file of WordNet 3.0 noun wnids (any, not only ImageNet-1k) or names, one a line; "
            "names without a synset are listed and skipped (default: ImageNet-1k).",
        ),
    ] = None,
    model: ModelOpt = "ViT-B-32",
    pretrained: PretrainedOpt = None,
    tag: PresetTagOpt = None,
    templates: TemplatesOpt = "paper8",
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = None,
    cache_dir: CacheDirOpt = None,
    random_weights: RandomWeightsOpt = False,
) -> None:
    """WordNet siblings: per ID class, K co-hyponyms at its own depth, ranked by text similarity (no LLM, offline)."""
    from negvocab.build.siblings import build_sibling_vocabulary, check_counts, sibling_id_classes
    from negvocab.vlm.templates import resolve_templates

    check_counts(per_class, levels)  # every option is checked before the model loads
    tset = resolve_templates(templates)
    classes = sibling_id_classes(id_classes)
    check_output(output, inputs=[id_classes, Path(templates)])
    vlm = load_vlm(model, pretrained, device, precision, cache_dir, random_weights, tag=tag)
    vocab = build_sibling_vocabulary(vlm, classes, per_class=per_class, levels=levels, templates=tset, progress=True)
    with writing(output):
        vocab.save(output)
    s = vocab.settings
    skipped = f"; skipped {len(s['skipped'])} classes without a synset: {', '.join(list(s['skipped'].values())[:5])}" if s["skipped"] else ""
    short = f"; {len(s['short_classes'])} classes have fewer than {per_class}" if s["short_classes"] else ""
    typer.echo(f"wrote {output}: {len(vocab)} labels for {s['keys']} classes{short}{skipped}{_warn(vlm)}")
