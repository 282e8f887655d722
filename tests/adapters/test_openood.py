"""The OpenOOD-style postprocessor against OpenOOD's own interface (copied in tests/adapters/openood_base.py):
the same methods and arguments, driven by OpenOOD's own inference loop, the confidence = the negvocab score."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import negvocab
from negvocab.adapters.openood import NegvocabPostprocessor
from negvocab.core.errors import InputError
from tests.adapters.conftest import ID, NEG
from tests.adapters.openood_base import BasePostprocessor, EBOPostprocessor


def _config(**args):
    """An OpenOOD config (attribute access, as its Config), from configs/postprocessors/<name>.yml's keys."""
    sweep = args.pop("sweep", {})
    post = SimpleNamespace(
        name="negvocab", APS_mode=bool(sweep), postprocessor_args=SimpleNamespace(**args), postprocessor_sweep=sweep
    )
    return SimpleNamespace(postprocessor=post)


def _loader(batches):
    """OpenOOD's loaders yield dicts with 'data' and 'label' (-1 for OOD)."""
    x_id, x_ood = batches
    return [
        {"data": x_id, "label": torch.zeros(len(x_id), dtype=torch.long)},
        {"data": x_ood, "label": torch.full((len(x_ood),), -1)},
    ]


def test_the_interface_is_openoods():
    """Every method OpenOOD's BasePostprocessor has (and the hyperparameter pair its EBO has) is here,
    taking the arguments OpenOOD passes."""
    checked = []
    for cls in (BasePostprocessor, EBOPostprocessor):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            assert callable(getattr(NegvocabPostprocessor, name, None)), name
            ours = inspect.signature(getattr(NegvocabPostprocessor, name))
            theirs = [p for p in inspect.signature(fn).parameters if p != "self"]
            ours.bind(None, *theirs)  # positional, as OpenOOD's Evaluator calls them (TypeError if not)
            checked.append(name)
    assert {"setup", "postprocess", "inference", "set_hyperparam", "get_hyperparam"} <= set(checked), checked


def test_setup_postprocess_and_openoods_inference_loop(vlm, batches, monkeypatch):
    pp = NegvocabPostprocessor(
        _config(method="neglabel", vocabulary=NEG, id_classes=ID, templates="single", params={"groups": 4}), vlm=vlm
    )
    net = vlm.model
    pp.setup(net, {"test": None}, {"near": {}, "far": {}})
    x = torch.cat(batches)
    pred, conf = pp.postprocess(net, x)
    g = vlm.model.encode_image(x).detach()
    g = g / g.norm(dim=-1, keepdim=True)
    id_emb, neg_emb = vlm.encode_text(ID, "single", pos="n"), vlm.encode_text(NEG, "single")
    np.testing.assert_allclose(
        conf.numpy(), negvocab.score("neglabel", g.numpy(), id_emb, neg_emb, groups=4), rtol=1e-5
    )  # high = ID
    assert pred.tolist() == (g @ torch.from_numpy(id_emb).T).argmax(-1).tolist()
    # OpenOOD's own loop over our postprocess (it moves batches with .cuda(): the identity on this CPU-only machine)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    p1, c1, l1 = BasePostprocessor.inference(pp, net, _loader(batches))
    p2, c2, l2 = pp.inference(net, _loader(batches), progress=False)
    np.testing.assert_array_equal(c1, c2)
    assert p1.tolist() == p2.tolist() == pred.tolist() and l1.tolist() == l2.tolist() == [0] * 6 + [-1] * 5


