"""The built-in builders' registry entries: their options models, thin calls and texts counts.

Each options model lists what its builder takes beside the VLM, with the builder function's own
defaults; a field's description says what is allowed (the one-line errors end with it). The entries
are registered lazily by :mod:`negvocab.builders.registry` (this module is imported on first use).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, Field, InstanceOf, field_validator, model_validator

from negvocab.builders.csp import CSP_SUPERCLASSES, build_csp_vocabulary, csp_pool
from negvocab.builders.interneg import build_interneg_vocabulary
from negvocab.builders.llm import build_eoe_vocabulary, build_gpt_vocabulary
from negvocab.builders.mined import build_mined_vocabulary, mining_pool
from negvocab.builders.negrefine import build_negrefine_vocabulary, estimate_negrefine
from negvocab.builders.oracle import build_oracle_vocabulary, oracle_labels_from
from negvocab.builders.registry import Builder, BuilderOptions
from negvocab.builders.siblings import build_sibling_vocabulary
from negvocab.builders.wordnet import build_wordnet_vocabulary
from negvocab.core.provenance import file_sha256
from negvocab.data.images import ImageSet
from negvocab.labels.candidates import PRESETS, Candidate, sample_pool, wordnet_candidates
from negvocab.labels.imagenet import IdClasses, read_id_classes
from negvocab.llm.cost import CostEstimate
from negvocab.llm.settings import LLMSettings
from negvocab.vocab import Vocabulary, load_candidates
from negvocab.vocab.index import INDEX_KINDS

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM

__all__ = [
    "EOE",
    "GPT",
    "MINED",
    "NEGREFINE",
    "ORACLE",
    "SIBLINGS",
    "WORDNET",
    "EoeOptions",
    "GptOptions",
    "MinedOptions",
    "NegRefineOptions",
    "OracleOptions",
    "SiblingsOptions",
    "WordnetOptions",
    "build_wordnet",
    # CSP
    "CSP",
    "INTERNEG",
    "CspOptions",
    "InternegOptions",
    "build_csp",
    "build_interneg",
]

_TEMPLATES = (
    "a template preset (paper8, openai80, neglabel, single, csp, interneg), a template with {}, a file or a list"
)
_ID_CLASSES = "ID classes: a file with one class name (or wnid) a line, or an IdClasses (default: ImageNet-1k)"
_POSITIVE = "a positive integer"

# The fields several options models share, declared once (each model gives its own default).
_Templates = Annotated[str | list[str], Field(description=_TEMPLATES)]
_Quantile = Annotated[float, Field(gt=0, le=1, description="a quantile level in (0, 1]")]
_IdClassesFile = Annotated[InstanceOf[IdClasses] | Path | None, Field(description=_ID_CLASSES)]
_SynonymFilter = Annotated[bool, Field(description="true or false")]
_BatchSize = Annotated[int | None, Field(gt=0, description=_POSITIVE)]
_NumWorkers = Annotated[int | None, Field(ge=0, description="an integer >= 0")]
_Progress = Annotated[bool | None, Field(description="true, false or none (a bar on a terminal)")]
_ChatModel = Annotated[
    str, Field(min_length=1, description="a chat model name (OpenAI or any OpenAI-compatible server)")
]
_RunDir = Annotated[Path | None, Field(description="the run folder (journal; default in the cache)")]
_Temperature = Annotated[float | None, Field(ge=0, allow_inf_nan=False, description="a number >= 0 or none")]
_Settings = Annotated[
    InstanceOf[LLMSettings] | None, Field(description="an LLMSettings: endpoint, key, concurrency, Batch API")
]


class _PoolOptions(BuilderOptions):
    """The options of a builder ranking a candidate pool (wordnet, csp, interneg): a preset of ``presets``,
    and one pool (n_candidates or candidates) and one size (size or ratio) at most."""

    presets: ClassVar[Iterable[str]] = PRESETS

    @field_validator("preset", check_fields=False)
    @classmethod
    def _preset(cls, v: str) -> str:
        if v not in cls.presets:
            raise ValueError("unknown preset")
        return v

    @model_validator(mode="after")
    def _one_pool(self) -> Self:
        if getattr(self, "n_candidates", None) is not None and getattr(self, "candidates", None) is not None:
            raise ValueError("give n_candidates (a sample of the preset) or candidates (a file), not both")
        if getattr(self, "ratio", None) is not None and getattr(self, "size", None) is not None:
            raise ValueError("give either size or ratio, not both")
        return self


# -- wordnet ----------------------------------------------------------------------------------
class WordnetOptions(_PoolOptions):
    """NegLabel's WordNet ranking: candidates farthest first from the ID classes."""

    renamed: ClassVar[Mapping[str, str]] = {"percentile": "quantile", "pool": "n_candidates"}

    size: int | None = Field(
        None, gt=0, description="a positive integer: the vocabulary size M (default: the whole ranking)"
    )
    quantile: _Quantile = 0.95
    preset: str = Field("neglabel", description=f"a candidate preset, one of {', '.join(PRESETS)}")
    templates: _Templates = "paper8"
    ratio: float | None = Field(None, gt=0, le=1, description="a fraction in (0, 1]")
    candidates: Path | None = Field(
        None, description="a candidates export or vocabulary file ranked instead of the preset"
    )
    n_candidates: int | None = Field(
        None, gt=0, description="a positive integer (candidates spread evenly over the preset)"
    )
    id_classes: _IdClassesFile = None
    synonym_filter: _SynonymFilter = True
    batch_size: _BatchSize = None
    progress: _Progress = None


