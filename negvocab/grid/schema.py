"""The grid file's typed schema (pydantic tables: each field's description is what is allowed) and
its one-line errors naming the file, the key, the value and what is allowed (:mod:`negvocab.grid.config`
turns a checked document into the grid's specs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    ValidationError,
    field_validator,
)

from negvocab.core.errors import InputError
from negvocab.grid.resources import ResourcesTable
from negvocab.scoring.methods import EVALUATION_PARAMS
from negvocab.scoring.metrics import CONVENTIONS


# ----------------------------------------------------------------------------------------------
# the schema: each field's description is what is allowed, quoted in the one-line error
# ----------------------------------------------------------------------------------------------
def _registry(name: str) -> str:
    p = EVALUATION_PARAMS[name]
    return f"{'an integer' if p.kind is int else 'a number'} {p.limit()}"


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, protected_namespaces=())


_PATH = "a non-empty path (relative to the grid file)"


class GridTable(_Table):
    """``[grid]``."""

    templates: str = Field(
        "paper8",
        min_length=1,
        pattern=r"\S",
        description="a template preset (paper8, openai80, neglabel, single), a template with {} or a file",
    )
    id_classes: str = Field(
        "imagenet1k",
        min_length=1,
        pattern=r"\S",
        description="imagenet1k, a file of wnids, class names or NAME<TAB>WNID lines, or a benchmark's name",
    )
    map_classes: bool = Field(True, description="true or false: map id_classes' class names to WordNet synsets")
    hints: list[str] = Field([], description='a list of hypernyms the ID classes live under, e.g. ["bird"]')
    conventions: list[str] | str = Field(
        ["paper"], description=f"a non-empty list of FPR conventions, from {', '.join(CONVENTIONS)}"
    )
    tpr: float = Field(0.95, description=_registry("tpr"))
    n_boot: int = Field(1000, description=_registry("n_boot"))
    device: str = Field("auto", min_length=1, description="auto, cpu, cuda or cuda:N")
    cache_dir: str | None = Field(None, min_length=1, pattern=r"\S", description=f"{_PATH}: the embedding cache folder")
    batch_size: int | None = Field(None, gt=0, description="a positive integer")
    ray_num_gpus: float | None = Field(None, ge=0, allow_inf_nan=False, description="a number >= 0")
    ray_data_min_images: int | None = Field(None, gt=0, description="a positive integer")
    deterministic: bool = Field(
        False, description="true or false: fp32, deterministic kernels, fixed shards (negvocab.grid.units)"
    )

    @field_validator("conventions")
    @classmethod
    def _conventions(cls, v: list[str] | str) -> list[str]:
        v = [v] if isinstance(v, str) else v
        if not v or any(c not in CONVENTIONS for c in v):
            raise ValueError("bad conventions")
        return v

    @field_validator("tpr", "n_boot")
    @classmethod
    def _evaluation(cls, v: Any, info: Any) -> Any:
        try:
            return EVALUATION_PARAMS[info.field_name].validate(v)
        except InputError as e:
            raise ValueError(str(e)) from None


class ModelTable(_Table):
    """``[[models]]``."""

    name: str = Field(min_length=1, pattern=r"\S", description="an open_clip model name, e.g. ViT-B-32")
    pretrained: str | None = Field(None, min_length=1, description="a pretrained tag, a checkpoint file or a folder")
    random_weights: bool = Field(False, description="true or false")
    precision: Literal["fp32", "fp16", "bf16"] | None = Field(None, description="fp32, fp16 or bf16")
    tag: str | None = Field(None, min_length=1, description="a hub tag")
    model_config_: str | None = Field(
        None, alias="model_config", min_length=1, description=f"{_PATH}: an open_clip config file"
    )
    seed: int = Field(0, ge=0, description="an integer >= 0 (the seed of random weights)")
    label: str = Field("", description="a display name")


class ImageTable(_Table):
    """An image set given as a table."""

    path: str = Field(min_length=1, pattern=r"\S", description=f"{_PATH}: an image folder or list")
    layout: str = Field("auto", min_length=1, description="an image-set layout (auto, folder, list, ...)")
    image_root: str | None = Field(None, min_length=1, pattern=r"\S", description=_PATH)
    fi_ood: str | None = Field(None, min_length=1, pattern=r"\S", description=f"{_PATH}: the Fi-ImageNet OOD list")
    fi_ambiguous: str | None = Field(
        None, min_length=1, pattern=r"\S", description=f"{_PATH}: the Fi-ImageNet ambiguous list"
    )


class BenchmarkTable(_Table):
    """A registered benchmark given as a table in ``[ood]``: every set of it under its data root."""

    benchmark: str = Field(min_length=1, pattern=r"\S", description="a registered benchmark (negvocab benchmarks)")
    root: str = Field(min_length=1, pattern=r"\S", description=f"{_PATH}: the benchmark's data root")


_SIZES = "a non-empty list of positive integers, e.g. [1000, 5000]"


class VocabFileTable(_Table):
    """A vocabulary file, optionally cut to several sizes."""

    file: str = Field(min_length=1, pattern=r"\S", description=f"{_PATH}: a vocabulary file")
    sizes: list[int] | None = Field(None, min_length=1, description=_SIZES)

    @field_validator("sizes")
    @classmethod
    def _positive(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(x < 1 for x in v):
            raise ValueError(_SIZES)
        return v


class VocabBuilderTable(VocabFileTable):
    """A vocabulary built per model by a registered builder; its options (the other keys) are checked
    by the builder's options model (:meth:`~negvocab.builders.registry.Builder.with_paths` resolves paths)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True, protected_namespaces=())
    file: None = Field(None, description="no file with a builder")  # type: ignore[assignment]
    builder: str = Field(min_length=1, pattern=r"\S", description="a registered builder (or give file = ...)")


