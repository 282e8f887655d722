"""``negvocab grid plan``: what a grid will do and how long it will take, before it runs.

For each model: its units (:mod:`negvocab.grid.units`), the images and labels it must encode, what
the embedding cache already holds, and a time estimate from a short measured probe: the model is
loaded (timed) and a few batches of images and prompts are encoded on this machine's device
(timed, cache off). The estimate for ``G`` workers is the encoding work divided by ``G`` plus the
model loads (each worker loads each model at most once). Costs measured on a CPU say little about
a GPU: the plan prints the device it measured on.

An image set or vocabulary file that is not on disk (planning a cluster from a laptop) is counted
with the size given by ``sizes`` (``--size NAME=N``), all of it uncached.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.builders.registry import get_builder
from negvocab.core.errors import InputError, NegvocabError
from negvocab.core.progress import format_duration
from negvocab.grid import work as W
from negvocab.grid.config import GridConfig
from negvocab.grid.sets import open_set
from negvocab.scoring.methods import needs_negatives
from negvocab.vlm import loading
from negvocab.vlm.images import file_key  # the image cache's key of a file (path, size, mtime)
from negvocab.vlm.model import TokenizerUnavailable
from negvocab.vlm.templates import resolve_templates
from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["ModelPlan", "plan_grid", "plan_lines"]

PROBE_IMAGES = 8
PROBE_LABELS = 16


@dataclass
class ModelPlan:
    """One model's share of a grid: counts, cache holdings and measured costs (seconds)."""

    model: str
    units: int = 0
    images: int = 0
    images_cached: int = 0
    labels: int = 0
    prompts: int = 0
    load_s: float | None = None
    image_s: float | None = None  # per image
    prompt_s: float | None = None  # per prompt (label x template)
    device: str = ""
    error: str = ""
    notes: list[str] = field(default_factory=list)

    def work_s(self) -> float | None:
        if self.image_s is None or self.prompt_s is None:
            return None
        return (self.images - self.images_cached) * self.image_s + self.prompts * self.prompt_s

    def wall_s(self, workers: int) -> float | None:
        """Encoding work spread over ``workers`` plus the loads (one per worker that gets a unit)."""
        work = self.work_s()
        if work is None or self.load_s is None:
            return None
        return work / workers + self.load_s * min(workers, max(self.units, 1)) / workers


def _set_sizes(cfg: GridConfig, sizes: Mapping[str, int]) -> tuple[dict[str, Any], dict[str, int], list[str]]:
    """(opened sets, size of every set, notes): sets not on disk take their size from ``sizes``."""
    opened: dict[str, Any] = {}
    n: dict[str, int] = {}
    notes = []
    for spec in [cfg.id_set, *cfg.ood_sets]:
        name = spec.name
        try:
            opened[name] = open_set(cfg, spec)
            n[name] = len(opened[name])
        except (InputError, OSError) as e:
            if name not in sizes:
                raise InputError(f"{name}: {e}; give its size with --size {name}=N to plan without it") from e
            n[name] = int(sizes[name])
            notes.append(f"{name}: not on disk, planned with {n[name]:,} images (--size)")
    return opened, n, notes


def _label_counts(cfg: GridConfig, sizes: Mapping[str, int], notes: list[str]) -> dict[str, int]:
    """Labels each vocabulary spec encodes (once for all its sizes: the sizes are heads of one list;
    a builder encodes its whole candidate pool); a file not on disk takes its size from ``sizes``."""
    out = {}
    for v in cfg.vocabularies:
        if v.file and not Path(cfg.path(v.file)).exists() and v.name in sizes:
            out[v.name] = int(sizes[v.name])
            notes.append(f"vocabulary {v.name}: not on disk, planned with {out[v.name]:,} labels (--size)")
        elif v.file:
            try:
                out[v.name] = len(Vocabulary.load(cfg.path(v.file)))
            except InputError as e:
                raise InputError(f"{e}; give its size with --size {v.name}=N to plan without it") from e
        else:
            out[v.name] = _builder_texts(cfg, v, sizes, notes)
    return out


