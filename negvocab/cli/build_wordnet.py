"""``negvocab build wordnet``: the WordNet farthest-first vocabulary for one or many vocabulary sizes M."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from negvocab.builders.registry import get_builder
from negvocab.builders.wordnet import build_wordnet_vocabulary, check_quantile
from negvocab.cli.app import build_app
from negvocab.cli.common_options import SynonymFilterOpt
from negvocab.cli.labelspace import LabelSpaceOptions, say_mapping
from negvocab.cli.options import (
    ModelOptions,
    OverwriteOpt,
    TemplatesOpt,
    load_vlm,
    option_group,
)
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout
from negvocab.core.errors import InputError
from negvocab.core.provenance import file_sha256
from negvocab.vlm.templates import resolve_templates
from negvocab.vocab import Vocabulary, load_candidates

__all__ = ["build_wordnet", "output_path"]


def output_path(out: Path, size: int, many: bool) -> Path:
    """Where the vocabulary of size M = ``size`` goes: ``{size}`` in ``out`` is replaced; with
    several sizes and no placeholder, ``-M<size>`` is added before the suffix."""
    if "{size}" in str(out):
        return Path(str(out).replace("{size}", str(size)))
    if many:
        return out.with_name(f"{out.stem}-M{size}{out.suffix or '.json'}")
    return out


@build_app.command("wordnet", help=get_builder("wordnet").summary)
@option_group("vlm", ModelOptions, leave=("num_workers",))
@option_group("space", LabelSpaceOptions)
def build_wordnet(
    *,
    output: Annotated[Path, typer.Option("--output", "-o", help="Vocabulary JSON to write ({size} is replaced).")],
    vlm: ModelOptions,
    size: Annotated[
        int | None, typer.Option("--size", "-M", help="The vocabulary size M (default: the whole ranking).")
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option("--sizes", help="Several vocabulary sizes M from one ranking, e.g. 1000,2000,5000,10000."),
    ] = None,
    ratio: Annotated[
        float | None,
        typer.Option(
            "--ratio", help="NegLabel's ratio mode instead of M: this share of nouns and of adjectives (0.15)."
        ),
    ] = None,
    quantile: Annotated[
        float,
        typer.Option(
            "--quantile",
            "--percentile",
            help="Quantile level of the ID similarities, in (0, 1] (--percentile: old name).",
        ),
    ] = 0.95,
    preset: Annotated[str, typer.Option("--preset", help="Candidate pool preset: neglabel or all.")] = "neglabel",
    candidates: Annotated[
        Path | None,
        typer.Option(
            "--candidates",
            "--pool",
            help="Rank these candidates instead of the WordNet pool: a 'negvocab candidates' export "
            "(.tsv/.csv/.json keep parts of speech) or any vocabulary file.",
        ),
    ] = None,
    templates: TemplatesOpt = "paper8",
    synonym_filter: SynonymFilterOpt = True,
    space: LabelSpaceOptions,
    overwrite: OverwriteOpt = False,
) -> None:
    """Rank WordNet head words farthest first from the ID classes (ImageNet-1k) and write vocabularies."""
    from negvocab.scoring.prefix_scores import parse_sizes

    if size is not None and sizes is not None:
        raise InputError("give --size (one vocabulary) or --sizes (several), not both")
    many = ([] if sizes is None else parse_sizes(sizes)) if size is None else [size]
    if ratio is not None and many:
        raise InputError("give --ratio or --size/--sizes, not both")
    # every option is checked before the model loads and the long embedding pass starts, by the
    # builder's options model (as the API and a grid's [vocabularies] table check them)
    check_quantile(quantile)  # names a percent given for a fraction
    options = {"size": many[0] if many else None, "ratio": ratio, "quantile": quantile, "preset": preset}
    get_builder("wordnet").validate(options, key=lambda name: f"--{name}")
    tset = resolve_templates(templates)
    classes, mapped = space.open()
    pool = load_candidates(candidates) if candidates is not None else None
    outputs = [output_path(output, m, len(many) > 1) for m in many or [0]]
    for i, path in enumerate(outputs):
        check_output(
            path, inputs=[candidates, Path(templates), space.id_classes], others=outputs[:i], overwrite=overwrite
        )
    if pool is not None and many and many[-1] > len(pool):
        raise InputError(f"--size {many[-1]} exceeds the {len(pool)} candidates in {candidates}")
    say_mapping(mapped)  # every input checked: the label space's summary
    model = load_vlm(**asdict(vlm))
    full = build_wordnet_vocabulary(
        model,
        None,
        id_classes=classes,
        quantile=quantile,
        preset=preset,
        templates=tset,
        ratio=ratio,
        candidates=pool,
        synonym_filter=synonym_filter,
        progress=True,
    )
    if candidates is not None:
        # the file's hash, so a reader can tell which candidate list was ranked
        full = full.subset(
            full.labels, settings={"candidates_file": str(candidates), "candidates_sha256": file_sha256(candidates)}
        )
    _write_sizes(full, output, many, random_weights=model.random_weights)


def _write_sizes(full: Vocabulary, output: Path, many: list[int], *, random_weights: bool) -> None:
    """Write the whole ranking (no size given) or its first M labels for each size M, and say so."""
    warn = " (RANDOM weights: not a real vocabulary)" if random_weights else ""
    if not many:
        path = output_path(output, len(full), False)
        with writing(path):
            full.save(path)
        typer.echo(f"wrote {path}: {len(full)} labels{warn}", err=is_stdout(path))
        return
    if many[-1] > len(full):
        raise InputError(f"--size {many[-1]} exceeds the {len(full)} labels of the filtered WordNet ranking")
    for m in many:
        path = output_path(output, m, len(many) > 1)
        with writing(path):
            full.head(m).save(path)
        typer.echo(f"wrote {path}: {m} labels{warn}", err=is_stdout(path))