def _id_classes(value: IdClasses | Path | None) -> IdClasses | None:
    return value if value is None or isinstance(value, IdClasses) else read_id_classes(value)


def build_wordnet(
    vlm: VLM,
    *,
    n_candidates: int | None,
    candidates: Path | None,
    id_classes: IdClasses | Path | None,
    **options: Any,
) -> Vocabulary:
    """:func:`~negvocab.builders.wordnet.build_wordnet_vocabulary` over ``n_candidates`` candidates spread
    over the NegLabel pool or a ``candidates`` file (its hash recorded, as ``negvocab build wordnet`` does)."""
    return _build_over_pool(
        build_wordnet_vocabulary,
        vlm,
        None,
        n_candidates=n_candidates,
        candidates=candidates,
        id_classes=id_classes,
        **options,
    )


def _build_over_pool(
    build: Callable[..., Vocabulary],
    vlm: VLM,
    pool: list[Candidate] | None,
    *,
    n_candidates: int | None,
    candidates: Path | None,
    id_classes: IdClasses | Path | None,
    **options: Any,
) -> Vocabulary:
    """``build`` over ``n_candidates`` candidates spread over ``pool`` (None: NegLabel's) or a ``candidates``
    file, whose path and hash its settings record (the pool builders' one thin call)."""
    cands = _pool_or_file(n_candidates, candidates, pool)
    full = build(vlm, candidates=cands, id_classes=_id_classes(id_classes), **options)
    if candidates is None:
        return full
    return full.subset(
        full.labels, settings={"candidates_file": str(candidates), "candidates_sha256": file_sha256(candidates)}
    )


def _pool_or_file(n_candidates: int | None, candidates: Path | None, pool: list[Candidate] | None) -> list[Any] | None:
    """``n_candidates`` candidates spread over ``pool`` (None: NegLabel's), the ``candidates`` file's, or None (the
    preset)."""
    if n_candidates is not None:
        return sample_pool(n_candidates, pool)
    return load_candidates(candidates) if candidates is not None else None


def _wordnet_texts(options: BaseModel, n_classes: int) -> int:
    o = options if isinstance(options, WordnetOptions) else WordnetOptions.model_validate(options.model_dump())
    if o.n_candidates is not None:
        return len(sample_pool(o.n_candidates))
    if o.candidates is not None:
        return len(load_candidates(o.candidates))
    return len(wordnet_candidates(o.preset))


