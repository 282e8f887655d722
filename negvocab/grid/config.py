"""The experiment-grid file: models x vocabularies x OOD sets x methods x conventions, in TOML.

::

    [grid]
    templates = "paper8"            # prompt templates of every text embedding
    id_classes = "imagenet1k"       # or a file with one class name a line
    conventions = ["paper"]         # FPR conventions (paper, hendrycks, openood)
    tpr = 0.95
    n_boot = 1000                   # bootstrap resamples of the CIs (0: none)
    device = "auto"
    cache_dir = "cache"             # embedding cache (relative to this file); on a cluster: a shared folder
    # ray_num_gpus = 1              # GPUs per model task of the ray engine (default: 1 if the cluster has GPUs)
    # ray_data_min_images = 20000   # image sets this large are embedded through Ray Data

    [[models]]
    name = "ViT-B-32"
    pretrained = "laion2b_s34b_b79k"   # a tag, a checkpoint file or a folder; or random_weights = true
    precision = "fp32"
    # label = "CLIP B/32"; tag = "..."; model_config = "tiny.json" (an open_clip config file)

    [id]
    path = "imagenet/val"             # any image set; fi_ood/fi_ambiguous split an ImageNet val folder

    [ood]
    NINCO = "ninco"                   # name = folder or list, or {path, layout, image_root}

    [vocabularies]
    gpt = "vocabs/gpt.json"           # a vocabulary file
    wordnet = { builder = "wordnet", sizes = [1000, 5000, 10000] }   # built per model: wordnet@1000, ...
    # builder options: percentile, preset, ratio, synonym_filter, pool (rank only n candidates spread
    # over the preset: quick dry runs)

    [[methods]]
    name = "neglabel"
    params = { groups = 100 }

Paths are relative to the file. Every problem is one line naming the key (:class:`InputError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from negvocab.errors import InputError
from negvocab.grid.resources import Resources, parse_resources
from negvocab.scoring.methods import NEEDS_NEGATIVES, canonical_method, check_evaluation, check_params
from negvocab.scoring.metrics import check_convention
from negvocab.vlm.loading import check_weights

__all__ = ["GridConfig", "ImageSpec", "MethodSpec", "ModelSpec", "VocabSpec", "load_config", "load_grid", "spec_digest"]

BUILDERS = ("wordnet",)


def spec_digest(doc: Any) -> str:
    """SHA-256 of a JSON document (sorted keys): the identity of a spec."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class ModelSpec:
    """One model of the grid: open_clip name, weights and precision."""

    name: str
    pretrained: str | None = None
    random_weights: bool = False
    precision: str | None = None
    tag: str | None = None
    model_config: str | None = None
    seed: int = 0
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name

    def doc(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "label"}


