"""Each method's options model (``Method.options``): generated from its Params for a built-in, taking and
refusing what ``check_params`` does in the same words; given by a plug-in, its fields are the parameters."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, Field, ValidationError

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import methods as R
from negvocab.scoring import param_registry
from negvocab.scoring.params import Param
from tests.plugins import toy_stream

#: values tried on every parameter: in and out of every kind of limit, of the wrong type, None
VALUES = (None, 0, 1, 2, -1, 0.0, 0.5, 1.0, 1.5, 5, 100, 100_001, -0.5, float("inf"), float("nan"), True,
          np.int64(3), np.float32(0.5), "x", "task", "sample")  # fmt: skip


def _model_says(model: type[BaseModel], name: str, value: object) -> str | None:
    """None if ``model`` takes ``value`` for ``name``, else the message of its refusal."""
    try:
        model.model_validate({name: value})
    except ValidationError as e:
        cause = e.errors()[0]["ctx"]["error"]
        return str(cause)
    return None


def _check_says(method: str, name: str, value: object) -> str | None:
    try:
        R.check_params(method, {name: value})
    except InputError as e:
        return str(e)
    return None


@pytest.mark.parametrize("param", sorted(param_registry._BUILTIN_PARAMS))  # built-ins: a plug-in's may be gone
def test_a_built_in_s_options_validate_like_check_params(param):
    """For every registered parameter, in every method that takes it: the same values accepted and
    refused, with the same one-line message."""
    takers = [m for m in R.list_methods() if param in R.get_method(m).params]
    assert takers, param
    for method in takers:
        model = R.get_method(method).options
        assert model.model_fields[param].default == R.PARAMS[param].default
        assert model.model_fields[param].description == R.PARAMS[param].doc
        for value in (*VALUES, *R.PARAMS[param].choices):
            assert _model_says(model, param, value) == _check_says(method, param, value), (method, param, value)


def test_the_options_model_says_the_limits_and_refuses_other_names():
    schema = R.get_method("neglabel").options.model_json_schema()["properties"]
    assert schema["groups"]["ge"] == 1 and schema["groups"]["type"] == "integer"
    assert schema["grouping"]["enum"] == list(R.GROUPINGS)
    assert schema["tau"]["gt"] == 0 and schema["tau"]["type"] == "number"
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        R.get_method("mcm").options.model_validate({"tau": 0.1})
    assert R.get_method("mcm").options is R.get_method("mcm").options  # built once


class WeightOptions(BaseModel):
    nv_weight: float = Field(0.5, gt=0, le=2, description="A weight.")
    nv_count: int | None = Field(None, ge=1, description="A count.")
    nv_mode: Literal["fast", "slow"] = Field("fast", description="A mode.")
    tau: float = 0.01  # a registered parameter: it is that parameter


def test_a_plugin_s_options_model_fields_are_its_parameters():
    try:
        m = negvocab.register_method("nv_opts", "negvocab.scoring.mcm:mcm", options=WeightOptions)
        assert m.params == ("nv_weight", "nv_count", "nv_mode", "tau") and m.options is WeightOptions
        assert R.PARAMS["nv_weight"] == Param("nv_weight", float, 0.5, "A weight.", check="positive")
        assert R.PARAMS["nv_count"] == Param("nv_count", int, None, "A count.", check="min", low=1, optional=True)
        assert R.PARAMS["nv_mode"].choices == ("fast", "slow") and R.PARAMS["tau"].doc.startswith("NegLabel")
        assert R.check_params("nv_opts", {"nv_weight": 2.0, "nv_mode": "slow"}) == {"nv_weight": 2.0, "nv_mode": "slow"}
        with pytest.raises(InputError, match=r"^nv_weight must be a positive number, got -1$"):
            R.check_params("nv_opts", {"nv_weight": -1})
        with pytest.raises(InputError, match=r"^nv_opts: nv_weight input should be less than or equal to 2, got 3$"):
            R.check_params("nv_opts", {"nv_weight": 3})  # the model's own limit, beyond what a Param says
        with pytest.raises(InputError, match=r"^nv_opts: --nv-weight input should be less than or equal to 2"):
            R.check_shared({"nv_weight": 3}, cli=True)
    finally:
        negvocab.unregister_method("nv_opts", missing_ok=True)
        for name in ("nv_weight", "nv_count", "nv_mode"):
            R.PARAMS.pop(name, None)


class Required(BaseModel):
    nv_x: float


class Text(BaseModel):
    nv_y: str = "a"


def test_an_options_model_a_parameter_cannot_be_is_refused_in_one_line():
    with pytest.raises(InputError, match=r"^method 'nv_r': option nv_x needs a default"):
        negvocab.register_method("nv_r", "negvocab.scoring.mcm:mcm", options=Required)
    with pytest.raises(InputError, match=r"^method 'nv_t': option nv_y: its type must be float, int or a Literal"):
        negvocab.register_method("nv_t", "negvocab.scoring.mcm:mcm", options=Text)
    with pytest.raises(InputError, match=r"^method 'nv_d': options must be a pydantic model class"):
        negvocab.register_method("nv_d", "negvocab.scoring.mcm:mcm", options=dict)
    with pytest.raises(InputError, match=r"give params or options .*, not both$"):
        negvocab.register_method("nv_b", "negvocab.scoring.mcm:mcm", ["tau"], options=WeightOptions)
    assert not {"nv_r", "nv_t", "nv_d", "nv_b"} & set(R.METHODS) and "nv_x" not in R.PARAMS


class StreamOptions(BaseModel):
    ood_weight: float = 1.0
    ood_threshold: float = 0.5


def test_a_stream_method_takes_an_options_model():
    try:
        m = negvocab.register_stream_method("nv_stream", toy_stream.RunningMeanOOD, options=StreamOptions)
        assert m.kind == "stream" and m.params == ("ood_weight", "ood_threshold") and m.options is StreamOptions
    finally:
        negvocab.unregister_method("nv_stream", missing_ok=True)
