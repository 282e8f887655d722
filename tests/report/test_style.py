"""Figures for print: a palette that stays distinguishable under deuteranopia (Machado et al. 2009),
TrueType fonts in every PDF figure (no Type 3), shared axes where panels compare, plain tick labels,
legends at 8 pt or more outside the data."""

from __future__ import annotations

import itertools
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.colors import to_rgb

import negvocab
from negvocab.report.plots import overlay_figure, plot_overlay, plot_scores, plot_subsample, subsample_figure
from negvocab.report.style import PALETTE

#: Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for Simulation of Color Vision
#: Deficiency", IEEE TVCG 15(6): deuteranopia at severity 1.0, applied to linear RGB
MACHADO_DEUTERANOPIA = np.array(
    [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
)
MIN_DELTA_E = 12.0  # CIE76 distance between two simulated colours that still tells them apart at a glance


def _linear(rgb):
    c = np.asarray(rgb, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb):
    """CIE L*a*b* (D65) of a linear sRGB colour (an independent float64 formula, not a library's)."""
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ linear_rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _deutan_distances(colours):
    seen = {c: _lab(np.clip(MACHADO_DEUTERANOPIA @ _linear(to_rgb(c)), 0, 1)) for c in colours}
    return {(a, b): float(np.linalg.norm(seen[a] - seen[b])) for a, b in itertools.combinations(colours, 2)}


def test_the_palette_stays_distinguishable_under_deuteranopia():
    got = _deutan_distances(PALETTE)
    assert min(got.values()) >= MIN_DELTA_E, min(got.items(), key=lambda kv: kv[1])
    # the check can fail: matplotlib's default green and red (the "stripes" and "mean") collapse
    assert _deutan_distances(["#2ca02c", "#d62728"])[("#2ca02c", "#d62728")] < MIN_DELTA_E


def _sweep_rows():
    rows = []
    for model in ("m0", "m1"):
        for ood, scale in (("graphics", 1.0), ("stripes", 0.5), ("mean", 0.75)):
            for m in (100, 200, 400):
                f = scale * m / 500
                rows.append({"model": model, "method": "neglabel", "convention": "paper", "ood_set": ood, "M": m,
                             "vocabulary": f"wordnet@{m}", "tpr": 0.95, "fpr": f, "auroc": 1 - f / 2,
                             "fpr_ci": [f * 0.9, min(1.0, f * 1.1)]})  # fmt: skip
    return rows


def _pdfs(tmp_path):
    rng = np.random.default_rng(0)
    sub = negvocab.subsample(rng.normal(1, 1, 100), rng.normal(0, 1, 60), sizes=[5, 10, 20], draws=20,
                             ood_sets=["a"] * 30 + ["b"] * 30)  # fmt: skip
    return [
        plot_overlay(_sweep_rows(), tmp_path / "overlay.pdf"),
        plot_subsample(sub, tmp_path / "subsample.pdf"),
        plot_scores(rng.normal(2, 1, 50), rng.normal(0, 1, 30), tmp_path / "scores.pdf"),
        negvocab.plot_sweep(
            [{**r, "model": "m0"} for r in _sweep_rows() if r["model"] == "m0" and r["ood_set"] == "mean"],
            tmp_path / "sweep.pdf",
        ),  # fmt: skip
    ]


@pytest.mark.skipif(shutil.which("pdffonts") is None, reason="pdffonts (Debian's poppler-utils) is not installed")
def test_every_pdf_figure_embeds_truetype_fonts_not_type_3(tmp_path):
    for path in _pdfs(tmp_path):
        listing = subprocess.run(["pdffonts", str(path)], capture_output=True, text=True, check=True).stdout
        fonts = listing.splitlines()[2:]
        assert fonts, path.name
        assert not any("Type 3" in f for f in fonts), (path.name, listing)
        assert all("TrueType" in f and " yes " in f for f in fonts), (path.name, listing)  # embedded


def test_panels_that_compare_share_their_axes_and_ticks_are_plain():
    fig = overlay_figure(_sweep_rows())
    limits = {ax.get_ylim() for ax in fig.axes}
    assert len(limits) == 1  # one y range: the lines of two models are compared by eye
    rng = np.random.default_rng(1)
    rows = negvocab.subsample(rng.normal(1, 1, 100), rng.normal(0, 1, 60), sizes=[2, 5, 20], draws=20,
                              ood_sets=["a"] * 20 + ["b"] * 40)  # fmt: skip
    sub = subsample_figure(rows)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(sub).draw()
    assert len({ax.get_yscale() for ax in sub.axes}) == 1 and len({ax.get_ylim() for ax in sub.axes}) == 1
    ticks = [t.get_text() for ax in sub.axes for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
    assert ticks and not any("times" in t or "^" in t or "10^" in t or "$" in t for t in ticks), ticks
    for ax in sub.axes:
        assert ax.get_legend() is None  # one legend for the figure, below the panels
    legend = sub.legends[0]
    assert min(t.get_fontsize() for t in legend.get_texts()) >= 8
    lines = [h for h in overlay_figure(_sweep_rows()).legends[0].legend_handles if hasattr(h, "get_marker")]
    cues = {(h.get_color(), h.get_marker(), h.get_linestyle()) for h in lines}
    assert len({(m, s) for _, m, s in cues}) == len(cues)  # every set also differs in marker and line style


def _figures():
    """(name, figure, printed width in inches) for every figure negvocab draws, in its usual shapes."""
    from types import SimpleNamespace

    from negvocab.report.plots import COLUMN_IN, PAGE_IN, repair_figure, scores_figure, sweep_figure

    rng = np.random.default_rng(0)
    one_set = negvocab.subsample(rng.normal(1, 1, 100), rng.normal(0, 1, 60), sizes=[5, 10, 20], draws=20)
    two_sets = negvocab.subsample(rng.normal(1, 1, 100), rng.normal(0, 1, 60), sizes=[5, 10, 20], draws=20,
                                  ood_sets=["a"] * 30 + ["b"] * 30)  # fmt: skip
    steps = [{"step": i, "label": f"candidate label number {i}", "fpr": 0.5 - 0.05 * i} for i in range(6)]
    curve = SimpleNamespace(rows=steps, tpr=0.95, convention="paper", method="neglabel", oracle=False)
    five = rng.normal(0, 1, 50)
    return [
        ("sweep", sweep_figure(_sweep_rows(), ood_set="all"), PAGE_IN),
        ("overlay, two models", overlay_figure(_sweep_rows()), PAGE_IN),
        ("overlay, one model", overlay_figure([r for r in _sweep_rows() if r["model"] == "m0"]), COLUMN_IN),
        ("subsample, one set", subsample_figure(one_set), COLUMN_IN),
        ("subsample, two sets", subsample_figure(two_sets), PAGE_IN),
        ("scores, five sets", scores_figure(rng.normal(2, 1, 50), five, ["a", "b", "c", "d", "e"] * 10), PAGE_IN),
        ("repair", repair_figure(curve, random_weights=True), COLUMN_IN),
    ]


def test_every_figure_prints_at_its_own_size_with_no_text_under_8_pt(tmp_path):
    """A figure is drawn at the width it is printed (a column, 3.3 in, or a page, 6.9 in) with every
    text at 8 pt or more once saved, so 8 pt is what a reader sees (a 10 in figure scaled to a column
    shows its 8 pt legend at 2.6 pt). The PDF's page is that width (pdfinfo, when installed)."""
    from negvocab.report.plots import print_problems, save_figure

    for name, fig, width in _figures():
        path = save_figure(fig, tmp_path / f"{name}.pdf")
        assert abs(fig.get_figwidth() - width) < 1e-6, (name, fig.get_figwidth())
        assert print_problems(fig) == [], name
        if shutil.which("pdfinfo"):
            info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True).stdout
            page = next(line for line in info.splitlines() if line.startswith("Page size:"))
            assert abs(float(page.split()[2]) - 72 * width) < 0.5, (name, page)


def test_print_problems_names_a_wide_figure_and_a_small_text():
    from matplotlib.figure import Figure

    from negvocab.report.plots import print_problems

    fig = Figure(figsize=(10, 4))
    ax = fig.subplots()
    ax.set_title("fine")
    ax.annotate("tiny", (0.5, 0.5), fontsize=7)
    got = print_problems(fig)
    assert len(got) == 2 and "10.00 in wide" in got[0] and "'tiny' at 7.0 pt" in got[1], got
