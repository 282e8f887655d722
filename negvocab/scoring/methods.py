"""The method registry: every zero-shot OOD scorer, its parameters and their limits, in one place.

One :class:`Method` entry per scorer says its name and aliases, its kernel, its one-pass (pool-size
sweep) form, the parameters it takes, whether it needs negative labels, and the paper it comes from.
One :class:`Param` entry per parameter says its type, default, limits, CLI flag and meaning. The API
validates against them at the boundary (:func:`check_params`, as scikit-learn's ``validate_params``);
the CLI options, the grid config, sweeps and diagnostics read them. Adding a method is one entry
here plus its kernel.

>>> from negvocab.scoring.methods import METHODS, get_method
>>> get_method("GL-MCM").name, get_method("neglabel").needs_negatives
('glmcm', True)
>>> sorted(METHODS["eoe"].params)
['T', 'beta']
"""

from __future__ import annotations

import importlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from negvocab.errors import InputError
from negvocab.scoring.metrics import CONVENTIONS

logger = logging.getLogger(__name__)

__all__ = [
    "EVALUATION_PARAMS",
    "GROUPINGS",
    "MAX_BOOT",
    "MAX_DRAWS",
    "METHODS",
    "NEEDS_NEGATIVES",
    "PARAMS",
    "RUN_PARAMS",
    "Method",
    "Param",
    "add_method",
    "canonical_method",
    "check_evaluation",
    "check_params",
    "check_shared",
    "get_method",
    "list_methods",
    "method_table",
    "params_for",
    "remove_method",
    "scorer_params",
]

MAX_BOOT = 100_000  # bootstrap resamples: 1,000 is the usual; more only costs time
MAX_DRAWS = 100_000  # OOD-subsampling draws per size (negvocab.subsample): 1,000 is the paper's
#: NegLabel groupings (:mod:`negvocab.scoring.grouping`)
GROUPINGS: tuple[str, ...] = ("stratified", "random", "neglabel")


@dataclass(frozen=True)
class Param:
    """One parameter: its type (``float``, ``int`` or ``str``), default, limits and meaning.

    ``check`` is the kind of limit: ``positive`` (finite > 0), ``nonneg`` (finite >= 0), ``finite``,
    ``unit`` (in (0, 1]), ``min`` (an integer >= ``low``), ``range`` (an integer in [``low``,
    ``high``]) or ``choice`` (one of ``choices``). ``optional``: None is accepted (the kernel's default).
    """

    name: str
    kind: type
    default: Any
    doc: str
    flag: str
    check: str = "finite"
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False

    def validate(self, value: Any, cli: bool = False) -> Any:
        """``value`` unchanged if allowed, else :class:`InputError` naming the parameter (its flag with ``cli``)."""
        name = self.flag if cli else self.name
        if value is None and self.optional:
            return value
        if self.check == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise InputError(f"unknown {name} {value!r}; choose one of {', '.join(self.choices)}")
            return value
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        if not number or (self.kind is int and not isinstance(value, (int, np.integer))):
            raise InputError(f"{name} must be {'an integer' if self.kind is int else 'a number'}, got {value!r}")
        bad = {
            "positive": lambda v: not (math.isfinite(v) and v > 0),
            "nonneg": lambda v: not (math.isfinite(v) and v >= 0),
            "finite": lambda v: not math.isfinite(v),
            "unit": lambda v: not 0 < v <= 1,
            "min": lambda v: v < (self.low or 0),
            "range": lambda v: not (self.low or 0) <= v <= (self.high or 0),
        }[self.check](value)
        if bad:
            raise InputError(f"{name} must be {self.limit()}, got {value}")
        return value

    def limit(self) -> str:
        """The allowed values in words (help texts and error lines)."""
        return {
            "positive": "a positive number",
            "nonneg": "a number >= 0",
            "finite": "a finite number",
            "unit": "in (0, 1]",
            "min": f">= {self.low:g}" if self.low is not None else "",
            "range": f"between {self.low:,.0f} and {self.high:,.0f}"
            if self.low is not None and self.high is not None
            else "",
            "choice": "one of " + ", ".join(self.choices),
        }[self.check]


def _p(name: str, kind: type, default: Any, flag: str, doc: str, **kw: Any) -> tuple[str, Param]:
    return name, Param(name, kind, default, doc, flag, **kw)


