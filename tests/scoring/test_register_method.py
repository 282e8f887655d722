"""Methods registered from outside the package (tests/plugins/toy_method.py, public API only): scored,
swept, checked, listed and served by marginal gains like the built-ins, against the toy formula by hand."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins
from negvocab.scoring import methods as R
from negvocab.scoring.methods import PARAMS, Param, get_method, register_method, unregister_method
from tests.plugins import toy_method as T


def unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype("float32")


@pytest.fixture(scope="module", autouse=True)
def toy():
    load_plugins(["tests.plugins.toy_method"])
    if "toymargin" not in R.METHODS:  # another test removed it: register it again (its module's own call)
        negvocab.register_method(
            "toymargin", "tests.plugins.toy_method:toy", ["margin"], needs_negatives=True,
            one_pass="tests.plugins.toy_method:toy_prefixes", gains="tests.plugins.toy_method:toy_gains",
            aliases=("toy-margin",),
        )  # fmt: skip


@pytest.fixture
def emb():
    rng = np.random.default_rng(3)
    return unit(rng.normal(size=(9, 8))), unit(rng.normal(size=(4, 8))), unit(rng.normal(size=(15, 8)))


def test_a_registered_method_scores_by_name_and_alias(emb):
    img, idt, neg = emb
    want = T.reference(img, idt, neg, margin=0.8)
    np.testing.assert_allclose(negvocab.score("toymargin", img, idt, neg, margin=0.8), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(negvocab.score("TOY-margin", img, idt, neg), T.reference(img, idt, neg), atol=1e-12)
    assert "toymargin" in negvocab.list_methods(needs_negatives=True) and "toymargin" in R.METHODS
    assert R.method_table(["toymargin"])[0]["params"] == {"margin": 0.5}
    assert R.get_method("toymargin").kernel == "tests.plugins.toy_method:toy"


def test_its_parameter_is_checked_like_a_built_ins(emb):
    img, idt, neg = emb
    with pytest.raises(InputError, match=r"^margin must be a positive number, got -1$"):
        negvocab.score("toymargin", img, idt, neg, margin=-1)
    with pytest.raises(InputError, match=r"^--margin must be a positive number, got 0$"):
        R.check_params("toymargin", {"margin": 0}, cli=True)
    with pytest.raises(InputError, match=r"^neglabel: unexpected parameter\(s\) margin"):
        negvocab.score("neglabel", img, idt, neg, margin=0.5)
    with pytest.raises(InputError, match="topk is only available for neglabel, not toymargin"):
        negvocab.score("toymargin", img, idt, neg, topk=3)


def test_one_pass_sweep_and_a_method_without_one(emb):
    img, idt, neg = emb
    got = negvocab.sweep(img, idt, neg, [2, 7, 15], method="toymargin", margin=0.3)
    for m in (2, 7, 15):
        np.testing.assert_allclose(got[m], T.reference(img, idt, neg[:m], 0.3), atol=1e-12)
    # a callable kernel, no one-pass form: the sweep scores each size on its own
    negvocab.register_method("toy_plain", T.toy, ["margin"], needs_negatives=True, replace=True)
    try:
        plain = negvocab.sweep(img, idt, neg, [2, 15], method="toy_plain", margin=0.3)
        np.testing.assert_allclose(plain[2], T.reference(img, idt, neg[:2], 0.3), atol=1e-12)
    finally:
        negvocab.unregister_method("toy_plain")


def _gains_by_hand(id_img, ood_img, idt, neg, cand, margin):
    fpr, auc = [], []
    for c in cand:
        s = T.reference(np.concatenate([id_img, ood_img]), idt, np.concatenate([neg, c[None]]), margin)
        fpr.append(negvocab.metrics.fpr_at_tpr(s[: len(id_img)], s[len(id_img) :]))
        auc.append(negvocab.metrics.auroc(s[: len(id_img)], s[len(id_img) :]))
    return np.array(fpr), np.array(auc)


@pytest.mark.parametrize("form", ["incremental", "rescore"])
def test_marginal_gains_use_the_gains_form_or_rescore(form):
    rng = np.random.default_rng(5)
    id_img, ood_img = unit(rng.normal(size=(40, 6))), unit(rng.normal(size=(25, 6)) + 0.4)
    idt, neg, cand = unit(rng.normal(size=(5, 6))), unit(rng.normal(size=(7, 6))), unit(rng.normal(size=(11, 6)))
    name = "toymargin"
    if form == "rescore":  # the same kernel, no incremental form: one scoring per candidate
        name = "toy_rescored"
        negvocab.register_method(name, "tests.plugins.toy_method:toy", ["margin"], needs_negatives=True, replace=True)
    try:
        g = negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method=name, margin=0.9)
        fpr, auc = _gains_by_hand(id_img, ood_img, idt, neg, cand, 0.9)
        np.testing.assert_allclose(g.fpr, fpr, atol=1e-12)
        np.testing.assert_allclose(g.auroc, auc, atol=1e-12)
        assert len(set(np.round(g.auroc, 9))) > 1 and g.method == name
        curve = negvocab.repair_curve(id_img, ood_img, idt, neg, cand, 3, method=name, margin=0.9)
        best = cand[[int(x.split()[-1]) for x in curve.labels]]
        s = T.reference(np.concatenate([id_img, ood_img]), idt, np.concatenate([neg, best]), 0.9)
        assert curve.rows[-1]["auroc"] == pytest.approx(negvocab.metrics.auroc(s[:40], s[40:]), abs=1e-12)
    finally:
        if form == "rescore":
            negvocab.unregister_method(name)


def test_a_renamed_built_in_serves_marginal_gains():
    """A twin of EOE under a new name once failed in marginal_gains with a bare AssertionError."""
    rng = np.random.default_rng(1)
    id_img, ood_img = unit(rng.normal(size=(20, 6))), unit(rng.normal(size=(12, 6)))
    idt, neg, cand = unit(rng.normal(size=(4, 6))), unit(rng.normal(size=(9, 6))), unit(rng.normal(size=(5, 6)))
    twin = dataclasses.replace(R.get_method("eoe"), name="eoe_twin2", aliases=())
    R.REGISTRY.register("eoe_twin2", twin)
    try:
        a = negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method="eoe_twin2", beta=0.5)
        b = negvocab.marginal_gains(id_img, ood_img, idt, neg, cand, method="eoe", beta=0.5)
        np.testing.assert_array_equal(a.fpr, b.fpr)
        np.testing.assert_array_equal(a.auroc, b.auroc)
    finally:
        negvocab.unregister_method("eoe_twin2")


def test_gains_refuse_a_method_without_negatives_in_one_line():
    with pytest.raises(
        InputError, match=r"^marginal gains need a method that uses negatives \(.*toymargin.*\), not mcm$"
    ):
        negvocab.marginal_gains(None, None, None, None, None, method="mcm")
    with pytest.raises(InputError, match=r"^coverage needs a method that uses negatives \(.*\), not msp$"):
        negvocab.coverage(None, None, None, None, "msp")  # type: ignore[arg-type]  # before any model work


def test_registration_refuses_what_no_pipeline_could_serve():
    with pytest.raises(InputError, match="parameter 'tau' is registered already with another meaning"):
        negvocab.register_param(negvocab.Param("tau", float, 1.0, "something else", "--tau2"))
    with pytest.raises(InputError, match=r"^parameter tau_b: flag must start with '--', got 'tau'$"):
        negvocab.register_param(negvocab.Param("tau_b", float, 1.0, "x", "tau"))
    with pytest.raises(InputError, match=r"unknown parameter\(s\) nope; register them first"):
        negvocab.register_method("bad1", T.toy, ["nope"])
    with pytest.raises(InputError, match=r"unknown input\(s\) depth"):
        negvocab.register_method("bad2", T.toy, inputs=["depth"])
    with pytest.raises(InputError, match="method 'toymargin' is registered already"):
        negvocab.register_method("toymargin", T.toy)
    with pytest.raises(InputError, match="must be 'package.module:function' or a callable"):
        negvocab.register_method("bad3", "toy")
    with pytest.raises(InputError, match=r"^method 'bad4' kernel .*: 'tests.plugins.toy_method' has no 'missing'$"):
        negvocab.register_method("bad4", "tests.plugins.toy_method:missing")  # a plug-in's target: checked now
    assert "bad1" not in R.METHODS and "bad2" not in R.METHODS and "bad4" not in R.METHODS


def test_the_registry_is_read_without_torch():
    import subprocess
    import sys

    code = (
        "import sys; from negvocab.scoring import methods as R; R.list_methods(); R.method_table(); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


def test_needs_negatives_is_live_and_its_old_name_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = R.NEEDS_NEGATIVES
    assert "toymargin" in old and "mcm" not in old
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    with pytest.raises(TypeError):
        R.METHODS["x"] = R.METHODS["mcm"]  # type: ignore[index]


def test_registration_is_checked_whole_and_defaults_obey_their_limits():
    """A refused method leaves no parameter behind; a default outside its own limits is refused (it would
    fail every command offering the parameter); a plug-in's own parameter may be replaced, a built-in's not;
    names are lower-cased once, so rows carry one spelling."""
    bad = Param("nv_strength", float, None, "Strength.", "--nv-strength", check="positive")
    with pytest.raises(InputError, match=r"default None refused .*optional=True"):
        register_method("nv_twice", "negvocab.scoring.mcm:mcm", [bad])
    with pytest.raises(InputError, match="registered already"):
        register_method("MCM", "negvocab.scoring.mcm:mcm", [Param("nv_leak", float, 1.0, "Leak.", "--nv-leak")])
    assert "nv_leak" not in PARAMS
    with pytest.raises(InputError, match="with another meaning"):
        register_method(
            "nv_tau", "negvocab.scoring.mcm:mcm", [Param("tau", float, 0.5, "Mine.", "--tau")], replace=True
        )
    try:
        m = register_method("NV_Mine", "negvocab.scoring.mcm:mcm", [Param("nv_w", float, 1.0, "W.", "--nv-w")])
        assert m.name == "nv_mine" and get_method("NV_MINE") is m
        new = Param("nv_w", float, 2.0, "W.", "--nv-w")
        register_method("nv_mine", "negvocab.scoring.mcm:mcm", [new], replace=True)  # a notebook re-running its cell
        assert PARAMS["nv_w"].default == 2.0
        with pytest.raises(InputError, match="by 'glmcm'"):
            register_method("nv_mine", "negvocab.scoring.mcm:mcm", aliases=["gl-mcm"], replace=True)
        assert get_method("gl-mcm").name == "glmcm"
    finally:
        unregister_method("nv_mine", missing_ok=True)
        PARAMS.pop("nv_w", None)


def test_the_command_flags_moved_to_the_command_line_and_their_old_path_warns():
    """The commands' own flags are the CLI's (negvocab.cli.flags); the scoring layer's old names work for
    one release with a DeprecationWarning. A flag clash is refused where the CLI builds its options
    (tests/cli/test_plugin_method.py)."""
    from negvocab.cli import flags
    from negvocab.cli.score import score_cmd  # noqa: F401  # building a command reserves its own flags

    assert flags.COMMAND_FLAGS.get("--output", "").startswith("negvocab ")
    with pytest.warns(DeprecationWarning, match="negvocab.cli.flags.COMMAND_FLAGS"):
        assert R.COMMAND_FLAGS is flags.COMMAND_FLAGS
    with pytest.warns(DeprecationWarning, match="negvocab.cli.flags.reserve_flags"):
        assert R.reserve_flags is flags.reserve_flags
    assert "COMMAND_FLAGS" not in vars(R) and "reserve_flags" not in R.__all__
