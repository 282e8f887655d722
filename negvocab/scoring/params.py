"""Method parameters: one :class:`Param` per parameter, and each method's options model built from them.

A :class:`Param` says a parameter's type, default, limits and meaning; its command-line flag is the
CLI's business (:func:`negvocab.cli.flags.param_flag` derives it from the name). A method's options
(:attr:`negvocab.scoring.methods.Method.options`) are a pydantic model: generated from its Params
(:func:`options_model`, each field checked by its Param, so the model accepts and refuses exactly
what :func:`~negvocab.scoring.methods.check_params` does, with the same one-line errors), or given by
a plug-in, whose fields then become its Params (:func:`params_from_model`).

>>> from negvocab.scoring.params import Param
>>> Param("margin", float, 0.5, "Weight.", check="positive").validate(2.0)
2.0
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import ParamValue

V = TypeVar("V")  # a value Param.validate returns as it was given

__all__ = ["Param", "check_options", "options_model", "params_from_model"]


@dataclass(frozen=True)
class Param:
    """One parameter: its type (``float``, ``int`` or ``str``), default, limits and meaning.

    ``check`` is the kind of limit: ``positive`` (finite > 0), ``nonneg`` (finite >= 0), ``finite``,
    ``unit`` (in (0, 1]), ``min`` (an integer >= ``low``), ``range`` (an integer in [``low``,
    ``high``]) or ``choice`` (one of ``choices``). ``optional``: None is accepted (the kernel's default).
    ``flag``: leave it out; the command line derives a parameter's flag from its name (``top_classes``
    -> ``--top-classes``). A flag given that differs from the derived one is used for one release.

    Parameters
    ----------
    name : str
        The parameter's name (a Python identifier).
    kind : type
        ``float``, ``int`` or ``str``.
    default : ParamValue
        Its default.
    doc : str
        Its meaning.
    flag : str, optional
        Leave it out (see above).
    check : str, default "finite"
        The kind of limit.
    low : float, optional
        The lower limit of ``min`` and ``range``.
    high : float, optional
        The upper limit of ``range``.
    choices : tuple of str, default ()
        The values of ``choice``.
    optional : bool, default False
        None is accepted.
    """

    name: str
    kind: type
    default: ParamValue
    doc: str
    flag: str | None = None
    check: str = "finite"
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False

    def validate(self, value: V, cli: bool = False, *, flag: str | None = None) -> V:
        """``value`` unchanged if allowed, else :class:`InputError` naming the parameter: by ``flag`` when
        given (the command line passes the flag it offers), by ``--name`` with ``cli``, else by its name."""
        name = flag or ((self.flag or "--" + self.name.replace("_", "-")) if cli else self.name)
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

    def constraints(self) -> dict[str, Any]:
        """The limits as pydantic ``Field`` constraints (``gt``, ``ge``, ``le``), for an options model's schema."""
        bounds: dict[str, dict[str, Any]] = {
            "positive": {"gt": 0},
            "nonneg": {"ge": 0},
            "unit": {"gt": 0, "le": 1},
            "min": {"ge": self.low or 0},
            "range": {"ge": self.low or 0, "le": self.high or 0},
        }
        return bounds.get(self.check, {})


@functools.cache
def options_model(name: str, params: tuple[Param, ...]) -> type[Any]:
    """The pydantic options model of method ``name`` with ``params``: one field per parameter (its type,
    default, description and limits); each value is checked by its :meth:`Param.validate`, so the model
    takes what :func:`~negvocab.scoring.methods.check_params` takes and refuses the rest in its words."""
    from pydantic import ConfigDict, Field, PlainValidator, create_model  # deferred: the registry reads without it

    fields: dict[str, Any] = {}
    for p in params:
        kind: Any = typing.Literal[p.choices] if p.check == "choice" else p.kind
        check = PlainValidator(p.validate, json_schema_input_type=kind)
        inner: Any = typing.Annotated[kind, check, Field(**p.constraints())]
        fields[p.name] = (inner | None if p.optional else inner, Field(p.default, description=p.doc))
    title = "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Options"
    config = ConfigDict(extra="forbid", protected_namespaces=())
    return create_model(title, __config__=config, __doc__=f"The parameters of {name}.", **fields)


def params_from_model(method: str, model: object) -> tuple[Param, ...]:
    """The :class:`Param` of each field of a plug-in's options ``model`` (a pydantic model class): its
    type (``float``, ``int``, a ``Literal`` of strings; ``| None`` optional), default, description and
    ``gt``/``ge``/``le`` limits. A field they cannot describe is one :class:`InputError`."""
    from pydantic import BaseModel  # deferred: the registry reads without it

    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InputError(f"method {method!r}: options must be a pydantic model class, got {model!r}")
    return tuple(_field_param(method, n, info) for n, info in model.model_fields.items())


def _field_param(method: str, name: str, info: Any) -> Param:
    where = f"method {method!r}: option {name}"
    if info.is_required():
        raise InputError(f"{where} needs a default (a method parameter is never required)")
    ann = info.annotation
    members = typing.get_args(ann) if typing.get_origin(ann) in (typing.Union, types.UnionType) else (ann,)
    kinds = [t for t in members if t is not type(None)]
    optional = len(kinds) < len(members)
    kind = kinds[0] if len(kinds) == 1 else None
    if typing.get_origin(kind) is typing.Literal and all(isinstance(c, str) for c in typing.get_args(kind)):
        choices = tuple(typing.get_args(kind))
        return Param(
            name, str, info.default, info.description or name, check="choice", choices=choices, optional=optional
        )
    if kind not in (float, int):
        raise InputError(
            f"{where}: its type must be float, int or a Literal of strings (| None), got {info.annotation}"
        )
    bounds = {type(m).__name__.lower(): getattr(m, type(m).__name__.lower()) for m in info.metadata}
    check, low, high = _check_of(kind, bounds)
    return Param(name, kind, info.default, info.description or name, check=check, low=low, high=high, optional=optional)


def _check_of(kind: type, bounds: Mapping[str, Any]) -> tuple[str, float | None, float | None]:
    """A Param's ``check`` (and ``low``, ``high``) for a field's ``gt``/``ge``/``le`` limits: the closest
    it can say; the model itself is run as well (:func:`check_options`), so nothing looser is accepted."""
    gt, ge, le = bounds.get("gt"), bounds.get("ge"), bounds.get("le")
    if kind is int:
        low = ge if ge is not None else gt + 1 if gt is not None else None
        if low is not None:
            return ("range", low, le) if le is not None else ("min", low, None)
        return "finite", None, None
    if gt == 0:
        return ("unit" if le == 1 else "positive"), None, None
    return ("nonneg" if ge == 0 else "finite"), None, None


def check_options(
    method: str, model: type[Any], values: Mapping[str, Any], flags: Callable[[str], str] | None = None
) -> None:
    """``values`` (some of a plug-in's options) checked by its options ``model``, else one :class:`InputError`
    naming the option (as ``flags`` spells it), its value and what the model says."""
    from pydantic import ValidationError  # deferred: the registry reads without it

    try:
        model.model_validate(dict(values))
    except ValidationError as e:
        err = e.errors()[0]
        name = str(err["loc"][0]) if err.get("loc") else ""
        shown = flags(name) if flags and name else name
        raise InputError(
            f"{method}: {shown} {err['msg'][:1].lower()}{err['msg'][1:]}, got {err.get('input')!r}"
        ) from None