#: every scorer parameter, by name (one meaning for a name across methods)
PARAMS: dict[str, Param] = dict([
    _p("tau", float, 0.01, "--tau", "NegLabel temperature on cosines.", check="positive"),
    _p("groups", int, 100, "--groups", "NegLabel groups G (clamped to the vocabulary size).", check="min", low=1),
    _p("grouping", str, "stratified", "--grouping", "NegLabel grouping: stratified (rank r -> group r mod G), random, or neglabel "
       "(NegLabel's released code exactly: drops the last M mod G labels, torch permutation seeded with --seed on the scoring device).",
       check="choice", choices=tuple(GROUPINGS)),
    _p("seed", int, 0, "--seed", "Seed of the random/neglabel grouping and of the bootstrap CIs (NegLabel's code uses 0; recorded in the results).",
       check="min", low=0),
    _p("beta", float, 0.25, "--beta", "EOE penalty weight.", check="finite"),
    _p("T", float, 1.0, "--temperature", "Softmax temperature T on cosines of mcm, glmcm and eoe (default 1).", check="positive", optional=True),
    _p("penalty_T", float, None, "--penalty-temperature", "Temperature of neglabel_eoe's EOE penalty (default: --tau).", check="positive", optional=True),
    _p("lam", float, 1.0, "--lambda", "GL-MCM weight of the local term.", check="nonneg"),
    _p("topk", int, None, "--topk", "NegLabel with each image's k nearest negatives only (FAISS search; an estimate with bounds).",
       check="min", low=1, optional=True),
    _p("logit_scale", float, None, "--logit-scale", "Logits of msp, maxlogit, energy and gen: logit scale x cosine (default: the model's own "
       "learned scale, 100 for CLIP's released weights; 100 where no model is given; a temperature T on the logits is a scale s/T).",
       check="positive", optional=True),
    _p("gamma", float, 0.1, "--gamma", "GEN exponent gamma (the paper's 0.1).", check="positive"),
    _p("top_classes", int, 100, "--top-classes", "GEN: the M largest ID probabilities summed (the paper's 100; clamped to the ID classes).",
       check="min", low=1),
])  # fmt: skip

#: accepted by every scorer: where and in what pieces the maths runs (not part of a result's identity)
RUN_PARAMS: dict[str, Param] = dict(
    [
        # not checked here: a torch.device or its name, resolved by the kernels
        _p(
            "device",
            str,
            None,
            "--device",
            "Scoring device (default: the device of the image embeddings).",
            optional=True,
        ),
        _p(
            "chunk_size",
            int,
            None,
            "--chunk-size",
            "Images scored at once (default: sized from free memory).",
            check="min",
            low=1,
            optional=True,
        ),
    ]
)

#: how metrics are read off the scores (every evaluation, sweep, grid and diagnostic)
EVALUATION_PARAMS: dict[str, Param] = dict(
    [
        _p(
            "convention",
            str,
            "paper",
            "--convention",
            "FPR convention: paper (ID-anchored), hendrycks or openood.",
            check="choice",
            choices=tuple(CONVENTIONS),
        ),
        _p("tpr", float, 0.95, "--tpr", "TPR of the FPR metric (0.95 = FPR@95).", check="unit"),
        _p(
            "n_boot",
            int,
            1000,
            "--n-boot",
            "Bootstrap resamples of OOD images for the CIs (0: none).",
            check="range",
            low=0,
            high=MAX_BOOT,
        ),
        _p("seed", int, 0, "--seed", "Seed of the bootstrap CIs.", check="min", low=0),
    ]
)