@dataclass(frozen=True)
class ImageSpec:
    """One image set: a folder or list (``path``, ``layout``, ``image_root``), or the OOD/ID part of
    a Fi-ImageNet-1k split of an ImageNet val folder (``fi_ood``, ``fi_ambiguous``, ``fi_part``)."""

    name: str
    path: str
    layout: str = "auto"
    image_root: str | None = None
    fi_ood: str | None = None
    fi_ambiguous: str | None = None
    fi_part: str = ""

    def doc(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VocabSpec:
    """A vocabulary: a file, or a builder run per model (``builder``, ``sizes``, its options)."""

    name: str
    file: str | None = None
    builder: str | None = None
    sizes: tuple[int, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()

    def names(self) -> list[str]:
        """The grid's vocabulary names: the name itself, or ``name@M`` per size."""
        return [f"{self.name}@{m}" for m in self.sizes] if self.sizes else [self.name]


@dataclass(frozen=True)
class MethodSpec:
    """A scoring method and its parameters (those of :func:`negvocab.score`)."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or self.name


@dataclass
class GridConfig:
    """A parsed grid file; see the module docstring."""

    models: list[ModelSpec]
    id_set: ImageSpec
    ood_sets: list[ImageSpec]
    vocabularies: list[VocabSpec]
    methods: list[MethodSpec]
    conventions: list[str] = field(default_factory=lambda: ["paper"])
    templates: str = "paper8"
    id_classes: str = "imagenet1k"
    tpr: float = 0.95
    n_boot: int = 1000
    device: str = "auto"
    cache_dir: str | None = None
    batch_size: int | None = None
    ray_num_gpus: float | None = None
    ray_data_min_images: int | None = None
    resources: Resources = field(default_factory=Resources)  # [resources]: negvocab.grid.resources
    deterministic: bool = False  # [grid] deterministic / --deterministic: negvocab.grid.units
    base: str = "."
    source: str = ""

    def path(self, value: str) -> str:
        """``value`` relative to the grid file's folder (absolute paths unchanged)."""
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else Path(self.base) / p)


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _image(name: str, value: Any, where: str) -> ImageSpec:
    if isinstance(value, str):
        return ImageSpec(name=name, path=value)
    if not isinstance(value, Mapping) or "path" not in value:
        raise InputError(f"{where} must be a path or a table with path = ... (and layout, image_root)")
    unknown = set(value) - {"path", "layout", "image_root", "fi_ood", "fi_ambiguous"}
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    return ImageSpec(
        name=name,
        path=_str(value["path"], f"{where}.path"),
        layout=str(value.get("layout", "auto")),
        image_root=value.get("image_root"),
        fi_ood=value.get("fi_ood"),
        fi_ambiguous=value.get("fi_ambiguous"),
    )


def _sizes(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in value):
        raise InputError(f"{where} must be a list of positive integers, e.g. [1000, 5000]")
    return tuple(sorted(set(value)))


def _vocab(name: str, value: Any, where: str) -> VocabSpec:
    if isinstance(value, str):
        return VocabSpec(name=name, file=value)
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a file path or a builder table {{builder = 'wordnet', sizes = [...]}}")
    if "file" in value:
        sizes = _sizes(value["sizes"], f"{where}.sizes") if "sizes" in value else ()
        return VocabSpec(name=name, file=_str(value["file"], f"{where}.file"), sizes=sizes)
    builder = value.get("builder")
    if builder not in BUILDERS:
        raise InputError(f"{where}.builder must be one of {', '.join(BUILDERS)} (or give file = ...), got {builder!r}")
    sizes = _sizes(value["sizes"], f"{where}.sizes") if "sizes" in value else ()
    options = tuple(sorted((k, v) for k, v in value.items() if k not in ("builder", "sizes")))
    allowed = {"percentile", "preset", "ratio", "pool", "synonym_filter"}
    bad = [k for k, _ in options if k not in allowed]
    if bad:
        raise InputError(f"{where}: unknown builder option {bad[0]!r}; known: {', '.join(sorted(allowed))}")
    return VocabSpec(name=name, builder=builder, sizes=sizes, options=options)


def _model(value: Any, where: str) -> ModelSpec:
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a table with name = ...")
    allowed = {"name", "pretrained", "random_weights", "precision", "tag", "model_config", "seed", "label"}
    unknown = set(value) - allowed
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(allowed))}")
    spec = ModelSpec(
        name=_str(value.get("name"), f"{where}.name"),
        pretrained=value.get("pretrained"),
        random_weights=bool(value.get("random_weights", False)),
        precision=value.get("precision"),
        tag=value.get("tag"),
        model_config=value.get("model_config"),
        seed=int(value.get("seed", 0)),
        label=str(value.get("label", "")),
    )
    check_weights(spec.name, spec.pretrained, spec.random_weights, cli=False, where=where)
    return spec


def _method(value: Any, where: str) -> MethodSpec:
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, Mapping) or "name" not in value:
        raise InputError(f"{where} must be a method name or a table with name = ... and params = {{...}}")
    params = value.get("params", {})
    if not isinstance(params, Mapping):
        raise InputError(f"{where}.params must be a table, e.g. {{groups = 100}}")
    name = canonical_method(value["name"])
    try:
        check_params(name, params)  # the registry's parameters and limits, before any model is loaded
    except InputError as e:
        raise InputError(f"{where}.params: {e}") from None
    return MethodSpec(name=name, params=tuple(sorted(params.items())), label=str(value.get("label", "")))


