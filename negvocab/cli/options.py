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

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from negvocab.errors import InputError

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
    from negvocab.vlm.model import VLM

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