def _builder_texts(cfg: GridConfig, v: Any, sizes: Mapping[str, int], notes: list[str]) -> int:
    """Texts a builder spec embeds (its candidates, as its registry entry counts them); a builder that
    does not say is planned with ``--size NAME=N``."""
    builder = get_builder(v.builder)
    options = builder.validate(builder.with_paths(dict(v.options), cfg.base))
    counted = builder.count_texts(options, len(W.id_classes(cfg).names))
    if counted is not None:
        return counted
    if v.name not in sizes:
        raise InputError(
            f"vocabulary {v.name}: builder {builder.name!r} does not say how many labels it embeds; "
            f"give them with --size {v.name}=N to plan it"
        )
    notes.append(f"vocabulary {v.name}: builder {builder.name!r} planned with {int(sizes[v.name]):,} labels (--size)")
    return int(sizes[v.name])


def _vocab_names(cfg: GridConfig) -> int:
    return sum(len(v.names()) for v in cfg.vocabularies)


def _probe(cfg: GridConfig, plan: ModelPlan, spec: Any, sets: Mapping[str, Any], n_images: int) -> Any:
    """Load the model and time a few batches (cache off); fills the plan's costs."""
    import open_clip  # noqa: F401  (imported before the clock starts: the load, not the import, is timed)
    from PIL import Image

    t0 = time.perf_counter()
    vlm = W.load_model(cfg, spec)
    plan.load_s, plan.device = time.perf_counter() - t0, str(vlm.device)
    cached = vlm.cache_enabled
    vlm.cache_enabled = False
    try:
        paths = next((list(s.paths[:n_images]) for s in sets.values() if len(s)), None)
        if paths is None:  # no set on disk: noise images of the model's input size
            size = vlm.model.visual.preprocess_cfg.get("size", 224)
            size = size if isinstance(size, int) else size[0]
            rng = np.random.default_rng(0)
            paths = [Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)) for _ in range(n_images)]
        vlm.encode_images(paths[:1], progress=False, num_workers=0)  # warm-up
        t0 = time.perf_counter()
        vlm.encode_images(paths, batch_size=len(paths), progress=False, num_workers=0)
        plan.image_s = (time.perf_counter() - t0) / len(paths)
        words = [f"probe label {i}" for i in range(PROBE_LABELS)]
        vlm.encode_text(["warm-up"], ["a photo of a {}."], progress=False)
        t0 = time.perf_counter()
        vlm.encode_text(words, ["a photo of a {}."], progress=False)
        plan.prompt_s = (time.perf_counter() - t0) / len(words)
    finally:
        vlm.cache_enabled = cached
    return vlm


def _probe_towers(cfg: GridConfig, plan: ModelPlan, spec: Any, n_images: int) -> None:
    """The probe of a model whose tokenizer cannot be built here (SigLIP's needs ``transformers`` and
    the hub): its two towers timed on random pixels and random token ids of the full context, so the
    costs leave out decoding, preprocessing and tokenizing (a lower bound; the row says so)."""
    import torch

    if spec.model_config:
        import open_clip

        open_clip.add_model_config(cfg.path(spec.model_config))
    t0 = (
        time.perf_counter()
    )  # random weights: the weights do not change the cost (the load here builds, reads no checkpoint)
    model = loading.load_model(spec.name, None, tag=None, quick_gelu=None, preprocess=None, seed=spec.seed).model.eval()
    plan.load_s, plan.device = time.perf_counter() - t0, "cpu, towers only (no tokenizer here; load = build)"
    size = model.visual.preprocess_cfg.get("size", 224) if hasattr(model.visual, "preprocess_cfg") else 224
    size = size if isinstance(size, int) else size[0]
    text = getattr(model, "text", model)
    vocab = next(m.num_embeddings for m in text.modules() if isinstance(m, torch.nn.Embedding))
    length: Any = getattr(text, "context_length", None) or getattr(model, "context_length", 77)
    context = int(length)
    gen = torch.Generator().manual_seed(0)
    pixels = torch.rand((n_images, 3, size, size), generator=gen)
    tokens = torch.randint(1, vocab, (PROBE_LABELS, context), generator=gen)
    with torch.inference_mode():
        model.encode_image(pixels[:1]), model.encode_text(tokens[:1])  # warm-up
        t0 = time.perf_counter()
        model.encode_image(pixels)
        plan.image_s = (time.perf_counter() - t0) / n_images
        t0 = time.perf_counter()
        model.encode_text(tokens)
        plan.prompt_s = (time.perf_counter() - t0) / PROBE_LABELS