def parse_config(doc: Mapping[str, Any], *, base: str = ".", source: str = "", random_weights: bool = False) -> GridConfig:
    """A :class:`GridConfig` from a TOML document (a dict). ``random_weights`` replaces every model's
    weights by random ones (a dry run, as ``negvocab grid run --random-weights``)."""
    unknown = set(doc) - {"grid", "models", "id", "ood", "vocabularies", "methods", "resources"}
    if unknown:
        raise InputError(f"{source or 'grid'}: unknown section(s) {', '.join(sorted(unknown))}")
    g = doc.get("grid", {})
    models = doc.get("models")
    if not isinstance(models, list) or not models:
        raise InputError(f"{source or 'grid'}: no [[models]]; add at least one")
    if random_weights:
        models = [{**{k: v for k, v in m.items() if k != "pretrained"}, "random_weights": True} for m in models]
    specs = [_model(m, f"models[{i}]") for i, m in enumerate(models)]
    if len({m.display for m in specs}) != len(specs):
        raise InputError("two [[models]] have the same name; give each a distinct label = ...")
    if "id" not in doc:
        raise InputError(f"{source or 'grid'}: no [id] image set")
    id_spec = _image("ID", doc["id"], "id")
    ood = doc.get("ood", {})
    if not isinstance(ood, Mapping):
        raise InputError("[ood] must be a table name = path")
    ood_sets = [_image(str(k), v, f"ood.{k}") for k, v in ood.items()]
    if id_spec.fi_ood:
        ood_sets.insert(0, ImageSpec(**{**id_spec.doc(), "name": "Fi-ImageNet-1k", "fi_part": "ood"}))
        id_spec = ImageSpec(**{**id_spec.doc(), "fi_part": "id"})
    if not ood_sets:
        raise InputError(f"{source or 'grid'}: no OOD set; add [ood] name = path (or fi_ood in [id])")
    if "mean" in {s.name for s in ood_sets}:
        raise InputError("an OOD set may not be named 'mean' (the mean over sets is a row of that name)")
    vocabs = [_vocab(str(k), v, f"vocabularies.{k}") for k, v in doc.get("vocabularies", {}).items()]
    methods = [_method(m, f"methods[{i}]") for i, m in enumerate(doc.get("methods", [{"name": "neglabel"}]))]

    if not vocabs and any(m.name in NEEDS_NEGATIVES for m in methods):
        raise InputError("methods that use negatives need [vocabularies]")
    conventions = g.get("conventions", ["paper"])
    conventions = [check_convention(c) for c in ([conventions] if isinstance(conventions, str) else conventions)]
    try:
        check_evaluation(tpr=g.get("tpr", 0.95), n_boot=g.get("n_boot", 1000))
    except InputError as e:
        raise InputError(f"[grid] {e}") from None
    cfg = GridConfig(
        models=specs,
        id_set=id_spec,
        ood_sets=ood_sets,
        vocabularies=vocabs,
        methods=methods,
        conventions=conventions,
        templates=str(g.get("templates", "paper8")),
        id_classes=str(g.get("id_classes", "imagenet1k")),
        tpr=float(g.get("tpr", 0.95)),
        n_boot=int(g.get("n_boot", 1000)),
        device=str(g.get("device", "auto")),
        cache_dir=g.get("cache_dir"),
        batch_size=g.get("batch_size"),
        ray_num_gpus=g.get("ray_num_gpus"),
        ray_data_min_images=g.get("ray_data_min_images"),
        resources=parse_resources(doc.get("resources", {})),
        deterministic=bool(g.get("deterministic", False)),
        base=base,
        source=source,
    )
    known = {"templates", "id_classes", "conventions", "tpr", "n_boot", "device", "cache_dir", "batch_size", "ray_num_gpus", "ray_data_min_images"}
    known |= {"deterministic"}
    unknown = set(g) - known
    if unknown:
        raise InputError(f"[grid]: unknown key(s) {', '.join(sorted(unknown))}")
    return cfg


def load_config(path: str | os.PathLike[str], *, random_weights: bool = False) -> GridConfig:
    """Read and check a grid TOML file (paths in it are relative to its folder)."""
    p = Path(path).expanduser()
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise InputError(f"{p}: no such grid file") from e
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{p}: not valid TOML ({e})") from e
    return parse_config(doc, base=str(p.absolute().parent), source=str(p), random_weights=random_weights)


#: the public name (``negvocab.load_grid``)
load_grid = load_config
