"""The scorer and metric options of ``score``, ``sweep``, ``coverage`` and ``report``, generated from the
method registry (:func:`scoring_options`): each registered parameter's flag, type, default and help, read
when the CLI is built, so a plug-in's method brings its own flags; and their checks before any work."""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from negvocab.cli.flags import param_flag, reserve_flags
from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins
from negvocab.scoring.methods import (
    EVALUATION_PARAMS,
    PARAMS,
    RUN_PARAMS,
    Method,
    Param,
    check_evaluation,
    check_shared,
    get_method,
    list_methods,
)

__all__ = ["SHORT_FLAGS", "check_scoring_options", "refuse_unused_params", "scoring_options"]


def _param_option(spec: Param, *short: str) -> Any:
    """The typer option of a registry parameter: its flag (:func:`~negvocab.cli.flags.param_flag`), its
    type and its help (with the limit)."""
    kind = spec.kind | None if spec.optional else spec.kind
    flag = param_flag(spec.name)
    panel = "Evaluation" if spec.name in EVALUATION_PARAMS and spec.name not in PARAMS else "Method parameters"
    return Annotated[
        kind, typer.Option(flag, *short, help=f"{spec.doc} Must be {spec.limit()}.", rich_help_panel=panel)
    ]


#: short flags of registry options
SHORT_FLAGS = {"groups": ("-G",), "T": ("-T",)}


def scoring_options(
    *names: str,
    methods: Callable[[Method], bool] | None = None,
    exclude: tuple[str, ...] = (),
    evaluation: tuple[str, ...] = (),
) -> Callable[[Callable[..., Any]], Any]:
    """Give a command the registry's scorer parameters and ``evaluation`` (metric settings), each with
    its flag, type, default and help from :mod:`negvocab.scoring.methods`; the command receives them as
    two dicts, ``params`` and ``metrics``, so no command lists them again.

    The scorer parameters are ``names`` plus, with ``methods``, those of every registered method it
    selects (less ``exclude``), read when the CLI is built: a plug-in's method brings its own
    parameters' flags. A ``--method`` option's help lists the selected methods from the registry."""

    def decorate(command: Callable[..., Any]) -> Any:
        return _RegistryCommand(command, names, methods, exclude, evaluation)

    return decorate


class _RegistryCommand:
    """A command whose registry options are read from the registry each time typer builds it (its
    signature is a property), so methods registered after import (plug-ins) get their flags."""

    def __init__(
        self,
        command: Callable[..., Any],
        names: tuple[str, ...],
        methods: Callable[[Method], bool] | None,
        exclude: tuple[str, ...],
        evaluation: tuple[str, ...],
    ) -> None:
        self.command, self.names, self.methods, self.exclude, self.evaluation = (
            command,
            names,
            methods,
            exclude,
            evaluation,
        )
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            setattr(self, attr, getattr(command, attr))
        own = [p for p in inspect.signature(command).parameters.values() if p.name not in ("params", "metrics")]
        self.owner = f"negvocab {command.__name__.removesuffix('_cmd').replace('_', ' ')}"
        reserve_flags(
            self.owner, [f for p in own if p.name not in PARAMS and p.name not in EVALUATION_PARAMS for f in _flags(p)]
        )

    def offered(self) -> list[str]:
        """The methods whose parameters the command takes (all with ``methods`` None: none), plug-ins' included:
        ``$NEGVOCAB_PLUGINS`` and entry points are loaded first, whoever builds the command (``main`` or a test)."""
        if self.methods is None:
            return []
        try:
            load_plugins()
        except InputError:  # a plug-in that fails to import: the app says so (an error, or a warning with --help)
            pass
        return list_methods(self.methods)

    def param_names(self) -> list[str]:
        """The scorer parameters: ``names`` and the offered methods', in registry order."""
        used = {p for m in self.offered() for p in get_method(m).params} - set(self.exclude)
        return [p for p in PARAMS if p in used or p in self.names]

    def _parameters(self) -> tuple[inspect.Signature, list[inspect.Parameter]]:
        sig = inspect.signature(self.command)
        hints = typing.get_type_hints(self.command, include_extras=True)
        kept = []
        for p in sig.parameters.values():
            if p.name in ("params", "metrics"):
                continue
            annotation = hints.get(p.name, p.annotation)
            if p.name == "method" and self.methods is not None:
                annotation = _with_help(annotation, self.offered())
            kept.append(p.replace(annotation=annotation))
        specs = [*((n, PARAMS[n]) for n in self.param_names()), *((n, EVALUATION_PARAMS[n]) for n in self.evaluation)]
        refused = self.refused()
        added = [
            inspect.Parameter(
                n,
                inspect.Parameter.KEYWORD_ONLY,
                default=spec.default,
                annotation=_param_option(spec, *SHORT_FLAGS.get(n, ())),
            )
            for n, spec in specs
            if n not in refused and n not in sig.parameters  # a plug-in's flag never hides a command's own
        ]
        return sig, [*kept, *added]

    def refused(self) -> dict[str, str]:
        """The command's registry parameters it cannot offer, each with its one-line reason: a flag that
        is an option of the command's own, or that another parameter has."""
        own = inspect.signature(self.command).parameters
        taken = {flag for p in own.values() if p.name not in ("params", "metrics") for flag in _flags(p)}
        flags: dict[str, str] = {}
        for n in (*PARAMS, *RUN_PARAMS, *EVALUATION_PARAMS):
            flags.setdefault(param_flag(n), n)
        out = {}
        for n in (*self.param_names(), *self.evaluation):
            flag = param_flag(n)
            if flag in taken or n in own:
                what = f"flag {flag}" if flag in taken else "its name"
                out[n] = f"parameter {n}: {what} is an option of its own of {self.owner}; rename the parameter"
            elif flags[flag] != n:
                out[n] = f"parameter {n}: flag {flag} is taken by {flags[flag]!r}; rename the parameter"
        return out

    @property
    def __signature__(self) -> inspect.Signature:
        sig, parameters = self._parameters()
        return sig.replace(parameters=parameters)

    @property
    def __annotations__(self) -> dict[str, Any]:  # type: ignore[override]
        sig, parameters = self._parameters()
        hints = typing.get_type_hints(self.command, include_extras=True)
        return {**{p.name: p.annotation for p in parameters}, "return": hints.get("return")}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        refused = self.refused()
        if refused:  # a plug-in's parameter the command cannot offer: one line, before any work
            raise InputError(next(iter(refused.values())))
        own = inspect.signature(self.command).parameters
        params = {n: kwargs.pop(n, PARAMS[n].default) for n in self.param_names() if n not in own}
        metrics = {n: kwargs.pop(n, EVALUATION_PARAMS[n].default) for n in self.evaluation}
        return self.command(*args, **kwargs, params=params, metrics=metrics)


