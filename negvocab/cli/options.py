"""Every option shared by several commands, declared once: the model options and the image-set options
(the scorer and metric options come from the method registry: :mod:`negvocab.cli.method_options`).

An option is an ``Annotated`` alias (``templates: TemplatesOpt = "paper8"``); options that go
together are a group (:class:`ModelOptions`, :class:`ImageOptions`), which a command takes as one
parameter that :func:`option_group` spreads into the group's options::

    from negvocab.cli.options import ModelOptions, TemplatesOpt, option_group

    @app.command()
    @option_group("vlm", ModelOptions, leave=("num_workers",))
    def embed(*, vlm: ModelOptions, templates: TemplatesOpt = "paper8"):
        model = load_vlm(**asdict(vlm))
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

import typer

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import OpenedSets, list_benchmarks
from negvocab.data.images import ImageSet
from negvocab.data.ood_specs import benchmark_typo, open_ood_sets, parse_ood_specs
from negvocab.vlm.loading import check_weights
from negvocab.vlm.model import VLM
from negvocab.vlm.templates import check_templates
from negvocab.vocab import Vocabulary

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "AllowOutsideOpt",
    "BatchSizeOpt",
    "CacheDirOpt",
    "DeviceOpt",
    "FiAmbOpt",
    "FiOodOpt",
    "GroundTruthOpt",
    "HintOpt",
    "IdClassesOpt",
    "ImageOptions",
    "IdOpt",
    "ImageRootOpt",
    "LabelSpaceOpt",
    "MapClassesOpt",
    "ModelOpt",
    "ModelOptions",
    "NumWorkersOpt",
    "OodOpt",
    "OverwriteOpt",
    "PrecisionOpt",
    "PresetTagOpt",
    "PretrainedOpt",
    "RandomWeightsOpt",
    "ReportOpt",
    "TemplatesOpt",
    "image_sets",
    "load_vlm",
    "path_value",
    "load_vocabs",
    "on_command_line",
    "ood_paths",
    "option_group",
    "templates_value",
]


def path_value(value: str | Path) -> Path:
    """A path option's value as given: an empty or blank one (an unset shell variable, ``--id ''``)
    is refused instead of becoming ``.`` (the working folder, scored whole)."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter("an empty path (an unset shell variable?); give a file or folder")
    return Path(value)


