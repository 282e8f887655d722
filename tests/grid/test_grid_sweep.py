"""The grid's sweep overlay: every method and convention asked for, one line per OOD set plus the
mean, bands where the rows carry intervals, the baseline (MCM) as a reference, nothing clipped."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.grid.tidy import GridResult
from negvocab.report.plots import outside_texts

MODELS = ["ViT-B-32", "a-model-with-a-long-name-ViT-bigG-14-CLIPA-336-datacomp1b"]
SIZES = [100, 1000, 10000]
SETS = ["ssb", "ninco"]


def _row(model, vocab, method, conv, ood, fpr, *, ci=True):
    lo, hi = (max(0.0, fpr - 0.05), min(1.0, fpr + 0.07)) if ci else (None, None)
    return {
        "model": model, "pretrained": None, "random_weights": True, "vocabulary": vocab, "deployable": True,
        "caveats": "",
        "ood_set": ood, "method": method, "convention": conv, "tpr": 0.95, "fpr": fpr, "auroc": 1 - fpr / 2,
        "fpr_ci_low": lo, "fpr_ci_high": hi, "auroc_ci_low": None, "auroc_ci_high": None, "aupr_in": 0.5,
        "aupr_out": 0.5,
        "aupr_method": "x", "n_id": 50, "n_ood": 40, "templates": "single",
        "cell": f"{model}{vocab}{method}{conv}{ood}",
    }  # fmt: skip


def _grid(rng):
    rows = []
    for model in MODELS:
        for conv in ("paper", "openood"):
            for ood in SETS:
                rows.append(_row(model, "", "mcm", conv, ood, float(rng.uniform(0.3, 0.9))))
                for meth in ("neglabel", "eoe"):
                    for m in SIZES:
                        rows.append(
                            _row(model, f"wn@{m}", meth, conv, ood, float(rng.uniform(0, 1)), ci=meth == "neglabel")
                        )
    return GridResult(rows)


def _lines(ax):
    """The data lines of a panel (label-less series), as {first y: y data} in percent."""
    return [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines if len(ln.get_xdata()) == len(SIZES)]


def test_every_method_convention_set_and_the_mean_with_bands_and_the_baseline(tmp_path):
    res = _grid(np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as captured:
        warnings.simplefilter("always")
        path = res.plot_sweep(tmp_path / "sweep.png", vocabulary="wn")
    assert path.read_bytes()[:4] == b"\x89PNG" and not captured
    from negvocab.report.plots import overlay_figure

    table = res.table()
    sized = [
        {
            **r,
            "M": int(r["vocabulary"].split("@")[1]),
            "fpr_ci": [r["fpr_ci_low"], r["fpr_ci_high"]] if r["fpr_ci_low"] is not None else None,
        }
        for r in table
        if r["vocabulary"]
    ]
    fig = overlay_figure(sized, baselines=[r for r in table if not r["vocabulary"]])
    axes = fig.axes[: 2 * 2 * len(MODELS)]
    assert len(axes) == 8  # (neglabel, eoe) x (paper, openood) rows, one column per model
    for ax in axes:
        model, rest = ax.get_title().split("\n")
        meth, conv = rest.replace(" convention", "").split(", ")
        want = []
        for ood in [*SETS, "mean"]:
            mine = sorted(
                (
                    r
                    for r in table
                    if (r["model"], r["method"], r["convention"], r["ood_set"]) == (model, meth, conv, ood)
                ),
                key=lambda r: int(r["vocabulary"].split("@")[1]),
            )
            want.append(100 * np.array([r["fpr"] for r in mine]))
        got = _lines(ax)
        assert len(got) == 3 and all(np.allclose(g, w) for g, w in zip(got, want, strict=True))
        assert len(ax.collections) == (
            2 if meth == "neglabel" else 0
        )  # bands only where intervals exist (not the unstored mean's)
        refs = sorted(float(ln.get_ydata()[0]) for ln in ax.lines if len(ln.get_xdata()) == 2)
        mcm = [r["fpr"] for r in table if (r["model"], r["method"], r["convention"]) == (model, "mcm", conv)]
        assert refs == pytest.approx(sorted(100 * np.array(mcm)))  # MCM per set and its mean, as references
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [
        "OOD ssb",
        "OOD ninco",
        "mean over OOD sets",
        "mcm (no vocabulary; baseline, per set)",
        "95% bootstrap interval",
    ]
    assert "RANDOM WEIGHTS" in fig._suptitle.get_text()


def test_what_is_asked_for_is_what_is_drawn_and_nothing_is_clipped(tmp_path, monkeypatch):
    import negvocab.report.plots as P

    res = _grid(np.random.default_rng(1))
    drawn, real = [], P.save_figure
    monkeypatch.setattr(
        P, "save_figure", lambda fig, path, **kw: (drawn.append(fig), real(fig, path, **kw))[1]
    )  # a spy: the real save runs
    res_path = tmp_path / "one.pdf"
    res.plot_sweep(res_path, vocabulary="wn", method="eoe", convention=["openood"], ood_set="ninco", baselines=False)
    assert res_path.read_bytes()[:5] == b"%PDF-"
    fig = drawn[0]
    assert outside_texts(fig) == []  # the long model name in a panel title stays inside
    axes = [ax for ax in fig.axes if ax.get_title()]
    # a long model name wraps: the method line stays last
    assert [ax.get_title().split("\n")[-1] for ax in axes] == ["eoe, openood convention"] * len(MODELS)
    assert all(len(_lines(ax)) == 1 and not any(len(ln.get_xdata()) == 2 for ln in ax.lines) for ax in axes)
    with pytest.raises(InputError, match="no sized entries nope@M"):
        res.plot_sweep(tmp_path / "x.png", vocabulary="nope")
    with pytest.raises(InputError, match=r"x\.jpg: a figure is written as"):
        res.plot_sweep(tmp_path / "x.jpg", vocabulary="wn")


def test_more_baselines_than_line_styles_each_drawn_as_a_reference():
    """A grid with five methods without a vocabulary (mcm, msp, maxlogit, energy, gen): every one is a
    reference line in each panel (there are four dash styles; they are reused in turn)."""
    from negvocab.report.plots import overlay_figure

    rows = [
        {"model": "m", "method": "neglabel", "convention": "paper", "ood_set": "a", "M": m, "fpr": f, "tpr": 0.95}
        for m, f in ((10, 0.5), (20, 0.4), (40, 0.3))
    ]
    names = ["mcm", "msp", "maxlogit", "energy", "gen"]
    base = [
        {"model": "m", "method": n, "convention": "paper", "ood_set": "a", "fpr": 0.1 * (i + 1)}
        for i, n in enumerate(names)
    ]
    fig = overlay_figure(rows, baselines=base)
    refs = sorted(round(float(ln.get_ydata()[0]), 6) for ln in fig.axes[0].lines if len(ln.get_xdata()) == 2)
    assert refs == pytest.approx([10.0, 20.0, 30.0, 40.0, 50.0])
