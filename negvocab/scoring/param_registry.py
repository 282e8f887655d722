"""The scorer parameters by name (one meaning for a name across methods), the parameters every scorer
accepts (where the maths runs) and those of the metrics, and :func:`register_param` for a plug-in's own.

The method registry (:mod:`negvocab.scoring.methods`) checks a method's parameters against these and
re-exports every name here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from negvocab.core.errors import InputError
from negvocab.scoring.metrics import CONVENTIONS
from negvocab.scoring.params import Param

__all__ = [
    "EVALUATION_PARAMS",
    "GROUPINGS",
    "MAX_BOOT",
    "MAX_DRAWS",
    "PARAMS",
    "RUN_PARAMS",
    "check_evaluation",
    "register_param",
]

MAX_BOOT = 100_000  # bootstrap resamples: 1,000 is the usual; more only costs time
MAX_DRAWS = 100_000  # OOD-subsampling draws per size (negvocab.subsample): 1,000 is the paper's
#: NegLabel groupings (:mod:`negvocab.scoring.grouping`)
GROUPINGS: tuple[str, ...] = ("stratified", "random", "neglabel")


def _p(name: str, kind: type, default: Any, doc: str, **kw: Any) -> tuple[str, Param]:
    return name, Param(name, kind, default, doc, **kw)


#: every scorer parameter, by name (one meaning for a name across methods)
PARAMS: dict[str, Param] = dict([
    _p("tau", float, 0.01, "NegLabel temperature on cosines.", check="positive"),
    _p("groups", int, 100, "NegLabel groups G (clamped to the vocabulary size).", check="min", low=1),
    _p("grouping", str, "stratified",
       "NegLabel grouping: stratified (rank r -> group r mod G), random, or neglabel "
       "(NegLabel's released code exactly: drops the last M mod G labels, "
       "torch permutation seeded with --seed on the scoring device).",
       check="choice", choices=tuple(GROUPINGS)),
    _p("seed", int, 0,
       "The grouping seed: seeds the random/neglabel grouping of the negatives (NegLabel's and AdaNeg's; "
       "NegLabel's code uses 0) and is TANL's set-up seed (its noise images and the order of its first "
       "queues); recorded in the results. On the command line --seed is also the bootstrap seed of the "
       "intervals; a test-time method's stream order is seeded by the stream seed (--stream-seeds).",
       check="min", low=0),
    _p("beta", float, 0.25, "EOE penalty weight.", check="finite"),
    _p("T", float, 1.0, "Softmax temperature T on cosines of mcm, glmcm and eoe (default 1).",
       check="positive", optional=True),
    _p("penalty_T", float, None, "Temperature of neglabel_eoe's EOE penalty (default: --tau).",
       check="positive", optional=True),
    _p("lam", float, 1.0, "GL-MCM weight of the local term.", check="nonneg"),
    _p("topk", int, None,
       "NegLabel with each image's k nearest negatives only (FAISS search; an estimate with bounds).",
       check="min", low=1, optional=True),
    _p("logit_scale", float, None,
       "Logits of msp, maxlogit, energy and gen: logit scale x cosine (default: the model's own "
       "learned scale, 100 for CLIP's released weights; 100 where no model is given; "
       "a temperature T on the logits is a scale s/T).",
       check="positive", optional=True),
    _p("gamma", float, 0.1, "GEN exponent gamma (the paper's 0.1).", check="positive"),
    _p("top_classes", int, 100,
       "GEN's top classes (M in GEN's paper; not the vocabulary size): the largest ID probabilities "
       "summed (the paper's 100; clamped to the ID classes).",
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
            "Scoring device (default: the device of the image embeddings).",
            optional=True,
        ),
        _p(
            "chunk_size",
            int,
            None,
            "Images scored at once (default: sized from free memory).",
            check="min",
            low=1,
            optional=True,
        ),
    ]
)

#: the built-in parameters: their meaning is never replaced by a plug-in (sealed by the catalogue's last step)
_BUILTIN_PARAMS: set[str] = set(PARAMS)

#: how metrics are read off the scores (every evaluation, sweep, grid and diagnostic)
EVALUATION_PARAMS: dict[str, Param] = dict(
    [
        _p(
            "convention",
            str,
            "paper",
            "FPR convention: paper (ID-anchored), hendrycks or openood.",
            check="choice",
            choices=tuple(CONVENTIONS),
        ),
        _p("tpr", float, 0.95, "TPR of the FPR metric (0.95 = FPR@95).", check="unit"),
        _p(
            "n_boot",
            int,
            1000,
            "Bootstrap resamples of OOD images for the CIs (0: none).",
            check="range",
            low=0,
            high=MAX_BOOT,
        ),
        _p("seed", int, 0, "The bootstrap seed: seeds the resampling of the CIs.", check="min", low=0),
    ]
)


def _param_problem(param: Param, replace: bool) -> str | None:
    """Why ``param`` cannot be registered (None: it can). A built-in's meaning is never replaced."""
    if not isinstance(param, Param):
        return f"register_param takes a negvocab.Param, got {type(param).__name__}"
    if not param.name.isidentifier():
        return f"a parameter name must be a Python identifier, got {param.name!r}"
    if param.flag is not None and not param.flag.startswith("--"):
        return f"parameter {param.name}: flag must start with '--', got {param.flag!r}"
    if param.default is not None or not param.optional:
        try:  # a default outside its own limits would fail every command that offers the parameter
            param.validate(param.default)
        except InputError as e:
            return f"parameter {param.name}: default {param.default!r} refused ({e}); None needs optional=True"
    known = PARAMS.get(param.name)
    if known == param:
        return None
    if param.name in RUN_PARAMS or (known is not None and (not replace or param.name in _BUILTIN_PARAMS)):
        doc = (known or RUN_PARAMS[param.name]).doc
        return f"parameter {param.name!r} is registered already with another meaning ({doc!r})"
    return None