def _cached_images(vlm: Any, sets: Mapping[str, Any], names: Sequence[str]) -> int:
    store, found = vlm.store("image"), 0
    for name in names:
        if name in sets:
            keys = [file_key(p) for p in sets[name].paths]
            found += int(store.get(keys)[0].sum())
    return found


def plan_grid(
    cfg: GridConfig, *, sizes: Mapping[str, int] | None = None, probe: bool = True, probe_images: int = PROBE_IMAGES
) -> tuple[list[ModelPlan], list[str]]:
    """Per-model plans and notes for ``cfg`` (nothing is written; the probe loads each model once)."""
    sets, n, notes = _set_sizes(cfg, sizes or {})
    labels = _label_counts(cfg, sizes or {}, notes)
    prompts_per_label = max(len(resolve_templates(cfg.templates).for_pos(p)) for p in ("n", "a"))
    n_classes = len(W.id_classes(cfg).names)
    plans = []
    for spec in cfg.models:
        p = ModelPlan(spec.display)
        names = list(n)
        size = cfg.resources.shard_size(cfg.batch_size)
        p.units = sum(-(-n[s] // size) for s in names) + 2
        p.images = sum(n.values())
        neg = any(needs_negatives(m.name) for m in cfg.methods)
        p.labels = n_classes + (sum(labels.values()) if neg else 0)
        p.prompts = p.labels * prompts_per_label
        if probe:
            try:
                try:
                    vlm = _probe(cfg, p, spec, sets, probe_images)
                    p.images_cached = _cached_images(vlm, sets, names)
                    del vlm
                except TokenizerUnavailable as e:
                    logger.warning("%s: %s; timing its towers on random inputs instead", spec.display, e)
                    _probe_towers(cfg, p, spec, probe_images)
            except (NegvocabError, OSError, RuntimeError) as e:
                p.error = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        plans.append(p)
    per_model = sum(_vocab_names(cfg) if needs_negatives(m.name) else 1 for m in cfg.methods)
    notes.insert(
        0,
        f"{len(cfg.models) * per_model * len(cfg.ood_sets) * len(cfg.conventions):,} "
        f"cells, {sum(p.units for p in plans):,} units",
    )
    return plans, notes


def plan_lines(plans: Sequence[ModelPlan], workers: Sequence[int], *, random_weights: bool = False) -> list[str]:
    """The printed plan: one row per model and the estimate for each number of workers."""
    rows = [
        f"{'model':<26}{'units':>7}{'images':>10}{'cached':>9}{'labels':>9}{'prompts':>10}"
        f"{'load':>8}{'ms/image':>10}{'ms/prompt':>10}  device"
    ]
    for p in plans:
        if p.error:
            rows.append(
                f"{p.model:<26}{p.units:>7}{p.images:>10,}{'?':>9}{p.labels:>9,}{p.prompts:>10,}  "
                f"probe failed: {p.error}"
            )
            continue

        def ms(x: float | None) -> str:
            return "?" if x is None else f"{1000 * x:.1f}"

        load = "?" if p.load_s is None else f"{p.load_s:.1f}s"
        rows.append(
            f"{p.model:<26}{p.units:>7}{p.images:>10,}{p.images_cached:>9,}{p.labels:>9,}{p.prompts:>10,}"
            f"{load:>8}{ms(p.image_s):>10}{ms(p.prompt_s):>10}  {p.device}"
        )
    devices = sorted({p.device for p in plans if p.device})
    for g in workers:
        walls = [p.wall_s(g) for p in plans]
        known = [w for w in walls if w is not None]
        missing = len(walls) - len(known)
        est = format_duration(sum(known)) if known else "unknown"
        rows.append(
            f"estimate on {g} worker{'s' if g != 1 else ''}: {est}"
            + (f" (without {missing} model(s) that could not be probed)" if missing else "")
        )
    if any(d.startswith("cpu") for d in devices):
        rows.append(
            "(costs measured on this machine's CPU: a GPU is many times "
            "faster per image; rerun the plan where the grid will run)"
        )
    if random_weights:
        rows.append(
            "(probed with RANDOM weights: costs are those of the architectures, the weights do not change them)"
        )
    return rows
