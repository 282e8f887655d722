"""The method registry: every zero-shot OOD scorer, its parameters and their limits, in one place.

One :class:`Method` entry per scorer says its name and aliases, its kernel, its one-pass (vocabulary-size
sweep) form, the parameters it takes, whether it needs negative labels, and the paper it comes from.
One :class:`Param` entry per parameter (in :data:`PARAMS`, kept by :mod:`negvocab.scoring.param_registry`)
says its type, default, limits and meaning; a method's
:attr:`Method.options` is a pydantic model of its parameters (:mod:`negvocab.scoring.params`). The API
validates against them at the boundary (:func:`check_params`, as scikit-learn's ``validate_params``);
the CLI options (each flag derived from its parameter's name, by the CLI), the grid config, sweeps and
diagnostics read them. A method is added from anywhere
(a notebook, a plug-in package) with :func:`register_method`, its kernel a ``"pkg.module:fn"`` target
or a callable; the pipelines ask its entry's capabilities (negatives, inputs, one-pass and gains
forms, device-bound values, the model's scale), never its name.

>>> from negvocab.scoring.methods import METHODS, get_method
>>> get_method("GL-MCM").name, get_method("neglabel").needs_negatives
('glmcm', True)
>>> sorted(METHODS["eoe"].params)
['T', 'beta']
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import numpy as np

from negvocab.core.deprecation import rename_keys
from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, check_now, check_target, decorator, resolve_callable
from negvocab.scoring.param_registry import (
    EVALUATION_PARAMS,
    GROUPINGS,
    MAX_BOOT,
    MAX_DRAWS,
    PARAMS,
    RUN_PARAMS,
    _derived,
    _param_problem,
    _warn_flag,
    check_evaluation,
    register_param,
)
from negvocab.scoring.params import Param, check_options, options_model, params_from_model
from negvocab.scoring.providers import INPUT_PROVIDERS

V = TypeVar("V")  # a kernel reference _checked returns as it was given
F = TypeVar("F", bound=Callable[..., Any])  # a kernel register_method decorates

logger = logging.getLogger(__name__)

__all__ = [
    "EVALUATION_PARAMS",
    "GROUPINGS",
    "MAX_BOOT",
    "MAX_DRAWS",
    "INPUTS",
    "KINDS",
    "METHODS",
    "PARAMS",
    "REGISTRY",
    "RUN_PARAMS",
    "Method",
    "Param",
    "batch_method",
    "canonical_method",
    "check_evaluation",
    "check_params",
    "check_shared",
    "get_method",
    "list_methods",
    "method_table",
    "needs_negatives",
    "params_for",
    "register_method",
    "register_param",
    "scorer_params",
    "unregister_method",
]


class _InputsView(Mapping[str, str]):
    """The declared method inputs, name -> what it is (:mod:`negvocab.scoring.providers` holds them)."""

    def __getitem__(self, name: str) -> str:
        if name not in INPUT_PROVIDERS:
            raise KeyError(name)
        return INPUT_PROVIDERS.get(name).doc

    def __iter__(self) -> Iterator[str]:
        return iter(INPUT_PROVIDERS.names())

    def __len__(self) -> int:
        return len(INPUT_PROVIDERS)


#: what a method may ask for beside the embeddings (the input registry, :func:`negvocab.register_input`)
INPUTS: Mapping[str, str] = _InputsView()
#: the kinds of entry: ``batch`` (a pure scorer over one batch; every pipeline serves it) and the kinds
#: other modules add (a stream method, fed images in order, is one); unknown kinds are kept, not refused
KINDS: tuple[str, ...] = ("batch", "stream")

Kernel = str | Callable[..., Any]
_DECORATE: Any = object()  # register_method given no kernel: a decorator


@dataclass(frozen=True)
class Method:
    """One zero-shot OOD detector: ``scorer(image_emb, id_emb[, neg_emb], **params)`` -> float64 per image, high = ID.

    A kernel is a ``"pkg.module:function"`` target (imported on first use, so the registry is read,
    listed and validated without importing torch) or a callable. The fields past ``paper`` are the
    method's capabilities: the pipelines ask them, never its name.

    Parameters
    ----------
    name : str
        The method's name.
    kernel : Kernel
        ``scorer(image_emb, id_emb[, neg_emb], **params)``: a callable or a ``"pkg.module:function"`` target.
    params : tuple of str
        The parameters it takes.
    paper : str, default ""
        The paper it comes from.
    needs_negatives : bool, default False
        Whether it scores against negative label embeddings.
    aliases : tuple of str, default ()
        Other names of the method.
    one_pass_kernel : Kernel, optional
        Every vocabulary size M in one pass.
    inputs : tuple of str, default ()
        Inputs beside the embeddings (:data:`INPUTS`).
    device_bound : tuple of (str, value) pairs, default ()
        Parameter values under which the scores depend on the kind of device.
    gains_kernel : Kernel, optional
        The incremental form for marginal gains.
    topk_kernel : Kernel, optional
        The top-k form, taken when ``topk`` is given.
    model_scale : str, optional
        The parameter that takes the model's own logit scale when none is given.
    hints : tuple of (str, str, str), default ()
        (given, unless, warning): said when the shared parameter ``given`` is set, this method does not
        take it and ``unless`` is unset.
    kind : str, default "batch"
        ``batch``, or a kind another module serves (``stream``).
    stream : str or type, optional
        A stream method's ``StreamMethod`` class, or its target.
    options_class : type, optional
        The pydantic options model a plug-in gave.
    """

    name: str
    kernel: Kernel
    params: tuple[str, ...]
    paper: str = ""
    needs_negatives: bool = False
    aliases: tuple[str, ...] = ()
    #: ``one_pass(image_emb, id_emb, ranked_neg_emb, sizes, **p)`` -> {M: scores}: every vocabulary size M in one pass
    one_pass_kernel: Kernel | None = None
    #: inputs beside the embeddings (:data:`INPUTS`; glmcm: ``local``, the patch features)
    inputs: tuple[str, ...] = field(default=())
    #: parameter values under which the scores depend on the kind of device they are computed on
    #: (``grouping="neglabel"``: NegLabel's ``torch.randperm`` differs between CPU and CUDA)
    device_bound: tuple[tuple[str, Any], ...] = field(default=())
    #: the incremental form for marginal gains: ``gains(v, t, n, **params)`` -> an object with
    #: ``logits(cand)`` (a tuple of [n, C] per-candidate tensors), ``scores(*cols)`` ([n, C]: each
    #: candidate appended alone), ``base_scores()`` and ``append(cand_row, *col)``
    #: (:mod:`negvocab.scoring.incremental`). None: gains rescore ``neg + [c]`` per candidate
    gains_kernel: Kernel | None = None
    #: the top-k form ``topk(image_emb, id_emb, neg_emb, k, **params)`` -> ``TopkScores``, taken when ``topk`` is given
    topk_kernel: Kernel | None = None
    #: the parameter that takes the model's own logit scale when none is given (the logit baselines)
    model_scale: str | None = None
    #: (given, unless, warning): said when the shared parameter ``given`` is set, this method does not
    #: take it and ``unless`` is unset (neglabel_eoe's penalty takes penalty_T, not T)
    hints: tuple[tuple[str, str, str], ...] = field(default=())
    #: ``batch``, or a kind another module serves (``stream``); see :data:`KINDS`
    kind: str = "batch"
    #: a stream method's :class:`~negvocab.scoring.stream.StreamMethod` class, or its "pkg.module:Class"
    stream: str | type | None = None
    #: the pydantic options model a plug-in gave (its fields are parameters of ``params``); None:
    #: :attr:`options` is generated from the parameters' :class:`Param` entries
    options_class: type | None = field(default=None, repr=False)

    @property
    def options(self) -> type[Any]:
        """The method's options: a pydantic model, one field per parameter (its type, default, description
        and limits); it takes and refuses what :func:`check_params` does."""
        if self.options_class is not None:
            return self.options_class
        return options_model(self.name, tuple(PARAMS[p] for p in self.params))

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
        return _resolve(self.kernel, f"method {self.name!r} kernel")

    @property
    def one_pass(self) -> Callable[..., dict[int, np.ndarray]] | None:
        """The one-pass sweep kernel, or None where each size is scored on its own."""
        return _resolve(self.one_pass_kernel, f"method {self.name!r} one_pass") if self.one_pass_kernel else None

    @property
    def gains(self) -> Callable[..., Any] | None:
        """The incremental form for marginal gains, or None (gains then rescore per candidate)."""
        return _resolve(self.gains_kernel, f"method {self.name!r} gains") if self.gains_kernel else None

    @property
    def topk(self) -> Callable[..., Any] | None:
        """The top-k form, or None where ``topk`` is not served."""
        return _resolve(self.topk_kernel, f"method {self.name!r} topk") if self.topk_kernel else None

    def accepts(self) -> set[str]:
        """Every keyword ``scorer`` takes: its parameters, the run parameters and its extra inputs."""
        return {*self.params, *RUN_PARAMS, *self.inputs}


def _resolve(ref: Kernel, what: str) -> Callable[..., Any]:
    """A kernel: a callable as given; ``"pkg.module:fn"`` imported (torch is deferred to the first score)."""
    return resolve_callable(ref if callable(ref) else _target(str(ref), what), what=what)


def _target(ref: str, what: str) -> str:
    """``ref`` as the user wrote it: ``"mymodule:fn"`` is the top-level module ``mymodule``. For one
    release, a module without a dot that is no top-level module but one of :mod:`negvocab.scoring`
    (the old short form) is read there, with a :class:`DeprecationWarning`."""
    module, _, name = check_target(ref, what=what).partition(":")
    if "." in module or importlib.util.find_spec(module) is not None:
        return ref
    if importlib.util.find_spec(f"negvocab.scoring.{module}") is None:
        return ref  # resolve_target says that it does not import
    new = f"negvocab.scoring.{module}:{name}"
    return next(iter(rename_keys({ref: None}, {ref: new}, what, stacklevel=5)))


def _checked(ref: V, what: str) -> V:
    """``ref`` with a short target read as :func:`_target` says; a target outside negvocab imported
    and checked now (a built-in's stays lazy: it may import torch). Anything else is left to :func:`_check`."""
    if not isinstance(ref, str) or ":" not in ref:
        return ref
    target = _target(ref, what)
    check_now(target, what=what)
    return target  # type: ignore[return-value]


def _check(method: Method, extra_params: Mapping[str, Param] | None = None) -> Method:
    """A method entry is refused in one line where a pipeline could not serve it: an unknown
    parameter or input, a kernel neither a target nor a callable."""
    if not isinstance(method, Method):
        raise InputError(f"a method entry must be a negvocab.Method, got {type(method).__name__}")
    unknown = [p for p in method.params if p not in PARAMS and p not in (extra_params or {})]
    if unknown:
        raise InputError(
            f"method {method.name!r}: unknown parameter(s) {', '.join(unknown)}; "
            "register them first (negvocab.register_param)"
        )
    clash = [p for p in method.params if p in RUN_PARAMS or p in method.inputs]
    if clash:
        raise InputError(
            f"method {method.name!r}: {', '.join(clash)} is a run parameter or input, not a method parameter"
        )
    bad = [i for i in method.inputs if i not in INPUTS]
    if bad:
        raise InputError(
            f"method {method.name!r}: unknown input(s) {', '.join(bad)}; choose from {', '.join(INPUTS)} "
            "(declare a new one with negvocab.register_input)"
        )
    if method.kind == "stream" and method.stream is None:
        raise InputError(f"method {method.name!r}: a stream method needs its StreamMethod class (stream=)")
    kernels = {"kernel": method.kernel, "one_pass": method.one_pass_kernel, "gains": method.gains_kernel}
    if method.kind == "stream":
        kernels.pop("kernel")  # served by its StreamMethod class
    for what, ref in {**kernels, "topk": method.topk_kernel}.items():
        if ref is not None and not callable(ref) and (not isinstance(ref, str) or ":" not in ref):
            raise InputError(
                f"method {method.name!r}: {what} must be 'package.module:function' or a callable, got {ref!r}"
            )
    if method.model_scale is not None and method.model_scale not in method.params:
        raise InputError(f"method {method.name!r}: model_scale {method.model_scale!r} is not one of its parameters")
    return method


#: every registered method (built-ins below; plug-ins through :func:`register_method`)
REGISTRY: Registry[Method] = Registry("method")


def _builtin(method: Method) -> None:
    REGISTRY.register(method.name, _check(method), aliases=method.aliases)


class _MethodsView(Mapping[str, Method]):
    """``METHODS``: the registered methods by name, read-only and live (a plug-in's entry shows at once)."""

    def __getitem__(self, name: str) -> Method:
        if not isinstance(name, str) or name not in REGISTRY.names():
            raise KeyError(name)
        return REGISTRY.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY.names())

    def __len__(self) -> int:
        return len(REGISTRY)

    def __repr__(self) -> str:
        return f"METHODS({', '.join(REGISTRY.names())})"


