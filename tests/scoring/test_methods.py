"""The method registry: one entry per scorer, limits checked at the API boundary, read by the CLI,
sweeps, diagnostics and the grid config."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.grid.config import parse_config
from negvocab.scoring import methods as R
from negvocab.scoring import prefix_scores as sweep_mod


def _unit(a):
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype("float32")


@pytest.fixture
def emb():
    rng = np.random.default_rng(0)
    return _unit(rng.normal(size=(6, 8))), _unit(rng.normal(size=(4, 8))), _unit(rng.normal(size=(12, 8)))


def test_every_entry_matches_its_kernel():
    """The parameters an entry lists are exactly the kernel's keywords (bar the run parameters and inputs);
    a stream method's, its class's keywords with the registry's defaults."""

    for m in R.METHODS.values():
        if m.kind == "stream":  # no kernel: its StreamMethod class takes the listed parameters
            from negvocab.scoring.stream import make_stream

            assert set(make_stream(m.name).params) == set(m.params) and m.paper, m.name
            continue
        kernel = set(inspect.signature(m.scorer).parameters) - {"image_emb", "id_emb", "neg_emb"}
        listed = set(m.params) - {"topk"}  # topk is routed to neglabel_topk by negvocab.score
        assert kernel == listed | set(R.RUN_PARAMS) | set(m.inputs), m.name
        for p in m.params:
            if p in inspect.signature(m.scorer).parameters:
                assert inspect.signature(m.scorer).parameters[p].default == R.PARAMS[p].default, (m.name, p)
        assert m.paper and m.needs_negatives == ("neg_emb" in inspect.signature(m.scorer).parameters)
        if m.one_pass is not None:
            assert m.needs_negatives


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("neglabel", {"tau": 0}, "tau must be a positive number, got 0"),
        ("neglabel", {"groups": 0}, "groups must be >= 1, got 0"),
        ("neglabel", {"groups": 2.5}, "groups must be an integer, got 2.5"),
        ("neglabel", {"seed": True}, "seed must be an integer, got True"),
        ("neglabel", {"grouping": "zigzag"}, "unknown grouping 'zigzag'; choose one of stratified, random, neglabel"),
        ("eoe", {"T": -1.0}, "T must be a positive number, got -1.0"),
        ("eoe", {"beta": float("nan")}, "beta must be a finite number, got nan"),
        ("glmcm", {"lam": -0.5}, "lam must be a number >= 0, got -0.5"),
        ("mcm", {"tau": 0.01}, "mcm: unexpected parameter(s) tau; accepted: T, chunk_size, device"),
        ("neglabel", {"topk": 0}, "topk must be >= 1, got 0"),
    ],
)
def test_score_refuses_bad_parameters_at_the_boundary(emb, method, params, message):
    img, idt, neg = emb
    with pytest.raises(InputError) as e:
        negvocab.score(method, img, idt, neg, **params)
    assert str(e.value) == message


def test_the_cli_names_the_flag():
    """The command line passes its flags in (the historic spellings are its own); ``cli=True`` alone
    names a parameter by the flag derived from its name."""
    from negvocab.cli.flags import param_flag

    with pytest.raises(InputError, match=r"^--temperature must be a positive number, got 0.0$"):
        R.check_params("eoe", {"T": 0.0}, flags=param_flag)
    with pytest.raises(InputError, match=r"^--lambda must be a number >= 0, got -1$"):
        R.check_shared({"lam": -1}, flags=param_flag)
    with pytest.raises(InputError, match=r"^--top-classes must be >= 1, got 0$"):
        R.check_params("gen", {"top_classes": 0}, cli=True)
    with pytest.raises(InputError, match=r"^--n-boot must be between 0 and 100,000, got 100001$"):
        R.check_evaluation(cli=True, n_boot=R.MAX_BOOT + 1)


def test_evaluation_limits_hold_in_the_api_not_only_the_cli():
    """n_boot had no bound outside the CLI: the pipelines refuse it before reading an image."""
    for kwargs, message in (
        ({"n_boot": -5}, "n_boot must be between 0 and 100,000, got -5"),
        ({"tpr": 2.0}, r"tpr must be in \(0, 1\], got 2.0"),
        ({"seed": 1.5}, "seed must be an integer, got 1.5"),
        ({"convention": "fancy"}, "unknown convention 'fancy'"),
    ):
        with pytest.raises(InputError, match=message):
            negvocab.evaluate_vocabularies(None, None, None, {}, ["mcm"], **kwargs)  # type: ignore[arg-type]


def test_the_grid_config_reads_the_registry():
    doc = {
        "models": [{"name": "RN50", "random_weights": True}],
        "id": {"path": "id"},
        "ood": {"o": "o"},
        "vocabularies": {"v": "v.txt"},
    }
    with pytest.raises(InputError, match=r"methods\[0\]\.params: neglabel: unexpected parameter\(s\) T"):
        parse_config({**doc, "methods": [{"name": "neglabel", "params": {"T": 1.0}}]})
    with pytest.raises(InputError, match=r"methods\[0\]\.params: groups must be >= 1, got -3"):
        parse_config({**doc, "methods": [{"name": "neglabel", "params": {"groups": -3}}]})
    with pytest.raises(InputError, match=r"grid\.n_boot = -5: must be an integer between 0 and 100,000"):
        parse_config({**doc, "grid": {"n_boot": -5}})
    with pytest.raises(InputError, match=r"grid\.tpr = '0\.95': must be a number in \(0, 1\]"):
        parse_config({**doc, "grid": {"tpr": "0.95"}})


@pytest.fixture
def eoe_twin():
    """EOE registered again under a new name, as a user would (its kernels by full target)."""
    twin = dataclasses.replace(R.METHODS["eoe"], name="eoe_twin", aliases=("eoe-twin",))
    R.REGISTRY.register(twin.name, twin, aliases=twin.aliases)
    yield twin
    R.unregister_method("eoe_twin")


def test_a_new_method_is_one_entry(emb, eoe_twin):
    """An entry pointing at a kernel is scored by name, swept when it has a one-pass form, and
    listed; nothing else has to change."""
    img, idt, neg = emb
    np.testing.assert_array_equal(
        negvocab.score("EOE-twin", img, idt, neg, beta=0.5), negvocab.score("eoe", img, idt, neg, beta=0.5)
    )
    by_m = sweep_mod.sweep(img, idt, neg, [3, 12], method="eoe_twin")
    np.testing.assert_allclose(by_m[12], negvocab.score("eoe", img, idt, neg), rtol=1e-6)
    assert "eoe_twin" in R.list_methods() and R.method_table(["eoe_twin"])[0]["params"] == {"beta": 0.25, "T": 1.0}


def test_sweeps_refuse_a_method_without_negatives(emb):
    img, idt, neg = emb
    with pytest.raises(
        InputError, match="mcm does not use negative labels; a vocabulary-size sweep needs neglabel, eoe, neglabel_eoe"
    ):
        sweep_mod.sweep(img, idt, neg, [3], method="mcm")


def test_values_are_not_changed_by_validation():
    params = {"tau": np.float32(0.02), "groups": np.int64(3), "grouping": "random", "seed": 7}
    assert R.check_params("neglabel", params) == params
    assert all(
        type(a) is type(b) for a, b in zip(R.check_params("neglabel", params).values(), params.values(), strict=True)
    )
