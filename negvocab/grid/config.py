"""The experiment-grid file: models x vocabularies x OOD sets x methods x conventions, in TOML.

::

    plugins = ["mypkg.negvocab_plugin"]   # modules that register methods (negvocab.core.plugins); optional
    [grid]
    templates = "paper8"            # prompt templates of every text embedding
    id_classes = "imagenet1k"       # or a class file (wnids, names, NAME<TAB>WNID), or a benchmark's name
    # map_classes = false           # class names mapped to WordNet unless this (hints = ["bird"]: see
                                    # negvocab map-classes); the mapping is part of the cells' identity
    conventions = ["paper"]         # FPR conventions (paper, hendrycks, openood)
    tpr = 0.95
    n_boot = 1000                   # bootstrap resamples of the CIs (0: none)
    device = "auto"
    cache_dir = "cache"             # embedding cache (relative to this file); on a cluster: a shared folder
    # ray_num_gpus = 1              # older spelling of [resources] num_gpus
    # ray_data_min_images = 20000   # no longer used (every set runs as shards); ignored with a warning

    [resources]                     # what each work unit asks for: negvocab.grid.resources
    num_gpus = 1                    # plus num_cpus, memory, workers, shard_images; [resources.image|text|score]


    [[models]]
    name = "ViT-B-32"
    pretrained = "laion2b_s34b_b79k"   # a tag, a checkpoint file or a folder; or random_weights = true
    precision = "fp32"
    # label = "CLIP B/32"; tag = "..."; model_config = "tiny.json" (an open_clip config file)

    [id]
    path = "imagenet/val"             # any image set; fi_ood/fi_ambiguous split an ImageNet val folder
    # or a registered benchmark's ID set: [id] benchmark = "openood-cifar10", root = "/data/openood"
    # (its class list is the grid's id_classes unless [grid] names one; no [ood]: the benchmark's sets)

    [ood]
    NINCO = "ninco"                   # name = folder or list, or {path, layout, image_root}
    openood = "/data/openood"         # a registered benchmark = its data root (or {benchmark, root}):
                                      # all its sets, each in its group (near-ood/far-ood rows)

    [vocabularies]
    gpt = "vocabs/gpt.json"           # a vocabulary file
    wordnet = { builder = "wordnet", sizes = [1000, 5000, 10000] }   # built per model: wordnet@1000, ...
    # builder: any registered builder (negvocab.list_builders(); a plug-in's too), with the options of
    # its options model (wordnet: quantile, preset, ratio, synonym_filter, candidates, n_candidates:
    # rank only n candidates spread over the preset, for quick dry runs); [grid] gives templates,
    # id_classes and batch_size; sizes only for builders whose labels are ranked

    [[methods]]
    name = "neglabel"
    params = { groups = 100 }

Paths are relative to the file. The document is checked against a typed schema (pydantic) and the
method registry (:mod:`negvocab.scoring.methods`: tpr, n_boot, method parameters) before any model
loads; every problem is one line naming the file, the key, the value and what is allowed
(:class:`InputError`).
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

from pydantic import (
    ValidationError,
)

from negvocab.builders.registry import get_builder, list_builders, option_error
from negvocab.core.deprecation import rename_keys
from negvocab.core.errors import InputError, NegvocabError
from negvocab.core.plugins import load_plugins
from negvocab.core.textfiles import read_text
from negvocab.data.benchmarks import REGISTRY, RESERVED_SET_NAMES, Benchmark, classes_file, get_benchmark
from negvocab.evaluation.stream_inputs import unmade_inputs
from negvocab.grid.resources import Resources, parse_resources
from negvocab.grid.schema import (
    BenchmarkTable,
    ImageTable,
    MethodTable,
    ModelTable,
    VocabBuilderTable,
    VocabFileTable,
    show,
    validate_document,
)
from negvocab.scoring.methods import batch_method, check_params, get_method, needs_negatives
from negvocab.scoring.stream import stream_settings
from negvocab.vlm.loading import check_weights, resolve_device, resolve_precision
from negvocab.vlm.templates import resolve_templates

__all__ = [
    "GridConfig",
    "ImageSpec",
    "MethodSpec",
    "ModelSpec",
    "VocabSpec",
    "load_config",
    "load_grid",
    "parse_config",
    "spec_digest",
]

#: builder options the grid gives itself ([grid] templates, id_classes, batch_size), or that have no
#: meaning in a grid (progress; size: a grid cuts ranked builders with sizes = [...])
GRID_GIVES = ("templates", "id_classes", "batch_size", "progress", "size")


def spec_digest(doc: Any) -> str:
    """SHA-256 of a JSON document (sorted keys): the identity of a spec."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