def on_command_line(ctx: typer.Context | None, param: str) -> bool:
    """Whether the running command's ``param`` was given on the command line (not its default)."""
    source = None if ctx is None else ctx.get_parameter_source(param)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def templates_value(value: str) -> str:
    """A ``--templates`` value as given, checked as the options are read (:func:`check_templates`): an
    unknown preset (``paper80``: did you mean paper8?) is refused before any model loads."""
    try:
        return check_templates(value)
    except InputError as e:
        raise typer.BadParameter(str(e)) from None


ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="open_clip model name (e.g. ViT-B-32, ViT-L-14) or 'hf-hub:org/repo'.")
]
PretrainedOpt = Annotated[
    str | None,
    typer.Option(
        "--pretrained",
        "-p",
        help="Weights: an open_clip tag (e.g. laion2b_s34b_b79k), a local checkpoint file "
        "(e.g. open_clip_pytorch_model.bin, with --tag) or a folder with open_clip_config.json.",
    ),
]
PresetTagOpt = Annotated[
    str | None,
    typer.Option(
        "--tag",
        help="With a local checkpoint: the open_clip tag it was trained as, so that its image "
        "preprocessing and QuickGELU setting are used.",
    ),
]
DeviceOpt = Annotated[
    str, typer.Option("--device", help="'auto' (CUDA if available, else CPU), 'cpu', 'cuda', 'cuda:1', ...")
]
PrecisionOpt = Annotated[
    str | None, typer.Option("--precision", help="fp32, fp16 or bf16 (autocast). Default: fp16 on CUDA, fp32 on CPU.")
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Embedding cache folder, the one holding text/ and image/ (default: embeddings/ under "
        "$NEGVOCAB_CACHE_DIR, else under the user cache folder).",
    ),
]
TemplatesOpt = Annotated[
    str,
    typer.Option(
        "--templates",
        "-t",
        parser=templates_value,
        help="Prompt templates: paper8 (default), openai80, neglabel, single, or a file with one "
        "template (containing '{}') a line.",
    ),
]
RandomWeightsOpt = Annotated[
    bool,
    typer.Option(
        "--random-weights",
        help="Build the architecture with RANDOM weights instead of --pretrained (tests and "
        "dry runs only: results are meaningless).",
    ),
]
BatchSizeOpt = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        min=1,
        help="Prompts (text) or images per model batch (default: 256 text / 32 images on CPU, 1024 / 256 on CUDA).",
    ),
]
NumWorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--num-workers", min=0, help="Image-loading worker processes (default: up to 8; 0 loads in the main process)."
    ),
]
OverwriteOpt = Annotated[
    bool,
    typer.Option(
        "--overwrite", help="Replace existing outputs (a file, or an earlier run's files in the output folder)."
    ),
]
IdClassesOpt = Annotated[
    Path | None,
    typer.Option(
        "--id-classes",
        help="ID label space: a file of wnids (subset of ImageNet-1k) or class names (default: ImageNet-1k).",
    ),
]
# the label space of filter and the builders, mapped to WordNet
LabelSpaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--id-classes",
        help="ID label space: a file of wnids, class names or NAME<TAB>WNID lines, a benchmark's name (its class "
        "list) or a shipped list such as cifar100 (default: ImageNet-1k).",
    ),
]
MapClassesOpt = Annotated[
    bool,
    typer.Option(
        "--map-classes/--no-map-classes",
        help="Map --id-classes names to WordNet synsets (their synonyms, hypernym context and hyponyms go too).",
    ),
]
HintOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--hint", help="A hypernym the ID classes live under, for ambiguous names (bird, car, food.n.02); repeatable."
    ),
]


def load_vlm(
    model: str,
    pretrained: str | None,
    device: str = "auto",
    precision: str | None = None,
    cache_dir: Path | None = None,
    random_weights: bool = False,
    tag: str | None = None,
    batch_size: int | None = None,
    num_workers: int | None = None,
) -> VLM:
    """Build the :class:`~negvocab.vlm.model.VLM` the shared options describe.

    Exactly one of ``pretrained`` and ``random_weights`` must be given (``hf-hub:`` model names
    carry their own weights), so random weights are never used by accident.
    """
    check_weights(model, pretrained, random_weights)
    vlm = VLM(
        model,
        pretrained=None if random_weights else pretrained,
        random_weights=random_weights,
        device=device,
        precision=precision,
        cache_dir=cache_dir,
        tag=tag,
    )
    vlm.batch_size, vlm.num_workers = batch_size, num_workers  # --batch-size / --num-workers
    return vlm


# -- option groups: several options declared once, received as one object -----------------------


@dataclass(frozen=True)
class ModelOptions:
    """The model options (``--model`` ... ``--num-workers``): typer lists them where a command puts a
    parameter of this type (:func:`option_group`); ``load_vlm(**asdict(options))`` builds the VLM they
    describe (each command calls its module's ``load_vlm``, which tests replace with a tiny model)."""

    panel: ClassVar[str] = "Model"  # the --help panel of its options

    model: ModelOpt = "ViT-B-32"
    pretrained: PretrainedOpt = None
    tag: PresetTagOpt = None
    random_weights: RandomWeightsOpt = False
    """The weights: exactly one of ``pretrained`` and ``random_weights`` (``hf-hub:`` models carry theirs)."""
    device: DeviceOpt = "auto"
    precision: PrecisionOpt = None
    cache_dir: CacheDirOpt = None
    batch_size: BatchSizeOpt = None
    num_workers: NumWorkersOpt = None


def in_panel(annotation: Any, panel: str | None) -> Any:
    """``Annotated[T, typer.Option(...)]`` with its option listed under ``panel`` in ``--help`` (a copy;
    None or a panel the option names itself: as it is)."""
    if panel is None or typing.get_origin(annotation) is not Annotated:
        return annotation
    base, *meta = typing.get_args(annotation)
    moved = []
    for m in meta:
        if isinstance(m, typer.models.ParameterInfo) and not getattr(m, "rich_help_panel", None):
            m = copy.copy(m)
            m.rich_help_panel = panel
        moved.append(m)
    return Annotated[(base, *moved)]


