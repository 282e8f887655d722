"""Model options shared by the commands that embed text or images (declared once).

Commands take them as ``Annotated`` parameters and call :func:`load_vlm`::

    from negvocab.cli.options import (CacheDirOpt, DeviceOpt, ModelOpt, PrecisionOpt,
                                      PretrainedOpt, RandomWeightsOpt, TemplatesOpt, load_vlm)

    @app.command()
    def score(model: ModelOpt = "ViT-B-32", pretrained: PretrainedOpt = None, ...,
              random_weights: RandomWeightsOpt = False):
        vlm = load_vlm(model, pretrained, device, precision, cache_dir, random_weights)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from negvocab.data import fi_imagenet, imagenet_val, open_image_set
from negvocab.data.images import ImageSet
from negvocab.errors import InputError
from negvocab.scoring.metrics import CONVENTIONS
from negvocab.vlm.model import VLM
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="open_clip model name (e.g. ViT-B-32, ViT-L-14) or 'hf-hub:org/repo'.",
    ),
]
PretrainedOpt = Annotated[
    Optional[str],  # noqa: UP045 (typer needs Optional here)
    typer.Option(
        "--pretrained",
        "-p",
        help="Weights: an open_clip tag (e.g. laion2b_s34b_b79k), a local checkpoint file "
        "(e.g. open_clip_pytorch_model.bin, with --tag) or a folder with open_clip_config.json.",
    ),
]
PresetTagOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--tag",
        help="With a local checkpoint: the open_clip tag it was trained as, so that its image "
        "preprocessing and QuickGELU setting are used.",
    ),
]
DeviceOpt = Annotated[
    str,
    typer.Option("--device", help="'auto' (CUDA if available, else CPU), 'cpu', 'cuda', 'cuda:1', ..."),
]
PrecisionOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--precision",
        help="fp32, fp16 or bf16 (autocast). Default: fp16 on CUDA, fp32 on CPU.",
    ),
]
CacheDirOpt = Annotated[
    Optional[Path],  # noqa: UP045
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
    Optional[int],  # noqa: UP045
    typer.Option("--batch-size", min=1, help="Prompts (text) or images per model batch (default: 256 text / 32 images on CPU, 1024 / 256 on CUDA)."),
]
NumWorkersOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--num-workers", min=0, help="Image-loading worker processes (default: up to 8; 0 loads in the main process)."),
]
OverwriteOpt = Annotated[
    bool,
    typer.Option("--overwrite", help="Replace existing outputs (a file, or an earlier run's files in the output folder)."),
]
IdClassesOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--id-classes",
        help="ID label space: a file of wnids (subset of ImageNet-1k) or class names (default: ImageNet-1k).",
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
    hub = model.startswith(("hf-hub:", "local-dir:"))
    if random_weights and pretrained:
        raise InputError("give either --pretrained or --random-weights, not both")
    if not random_weights and not pretrained and not hub:
        raise InputError(
            f"no weights for {model}: pass --pretrained TAG or --pretrained /path/to/open_clip_pytorch_model.bin "
            "(or --random-weights for a dry run)"
        )
    vlm = VLM(
        model,
        pretrained=None if random_weights else pretrained,
        device=device,
        precision=precision,
        cache_dir=cache_dir,
        tag=tag,
    )
    vlm.batch_size, vlm.num_workers = batch_size, num_workers  # --batch-size / --num-workers
    return vlm


# -- options shared by score, sweep, coverage and report ---------------------------------------
# -- options shared by score and sweep ---------------------------------------------------------
IdOpt = Annotated[
    Path,
    typer.Option(
        "--id",
        help="ID images: a folder (ImageNet-1k val in class-folder or flat layout, class folders, or any "
        "images) or an image list (.csv with a path column, or one 'path label' a line, the label optional). With --fi-ood: "
        "the ImageNet-1k validation folder.",
    ),
]


OodOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--ood",
        help="OOD images: a folder of images, class folders (NINCO layout) or an image list; NAME=PATH names "
        "the set (a bare path is named after its folder). Repeat for several OOD sets: each is scored "
        "against the same ID set, and their mean is reported too.",
    ),
]


ImageRootOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--image-root", help="Folder that relative paths in image lists start from (default: the list's folder)."),
]


AllowOutsideOpt = Annotated[
    bool,
    typer.Option("--allow-outside-root", help="Let image-list paths leave the list's root (absolute paths elsewhere, ../..)."),
]


FiOodOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--fi-ood",
        help="Fi-ImageNet-1k OOD list (ids ILSVRC2012_val_XXXXXXXX, optional label column): the OOD images "
        "are taken from the --id validation folder and the ID set is the rest.",
    ),
]


FiAmbOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--fi-ambiguous", help="Fi-ImageNet-1k ambiguous list (excluded from ID and OOD)."),
]


GroundTruthOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--ground-truth", help="Labels of a flat ImageNet val folder (LOC_val_solution.csv or one index a line)."),
]


TauOpt = Annotated[float, typer.Option("--tau", help="NegLabel temperature on cosines.")]


GroupsOpt = Annotated[int, typer.Option("--groups", "-G", help="NegLabel groups G (clamped to the vocabulary size).")]


GroupingOpt = Annotated[str, typer.Option("--grouping", help="NegLabel grouping: stratified (rank r -> group r mod G), random, or neglabel (NegLabel's released code exactly: drops the last M mod G labels, torch permutation seeded with --seed on the scoring device).")]


SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap CIs and of the random/neglabel grouping (NegLabel's code uses 0; recorded in the results).")]


BetaOpt = Annotated[float, typer.Option("--beta", help="EOE penalty weight.")]


TempOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--temperature",
        "-T",
        help="Softmax temperature T on cosines of mcm, glmcm and eoe (default 1).",
    ),
]


PenaltyTempOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--penalty-temperature", help="Temperature of neglabel_eoe's EOE penalty (default: --tau)."),
]


ConventionOpt = Annotated[str, typer.Option("--convention", help="FPR convention: paper (ID-anchored), hendrycks or openood.")]


TprOpt = Annotated[float, typer.Option("--tpr", help="TPR of the FPR metric (0.95 = FPR@95).")]


MAX_BOOT = 100_000  # 1,000 is the usual; more only costs time


BootOpt = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples of OOD images for the CIs (0: none).")]


ReportOpt = Annotated[bool, typer.Option("--report/--no-report", help="Write report.html (one self-contained HTML file) into the output folder.")]


def ood_paths(values: list[str] | None) -> dict[str, Path]:
    """``--ood`` values by set name: ``NAME=PATH``, or a bare path named after its folder (a list
    file: after its stem). Names must be unique and not ``mean``."""
    out: dict[str, Path] = {}
    for value in values or []:
        name, eq, rest = value.partition("=")
        named = bool(eq) and name.strip() and "/" not in name and "\\" not in name and not Path(value).exists()
        path = Path(rest if named else value).expanduser()
        if named:
            name = name.strip()
        else:
            name = (path.stem if path.is_file() else path.name) or str(path)
        if name == "mean":
            raise InputError(f"--ood {value}: 'mean' names the average over the OOD sets; give the set another name (NAME=PATH)")
        if name in out:
            raise InputError(f"--ood: two OOD sets are named {name!r} ({out[name]} and {path}); name them: --ood NAME=PATH")
        out[name] = path
    return out


def image_sets(
    id_path: Path,
    ood: list[str] | None,
    fi_ood: Path | None,
    fi_ambiguous: Path | None,
    ground_truth: Path | None,
    image_root: Path | None = None,
    allow_outside_root: bool = False,
) -> tuple[ImageSet, dict[str, ImageSet]]:
    """The ID image set and the OOD image sets by name that the options describe."""
    oods = ood_paths(ood)
    if image_root is not None and not any(p is not None and p.is_file() for p in (id_path, *oods.values())):
        raise InputError("--image-root applies to image lists only: give --id or --ood as a list file")
    if fi_ood is not None:
        if oods:
            raise InputError("give --ood or --fi-ood, not both")
        fi = fi_imagenet(id_path, fi_ood, fi_ambiguous, ground_truth=ground_truth)
        if fi.not_found:
            typer.echo(f"warning: {len(fi.not_found)} listed ids are not in {id_path} (e.g. {fi.not_found[0]})", err=True)
        return fi.id, {"fi-imagenet-1k": fi.ood}
    if not oods:
        raise InputError("no OOD images: pass --ood FOLDER (repeatable, NAME=FOLDER) or --fi-ood LIST")
    if fi_ambiguous is not None:
        raise InputError("--fi-ambiguous needs --fi-ood")
    if ground_truth:
        id_set = imagenet_val(id_path, ground_truth=ground_truth)
    else:
        id_set = open_image_set(id_path, image_root=image_root, allow_outside_root=allow_outside_root)
    return id_set, {name: open_image_set(path, image_root=image_root, allow_outside_root=allow_outside_root) for name, path in oods.items()}


def check_scoring_options(
    *,
    tau: float,
    groups: int,
    grouping: str,
    convention: str,
    tpr: float,
    n_boot: int,
    topk: int | None = None,
    temperature: float | None = None,
    penalty_temperature: float | None = None,
    seed: int = 0,
) -> None:
    """Reject bad scoring options before a model is loaded or an image is read."""
    from negvocab.scoring.scores import GROUPINGS

    if convention not in CONVENTIONS:
        raise InputError(f"unknown --convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")

    if not (math.isfinite(tau) and tau > 0):
        raise InputError(f"--tau must be a positive number, got {tau}")
    if groups < 1:
        raise InputError(f"--groups must be >= 1, got {groups}")
    if grouping not in GROUPINGS:
        raise InputError(f"unknown --grouping {grouping!r}; choose one of {', '.join(GROUPINGS)}")
    if not 0 < tpr <= 1:
        raise InputError(f"--tpr must be in (0, 1], got {tpr}")
    if not 0 <= n_boot <= MAX_BOOT:
        raise InputError(f"--n-boot must be between 0 and {MAX_BOOT:,}, got {n_boot}")
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    if topk is not None and topk < 1:
        raise InputError(f"--topk must be >= 1, got {topk}")
    for flag, value in (("--temperature", temperature), ("--penalty-temperature", penalty_temperature)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{flag} must be a positive number, got {value}")


def load_vocabs(paths: list[Path]) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in paths:
        name = p.stem
        while name in out:
            name += "'"
        out[name] = Vocabulary.load(p)
    return out
