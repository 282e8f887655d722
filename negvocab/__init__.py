"""negvocab: negative-label vocabularies for zero-shot OOD detection with vision-language models.

The pipeline, one way: labels -> vocabularies -> embeddings -> scores -> metrics.

- ``imagenet1k()``, ``wordnet_candidates()``, ``SynonymFilter``  (negvocab.labels)
- ``clean_label``, ``parse_label_list``                        (negvocab.labels.clean)
- ``Vocabulary``                                                (negvocab.vocab)
- ``build_wordnet_vocabulary``, ``build_gpt_vocabulary``, ...   (negvocab.builders)
- ``LLMSettings`` (endpoint, key, concurrency, Batch API, ...)  (negvocab.llm.settings)
- ``VLM`` (open_clip models, cached text/image embeddings)      (negvocab.vlm)
- ``score``, ``sweep``, ``metrics``                             (negvocab.scoring)
- ``sample_pool`` (WordNet candidates spread evenly)            (negvocab.labels.candidates)
- ``build_table`` (the paper's tables from result rows)         (negvocab.report.tables)
- ``paired_bootstrap`` (A vs B on the same images)              (negvocab.evaluation.compare)
- ``gpt_run(...).estimate()`` (an LLM build's dry run: requests, tokens, dollars; ``CostEstimate``)

Public names are imported on first use, so ``import negvocab`` (and the CLI) does not pay for
torch unless a model is needed.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from negvocab.core.deprecation import install_moved_modules as _install_moved_modules
from negvocab.core.extras import missing_extra as _missing_extra  # a missing extra, named
from negvocab.core.provenance import negvocab_version

_install_moved_modules()  # the old module paths (negvocab.errors, ...) for one release

# open_clip imports huggingface_hub, which imports tqdm.auto: in a notebook without ipywidgets that
# warns "IProgress not found". negvocab draws its own bars (negvocab.core.progress), never the widget one.
warnings.filterwarnings("ignore", message="IProgress not found", category=Warning)

__version__ = negvocab_version()

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "NegvocabError": "negvocab.core.errors",
    "InputError": "negvocab.core.errors",
    "ResourceError": "negvocab.core.errors",
    "IdClasses": "negvocab.labels.imagenet",
    "imagenet1k": "negvocab.labels.imagenet",
    "load_wordnet": "negvocab.labels.wordnet",
    "Candidate": "negvocab.labels.candidates",
    "wordnet_candidates": "negvocab.labels.candidates",
    "load_candidates": "negvocab.vocab",
    "SynonymFilter": "negvocab.labels.synonyms",
    "clean_label": "negvocab.labels.clean",
    "parse_label_list": "negvocab.labels.clean",
    "Vocabulary": "negvocab.vocab",
    "VLM": "negvocab.vlm.model",
    "ImageEmbeddings": "negvocab.vlm.images",
    "save_embeddings": "negvocab.vlm.export",
    "load_embeddings": "negvocab.vlm.export",
    "knn": "negvocab.vocab.index",
    "farthest_first": "negvocab.builders.wordnet",
    "build_wordnet_vocabulary": "negvocab.builders.wordnet",
    "build_oracle_vocabulary": "negvocab.builders.oracle",
    "build_sibling_vocabulary": "negvocab.builders.siblings",
    "build_mined_vocabulary": "negvocab.builders.mined",
    "build_gpt_vocabulary": "negvocab.builders.llm",
    "build_eoe_vocabulary": "negvocab.builders.llm",
    "vocabulary_from_journal": "negvocab.builders.llm",
    "LLMSettings": "negvocab.llm.settings",
    "score": "negvocab.scoring.scores",
    "explain": "negvocab.scoring.scores",
    "TopkScores": "negvocab.scoring.scores",
    "sweep": "negvocab.scoring.prefix_scores",
    "subsample": "negvocab.evaluation.subsample",
    "run_grid": "negvocab.grid.run",
    "grid_status": "negvocab.grid.run",
    "load_grid": "negvocab.grid.config",
    "GridResult": "negvocab.grid.tidy",
    "evaluate_vocabularies": "negvocab.evaluation.evaluate",
    "sweep_vocabulary": "negvocab.evaluation.sweeps",
    "plot_sweep": "negvocab.report.plots",
    "sweep_figure": "negvocab.report.plots",
    "write_results": "negvocab.report.results",
    "write_sweep": "negvocab.report.results",
    "read_id_classes": "negvocab.labels.imagenet",
    "open_image_set": "negvocab.data.layouts",
    "image_list": "negvocab.data.images",
    "fi_imagenet": "negvocab.data.fi_imagenet",
    "marginal_gains": "negvocab.diagnostics.gains",
    "repair_curve": "negvocab.diagnostics.gains",
    "MarginalGains": "negvocab.diagnostics.gains",
    "RepairCurve": "negvocab.diagnostics.gains",
    "coverage": "negvocab.diagnostics.coverage",
    "Coverage": "negvocab.diagnostics.coverage",
    "write_report": "negvocab.report.html",
    # rows: one typed result row, and any results folder read back into rows
    "ResultRow": "negvocab.evaluation.row",
    "read_results": "negvocab.evaluation.stored",
    # the builder registry
    "Builder": "negvocab.builders.registry",
    "BuilderOptions": "negvocab.builders.registry",
    "register_builder": "negvocab.builders.registry",
    "get_builder": "negvocab.builders.registry",
    "list_builders": "negvocab.builders.registry",
    "build_vocabulary": "negvocab.builders.registry",
    # -- library helpers: those the CLI used and the API lacked ---------------------------------------
    "sample_pool": "negvocab.labels.candidates",
    "build_table": "negvocab.report.tables",
    "Table": "negvocab.report.tables",
    "paired_bootstrap": "negvocab.evaluation.compare",
    "PairedComparison": "negvocab.evaluation.compare",
    "gpt_run": "negvocab.builders.llm",
    "eoe_run": "negvocab.builders.llm",
    "LLMRun": "negvocab.builders.llm",
    "CostEstimate": "negvocab.llm.cost",
    # stream (test-time) methods
    "StreamMethod": "negvocab.scoring.stream",
    "StreamResult": "negvocab.scoring.stream",
    "stream_order": "negvocab.scoring.stream",
    "run_stream": "negvocab.scoring.stream",
    "make_stream": "negvocab.scoring.stream",
    "register_stream_method": "negvocab.scoring.stream",
    "evaluate_stream": "negvocab.evaluation.stream_evaluation",
    "StreamEvaluation": "negvocab.evaluation.stream_evaluation",
    # benchmarks: benchmarks as data, OOD sets from the CLI's specs
    "Benchmark": "negvocab.data.benchmarks",
    "BenchmarkSet": "negvocab.data.benchmarks",
    "OpenedSets": "negvocab.data.benchmarks",
    "RESERVED_SET_NAMES": "negvocab.data.benchmarks",
    "register_benchmark": "negvocab.data.benchmarks",
    "unregister_benchmark": "negvocab.data.benchmarks",
    "load_benchmarks": "negvocab.data.benchmarks",
    "get_benchmark": "negvocab.data.benchmarks",
    "list_benchmarks": "negvocab.data.benchmarks",
    "open_benchmark": "negvocab.data.benchmarks",
    "set_groups": "negvocab.data.benchmarks",
    "open_ood_sets": "negvocab.data.ood_specs",
    # methods registered from anywhere
    "Method": "negvocab.scoring.methods",
    "Param": "negvocab.scoring.methods",
    "register_method": "negvocab.scoring.methods",
    "register_param": "negvocab.scoring.methods",
    "unregister_method": "negvocab.scoring.methods",
    "list_methods": "negvocab.scoring.methods",
    "get_method": "negvocab.scoring.methods",
    "load_plugins": "negvocab.core.plugins",
    # NegRefine's LLM filter and the pair texts of its multi-matching score
    "PairTexts": "negvocab.vlm.pairs",
    "build_negrefine_vocabulary": "negvocab.builders.negrefine",
    # AdaNeg and the test-stream protocol
    "AdaNeg": "negvocab.scoring.adaneg",
    "stream_mix": "negvocab.scoring.stream",
    "stream_settings": "negvocab.scoring.stream",
    "STREAM_ORDERS": "negvocab.scoring.stream",
    "evaluate_stream_vocabularies": "negvocab.evaluation.stream_evaluation",
    "merge_evaluations": "negvocab.evaluation.stream_evaluation",
    "RESULT_KINDS": "negvocab.evaluation.row",
    "result_kind": "negvocab.evaluation.row",
    # the CSP builder and InterNeg's selection
    "build_csp_vocabulary": "negvocab.builders.csp",
    "build_interneg_vocabulary": "negvocab.builders.interneg",
    # TANL and the anchors' published figures
    "TANL": "negvocab.scoring.tanl",
    "noise_pixels": "negvocab.scoring.tanl",
    "PublishedResult": "negvocab.data.published",
    "published_results": "negvocab.data.published",
    "published_table_rows": "negvocab.data.published",
    "published_notes": "negvocab.data.published",
    # any ID label space mapped to WordNet synsets
    "map_label_space": "negvocab.labels.labelspace",
    "LabelSpaceMap": "negvocab.labels.labelspace",
    "ClassSense": "negvocab.labels.labelspace",
    "open_label_space": "negvocab.data.label_space",
    # an optional package missing names the extra that installs it
    "MissingExtraError": "negvocab.core.extras",
    # a tuning split for methods with knobs (CCR: negvocab.metrics.ccr_at_fpr)
    "Tuning": "negvocab.evaluation.tuning",
    "tune_params": "negvocab.evaluation.tuning",
    # one detector protocol for every method, and the one registry of method inputs
    "Detector": "negvocab.scoring.detector",
    "BatchDetector": "negvocab.scoring.detector",
    "make_detector": "negvocab.scoring.detector",
    "InputContext": "negvocab.scoring.providers",
    "InputProvider": "negvocab.scoring.providers",
    "register_input": "negvocab.scoring.providers",
    "list_inputs": "negvocab.scoring.providers",
    # OODD and the temporal-shift stream phases
    "OODD": "negvocab.scoring.oodd",
    "phase_sets": "negvocab.scoring.stream",
    "STREAM_PHASES": "negvocab.scoring.stream",
    # ANTS and its negatives from a multimodal LLM
    "ANTS": "negvocab.scoring.ants",
    "LLMNegatives": "negvocab.builders.ants",
}
# public submodules reachable as attributes (negvocab.metrics.auroc)
_MODULES: dict[str, str] = {"metrics": "negvocab.scoring.metrics"}
_install_moved_modules({f"negvocab.{k}": v for k, v in _MODULES.items()})  # from negvocab.metrics import auroc

__all__ = sorted([*_EXPORTS, *_MODULES, "__version__"])


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS and name not in _MODULES:
        raise AttributeError(f"module 'negvocab' has no attribute {name!r}")
    try:
        module = importlib.import_module(_EXPORTS.get(name) or _MODULES[name])
    except ModuleNotFoundError as e:  # an optional package is missing -> the extra to install
        missing = _missing_extra(e)
        if missing is None:
            raise
        raise missing from None
    value = getattr(module, name) if name in _EXPORTS else module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from negvocab.builders.ants import LLMNegatives  # ANTS's multimodal LLM side
    from negvocab.builders.llm import build_eoe_vocabulary, build_gpt_vocabulary, vocabulary_from_journal
    from negvocab.builders.mined import build_mined_vocabulary
    from negvocab.builders.negrefine import build_negrefine_vocabulary  # NegRefine
    from negvocab.builders.oracle import build_oracle_vocabulary
    from negvocab.builders.registry import (  # the builder registry
        Builder,
        BuilderOptions,
        build_vocabulary,
        get_builder,
        list_builders,
        register_builder,
    )
    from negvocab.builders.siblings import build_sibling_vocabulary
    from negvocab.builders.wordnet import build_wordnet_vocabulary, farthest_first
    from negvocab.core.errors import InputError, NegvocabError, ResourceError
    from negvocab.core.plugins import load_plugins
    from negvocab.data.benchmarks import (  # benchmarks
        RESERVED_SET_NAMES,
        Benchmark,
        BenchmarkSet,
        OpenedSets,
        get_benchmark,
        list_benchmarks,
        load_benchmarks,
        open_benchmark,
        register_benchmark,
        set_groups,
        unregister_benchmark,
    )
    from negvocab.data.fi_imagenet import fi_imagenet
    from negvocab.data.images import image_list
    from negvocab.data.label_space import open_label_space  # label spaces
    from negvocab.data.layouts import open_image_set
    from negvocab.data.ood_specs import open_ood_sets
    from negvocab.data.published import (  # TANL
        PublishedResult,
        published_notes,
        published_results,
        published_table_rows,
    )
    from negvocab.diagnostics.coverage import Coverage, coverage
    from negvocab.diagnostics.gains import MarginalGains, RepairCurve, marginal_gains, repair_curve
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from negvocab.evaluation.row import ResultRow
    from negvocab.evaluation.stored import read_results
    from negvocab.evaluation.stream_evaluation import StreamEvaluation, evaluate_stream  # stream methods
    from negvocab.evaluation.subsample import subsample
    from negvocab.evaluation.sweeps import sweep_vocabulary
    from negvocab.grid.config import load_grid
    from negvocab.grid.run import grid_status, run_grid
    from negvocab.grid.tidy import GridResult
    from negvocab.labels.candidates import Candidate, wordnet_candidates
    from negvocab.labels.clean import clean_label, parse_label_list
    from negvocab.labels.imagenet import IdClasses, imagenet1k, read_id_classes
    from negvocab.labels.labelspace import ClassSense, LabelSpaceMap, map_label_space  # label spaces
    from negvocab.labels.synonyms import SynonymFilter
    from negvocab.labels.wordnet import load_wordnet
    from negvocab.llm.settings import LLMSettings
    from negvocab.report.html import write_report
    from negvocab.report.plots import plot_sweep, sweep_figure
    from negvocab.report.results import write_results, write_sweep
    from negvocab.scoring import metrics
    from negvocab.scoring.ants import ANTS  # ANTS
    from negvocab.scoring.methods import (  # methods registered from anywhere
        Method,
        Param,
        get_method,
        list_methods,
        register_method,
        register_param,
        unregister_method,
    )
    from negvocab.scoring.oodd import OODD  # OODD
    from negvocab.scoring.prefix_scores import sweep
    from negvocab.scoring.scores import TopkScores, explain, score
    from negvocab.scoring.stream import (  # stream methods, temporal-shift phases
        STREAM_PHASES,
        StreamMethod,
        StreamResult,
        make_stream,
        phase_sets,
        register_stream_method,
        run_stream,
        stream_order,
    )
    from negvocab.scoring.tanl import TANL, noise_pixels  # TANL
    from negvocab.vlm.export import load_embeddings, save_embeddings
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vlm.pairs import PairTexts  # NegRefine
    from negvocab.vocab import Vocabulary, load_candidates
    from negvocab.vocab.index import knn

if TYPE_CHECKING:  # AdaNeg and the test-stream protocol
    from negvocab.evaluation.row import RESULT_KINDS, result_kind
    from negvocab.evaluation.stream_evaluation import evaluate_stream_vocabularies, merge_evaluations
    from negvocab.scoring.adaneg import AdaNeg
    from negvocab.scoring.stream import STREAM_ORDERS, stream_mix, stream_settings

if TYPE_CHECKING:  # library helpers: the CLI used and the API lacked
    from negvocab.builders.llm import LLMRun, eoe_run, gpt_run
    from negvocab.evaluation.compare import PairedComparison, paired_bootstrap
    from negvocab.labels.candidates import sample_pool
    from negvocab.llm.cost import CostEstimate
    from negvocab.report.tables import Table, build_table

if TYPE_CHECKING:  # the CSP builder and InterNeg's selection
    from negvocab.builders.csp import build_csp_vocabulary
    from negvocab.builders.interneg import build_interneg_vocabulary

if TYPE_CHECKING:  # a missing optional package names its extra
    from negvocab.core.extras import MissingExtraError

if TYPE_CHECKING:  # the tuning split
    from negvocab.evaluation.tuning import Tuning, tune_params

if TYPE_CHECKING:  # one detector protocol, one registry of method inputs
    from negvocab.scoring.detector import BatchDetector, Detector, make_detector
    from negvocab.scoring.providers import InputContext, InputProvider, list_inputs, register_input