def option_group(param: str, group: type, *, leave: tuple[str, ...] = (), **override: Any) -> Callable[[_F], _F]:
    """Give a command the options of ``group`` (a dataclass whose fields are typer ``Annotated``
    options) in place of its parameter ``param``: ``--help`` lists them there, and the command receives
    them as one ``group`` object. ``leave``: fields the command does not offer (they keep their
    defaults); ``override``: a field's annotation of the command's own (its help)."""

    def decorate(command: _F) -> _F:
        hints = typing.get_type_hints(command, include_extras=True)
        fields = typing.get_type_hints(group, include_extras=True) | override
        panel = getattr(group, "panel", None)  # the --help panel its options are listed in
        added = [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=in_panel(fields[f.name], panel)
            )
            for f in dataclasses.fields(group)
            if f.name not in leave
        ]
        params: list[inspect.Parameter] = []
        for p in inspect.signature(command).parameters.values():  # keyword-only: typer passes keywords
            own = p.replace(kind=p.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
            params += added if p.name == param else [own]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            values = {p.name: kwargs.pop(p.name) for p in added if p.name in kwargs}
            return command(**kwargs, **{param: group(**values)})

        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # read by inspect; not declared
        run.__annotations__ = {p.name: p.annotation for p in params} | {"return": hints.get("return")}
        return typing.cast(_F, run)

    return decorate


# -- options shared by score and sweep ---------------------------------------------------------
IdOpt = Annotated[
    Path | None,
    typer.Option(
        "--id",
        parser=path_value,
        help="ID images: a folder (ImageNet-1k val in class-folder or flat layout, class folders, or any "
        "images) or an image list (.csv with a path column, or one "
        "'path label' a line, the label optional). With --fi-ood: "
        "the ImageNet-1k validation folder. May be left out with --ood BENCHMARK=ROOT: the benchmark's "
        "own ID set is used (`negvocab benchmarks` shows where each expects it).",
    ),
]


OodOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ood",
        help="OOD images: a folder of images, class folders (NINCO layout) or an image list; NAME=PATH names "
        "the set (a bare path is named after its folder). Repeat for several OOD sets: each is scored "
        "against the same ID set, and their mean is reported too. A named benchmark, BENCHMARK=ROOT "
        f"({', '.join(list_benchmarks())}; see `negvocab benchmarks`), opens all its sets from a data root, "
        "each in its benchmark's group, and adds near-/far-OOD means (a set given as NAME=PATH is in no group).",
    ),
]


ImageRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--image-root",
        parser=path_value,
        help="Folder that relative paths in image lists start from (default: the list's folder).",
    ),
]


AllowOutsideOpt = Annotated[
    bool,
    typer.Option(
        "--allow-outside-root", help="Let image-list paths leave the list's root (absolute paths elsewhere, ../..)."
    ),
]


FiOodOpt = Annotated[
    Path | None,
    typer.Option(
        "--fi-ood",
        parser=path_value,
        help="Fi-ImageNet-1k OOD list (ids ILSVRC2012_val_XXXXXXXX, optional label column): the OOD images "
        "are taken from the --id validation folder and the ID set is the rest.",
    ),
]


FiAmbOpt = Annotated[
    Path | None,
    typer.Option("--fi-ambiguous", parser=path_value, help="Fi-ImageNet-1k ambiguous list (excluded from ID and OOD)."),
]


GroundTruthOpt = Annotated[
    Path | None,
    typer.Option(
        "--ground-truth",
        parser=path_value,
        help="Labels of a flat ImageNet val folder (LOC_val_solution.csv or one index a line).",
    ),
]


ReportOpt = Annotated[
    bool,
    typer.Option(
        "--report/--no-report", help="Write report.html (one self-contained HTML file) into the output folder."
    ),
]