def test_the_sweep_sets_and_gets_hyperparameters(vlm, batches):
    pp = NegvocabPostprocessor(
        _config(
            method="eoe",
            vocabulary=NEG,
            id_classes=ID,
            templates="single",
            sweep={"beta_list": [0.25, 1.0], "T_list": [1.0, 0.1]},
        ),
        vlm=vlm,
    )
    assert pp.APS_mode and not pp.hyperparam_search_done
    pp.setup(vlm.model, None, None)
    assert pp.get_hyperparam() == [0.25, 1.0]
    pp.set_hyperparam([1.0, 0.1])
    assert pp.get_hyperparam() == [1.0, 0.1]
    _, conf = pp.postprocess(vlm.model, batches[0])
    g, _ = pp.zeroshot.features(batches[0])
    want = negvocab.score("eoe", g.numpy(), pp.zeroshot.id_emb.numpy(), pp.zeroshot.neg_emb.numpy(), beta=1.0, T=0.1)
    np.testing.assert_allclose(conf.numpy(), want, rtol=1e-6)
    with pytest.raises(InputError, match="1 values for the sweep's 2 parameters"):
        pp.set_hyperparam([1.0])


def test_config_errors_are_one_line(vlm):
    with pytest.raises(InputError, match="sweep keys are <parameter>_list"):
        NegvocabPostprocessor(_config(method="mcm", sweep={"T": [1.0]}))
    with pytest.raises(InputError, match="postprocessor_args.model: give the open_clip model name"):
        NegvocabPostprocessor(_config(method="mcm")).setup(vlm.model, None, None)
    with pytest.raises(InputError, match="call setup"):
        NegvocabPostprocessor(_config(method="mcm")).postprocess(vlm.model, None)
    with pytest.raises(InputError, match="no 'postprocessor' section"):
        NegvocabPostprocessor({})


def test_setup_builds_the_model_wrapper_from_net_and_its_name(vlm, batches):
    """Without vlm=: the postprocessor wraps net with the tokenizer of postprocessor_args.model (a dict
    config works too)."""
    cfg = {
        "postprocessor": {
            "postprocessor_args": {"method": "mcm", "model": "ViT-B-32", "id_classes": ID, "templates": "single"}
        }
    }
    pp = NegvocabPostprocessor(cfg)
    pp.setup(vlm.model, None, None)
    _, conf = pp.postprocess(vlm.model, batches[0])
    g, _ = pp.zeroshot.features(batches[0])
    np.testing.assert_allclose(
        conf.numpy(), negvocab.score("mcm", g.numpy(), vlm.encode_text(ID, "single", pos="n")), rtol=1e-5
    )


def test_set_names_map_between_openoods_table_and_negvocabs():
    """Both directions, against OpenOOD's own names (its datasets.py, vendored under tests/reference/openood)
    and negvocab's (the openood benchmark's sets and groups in the registry); the Evaluator's row order is
    checked in test_openood_evaluator.py."""
    import ast

    from negvocab.adapters.openood import OPENOOD_SET_NAMES, from_openood_name, to_openood_name
    from negvocab.data.benchmarks import get_benchmark

    source = (Path(__file__).parents[1] / "reference/openood/openood/evaluation_api/datasets.py").read_text()
    info = ast.literal_eval(source.split("DATA_INFO = ", 1)[1].split("\n}\n", 1)[0] + "\n}")["imagenet"]["ood"]
    theirs = [*info["near"]["datasets"], "nearood", *info["far"]["datasets"], "farood"]
    assert list(OPENOOD_SET_NAMES) == theirs
    bench = get_benchmark("openood")
    ours = [
        *(s.name for s in bench.sets if s.group == "near"),
        "near-ood",
        *(s.name for s in bench.sets if s.group == "far"),
        "far-ood",
    ]
    assert list(OPENOOD_SET_NAMES.values()) == ours
    for a, b in zip(theirs, ours, strict=True):
        assert from_openood_name(a) == b and to_openood_name(b) == a
    with pytest.raises(InputError, match="'ssb-hard' is no row of OpenOOD's ImageNet-1k table; it has ssb_hard"):
        from_openood_name("ssb-hard")
    with pytest.raises(InputError, match="'nearood' has no row"):
        to_openood_name("nearood")
