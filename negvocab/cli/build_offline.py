"""``negvocab build siblings`` and ``negvocab build mined``: vocabularies that need no LLM.

``siblings`` takes each ID class's WordNet co-hyponyms (the free, offline analogue of GPT
siblings); ``mined`` keeps the candidates that unlabelled images from the deployment point to.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.builders.mined import build_mined_vocabulary, mining_pool
from negvocab.builders.oracle import build_oracle_vocabulary
from negvocab.builders.registry import get_builder
from negvocab.builders.siblings import build_sibling_vocabulary, check_counts, sibling_id_classes
from negvocab.cli.app import build_app
from negvocab.cli.common_options import OutOpt, SynonymFilterOpt
from negvocab.cli.labelspace import LabelSpaceOptions, say_mapping
from negvocab.cli.options import (
    ModelOptions,
    OverwriteOpt,
    TemplatesOpt,
    load_vlm,
    ood_paths,
    option_group,
    path_value,
)
from negvocab.cli.outputs import check_output, claim_output_file, writing
from negvocab.core.atomic import is_stdout
from negvocab.core.errors import InputError
from negvocab.core.progress import check_interrupt, interrupt_guard
from negvocab.data.layouts import open_image_set
from negvocab.vlm.templates import resolve_templates
from negvocab.vocab import Vocabulary

__all__ = ["OutOpt", "SiblingClassesOpt", "build_mined", "build_oracle", "build_siblings"]


#: siblings' --id-classes: any WordNet noun wnids (its help says so)
SiblingClassesOpt = Annotated[
    Path | None,
    typer.Option(
        "--id-classes",
        help="ID classes: a file of WordNet 3.0 noun wnids (any, not only ImageNet-1k), class names or "
        "NAME<TAB>WNID lines, a benchmark's name or a shipped list (cifar100); names are mapped to synsets "
        "(--no-map-classes: not), those without one are listed and skipped (default: ImageNet-1k).",
    ),
]


def _warn(vlm: object) -> str:
    return " (RANDOM weights: not a real vocabulary)" if getattr(vlm, "random_weights", False) else ""


@build_app.command("siblings", help=get_builder("siblings").summary)
@option_group("vlm", ModelOptions, leave=("batch_size", "num_workers"))
@option_group("space", LabelSpaceOptions, id_classes=SiblingClassesOpt)
def build_siblings(
    *,
    output: OutOpt,
    overwrite: OverwriteOpt = False,
    per_class: Annotated[
        int, typer.Option("--per-class", "-K", help="Labels kept per ID class (K), closest to the class first.")
    ] = 20,
    levels: Annotated[
        int,
        typer.Option(
            "--levels",
            "-L",
            help="Hypernym steps up to widen to for classes with fewer than K siblings (1: siblings only).",
        ),
    ] = 1,
    space: LabelSpaceOptions,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
) -> None:
    """WordNet siblings: per ID class, K co-hyponyms at its own depth, ranked by text similarity (no LLM, offline)."""
    check_counts(per_class, levels)  # every option is checked before the model loads
    tset = resolve_templates(templates)
    classes, mapped = space.open(reader=sibling_id_classes)
    if not any(w.startswith("n") and w[1:].isdigit() for w in classes.wnids):
        raise InputError(
            f"{space.id_classes}: none of the {len(classes)} ID classes is a wnid; siblings need WordNet synsets "
            "(n01440764)"
        )
    check_output(output, inputs=[space.id_classes, Path(templates)], overwrite=overwrite)
    say_mapping(mapped)  # every input checked: the label space's summary
    model = load_vlm(**asdict(vlm))
    vocab = build_sibling_vocabulary(model, classes, per_class=per_class, levels=levels, templates=tset, progress=True)
    with writing(output):
        vocab.save(output)
    s = vocab.settings
    skipped = (
        f"; skipped {len(s['skipped'])} classes without a synset: {', '.join(list(s['skipped'].values())[:5])}"
        if s["skipped"]
        else ""
    )
    short = f"; {len(s['short_classes'])} classes have fewer than {per_class}" if s["short_classes"] else ""
    typer.echo(
        f"wrote {output}: {len(vocab)} labels for {s['keys']} classes{short}{skipped}{_warn(model)}",
        err=is_stdout(output),
    )


@build_app.command("mined", help=get_builder("mined").summary)
@option_group("vlm", ModelOptions, leave=("batch_size", "num_workers"))
@option_group("space", LabelSpaceOptions)
def build_mined(
    *,
    output: OutOpt,
    images: Annotated[
        Path,
        typer.Option(
            "--images", parser=path_value, help="Unlabelled images of the deployment: a folder or an image list file."
        ),
    ],
    overwrite: OverwriteOpt = False,
    candidates: Annotated[
        str,
        typer.Option(
            "--candidates",
            "--pool",
            help="Candidates (--pool: old name): a 'negvocab candidates' export or any vocabulary file, "
            "or wordnet / wordnet:all.",
        ),
    ] = "wordnet",
    size: Annotated[
        int | None, typer.Option("--size", "-M", help="Vocabulary size M (default: every candidate with a vote).")
    ] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Candidates each OOD-looking image votes for.")] = 10,
    quantile: Annotated[
        float,
        typer.Option(
            "--ood-quantile", help="Images whose ID similarity is below this quantile of all images' look OOD."
        ),
    ] = 0.5,
    threshold: Annotated[
        float | None, typer.Option("--threshold", help="An absolute ID-similarity threshold instead of --ood-quantile.")
    ] = None,
    ood: Annotated[
        list[str] | None,
        typer.Option(
            "--ood",
            help=(
                "OOD set you will evaluate on (NAME=PATH or a folder; "
                "repeatable): any overlap marks the vocabulary transductive."
            ),
        ),
    ] = None,
    index: Annotated[
        str,
        typer.Option(
            "--index", help="exact (default), ivf or hnsw (approximate, for pools of millions; recall is measured)."
        ),
    ] = "exact",
    nprobe: Annotated[int | None, typer.Option("--nprobe", min=1, help="IVF lists searched per image.")] = None,
    space: LabelSpaceOptions,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
) -> None:
    """Mined negatives: the candidates that unlabelled OOD-looking images point to, ranked by their votes."""
    # checked by the builder's options model before any image is read (as the API and a grid check them)
    given = {"images": images, "size": size, "top_k": top_k, "quantile": quantile, "threshold": threshold}
    flags = {"quantile": "--ood-quantile"}
    get_builder("mined").validate({**given, "index": index}, key=lambda n: flags.get(n, "--" + n.replace("_", "-")))
    tset = resolve_templates(templates)
    classes, mapped = space.open()
    cands = mining_pool(candidates)
    image_set = open_image_set(images)
    ood_sets = {name: open_image_set(path) for name, path in ood_paths(ood).items()}  # one name each, no empty path
    check_output(output, inputs=[images, Path(candidates), space.id_classes, Path(templates)], overwrite=overwrite)
    claim_output_file(output)  # a second run writing the same file refuses at once (negvocab.core.outdir)
    say_mapping(mapped)  # every input checked: the label space's summary
    mining: dict[str, Any] = {
        "size": size,
        "id_classes": classes,
        "templates": tset,
        "top_k": top_k,
        "quantile": quantile,
        "threshold": threshold,
        "ood": ood_sets or None,
        "index": index,
        "index_options": {"nprobe": nprobe} if nprobe else None,
        "progress": True,
    }
    with interrupt_guard():  # a Ctrl-C swallowed on its way up (a fork hook) still ends the run
        model = load_vlm(**asdict(vlm))
        vocab = build_mined_vocabulary(model, image_set, cands, **mining)
        check_interrupt()  # no file is written after a Ctrl-C
        _save_mined(output, vocab.subset(vocab.labels, settings={"pool": candidates}), bool(ood_sets), model)


def _save_mined(output: Path, vocab: Vocabulary, checked: bool, vlm: object) -> None:
    """Write a mined vocabulary (atomically: the earlier file or the whole new one) and say what it holds."""
    with writing(output):
        vocab.save(output)
    s = vocab.settings
    recall = s["index"].get("recall_at_k")
    extra = f"; {s['index']['kind']} recall@{s['top_k']} {recall}" if recall is not None else ""
    if "caveats" in s:
        extra += f"; NOT DEPLOYABLE: {s['caveats']['transductive']}"
    elif not checked:
        extra += "; overlap with your OOD set not checked (pass --ood to check)"
    typer.echo(
        f"wrote {output}: {len(vocab)} labels from {s['ood_looking_images']} "
        f"of {s['images']} images{extra}{_warn(vlm)}",
        err=is_stdout(output),
    )


@build_app.command("oracle", help=get_builder("oracle").summary)
def build_oracle(
    output: OutOpt,
    labels: Annotated[
        Path | None,
        typer.Option("--labels", help="OOD labels: one a line, or a Fi-ImageNet-1k list with a label column."),
    ] = None,
    ood: Annotated[
        Path | None, typer.Option("--ood", help="OOD class folders (NINCO layout): labels from folder names.")
    ] = None,
    synonym_filter: SynonymFilterOpt = True,
    overwrite: OverwriteOpt = False,
) -> None:
    """The oracle vocabulary: the OOD set's own labels (a lower bound on FPR@95, NOT deployable)."""
    source = labels if labels is not None else ood
    if source is None or (labels is not None and ood is not None):
        raise InputError("give exactly one of --labels FILE and --ood DIR")
    if labels is not None and labels.is_dir():
        raise InputError(f"--labels {labels} is a folder; for class folders (NINCO layout) use --ood")
    if ood is not None and ood.exists() and not ood.is_dir():
        raise InputError(f"--ood {ood} is a file; for a labels file or an image list use --labels")
    check_output(output, inputs=[labels], overwrite=overwrite)
    vocab = build_oracle_vocabulary(source, synonym_filter=synonym_filter)
    with writing(output):
        vocab.save(output)
    removed = vocab.settings.get("synonym_filter", {}).get("removed_count", 0)
    typer.echo(
        f"wrote {output}: {len(vocab)} oracle labels ({removed} removed "
        "as ImageNet-1k names/synonyms); not a deployable vocabulary",
        err=is_stdout(output),
    )