@dataclass(frozen=True)
class Method:
    """One zero-shot OOD detector: ``scorer(image_emb, id_emb[, neg_emb], **params)`` -> float64 per image, high = ID."""

    name: str
    #: the kernel as ``module:function`` in :mod:`negvocab.scoring`: read by name so that the CLI and
    #: the config checks read the registry without importing torch
    kernel: str
    params: tuple[str, ...]
    paper: str
    needs_negatives: bool = False
    aliases: tuple[str, ...] = ()
    #: ``one_pass(image_emb, id_emb, ranked_neg_emb, sizes, **p)`` -> {M: scores} (every pool size M in one pass), as ``module:function``
    one_pass_kernel: str | None = None
    #: inputs beside the embeddings (glmcm: ``local``, the patch features)
    inputs: tuple[str, ...] = field(default=())
    #: parameter values under which the scores depend on the kind of device they are computed on
    #: (``grouping="neglabel"``: NegLabel's ``torch.randperm`` differs between CPU and CUDA)
    device_bound: tuple[tuple[str, Any], ...] = field(default=())
    #: "batch" (``scorer`` scores any set of images at once) or "stream" (a test-time method: state over
    #: an ordered stream of batches, run by :func:`negvocab.scoring.stream.run_stream`)
    kind: str = "batch"
    #: a stream method's :class:`~negvocab.scoring.stream.StreamMethod` class, or its "pkg.module:Class"
    stream: str | type | None = None

    def depends_on_device(self, params: Mapping[str, Any]) -> bool:
        """True when scores with ``params`` differ by the device type they were computed on."""
        return any(params.get(k) == v for k, v in self.device_bound)

    @property
    def scorer(self) -> Callable[..., np.ndarray]:
        """The kernel function (a stream method has none: it is one line, not a traceback)."""
        if self.kind == "stream":
            raise InputError(
                f"{self.name} is a test-time (stream) method: run it with negvocab.run_stream or "
                "negvocab.evaluate_stream, not as one batch"
            )
        return _resolve(self.kernel)

    @property
    def one_pass(self) -> Callable[..., dict[int, np.ndarray]] | None:
        """The one-pass sweep kernel, or None where each size is scored on its own."""
        return _resolve(self.one_pass_kernel) if self.one_pass_kernel else None

    def accepts(self) -> set[str]:
        """Every keyword ``scorer`` takes: its parameters, the run parameters and its extra inputs."""
        return {*self.params, *RUN_PARAMS, *self.inputs}


def _resolve(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(f"negvocab.scoring.{module}"), name)  # defers torch to the first score


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("mcm", "mcm:mcm", ("T",), "Ming et al., Delving into out-of-distribution detection with vision-language representations, NeurIPS 2022"),
        Method("glmcm", "mcm:glmcm", ("T", "lam"), "Miyai et al., Zero-shot in-distribution detection in multi-object settings using vision-language foundation models, 2023",
               aliases=("gl-mcm", "gl_mcm"), inputs=("local",)),
        Method("neglabel", "neglabel:neglabel", ("tau", "groups", "grouping", "seed", "topk"), "Jiang et al., Negative label guided OOD detection with pretrained vision-language models, ICLR 2024",
               needs_negatives=True, one_pass_kernel="neglabel:neglabel_prefixes", device_bound=(("grouping", "neglabel"),)),
        Method("eoe", "eoe:eoe", ("beta", "T"), "Cao et al., Envisioning outlier exposure by large language models for out-of-distribution detection, ICML 2024",
               needs_negatives=True, one_pass_kernel="eoe:eoe_prefixes"),
        Method("neglabel_eoe", "eoe:neglabel_eoe", ("tau", "groups", "grouping", "seed", "beta", "penalty_T"),
               "Rozumnyi et al., Fi-ImageNet-1k: An OOD Benchmark From the Inside of the ImageNet-1k Validation Set, arXiv:2609.01027",
               needs_negatives=True, aliases=("neglabel+eoe", "neglabel-eoe"), one_pass_kernel="eoe:neglabel_eoe_prefixes", device_bound=(("grouping", "neglabel"),)),
        Method("msp", "logits:msp", ("logit_scale",), "Hendrycks and Gimpel, A baseline for detecting misclassified and out-of-distribution examples in neural networks, ICLR 2017",
               aliases=("maxsoftmax",)),
        Method("maxlogit", "logits:maxlogit", ("logit_scale",), "Hendrycks et al., Scaling out-of-distribution detection for real-world settings, ICML 2022",
               aliases=("max-logit", "max_logit")),
        Method("energy", "logits:energy", ("logit_scale",), "Liu et al., Energy-based out-of-distribution detection, NeurIPS 2020"),
        Method("gen", "logits:gen", ("logit_scale", "gamma", "top_classes"), "Liu et al., GEN: Pushing the limits of softmax-based out-of-distribution detection, CVPR 2023"),
    )
}  # fmt: skip
_ALIASES = {alias: m.name for m in METHODS.values() for alias in m.aliases}
#: the methods that take negative (or outlier) label embeddings
NEEDS_NEGATIVES: frozenset[str] = frozenset(m.name for m in METHODS.values() if m.needs_negatives)