# ----------------------------------------------------------------------------------------------
# the parsed grid (what the engines read)
# ----------------------------------------------------------------------------------------------
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
    """One image set: a folder or list (``path``, ``layout``, ``image_root``), a set of a registered
    benchmark under the data root ``path`` (``benchmark``, its ``group`` there), or the OOD/ID part
    of a Fi-ImageNet-1k split of an ImageNet val folder (``fi_ood``, ``fi_ambiguous``, ``fi_part``)."""

    name: str
    path: str
    layout: str = "auto"
    image_root: str | None = None
    fi_ood: str | None = None
    fi_ambiguous: str | None = None
    fi_part: str = ""
    benchmark: str | None = None
    group: str | None = None
    #: the ID set of ``benchmark`` (with its covariate-shifted ID sets), not one of its OOD sets
    benchmark_id: bool = False

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
    #: a test-time (stream) method's stream settings (order, stream_batch, seed, id_ood_ratio); empty for batch methods
    stream: tuple[tuple[str, Any], ...] = ()

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
    map_classes: bool = True  # [grid] map_classes: a class file's names mapped to WordNet synsets
    hints: tuple[str, ...] = ()  # [grid] hints of the mapping
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
    #: plug-in modules the file names (``plugins = [...]``): imported before it is checked and by every worker
    plugins: tuple[str, ...] = ()

    def path(self, value: str) -> str:
        """``value`` relative to the grid file's folder (absolute paths unchanged)."""
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else Path(self.base) / p)


# ----------------------------------------------------------------------------------------------
# from the schema to the specs
# ----------------------------------------------------------------------------------------------
def _image(name: str, value: str | ImageTable) -> ImageSpec:
    if isinstance(value, str):
        value = ImageTable.model_validate({"path": value})
    return ImageSpec(
        name=name,
        path=value.path,
        layout=value.layout,
        image_root=value.image_root,
        fi_ood=value.fi_ood,
        fi_ambiguous=value.fi_ambiguous,
    )


def _id(value: str | ImageTable | BenchmarkTable, source: str) -> tuple[ImageSpec, Benchmark | None]:
    """The spec of ``[id]``: an image set, or a registered benchmark's ID set (and that benchmark)."""
    if not isinstance(value, BenchmarkTable):
        return _image("ID", value), None
    try:
        bench = get_benchmark(value.benchmark)
    except InputError as e:
        raise InputError(f"{source}: id.benchmark: {e}") from None
    if bench.kind != "sets" or bench.id is None:
        what = (
            "carves the ID set from its folder; give [id] path and fi_ood" if bench.kind != "sets" else "has no ID set"
        )
        raise InputError(f"{source}: id.benchmark = {bench.name!r}: it {what}")
    return ImageSpec(name="ID", path=value.root, benchmark=bench.name, benchmark_id=True), bench


def _benchmark_classes(bench: Benchmark) -> str:
    """The grid's ``id_classes`` for a benchmark's ID set: its shipped class list (or ImageNet-1k)."""
    return str(classes_file(bench.classes)) if bench.classes else "imagenet1k"


def _ood(name: str, value: str | ImageTable | BenchmarkTable, source: str) -> list[ImageSpec]:
    """The specs of one ``[ood]`` entry: a set, or every set of a registered benchmark (a key that
    names one, as ``--ood BENCHMARK=ROOT``; or a ``{benchmark, root}`` table), each with its group."""
    if isinstance(value, ImageTable):
        return [_image(name, value)]
    if isinstance(value, str) and name not in REGISTRY:
        return [_image(name, value)]
    bench_name, root = (name, value) if isinstance(value, str) else (value.benchmark, value.root)
    try:
        bench = get_benchmark(bench_name)
    except InputError as e:
        raise InputError(f"{source}: ood.{name}.benchmark: {e}") from None
    if bench.kind != "sets":
        raise InputError(
            f"{source}: ood.{name}: {bench.name} carves the ID set from its folder; give it in [id] (fi_ood = ...)"
        )
    return [ImageSpec(name=s.name, path=root, benchmark=bench.name, group=s.group) for s in bench.sets]


def _vocab(name: str, value: str | VocabFileTable | VocabBuilderTable, source: str, base: str = ".") -> VocabSpec:
    if isinstance(value, str):
        return VocabSpec(name=name, file=value)
    sizes = tuple(sorted(set(value.sizes or ())))
    if isinstance(value, VocabBuilderTable):
        return _builder_vocab(name, value, sizes, source, base)
    return VocabSpec(name=name, file=value.file, sizes=sizes)