WORDNET = Builder(
    name="wordnet",
    build=build_wordnet,
    options=WordnetOptions,
    source="wordnet",
    summary="Rank WordNet head words farthest first from the ID classes (ImageNet-1k) and write vocabularies.",
    ranked=True,
    needs=frozenset({"vlm"}),
    paper="Jiang et al., NegLabel, ICLR 2024",
    examples=(
        "negvocab build wordnet -m ViT-B-16 -p openai -o wordnet.json",
        "negvocab build wordnet -m ViT-B-16 -p openai --candidates pool.tsv --sizes 50,100,200 -o wn.json",
    ),
    texts=_wordnet_texts,
)


# -- siblings ---------------------------------------------------------------------------------
class SiblingsOptions(BuilderOptions):
    """WordNet siblings: per ID class, K co-hyponyms at its own depth, ranked by text similarity."""

    id_classes: InstanceOf[IdClasses] | Path | list[str] | None = Field(
        None,
        description="ID classes: WordNet noun wnids or names (a file, a list or an IdClasses; default ImageNet-1k)",
    )
    per_class: int = Field(20, ge=1, description="an integer >= 1 (labels kept per ID class, K)")
    levels: int = Field(1, ge=1, le=10, description="an integer between 1 and 10 (hypernym steps up)")
    templates: _Templates = "paper8"
    batch_size: _BatchSize = None
    progress: _Progress = None


SIBLINGS = Builder(
    name="siblings",
    build=build_sibling_vocabulary,
    options=SiblingsOptions,
    source="siblings",
    summary=(
        "WordNet siblings: per ID class, K co-hyponyms at its own depth, ranked by text similarity (no LLM, offline)."
    ),
    ranked=True,
    needs=frozenset({"vlm"}),
    paper="docs/methods.md, Vocabularies (the offline analogue of GPT siblings)",
    examples=(
        "negvocab build siblings -m ViT-B-16 -p openai --id-classes classes.txt -K 10 -o siblings.json",
        "negvocab build siblings -m ViT-B-16 -p openai "
        "--id-classes finegrained-cub200 --hint bird -K 10 -o cub_siblings.json",
    ),
    texts=lambda o, n: int(getattr(o, "per_class", 20)) * n,  # at least: K kept of each class's relatives
)


# -- mined ------------------------------------------------------------------------------------
class MinedOptions(BuilderOptions):
    """Mined negatives: the candidates that unlabelled OOD-looking images point to, ranked by their votes."""

    renamed: ClassVar[Mapping[str, str]] = {"pool": "candidates", "chunk_size": "text_chunk_size"}

    images: Path | InstanceOf[ImageSet] | list[str] = Field(
        description="the unlabelled images of the deployment: a folder, an image list file or an ImageSet"
    )
    candidates: Path | str | InstanceOf[Vocabulary] | list[str] = Field(
        "wordnet", description="candidates: wordnet, wordnet:all, a candidates or vocabulary file, or a list"
    )
    size: int | None = Field(None, gt=0, description="a positive integer: the vocabulary size M")
    id_classes: _IdClassesFile = None
    templates: _Templates = "paper8"
    top_k: int = Field(10, ge=1, description="an integer >= 1 (candidates each OOD-looking image votes for)")
    quantile: _Quantile = 0.5
    threshold: float | None = Field(None, allow_inf_nan=False, description="a finite ID similarity (a cosine)")
    ood: Any = Field(None, description="the evaluated OOD set(s): a path, an ImageSet, or a mapping of them")
    index: Literal["exact", "ivf", "hnsw"] = Field("exact", description=f"one of {', '.join(INDEX_KINDS)}")
    index_options: dict[str, Any] | None = Field(None, description="a table of index options, e.g. {nprobe = 8}")
    text_chunk_size: int = Field(65536, gt=0, description=_POSITIVE + " (candidates per text-encoding chunk)")
    synonym_filter: _SynonymFilter = True
    batch_size: _BatchSize = None
    num_workers: _NumWorkers = None
    progress: _Progress = None


