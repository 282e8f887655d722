"""A grid sweeps a test-time method's ID:OOD ratio: one [[methods]] entry per ratio, each labelled; every
row records its ratio, and each stream holds that mix."""

from __future__ import annotations

import negvocab
from tests.grid.test_grid_stream import GRID

RATIOS = {"oodd 1:10": 0.1, "oodd 1:1": 1.0, "oodd 10:1": 10.0}


def test_a_grid_sweeps_the_ratio(grid_files, tmp_path):
    entries = "".join(
        f'\n[[methods]]\nname = "oodd"\nlabel = "{label}"\nparams = {{{{ oodd_base = "mcm", oodd_queue = 4 }}}}\n'
        f"stream = {{{{ stream_batch = 3, id_ood_ratio = {ratio} }}}}\n"
        for label, ratio in RATIOS.items()
    )
    toml = grid_files / f"grid_ratios_{tmp_path.name}.toml"
    toml.write_text((GRID + entries).format(cache=tmp_path / "cache"))
    res = negvocab.run_grid(toml, tmp_path / "out")
    seen = set()
    for r in res.rows:
        ratio = r.get("id_ood_ratio")
        if ratio is None:
            continue
        seen.add(ratio)
        assert r["test_time"]
        if r["ood_set"] not in ("mean", "near-ood", "far-ood"):
            assert abs(r["n_id"] - ratio * r["n_ood"]) <= max(1.0, ratio), r
    assert seen == set(RATIOS.values())
    assert {r["method"]: r.get("id_ood_ratio") for r in res.rows if r["method"] in RATIOS} == RATIOS