def _warn_flag(param: Param) -> None:
    """A flag given that is not the one derived from the name works for one release, with a warning."""
    derived = _derived(param.name)
    if param.flag is not None and param.flag != derived:
        warnings.warn(
            f"parameter {param.name}: flag {param.flag} given; a parameter's flag is derived from its name now "
            f"({derived}), and a flag given works until the next release",
            DeprecationWarning,
            stacklevel=3,
        )


def register_param(param: Param, *, replace: bool = False) -> Param:
    """Add a scorer parameter (its type, default, limits and meaning) for methods to take.

    The same ``Param`` again is a no-op; a name taken with another meaning is :class:`InputError`
    (one meaning for a name across methods), unless ``replace`` (a plug-in's own parameter changed in a
    notebook; a built-in parameter is never replaced). A default outside its own limits is refused.
    Its command-line flag is derived from its name by the CLI, which refuses a flag another option has.

    Parameters
    ----------
    param : Param
        The parameter.
    replace : bool, default False
        Replace a plug-in's parameter of the same name and another meaning instead of refusing it.
    """
    problem = _param_problem(param, replace)
    if problem:
        raise InputError(problem)
    _warn_flag(param)
    PARAMS[param.name] = param
    return param


def _derived(name: str) -> str:
    """The command-line flag derived from a parameter's name."""
    return "--" + name.replace("_", "-")


def check_evaluation(*, cli: bool = False, flags: Callable[[str], str] | None = None, **values: Any) -> None:
    """Check the metric settings given (``convention``, ``tpr``, ``n_boot``, ``seed``) before any allocation;
    errors name them as :func:`check_shared`'s do."""
    for name, value in values.items():
        EVALUATION_PARAMS[name].validate(value, cli, flag=flags(name) if flags else None)


def _seal_builtins() -> None:
    """Mark every parameter registered so far as a built-in's (never replaced): the catalogue's last step."""
    _BUILTIN_PARAMS.update(PARAMS)