def _mined_texts(options: BaseModel, n_classes: int) -> int:
    return len(mining_pool(getattr(options, "candidates", "wordnet"))) + n_classes


MINED = Builder(
    name="mined",
    build=build_mined_vocabulary,
    options=MinedOptions,
    source="mined",
    summary="Mined negatives: the candidates that unlabelled OOD-looking images point to, ranked by their votes.",
    ranked=True,
    needs=frozenset({"vlm", "images"}),
    paper="docs/methods.md, Vocabularies (mined negatives)",
    examples=(
        "negvocab build mined -m ViT-B-16 -p openai --images unlabelled/ --candidates wordnet -k 5 -o mined.json",
    ),
    texts=_mined_texts,
)


# -- oracle -----------------------------------------------------------------------------------
class OracleOptions(BuilderOptions):
    """The oracle vocabulary: the OOD set's own labels (a lower bound on FPR@95, NOT deployable)."""

    labels: Path | InstanceOf[ImageSet] | list[str] = Field(
        description="the OOD labels: a labels file, an image list with labels, class folders, an ImageSet or a list"
    )
    synonym_filter: _SynonymFilter = True
    name: str | None = Field(None, min_length=1, description="the benchmark's name, recorded in the settings")


def _oracle_texts(options: BaseModel, n_classes: int) -> int:
    labels, _ = oracle_labels_from(getattr(options, "labels", []))
    return len(set(labels))


ORACLE = Builder(
    name="oracle",
    build=build_oracle_vocabulary,
    options=OracleOptions,
    source="oracle",
    summary="The oracle vocabulary: the OOD set's own labels (a lower bound on FPR@95, NOT deployable).",
    deployable=False,
    paper="Rozumnyi et al., Fi-ImageNet-1k, arXiv:2609.01027 (docs/methods.md#oracle)",
    examples=("negvocab build oracle --labels ood_labels.txt -o oracle.json",),
    texts=_oracle_texts,
)


# -- LLM builders -----------------------------------------------------------------------------
class _LlmOptions(BuilderOptions):
    model: _ChatModel
    rounds: int = Field(1, ge=1, description="an integer >= 1 (rounds over all classes)")
    rounds_used: int | None = Field(None, ge=1, description="an integer >= 1 (the first rounds, from the journal)")
    classes: Any = Field(None, description="the classes asked about (a number, wnids or names; default all)")
    run_dir: _RunDir = None
    prompt_path: Path | None = Field(None, description="a prompt template file")
    temperature: _Temperature = 1.0
    min_labels: int | None = Field(None, ge=0, description="an integer >= 0")
    synonym_filter: Any = Field(
        None, description="a SynonymFilter, true or false (default: against id_classes, ImageNet-1k unless given)"
    )
    id_classes: Any = Field(None, description=_ID_CLASSES)
    settings: _Settings = None


class GptOptions(_LlmOptions):
    """GPT siblings: per ID class, visually confusable non-ImageNet categories, R rounds, merged."""

    per_class: int = Field(20, ge=1, description="an integer >= 1 (labels asked per request)")
    rounds: int = Field(10, ge=1, description="an integer >= 1 (rounds over all classes)")


class EoeOptions(_LlmOptions):
    """EOE envisioned outliers (near, far or fine)."""

    renamed: ClassVar[Mapping[str, str]] = {"chunk_size": "classes_per_request"}

    mode: Literal["near", "far", "fine"] = Field("near", description="near, far or fine")
    per_request: int | None = Field(None, ge=1, description="an integer >= 1 (labels asked per request)")
    size: int | None = Field(None, ge=1, description="an integer >= 1 (the vocabulary size L asked)")
    classes_per_request: int = Field(100, ge=1, description="an integer >= 1 (classes per far/fine request)")


