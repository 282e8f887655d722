"""The test-time figure: FPR@95 against the ID:OOD ratio, a line per phase order, from evaluate_stream's
rows; its points are the rows' FPRs (averaged over stream seeds), and it says it is test-time."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.stream_evaluation import evaluate_stream
from negvocab.report.stream_plots import FRESH, plot_shift, shift_figure

RATIOS = (0.1, 1.0, 10.0)


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def rows():
    """OODD (MCM base) on the MOS four's names, for each phase order (and none) x ratio, two seeds."""
    rng = np.random.default_rng(8)
    ids = _unit(rng.normal(size=(5, 8)))
    id_x = _unit(ids[rng.integers(0, 5, 30)] + 0.6 * rng.normal(size=(30, 8)))
    names = ("inaturalist", "sun", "places", "textures")
    oods = {n: _unit(rng.normal(size=(1, 8)) + 0.8 * rng.normal(size=(12, 8))) for n in names}
    out = []
    for phases in (None, "ptis", "tisp"):
        for ratio in RATIOS:
            ev = evaluate_stream(
                "oodd", id_x, oods, ids, stream_batch=6, stream_seed=[0, 1], id_ood_ratio=ratio, phases=phases,
                params={"oodd_base": "mcm", "oodd_queue": 10, "oodd_k": 2}, n_boot=0,
            )  # fmt: skip
            for s, one in ev.by_seed.items():
                out += [{**r, "stream_seed": s} for r in one.rows]
    return out


def test_each_point_is_the_mean_fpr_of_its_rows(rows):
    fig = shift_figure(rows)
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {f"{FRESH} (2 seeds)", "ptis (2 seeds)", "tisp (2 seeds)"}
    for label, line in lines.items():
        phases = label.split(" (")[0]
        want = []
        for ratio in RATIOS:
            fprs = [
                r["fpr"] for r in rows
                if r["ood_set"] == "mean" and r["id_ood_ratio"] == ratio and (r.get("stream_phases") or FRESH) == phases
            ]  # fmt: skip
            assert len(fprs) == 2  # one per seed
            want.append(100 * sum(fprs) / 2)
        np.testing.assert_allclose(line.get_xdata(), RATIOS)
        np.testing.assert_allclose(line.get_ydata(), want, rtol=0, atol=1e-12)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1:10", "1:1", "10:1"]
    assert "[test-time]" in ax.get_title()


def test_one_set_and_the_file(rows, tmp_path):
    fig = shift_figure(rows, ood_set="sun")
    sun = [r for r in rows if r["ood_set"] == "sun" and r.get("stream_phases") == "ptis" and r["id_ood_ratio"] == 1.0]
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("ptis"))
    assert line.get_ydata()[1] == pytest.approx(100 * np.mean([r["fpr"] for r in sun]), abs=1e-12)
    path = plot_shift(rows, tmp_path / "shift.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rows_it_cannot_place_are_one_line(rows):
    with pytest.raises(InputError, match="no id_ood_ratio"):
        shift_figure([{**r, "id_ood_ratio": None} for r in rows])
    with pytest.raises(InputError, match="no test-time rows"):
        shift_figure([{**r, "test_time": False} for r in rows])