def ood_paths(values: list[str] | None) -> dict[str, Path]:
    """``--ood`` values by set name (:func:`negvocab.data.ood_specs.parse_ood_specs`, benchmarks
    left out): names unique and not reserved, no empty path."""
    return parse_ood_specs(values, cli=True).sets


def image_sets(
    id_path: Path | None,
    ood: list[str] | None,
    fi_ood: Path | None,
    fi_ambiguous: Path | None,
    ground_truth: Path | None,
    image_root: Path | None = None,
    allow_outside_root: bool = False,
) -> tuple[ImageSet, OpenedSets]:
    """The ID image set and the OOD image sets by name (with their groups) that the options describe:
    parsed here, opened by :func:`negvocab.data.ood_specs.open_ood_sets` (``--fi-ood`` is the
    ``fi-imagenet-1k`` carve benchmark of the validation folder ``--id``)."""
    if fi_ood is not None and ood:
        raise InputError("give --ood or --fi-ood, not both")
    if fi_ood is None and not ood:
        raise InputError(
            "no OOD images: pass --ood FOLDER (repeatable, NAME=FOLDER), --ood BENCHMARK=ROOT or --fi-ood LIST"
        )
    if fi_ambiguous is not None and fi_ood is None:
        raise InputError("--fi-ambiguous needs --fi-ood")
    if fi_ood is not None:
        if id_path is None:
            raise InputError("--fi-ood needs --id: the ImageNet-1k validation folder it carves")
        if image_root is not None:
            raise InputError("--image-root applies to image lists only: give --id or --ood as a list file")
        carve = {"ood_list": fi_ood, "ambiguous_list": fi_ambiguous}
        sets = open_ood_sets(
            {"fi-imagenet-1k": id_path}, ground_truth=ground_truth, inputs={"fi-imagenet-1k": carve}, cli=True
        )
        not_found = sets["fi-imagenet-1k"].info.get("not_found") or []
        if not_found:
            typer.echo(f"warning: {len(not_found)} listed ids are not in {id_path} (e.g. {not_found[0]})", err=True)
    else:
        typo = benchmark_typo(parse_ood_specs(ood, cli=True), cli=True, id_given=id_path is not None)
        if typo is not None:  # a benchmark given as a bare name or misspelt: said before any folder is read
            raise InputError(typo)
        sets = open_ood_sets(
            ood,
            id_path=id_path,
            image_root=image_root,
            allow_outside_root=allow_outside_root,
            ground_truth=ground_truth,
            cli=True,
        )
    if sets.id is None:
        raise InputError("no ID images: pass --id FOLDER (or --ood BENCHMARK=ROOT of a benchmark with an ID set)")
    return sets.id, sets


@dataclass(frozen=True)
class ImageOptions:
    """The image-set options of score, sweep and coverage (``--id``, ``--ood``, ``--fi-ood`` ...), a
    group of :func:`option_group`; :meth:`open` opens the sets they name (:func:`image_sets`)."""

    panel: ClassVar[str] = "Image sets"  # the --help panel of its options

    id_path: IdOpt = None
    ood: OodOpt = None
    fi_ood: FiOodOpt = None
    fi_ambiguous: FiAmbOpt = None
    """``--fi-ood`` and ``--fi-ambiguous``: the Fi-ImageNet-1k carve of the validation folder ``--id``."""
    ground_truth: GroundTruthOpt = None
    image_root: ImageRootOpt = None
    allow_outside_root: AllowOutsideOpt = False

    def open(self) -> tuple[ImageSet, OpenedSets]:
        """The ID set and the OOD sets by name (:func:`image_sets`)."""
        return image_sets(
            self.id_path,
            self.ood,
            self.fi_ood,
            self.fi_ambiguous,
            self.ground_truth,
            self.image_root,
            self.allow_outside_root,
        )


def load_vocabs(paths: list[Path]) -> dict[str, Vocabulary]:
    """The vocabulary files by name (the file's stem; a repeated stem gets a prime)."""
    out: dict[str, Vocabulary] = {}
    for p in paths:
        name = p.stem
        while name in out:
            name += "'"
        out[name] = Vocabulary.load(p)
    return out
