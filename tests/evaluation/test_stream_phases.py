"""Temporal-shift stream phases (OpenOOD-VLM's imagenet_temshift_{ptis,spti,tisp}) and the ID:OOD ratio
sweep: the phase order against one built by hand from their yml, the state carried from phase to phase,
and both recorded in every row."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from negvocab.core.errors import InputError
from negvocab.evaluation.kinds import stream_words
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.scoring.stream import STREAM_PHASES, make_stream, phase_sets, stream_order

# Verbatim from YBZh/OpenOOD-VLM (commit 804f3310d3045c24fdd896da6c508c919fb47f0c, MIT licence, Copyright (c)
# 2021 Jingkang Yang), configs/datasets/imagenet/imagenet_temshift_ptis.yml, its far-OOD split (the only
# line in which it differs from imagenet_traditional_four_ood.yml: `datasets: [inaturalist, sun, places, dtd]`).
# Their OODEvaluatorClipTTA._eval_ood streams the sets of `farood.datasets` in this order, one after another.
PTIS_YML = """
  farood:
    datasets: [places, dtd, inaturalist, sun]
"""
#: the letter of each of their dataset keys in a phase order's name
LETTER = {"places": "p", "dtd": "t", "inaturalist": "i", "sun": "s"}
MOS = ["inaturalist", "sun", "places", "textures"]  # negvocab's names of the MOS four, in the benchmark's order


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_ptis_is_their_yml_order():
    their = yaml.safe_load(PTIS_YML)["farood"]["datasets"]
    assert "".join(LETTER[d] for d in their) == "ptis"
    by_hand = ["textures" if d == "dtd" else d for d in their]  # negvocab calls their dtd textures
    assert phase_sets("ptis", MOS) == by_hand


@pytest.mark.parametrize("phases", STREAM_PHASES)
def test_each_phase_order_spells_its_sets(phases):
    """spti and tisp are named in their scripts (their yml files are not in the repository): the same
    letters, read as ptis's are."""
    names = {"p": "places", "t": "textures", "i": "inaturalist", "s": "sun"}
    assert phase_sets(phases, MOS) == [names[c] for c in phases]
    assert phase_sets(phases, ["iNaturalist", "SUN", "Places", "dtd"]) == [
        {"places": "Places", "textures": "dtd", "inaturalist": "iNaturalist", "sun": "SUN"}[names[c]] for c in phases
    ]


def test_phases_need_exactly_their_sets():
    with pytest.raises(InputError, match="missing sun"):
        phase_sets("ptis", ["inaturalist", "places", "textures"])
    with pytest.raises(InputError, match="one phase each"):
        phase_sets("ptis", [*MOS, "ninco"])
    with pytest.raises(InputError, match="choose one of ptis, spti, tisp"):
        phase_sets("pits", MOS)


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(4)
    ids = _unit(rng.normal(size=(6, 8)))
    id_x = _unit(ids[rng.integers(0, 6, 20)] + 0.5 * rng.normal(size=(20, 8)))
    centres = {name: rng.normal(size=(1, 8)) for name in MOS}
    oods = {name: _unit(c + 0.7 * rng.normal(size=(10 + i, 8))) for i, (name, c) in enumerate(centres.items())}
    return id_x, oods, ids


def _by_hand(world, phases, batch, seed):
    """One OODD (MCM base) fed the phases in their order, each phase the ID set and its OOD set shuffled
    by ``stream_order``, cut into batches; reset once, before the first phase."""
    id_x, oods, ids = world
    names = {"p": "places", "t": "textures", "i": "inaturalist", "s": "sun"}
    method = make_stream("oodd", oodd_base="mcm", oodd_queue=12, oodd_k=3).setup(ids)
    method.reset()
    out = {}
    for c in phases:
        x = np.concatenate([id_x, oods[names[c]]])
        perm = stream_order(len(x), order="shuffled", seed=seed)
        s = np.empty(len(x))
        for i in range(0, len(x), batch):
            s[perm[i : i + batch]] = method.score_batch(x[perm[i : i + batch]])
        out[names[c]] = s
    return out


@pytest.mark.parametrize("phases", STREAM_PHASES)
def test_a_phased_stream_carries_the_state_in_the_phase_order(world, phases):
    id_x, oods, ids = world
    params = {"oodd_base": "mcm", "oodd_queue": 12, "oodd_k": 3}
    ev = evaluate_stream("oodd", id_x, oods, ids, stream_batch=7, stream_seed=2, phases=phases, params=params, n_boot=0)
    want = _by_hand(world, phases, 7, 2)
    for name, s in want.items():
        np.testing.assert_allclose(ev.scores[name]["id"], s[: len(id_x)], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ev.scores[name]["ood"], s[len(id_x) :], rtol=0, atol=1e-12)
    rows = {r["ood_set"]: r for r in ev.rows}
    for k, name in enumerate(phase_sets(phases, MOS)):
        assert rows[name]["stream_phase"] == k + 1
    assert all(r["stream_phases"] == phases for r in ev.rows)  # the summary rows too
    assert ev.meta["stream"]["phases"] == phases
    assert "phases " + phases in stream_words(rows["sun"])
    # without phases each set starts afresh: a later phase's scores then differ
    fresh = evaluate_stream("oodd", id_x, oods, ids, stream_batch=7, stream_seed=2, params=params, n_boot=0)
    last = phase_sets(phases, MOS)[-1]
    assert not np.allclose(fresh.scores[last]["id"], ev.scores[last]["id"])
    first = phase_sets(phases, MOS)[0]
    np.testing.assert_array_equal(fresh.scores[first]["id"], ev.scores[first]["id"])


@pytest.mark.parametrize("ratio", [0.1, 1.0, 10.0])
def test_the_ratio_sweep_is_recorded_in_every_row(world, ratio):
    """ID:OOD from 1:10 to 10:1: each stream holds that mix (to within one image) and every row says so."""
    id_x, oods, ids = world
    params = {"oodd_base": "mcm"}
    ev = evaluate_stream(
        "oodd", id_x, oods, ids, stream_batch=5, id_ood_ratio=ratio, phases="tisp", params=params, n_boot=0
    )
    for row in ev.rows:
        assert row["id_ood_ratio"] == ratio and row["stream_phases"] == "tisp"
    for row in (r for r in ev.rows if r["ood_set"] in MOS):
        n_id, n_ood = row["n_id"], row["n_ood"]
        assert abs(n_id - ratio * n_ood) <= max(1.0, ratio), (n_id, n_ood)


def test_score_refuses_an_unknown_phase_order_before_any_model():
    from negvocab.cli.score import StreamOptions

    assert StreamOptions(stream_phases="spti").settings()["phases"] == "spti"
    with pytest.raises(InputError, match="--stream-phases 'pits'; choose one of ptis, spti, tisp"):
        StreamOptions(stream_phases="pits").settings()