def _builder_vocab(name: str, value: VocabBuilderTable, sizes: tuple[int, ...], source: str, base: str) -> VocabSpec:
    """The spec of a builder table: the builder registered, runnable in a grid, its options valid."""
    key = f"{source}: vocabularies.{name}"
    try:
        builder = get_builder(value.builder)
    except InputError:
        raise InputError(
            f"{key}.builder = {show(value.builder)}: must be one of {', '.join(list_builders())} (or give file = ...)"
        ) from None
    if "llm" in builder.needs:
        raise InputError(
            f"{key}.builder = {show(value.builder)}: needs an LLM endpoint, which a grid does not give; build it "
            f"with 'negvocab build {builder.name}' and name the file ({name} = \"{builder.name}.json\")"
        )
    if sizes and not builder.ranked:
        raise InputError(
            f"{key}.sizes: builder {builder.name!r} does not rank its labels, so its first M are no vocabulary "
            "of size M; leave sizes out"
        )
    options = rename_keys(dict(value.model_extra or {}), getattr(builder.options, "renamed", {}), key, stacklevel=2)
    known = [f for f in builder.options.model_fields if f not in GRID_GIVES]
    for k in options:
        if k not in known:
            raise InputError(f"{key}.{k}: unknown key; known: {', '.join(['builder', 'sizes', *known])}")
    try:
        builder.options.model_validate(builder.with_paths(options, base), strict=True)
    except ValidationError as e:
        where, table = f"{source}: ", f"vocabularies.{name}"
        line = option_error(builder, e.errors()[0], key=lambda n: f"{table}.{n}", where=where, table=f"{table}: ")
        raise InputError(line) from None
    return VocabSpec(name=name, builder=builder.name, sizes=sizes, options=tuple(sorted(options.items())))


def _model(value: ModelTable, i: int, source: str, random_weights: bool) -> ModelSpec:
    pretrained = None if random_weights else value.pretrained
    spec = ModelSpec(
        name=value.name,
        pretrained=pretrained,
        random_weights=random_weights or value.random_weights,
        precision=value.precision,
        tag=value.tag,
        model_config=value.model_config_,
        seed=value.seed,
        label=value.label,
    )
    try:
        check_weights(spec.name, spec.pretrained, spec.random_weights, cli=False, where=f"models[{i}]")
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
    return spec


def _methods(value: str | MethodTable, i: int, source: str) -> list[MethodSpec]:
    """The specs of one ``[[methods]]`` entry: one, or a test-time method's one per stream seed
    (``stream = {seeds = [0, 1, 2]}``: labels ``NAME#s0``, ...; the tables add their spread)."""
    table = MethodTable.model_validate({"name": value}) if isinstance(value, str) else value
    seeds = table.stream.get("seeds")
    if seeds is None:
        return [_method(table, i, source)]
    where = f"{source}: methods[{i}].stream"
    ok = isinstance(seeds, list) and len(seeds) >= 2 and len(set(seeds)) == len(seeds)
    if not ok or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds):
        raise InputError(f"{where}.seeds = {show(seeds)}: must be a list of two or more distinct integers >= 0")
    if "seed" in table.stream:
        raise InputError(f"{where}: give seed (one stream) or seeds (several), not both")
    base = table.label or table.name
    rest = {k: v for k, v in table.stream.items() if k != "seeds"}
    return [
        _method(table.model_copy(update={"stream": {**rest, "seed": x}, "label": f"{base}#s{x}"}), i, source)
        for x in seeds
    ]


def _method(value: str | MethodTable, i: int, source: str) -> MethodSpec:
    table = MethodTable.model_validate({"name": value}) if isinstance(value, str) else value
    where = f"{source}: methods[{i}]"
    try:
        found = get_method(table.name)
        name = found.name if found.kind == "stream" else batch_method(table.name, "a grid").name
    except InputError as e:
        raise InputError(f"{where}.name: {e}") from None
    try:
        check_params(name, table.params)  # the registry's parameters and limits, before any model is loaded
    except InputError as e:
        raise InputError(f"{where}.params: {e}") from None
    stream: tuple[tuple[str, Any], ...] = ()
    if found.kind == "stream":
        try:
            stream = tuple(sorted(stream_settings(table.stream).items()))
        except InputError as e:
            raise InputError(f"{where}.stream: {e}") from None
        if lacking := unmade_inputs(name):  # a grid makes set-up inputs with the model (TANL's noise images) only
            raise InputError(f"{where}.name: {name} needs set-up input(s) a grid cannot make: {', '.join(lacking)}")
    elif table.stream:
        raise InputError(f"{where}.stream: {name} is a batch method; a stream table is for test-time methods")
    return MethodSpec(name=name, params=tuple(sorted(table.params.items())), label=table.label, stream=stream)