def _flags(param: inspect.Parameter) -> tuple[str, ...]:
    """The flags of a command's own option (``--name`` from its name when none is declared)."""
    meta = getattr(param.annotation, "__metadata__", ())
    info = next((m for m in meta if isinstance(m, typer.models.ParameterInfo)), None)
    first = getattr(info, "default", None)  # in Annotated, typer keeps the first flag as the default
    decls = (first, *(getattr(info, "param_decls", None) or ()))
    flags = tuple(d for d in decls if isinstance(d, str) and d.startswith("-"))
    return flags or ("--" + param.name.replace("_", "-"),)


def _with_help(annotation: Any, methods: list[str]) -> Any:
    """``annotation`` (an ``Annotated[..., typer.Option]``) with its help's ``{methods}`` filled from the registry."""
    meta = getattr(annotation, "__metadata__", ())
    info = next((m for m in meta if isinstance(m, typer.models.OptionInfo)), None)
    if info is None or not info.help or "{methods}" not in info.help:
        return annotation
    filled = copy.copy(info)
    filled.help = info.help.replace("{methods}", ", ".join(methods))
    return Annotated[annotation.__origin__, filled]


def check_scoring_options(
    params: Mapping[str, Any], *, convention: str, tpr: float, n_boot: int = 0, seed: int = 0
) -> None:
    """Reject bad scoring options before a model is loaded or an image is read (the registry's limits,
    named by their flags)."""
    check_evaluation(flags=param_flag, convention=convention, tpr=tpr, n_boot=n_boot, seed=seed)
    check_shared(params, flags=param_flag)


def refuse_unused_params(params: Mapping[str, Any], chosen: list[str], *, own: tuple[str, ...] = ()) -> None:
    """Refuse a method parameter set away from its default that none of the ``chosen`` methods takes
    (``--tau`` with ``--method mcm``: silently unused before), in one line naming its flag and the
    methods that take it; where only some of several chosen methods take it, say which, as a warning.
    ``own``: parameters the command uses itself (score's ``--seed`` seeds the bootstrap too)."""
    for name, value in params.items():
        if name in own or name not in PARAMS or value == PARAMS[name].default:
            continue
        users = [m for m in chosen if name in get_method(m).params]
        if not users:
            takers = [m for m in list_methods() if name in get_method(m).params]
            raise InputError(
                f"{param_flag(name)}: no chosen method takes it (--method {', '.join(chosen)}); "
                f"it is a parameter of {', '.join(takers)}"
            )
        if len(users) < len(chosen):
            others = ", ".join(m for m in chosen if m not in users)
            typer.echo(f"warning: {param_flag(name)} is used by {', '.join(users)} only (not {others})", err=True)