GPT = Builder(
    name="gpt",
    build=build_gpt_vocabulary,
    options=GptOptions,
    source="gpt",
    summary=(
        "GPT siblings: per class, N visually confusable non-ImageNet categories, R rounds, merged and synonym-filtered."
    ),
    needs=frozenset({"llm"}),
    paper="Rozumnyi et al., Fi-ImageNet-1k, arXiv:2609.01027",
    examples=(
        "negvocab build gpt -m gpt-4o-mini --per-class 20 --rounds 10 --dry-run -o gpt.json",
        "negvocab build gpt -m gpt-4o-mini --classes finegrained-cub200 --hint bird -o cub_gpt.json",
    ),
)
EOE = Builder(
    name="eoe",
    build=build_eoe_vocabulary,
    options=EoeOptions,
    source="eoe",
    summary="EOE envisioned outliers (near, far or fine), lower-cased, de-duplicated and synonym-filtered.",
    needs=frozenset({"llm"}),
    paper="Cao et al., Envisioning Outlier Exposure, ICML 2024",
    examples=("negvocab build eoe --mode far -m gpt-4o-mini --size 500 -o eoe_far.json",),
)


# -- negrefine (NegRefine) --------------------------------------------------------------------
class NegRefineOptions(BuilderOptions):
    """NegRefine's LLM filter: proper nouns and sub-categories of their best-matching ID classes removed."""

    vocabulary: Path | InstanceOf[Vocabulary] = Field(
        description="the vocabulary to filter: a vocabulary or label file, or a Vocabulary"
    )
    llm_model: _ChatModel
    id_classes: _IdClassesFile = None
    top_n: int = Field(10, ge=1, description="an integer >= 1 (best-matching ID classes asked about per label)")
    run_dir: _RunDir = None
    temperature: _Temperature = 0.7
    base_url: str | None = Field(None, description="an OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    concurrency: int | None = Field(None, ge=1, description="an integer >= 1 (requests in flight)")
    batch: bool = Field(False, description="true or false (the Batch API)")
    retry_failed: bool = Field(False, description="true or false (ask recorded failures again)")
    settings: _Settings = None


def _vocabulary_of(value: Path | Vocabulary | list[str]) -> Vocabulary | list[str]:
    return value if isinstance(value, (Vocabulary, list)) else Vocabulary.load(value)


def _negrefine_args(
    vocabulary: Path | Vocabulary,
    id_classes: IdClasses | Path | None,
    settings: LLMSettings | None,
    given: dict[str, Any],
) -> tuple[Vocabulary, IdClasses | None, LLMSettings]:
    """The options of a negrefine build as its functions take them: the settings with the flat fields
    given (``base_url``, ``concurrency``, ``batch``, ``retry_failed``) put in."""
    vocab = vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary.load(vocabulary)  # a file's labels
    given["model"] = given.pop("llm_model")
    flat = {k: given.pop(k) for k in ("base_url", "concurrency", "batch", "retry_failed")}
    changes = {k: v for k, v in flat.items() if v not in (None, False)}
    return vocab, _id_classes(id_classes), dataclasses.replace(settings or LLMSettings(), **changes)


def build_negrefine(
    vlm: VLM,
    *,
    vocabulary: Path | Vocabulary,
    id_classes: IdClasses | Path | None,
    settings: LLMSettings | None,
    **options: Any,
) -> Vocabulary:
    """:func:`~negvocab.builders.negrefine.build_negrefine_vocabulary` of a vocabulary file or object (a
    file's path and hash recorded)."""
    vocab, ids, s = _negrefine_args(vocabulary, id_classes, settings, options)
    out = build_negrefine_vocabulary(vlm, vocab, id_classes=ids, settings=s, **options)
    if isinstance(vocabulary, Vocabulary):
        return out
    return out.subset(
        out.labels, settings={"input_file": str(vocabulary), "input_file_sha256": file_sha256(vocabulary)}
    )


def estimate_negrefine_cost(
    vlm: VLM,
    *,
    vocabulary: Path | Vocabulary,
    id_classes: IdClasses | Path | None,
    settings: LLMSettings | None,
    **options: Any,
) -> CostEstimate:
    """The dry run of :func:`build_negrefine`: a :class:`~negvocab.llm.cost.CostEstimate`, nothing sent."""
    vocab, ids, s = _negrefine_args(vocabulary, id_classes, settings, options)
    return estimate_negrefine(vlm, vocab, id_classes=ids, settings=s, **options)


NEGREFINE = Builder(
    name="negrefine",
    build=build_negrefine,
    options=NegRefineOptions,
    source="negrefine",
    summary="NegRefine's LLM filter of a vocabulary: proper nouns and sub-categories of ID classes removed.",
    needs=frozenset({"vlm", "llm"}),
    paper="Ansari et al., NegRefine: Refining Negative Label-Based Zero-Shot OOD Detection, ICCV 2025",
    examples=(
        "negvocab build negrefine -m ViT-B-16 -p openai "
        "--vocabulary csp.json --llm-model gpt-4o-mini --dry-run -o negrefine.json",
        "negvocab build negrefine -m ViT-B-16 -p openai --vocabulary csp.json --llm-model Qwen2.5-14B-Instruct "
        "--base-url http://localhost:8000/v1 -o negrefine.json",
    ),
    texts=lambda o, n: n + len(_vocabulary_of(getattr(o, "vocabulary", []))),  # bare names and labels, once
    estimate=estimate_negrefine_cost,
)


# -- csp, interneg --------------------------------------------------------------------------
_CSP_PRESETS = ("csp", *PRESETS)


class CspOptions(_PoolOptions):
    """CSP: WordNet nouns plus adjectives conjugated with superclass nouns, farthest first from the ID classes."""

    presets: ClassVar[Iterable[str]] = _CSP_PRESETS

    size: int | None = Field(None, gt=0, description="a positive integer: the vocabulary size M (default: all)")
    quantile: _Quantile = 0.95
    ratio: float | None = Field(
        None,
        gt=0,
        le=1,
        description="a fraction in (0, 1] of each part of speech, counted before the synonym filter "
        "(CSP's code: 0.15 with no filter; --authors sets both)",
    )
    seed: int = Field(0, ge=0, description="an integer >= 0 (seeds the superclass drawn for each adjective)")
    superclasses: list[str] = Field(
        list(CSP_SUPERCLASSES), min_length=1, description="templates with {} joining an adjective and a superclass"
    )
    preset: str = Field("csp", description=f"a candidate preset, one of {', '.join(_CSP_PRESETS)}")
    templates: _Templates = "csp"
    reduce: Literal["raw_mean", "unit_mean"] | None = Field(
        None,
        description="how a label's template embeddings are averaged: raw_mean (CSP's code) or unit_mean "
        "(default: the templates', csp: raw_mean)",
    )
    candidates: Path | None = Field(
        None, description="a candidates export or vocabulary file ranked instead of the preset"
    )
    n_candidates: int | None = Field(None, gt=0, description="a positive integer (candidates spread over the preset)")
    id_classes: _IdClassesFile = None
    max_similarity: float = Field(0.95, ge=-1, le=1, description="a cosine in [-1, 1] (nearer an ID class: last)")
    synonym_filter: bool = Field(
        True, description="drop the ID classes' synonyms before the cut (negvocab's; CSP's code has no filter)"
    )
    batch_size: _BatchSize = None
    progress: _Progress = None


def build_csp(vlm: VLM, *, preset: str, **options: Any) -> Vocabulary:
    """:func:`~negvocab.builders.csp.build_csp_vocabulary` over ``n_candidates`` candidates spread over the preset
    or a ``candidates`` file (its hash recorded)."""
    return _build_over_pool(build_csp_vocabulary, vlm, csp_pool(preset), preset=preset, **options)


def _texts(pool_of: Callable[[str], list[Candidate]]) -> Callable[[BaseModel, int], int]:
    """The texts count of a builder whose options have n_candidates, candidates and preset (``pool_of(preset)``)."""

    def count(options: BaseModel, n_classes: int) -> int:
        n, candidates, preset = (getattr(options, k) for k in ("n_candidates", "candidates", "preset"))
        return len(_pool_or_file(n, candidates, pool_of(preset)) or pool_of(preset))

    return count


CSP = Builder(
    name="csp",
    build=build_csp,
    options=CspOptions,
    source="csp",
    summary="CSP: WordNet nouns plus adjectives conjugated with superclass nouns, farthest first (NeurIPS 2024).",
    ranked=True,
    needs=frozenset({"vlm"}),
    paper="Chen et al., Conjugated Semantic Pool, NeurIPS 2024 (docs/methods.md#csp)",
    examples=(
        "negvocab build csp -m ViT-B-16 -p openai -o csp.json",
        "negvocab build csp -m ViT-B-16 -p openai --authors -o csp_authors.json",
        "negvocab build csp -m ViT-B-16 -p openai --id-classes finegrained-cub200 --hint bird -o csp_cub.json",
    ),
    texts=_texts(csp_pool),
)


class InternegOptions(_PoolOptions):
    """InterNeg: negatives far from few-shot ID image prototypes (USES K labelled ID images per class)."""

    id_images: Path | InstanceOf[ImageSet] = Field(
        description="labelled ID images: class folders (wnids or class names), an image list with labels or an ImageSet"
    )
    size: int | None = Field(None, gt=0, description="a positive integer: the vocabulary size M (default: all kept)")
    shots: int | None = Field(16, gt=0, description="a positive integer: ID images per class (none: all)")
    split: Literal["interneg", "ranked"] = Field(
        "interneg", description="interneg (M split by part of speech, as its code) or ranked (the first M)"
    )
    templates: _Templates = "interneg"
    preset: str = Field("neglabel", description=f"a candidate preset, one of {', '.join(PRESETS)}")
    candidates: Path | None = Field(None, description="a candidates export or vocabulary file instead of the preset")
    n_candidates: int | None = Field(None, gt=0, description="a positive integer (candidates spread over the preset)")
    id_classes: _IdClassesFile = None
    synonym_filter: bool = Field(
        True,
        description="also drop ID synonyms (negvocab's); off: exact ID class names only, as InterNeg's code",
    )
    batch_size: _BatchSize = None
    num_workers: _NumWorkers = None
    progress: _Progress = None


def build_interneg(vlm: VLM, *, preset: str, **options: Any) -> Vocabulary:
    """:func:`~negvocab.builders.interneg.build_interneg_vocabulary` over ``n_candidates`` candidates spread over
    the preset or a ``candidates`` file (its hash recorded)."""
    return _build_over_pool(build_interneg_vocabulary, vlm, wordnet_candidates(preset), preset=preset, **options)


INTERNEG = Builder(
    name="interneg",
    build=build_interneg,
    options=InternegOptions,
    source="interneg",
    summary="InterNeg's selection: negatives far from few-shot ID image prototypes (uses labelled ID images).",
    ranked=True,
    needs=frozenset({"vlm", "images"}),
    paper="Xu et al., InterNeg, CVPR 2026 (docs/methods.md#interneg)",
    examples=(
        "negvocab build interneg -m ViT-B-16 -p openai "
        "--id-images imagenet_16shot/ --shots 16 --size 2000 -o interneg.json",
        "negvocab build interneg -m ViT-B-16 -p openai "
        "--authors --id-images imagenet_16shot/ --size 2000 -o interneg_authors.json",
    ),
    texts=_texts(wordnet_candidates),
)