#: the registered methods by name (read-only, live); register with :func:`register_method`
METHODS: Mapping[str, Method] = _MethodsView()


def __getattr__(name: str) -> Any:
    if name == "NEEDS_NEGATIVES":  # frozen at import before; one release of the old name
        warnings.warn(
            "negvocab.scoring.methods.NEEDS_NEGATIVES is deprecated: use needs_negatives(method) or "
            "list_methods(needs_negatives=True)",
            DeprecationWarning,
            stacklevel=2,
        )
        return frozenset(list_methods(needs_negatives=True))
    if name in ("COMMAND_FLAGS", "reserve_flags"):  # moved to the command line; one release of the old path
        warnings.warn(
            f"negvocab.scoring.methods.{name} is deprecated: the command line owns the flags "
            f"(negvocab.cli.flags.{name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module("negvocab.cli.flags"), name)  # a shim: looked up, not imported
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@overload
def register_method(
    name: str, kernel: Kernel | None, params: Iterable[str | Param] | Mapping[str, Param] = (), **kw: Any
) -> Method: ...
@overload
def register_method(
    name: str, *, params: Iterable[str | Param] | Mapping[str, Param] = (), **kw: Any
) -> Callable[[F], F]: ...
def register_method(  # type: ignore[misc]  # the overloads' **kw stand for the keywords below
    name: str,
    kernel: Kernel | None = _DECORATE,
    params: Iterable[str | Param] | Mapping[str, Param] = (),
    *,
    needs_negatives: bool = False,
    one_pass: Kernel | None = None,
    gains: Kernel | None = None,
    topk: Kernel | None = None,
    inputs: Iterable[str] = (),
    aliases: Iterable[str] = (),
    paper: str = "",
    device_bound: Iterable[tuple[str, Any]] = (),
    model_scale: str | None = None,
    kind: str = "batch",
    stream: str | type | None = None,
    options: type | None = None,
    replace: bool = False,
) -> Method | Callable[[F], F]:
    """Register a scoring method whose kernel lives in any module (``"pkg.module:fn"``) or is a callable.

    ``params``: the parameters it takes, by name (registered already) or as :class:`Param` (registered
    here, :func:`register_param`); or, instead, ``options``: a pydantic model whose fields are its
    parameters (``float``, ``int`` or a ``Literal`` of strings, each with a default; a field named as a
    registered parameter is that parameter), checked by the model too. The keywords are its
    capabilities (:class:`Method`); a test-time method is ``kind="stream"`` with its ``StreamMethod``
    class (or target) as ``stream`` and no kernel (:func:`negvocab.register_stream_method`). A name or
    alias taken is :class:`InputError` unless ``replace`` (a notebook re-running its cell). Everything
    is checked before anything is registered, so a refused call leaves the registry and the parameters
    as they were; a kernel target outside negvocab is imported now, so a wrong one fails here. Returns
    the entry.

    Given no kernel, it is a decorator that registers the function below it and returns it::

        @negvocab.register_method("mine", params=["tau"], needs_negatives=True)
        def mine(image_emb, id_emb, neg_emb, *, tau=0.01, device=None, chunk_size=None): ...

    Parameters
    ----------
    name : str
        The method's name (stripped, lower-cased).
    kernel : Kernel, optional
        ``scorer(image_emb, id_emb[, neg_emb], **params)``: a callable or a ``"pkg.module:fn"`` target;
        None for a stream method; not given: the decorator form.
    params : iterable of str or Param, or mapping name -> Param, default ()
        The parameters it takes, by name (registered already) or as :class:`Param` (registered here).
    needs_negatives : bool, default False
        Whether it scores against negative label embeddings.
    one_pass : Kernel, optional
        Every vocabulary size M in one pass (:attr:`Method.one_pass_kernel`).
    gains : Kernel, optional
        The incremental form for marginal gains (:attr:`Method.gains_kernel`).
    topk : Kernel, optional
        The top-k form, taken when ``topk`` is given (:attr:`Method.topk_kernel`).
    inputs : iterable of str, default ()
        Inputs beside the embeddings (:data:`INPUTS`).
    aliases : iterable of str, default ()
        Other names of the method.
    paper : str, default ""
        The paper it comes from.
    device_bound : iterable of (str, value) pairs, default ()
        Parameter values under which the scores depend on the kind of device.
    model_scale : str, optional
        The parameter that takes the model's own logit scale when none is given.
    kind : str, default "batch"
        ``batch``, or a kind another module serves (``stream``).
    stream : str or type, optional
        A stream method's ``StreamMethod`` class, or its ``"pkg.module:Class"`` target.
    options : type, optional
        A pydantic model whose fields are its parameters, instead of ``params`` (not both).
    replace : bool, default False
        Replace the method whose name or alias is taken instead of refusing it (a notebook re-running
        its cell).
    """
    # long: the Parameters section is half of it; the body checks the whole entry before registering it
    if kernel is _DECORATE:
        return decorator(register_method, name, {k: v for k, v in locals().items() if k not in ("name", "kernel")})
    what = f"method {str(name).strip().lower()!r}"
    kernel = _checked(kernel, f"{what} kernel")
    one_pass = _checked(one_pass, f"{what} one_pass")
    gains = _checked(gains, f"{what} gains")
    topk = _checked(topk, f"{what} topk")
    stream = _checked(stream, f"{what} stream")
    specs = list(params.values()) if isinstance(params, Mapping) else list(params)
    if options is not None:
        if specs:
            raise InputError(f"{what}: give params or options (a model whose fields are its parameters), not both")
        specs = [p.name if p.name in PARAMS else p for p in params_from_model(str(name).strip().lower(), options)]
    new = {p.name: p for p in specs if isinstance(p, Param)}
    for p in new.values():
        problem = _param_problem(p, replace)
        if problem:
            raise InputError(problem)
    method = Method(
        name=str(name).strip().lower(),
        kernel=kernel if kernel is not None else "",
        params=tuple(p.name if isinstance(p, Param) else str(p) for p in specs),
        paper=paper,
        needs_negatives=bool(needs_negatives),
        aliases=tuple(str(a).strip().lower() for a in aliases),
        one_pass_kernel=one_pass,
        inputs=tuple(inputs),
        device_bound=tuple(device_bound),
        gains_kernel=gains,
        topk_kernel=topk,
        model_scale=model_scale,
        kind=kind,
        stream=stream,
        options_class=options,
    )
    _check(method, new)
    REGISTRY.check_free(method.name, method.aliases, replace=replace)
    for p in new.values():
        _warn_flag(p)
    PARAMS.update(new)
    REGISTRY.register(method.name, method, aliases=method.aliases, replace=replace)
    return method


def unregister_method(name: str, *, missing_ok: bool = False) -> None:
    """Remove a registered method by its name (tests and notebooks that register a temporary one).

    Parameters
    ----------
    name : str
        The method's name (an alias is refused, not its owner removed).
    missing_ok : bool, default False
        Do nothing when no method has the name, instead of raising :class:`InputError`.
    """
    REGISTRY.unregister(name, missing_ok=missing_ok)


def list_methods(where: Callable[[Method], bool] | None = None, **capabilities: object) -> list[str]:
    """The registered method names, in registry order; those with ``capabilities`` (``needs_negatives=True``,
    ``kind="batch"``) and for which ``where(method)`` holds, when given.

    Parameters
    ----------
    where : callable, optional
        A test of each :class:`Method` entry; only those for which it holds are listed.
    **capabilities
        :class:`Method` fields and the values they must have (``needs_negatives=True``, ``kind="batch"``).
    """
    out = []
    for n in REGISTRY.names():
        m = REGISTRY.get(n)
        if all(getattr(m, k) == v for k, v in capabilities.items()) and (where is None or where(m)):
            out.append(n)
    return out


def needs_negatives(method: str) -> bool:
    """Whether ``method`` takes negative (or outlier) label embeddings."""
    return get_method(method).needs_negatives


def batch_method(method: str, what: str) -> Method:
    """The entry of ``method`` if it is a ``batch`` method (what ``what`` serves), else one :class:`InputError`."""
    m = get_method(method)
    if m.kind != "batch":
        raise InputError(
            f"{m.name} is a {m.kind} method; {what} serves batch methods ({', '.join(list_methods(kind='batch'))})"
        )
    return m


def canonical_method(method: str) -> str:
    """The registered name of ``method`` (case-insensitive, aliases accepted) or :class:`InputError`."""
    return REGISTRY.canonical(method)


def get_method(method: str) -> Method:
    """The :class:`Method` entry of ``method`` (a name or an alias).

    Parameters
    ----------
    method : str
        A registered method's name or alias; an unknown one is :class:`InputError`.
    """
    return REGISTRY.get(method)


def check_params(
    method: str, params: Mapping[str, Any], *, cli: bool = False, flags: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """``params`` if ``method`` takes every one and each value is allowed, else :class:`InputError`
    (one line naming the parameter, the value and what is allowed; by its flag, as ``flags`` spells a
    name, where the command line checks). Values are returned unchanged. A plug-in's options model
    (:attr:`Method.options_class`) checks them too."""
    m = get_method(method)
    unknown = sorted(set(params) - m.accepts())
    if unknown:
        raise InputError(
            f"{m.name}: unexpected parameter(s) {', '.join(unknown)}; accepted: {', '.join(sorted(m.accepts()))}"
        )
    for name, value in params.items():
        spec = PARAMS.get(name) or (RUN_PARAMS[name] if name == "chunk_size" else None)
        if spec is not None:
            spec.validate(value, cli, flag=flags(name) if flags else None)
    if m.options_class is not None:
        own = {k: v for k, v in params.items() if k in m.params}
        check_options(m.name, m.options_class, own, flags or (_derived if cli else None))
    return dict(params)


def params_for(
    method: str, params: Mapping[str, Any], *, cli: bool = False, flags: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """The subset of a shared parameter set (one ``negvocab score`` run drives several methods) that
    ``method`` takes, None values left out, each value checked."""
    m = get_method(method)
    given = {k: v for k, v in params.items() if k in m.accepts() and v is not None}
    return check_params(m.name, given, cli=cli, flags=flags)


def check_shared(params: Mapping[str, Any], *, cli: bool = False, flags: Callable[[str], str] | None = None) -> None:
    """Check every known parameter of a shared set (before any method or model is chosen); an error names
    a parameter as ``flags`` spells it (the command line's flags), else by its name (``--name`` with ``cli``)."""
    for name, value in params.items():
        if name in PARAMS:
            PARAMS[name].validate(value, cli, flag=flags(name) if flags else None)
    for m in (REGISTRY.get(n) for n in REGISTRY.names()):
        if m.options_class is not None:  # a plug-in's options model checks its parameters too
            own = {k: v for k, v in params.items() if k in m.params and v is not None}
            check_options(m.name, m.options_class, own, flags or (_derived if cli else None))


def method_table(names: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per method (name, aliases, parameters with defaults, capabilities, paper), for docs and ``--help``."""
    rows = []
    for m in (get_method(n) for n in (names or METHODS)):
        params = {p: PARAMS[p].default for p in m.params}
        rows.append(
            {
                "name": m.name,
                "aliases": list(m.aliases),
                "params": params,
                "needs_negatives": m.needs_negatives,
                "one_pass": m.one_pass_kernel is not None,
                "gains": m.gains_kernel is not None,
                "inputs": list(m.inputs),
                "kind": m.kind,
                "paper": m.paper,
            }
        )
    return rows


def scorer_params(method: str, params: Mapping[str, Any], own: float | None = None) -> dict[str, Any]:
    """The subset of a shared ``params`` set that ``method`` takes (:func:`params_for`), checked.

    With ``own``, the model's logit scale (``VLM.logit_scale``: 100 for CLIP's released weights,
    SigLIP's learned one), a method with a ``model_scale`` parameter (the logit baselines msp,
    maxlogit, energy, gen: ``logit_scale``) not given it takes it."""
    m = get_method(method)
    if own is not None and m.model_scale is not None and params.get(m.model_scale) is None:
        params = {**params, m.model_scale: own}
    for given, unless, text in m.hints:
        if given not in m.params and params.get(given) is not None and params.get(unless) is None:
            logger.warning("%s", text)
    return params_for(m.name, params)