class MethodTable(_Table):
    """``[[methods]]``: a method and its parameters (checked against the method registry)."""

    name: str = Field(
        min_length=1, description="a method name of the registry (negvocab.list_methods(), plug-ins included)"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="a table of the method's parameters, e.g. {groups = 100}"
    )
    label: str = Field("", description="a display name")
    stream: dict[str, Any] = Field(
        default_factory=dict,
        description="a test-time (stream) method's stream: {order, stream_batch, seed, id_ood_ratio} "
        "(defaults shuffled, 256, 0, every image); seeds = [0, 1, 2] instead of seed: one stream per seed "
        "(labels NAME#s0, ...) and the spread over them",
    )


def _kind(value: Any) -> str | None:
    """The union member a value is meant as: ``text`` (a path or name), ``builder``, ``table``."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "builder-table" if "builder" in value else "benchmark-table" if "benchmark" in value else "table"
    return None


Text = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
ImageValue = Annotated[Annotated[Text, Tag("text")] | Annotated[ImageTable, Tag("table")], Discriminator(_kind)]
IdValue = Annotated[
    Annotated[Text, Tag("text")]
    | Annotated[ImageTable, Tag("table")]
    | Annotated[BenchmarkTable, Tag("benchmark-table")],
    Discriminator(_kind),
]
OodValue = Annotated[
    Annotated[Text, Tag("text")]
    | Annotated[ImageTable, Tag("table")]
    | Annotated[BenchmarkTable, Tag("benchmark-table")],
    Discriminator(_kind),
]
VocabValue = Annotated[
    Annotated[Text, Tag("text")]
    | Annotated[VocabFileTable, Tag("table")]
    | Annotated[VocabBuilderTable, Tag("builder-table")],
    Discriminator(_kind),
]
MethodValue = Annotated[Annotated[Text, Tag("text")] | Annotated[MethodTable, Tag("table")], Discriminator(_kind)]
_TAGS: dict[str, dict[str, type[BaseModel]]] = {
    "id": {"table": ImageTable, "benchmark-table": BenchmarkTable},
    "ood": {"table": ImageTable, "benchmark-table": BenchmarkTable},
    "vocabularies": {"table": VocabFileTable, "builder-table": VocabBuilderTable},
    "methods": {"table": MethodTable},
}


class GridDocument(_Table):
    """The whole file."""

    grid: GridTable = Field(default_factory=GridTable, description="a [grid] table")
    models: list[ModelTable] = Field(min_length=1, description="at least one [[models]] table with name = ...")
    id: IdValue = Field(description="a path, a table with path = ..., or {benchmark, root} (its ID set)")
    ood: dict[str, OodValue] = Field(
        default_factory=dict,
        description="a table of name = path, name = {path = ...}, BENCHMARK = root or name = {benchmark, root}",
    )
    vocabularies: dict[str, VocabValue] = Field(
        default_factory=dict, description="a table of name = file or name = {builder = 'wordnet', sizes = [...]}"
    )
    methods: list[MethodValue] = Field(
        default_factory=lambda: list[MethodValue](["neglabel"]),
        description="a list of [[methods]] tables with name = ...",
    )
    resources: ResourcesTable = Field(
        default_factory=ResourcesTable, description="a [resources] table (negvocab.grid.resources)"
    )
    plugins: list[Text] = Field(
        default_factory=list, description="a list of plug-in modules to import first, e.g. ['mypkg.negvocab_plugin']"
    )


# ----------------------------------------------------------------------------------------------
# one line per problem
# ----------------------------------------------------------------------------------------------
def show(value: Any) -> str:
    """A value as an error line quotes it (at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _table_in(annotation: Any) -> type[BaseModel] | None:
    """The schema table a field holds (directly, or in a list or dict)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _table_in(arg)
        if found is not None:
            return found
    return None


def _walk(loc: tuple[Any, ...]) -> tuple[str, type[BaseModel], str, type[BaseModel]]:
    """The key an error location names (``ood.a.path``), the schema table and field it ends in, and
    the innermost table reached (where an unknown key was found)."""
    owner: type[BaseModel] = GridDocument
    key, name, section = "", "", ""
    model: type[BaseModel] = GridDocument
    for part in loc:
        if isinstance(part, int):
            key += f"[{part}]"
            continue
        part = str(part)
        if (
            part in ("text", "table", "builder-table", "benchmark-table") and section in _TAGS
        ):  # a union member, not a key
            model = _TAGS[section].get(part, model)
            continue
        key += ("." if key else "") + part
        field_name = "model_config_" if part == "model_config" else part
        if field_name in model.model_fields:
            owner, name = model, field_name
            section = section or part
            model = _table_in(model.model_fields[field_name].annotation) or model
    return key, owner, name, model


def _error_line(source: str, err: Mapping[str, Any]) -> str:
    """One line naming the file, the key, the value and what is allowed."""
    key, owner, name, model = _walk(tuple(err["loc"]))
    info = owner.model_fields.get(name)
    allowed = (info.description if info is not None else "") or "a valid value"
    if err["type"] == "extra_forbidden":
        known = ", ".join(f.alias or n for n, f in model.model_fields.items())
        return f"{source}: {key}: unknown key; known: {known or 'none yet'}"
    if err["type"] == "missing":
        return f"{source}: {key} is missing: give {allowed}"
    return f"{source}: {key} = {show(err.get('input'))}: must be {allowed}"


def validate_document(doc: Any, source: str) -> GridDocument:
    """The grid document checked against the schema, or one :class:`InputError` line."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{source}: the document must be a TOML table")
    try:
        return GridDocument.model_validate(dict(doc))
    except ValidationError as e:
        raise InputError(_error_line(source, e.errors()[0])) from None