def _check_runtime(cfg: GridConfig) -> None:
    """Templates, device and precisions: what would otherwise fail in every cell after the model loads."""
    src = cfg.source or "grid"
    if cfg.hints and (cfg.id_classes == "imagenet1k" or not cfg.map_classes):
        why = 'id_classes = "imagenet1k"' if cfg.id_classes == "imagenet1k" else "map_classes = false"
        raise InputError(f"{src}: grid.hints: given with {why}; hints go with a file of class names to map")
    try:
        templates = cfg.path(cfg.templates) if Path(cfg.path(cfg.templates)).exists() else cfg.templates
        resolve_templates(templates)
    except InputError as e:
        raise InputError(f"{src}: grid.templates = {show(cfg.templates)}: {e}") from None
    try:
        device = resolve_device(cfg.device)
        for i, m in enumerate(cfg.models):
            try:
                resolve_precision(m.precision, device)
            except InputError as e:
                raise InputError(f"{src}: models[{i}].precision = {show(m.precision)}: {e}") from None
    except NegvocabError as e:
        if str(e).startswith(src):
            raise
        raise InputError(f"{src}: grid.device = {show(cfg.device)}: {e}") from None


def parse_config(
    doc: Mapping[str, Any], *, base: str = ".", source: str = "", random_weights: bool = False
) -> GridConfig:
    """A :class:`GridConfig` from a TOML document (a dict). ``random_weights`` replaces every model's
    weights by random ones (a dry run, as ``negvocab grid run --random-weights``)."""
    src = source or "grid"
    d = validate_document(doc, src)
    try:
        load_plugins(d.plugins)  # before the methods are checked: a plug-in's method is one of them
    except InputError as e:
        raise InputError(f"{src}: plugins: {e}") from None
    specs = [_model(m, i, src, random_weights) for i, m in enumerate(d.models)]
    if len({m.display for m in specs}) != len(specs):
        raise InputError(f"{src}: two [[models]] have the same name; give each a distinct label = ...")
    id_spec, id_bench = _id(d.id, src)
    ood_sets = [spec for k, v in d.ood.items() for spec in _ood(str(k), v, src)]
    if id_bench is not None and not d.ood:  # the benchmark's own OOD sets
        ood_sets = _ood(id_bench.name, id_spec.path, src)
    if id_spec.fi_ood:
        fi = get_benchmark("fi-imagenet-1k").group_of("fi-imagenet-1k")
        ood_sets.insert(0, ImageSpec(**{**id_spec.doc(), "name": "Fi-ImageNet-1k", "fi_part": "ood", "group": fi}))
        id_spec = ImageSpec(**{**id_spec.doc(), "fi_part": "id"})
    if not ood_sets:
        raise InputError(f"{src}: no OOD set; add [ood] name = path (or fi_ood in [id])")
    names = [s.name for s in ood_sets]
    for name in names:
        if name in RESERVED_SET_NAMES:
            raise InputError(
                f"{src}: ood.{name}: an OOD set may not be named {name!r} (a row of that name averages OOD sets)"
            )
        if names.count(name) > 1:
            raise InputError(f"{src}: ood: two OOD sets are named {name!r} (a benchmark's set and another entry?)")
    vocabs = [_vocab(str(k), v, src, base) for k, v in d.vocabularies.items()]
    methods = [spec for i, m in enumerate(d.methods) for spec in _methods(m, i, src)]
    if not vocabs and any(needs_negatives(m.name) for m in methods):
        raise InputError(f"{src}: methods that use negatives need [vocabularies]")
    g = d.grid
    cfg = GridConfig(
        models=specs,
        id_set=id_spec,
        ood_sets=ood_sets,
        vocabularies=vocabs,
        methods=methods,
        conventions=list(g.conventions),
        templates=g.templates,
        id_classes=_benchmark_classes(id_bench)
        if id_bench and "id_classes" not in g.model_fields_set
        else g.id_classes,
        map_classes=g.map_classes,
        hints=tuple(g.hints),
        tpr=float(g.tpr),
        n_boot=g.n_boot,
        device=g.device,
        cache_dir=g.cache_dir,
        batch_size=g.batch_size,
        ray_num_gpus=g.ray_num_gpus,
        ray_data_min_images=g.ray_data_min_images,
        resources=parse_resources(d.resources),
        deterministic=g.deterministic,
        base=base,
        source=source,
        plugins=tuple(d.plugins),
    )
    _check_runtime(cfg)
    return cfg


def load_config(path: str | os.PathLike[str], *, random_weights: bool = False) -> GridConfig:
    """Read and check a grid TOML file (paths in it are relative to its folder)."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{p}: a folder, not a grid file; give the grid's TOML file")
    text = read_text(p, "grid file", " (a TOML file, UTF-8)")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{p}: not valid TOML ({e})") from e
    return parse_config(doc, base=str(p.absolute().parent), source=str(p), random_weights=random_weights)


#: the public name (``negvocab.load_grid``)
load_grid = load_config