def add_method(m: Method, *, replace: bool = False) -> Method:
    """Register ``m`` under its name and aliases (:func:`negvocab.register_stream_method` calls this);
    a name or alias that is taken is :class:`InputError` unless ``replace``."""
    if m.name in METHODS and not replace:
        raise InputError(f"method {m.name!r} is registered already (pass replace=True to replace it)")
    taken = [k for k in (m.name, *m.aliases) if _ALIASES.get(k, m.name) != m.name or (k != m.name and k in METHODS)]
    if taken:
        raise InputError(f"method name {taken[0]!r} is taken by another method")
    if m.name in METHODS:
        remove_method(m.name)
    METHODS[m.name] = m
    _ALIASES.update({a: m.name for a in m.aliases})
    return m


def remove_method(method: str, *, missing_ok: bool = False) -> None:
    """Remove a registered method and its aliases (tests and notebooks that add a temporary one)."""
    key = _ALIASES.get(str(method).strip().lower(), str(method).strip().lower())
    if key not in METHODS:
        if missing_ok:
            return
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    del METHODS[key]
    for alias in [a for a, k in _ALIASES.items() if k == key]:
        del _ALIASES[alias]


def list_methods() -> list[str]:
    """The registered method names, in registry order."""
    return list(METHODS)


def canonical_method(method: str) -> str:
    """The registered name of ``method`` (case-insensitive, aliases accepted) or :class:`InputError`."""
    key = str(method).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return key


def get_method(method: str) -> Method:
    """The :class:`Method` entry of ``method`` (a name or an alias)."""
    return METHODS[canonical_method(method)]


def check_params(method: str, params: Mapping[str, Any], *, cli: bool = False) -> dict[str, Any]:
    """``params`` if ``method`` takes every one and each value is allowed, else :class:`InputError`
    (one line naming the parameter, the value and what is allowed). Values are returned unchanged."""
    m = get_method(method)
    unknown = sorted(set(params) - m.accepts())
    if unknown:
        raise InputError(
            f"{m.name}: unexpected parameter(s) {', '.join(unknown)}; accepted: {', '.join(sorted(m.accepts()))}"
        )
    for name, value in params.items():
        spec = PARAMS.get(name)
        if spec is not None:
            spec.validate(value, cli)
        elif name == "chunk_size":
            RUN_PARAMS[name].validate(value, cli)
    return dict(params)


def params_for(method: str, params: Mapping[str, Any], *, cli: bool = False) -> dict[str, Any]:
    """The subset of a shared parameter set (one ``negvocab score`` run drives several methods) that
    ``method`` takes, None values left out, each value checked."""
    m = get_method(method)
    return check_params(m.name, {k: v for k, v in params.items() if k in m.accepts() and v is not None}, cli=cli)


def check_shared(params: Mapping[str, Any], *, cli: bool = False) -> None:
    """Check every known parameter of a shared set (before any method or model is chosen)."""
    for name, value in params.items():
        if name in PARAMS:
            PARAMS[name].validate(value, cli)


def check_evaluation(*, cli: bool = False, **values: Any) -> None:
    """Check the metric settings given (``convention``, ``tpr``, ``n_boot``, ``seed``) before any allocation."""
    for name, value in values.items():
        EVALUATION_PARAMS[name].validate(value, cli)


def method_table(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per method (name, aliases, parameters with defaults, negatives, paper), for docs and ``--help``."""
    rows = []
    for m in (get_method(n) for n in (names or METHODS)):
        params = {p: PARAMS[p].default for p in m.params}
        rows.append(
            {
                "name": m.name,
                "aliases": list(m.aliases),
                "params": params,
                "needs_negatives": m.needs_negatives,
                "paper": m.paper,
            }
        )
    return rows


def scorer_params(method: str, params: Mapping[str, Any], own: float | None = None) -> dict[str, Any]:
    """The subset of a shared ``params`` set that ``method`` takes (:func:`params_for`), checked.

    With ``own``, the model's logit scale (``VLM.logit_scale``: 100 for CLIP's released weights,
    SigLIP's learned one), a logit baseline (msp, maxlogit, energy, gen) not given ``logit_scale`` takes it."""
    if own is not None and params.get("logit_scale") is None and "logit_scale" in get_method(method).params:
        params = {**params, "logit_scale": own}
    if method == "neglabel_eoe" and params.get("T") is not None and params.get("penalty_T") is None:
        logger.warning("T is the temperature of mcm/glmcm/eoe; neglabel_eoe's penalty takes penalty_T (default: tau)")
    return params_for(method, params)
