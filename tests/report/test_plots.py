"""plot_sweep: the suffix's format, a paper-ready figure (title, CI bands, FPR within [0, 100], overlays)."""

from __future__ import annotations

import pytest
from PIL import Image

import negvocab
from negvocab.core.errors import InputError
from negvocab.report.plots import sweep_figure


def _rows(method="neglabel", model="ViT-B-32", vocabulary="wn", fprs=(0.9, 0.5, 0.02), ood_set="ood"):
    out = []
    for m, f in zip((1000, 2000, 5000), fprs, strict=True):
        out.append({
            "M": m, "method": method, "model": model, "pretrained": "laion2b", "random_weights": False,
            "vocabulary": vocabulary,
            "templates": "paper8", "convention": "paper", "tpr": 0.95, "ood_set": ood_set, "deployable": True,
            "fpr": f, "auroc": 1 - f / 2, "fpr_ci": [max(0.0, f - 0.05), min(1.0, f + 0.05)], "auroc_ci": [0.5, 1.0],
        })  # fmt: skip
    return out


REF = {"name": "oracle", "M": 64, "fpr": 0.1, "auroc": 0.97, "deployable": False, "caveats": "oracle", "ood_set": "ood"}


@pytest.mark.parametrize(("suffix", "magic"), [(".pdf", b"%PDF"), (".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_the_suffix_names_the_format(tmp_path, suffix, magic):
    path = negvocab.plot_sweep(_rows(), tmp_path / f"fig{suffix}", references=[REF])
    data = path.read_bytes()
    assert data[: len(magic)] == magic, data[:20]
    if suffix == ".svg":
        assert b"<svg" in data[:2000]
    if suffix == ".png":
        dpi = Image.open(path).info["dpi"]
        assert dpi == pytest.approx((300, 300), abs=0.1)
    assert [p.name for p in tmp_path.iterdir()] == [f"fig{suffix}"]  # written atomically, nothing left over


def test_another_suffix_is_refused_before_drawing(tmp_path):
    with pytest.raises(InputError, match=r"fig\.jpg: a figure is written as \.png, \.pdf, \.svg"):
        negvocab.plot_sweep(_rows(), tmp_path / "fig.jpg")
    assert list(tmp_path.iterdir()) == []


def test_title_legend_bands_and_axis():
    fig = sweep_figure(_rows(fprs=(1.0, 0.5, 0.0)), references=[REF])
    title = fig._suptitle.get_text()
    assert "ViT-B-32" in title and "laion2b" in title and "neglabel" in title and "paper convention" in title
    assert "WordNet, first M" not in title
    for ax in fig.axes:
        assert len(ax.collections) == 1  # a CI band in both panels
        low, high = ax.get_ylim()
        assert -2 <= low < high <= 102  # values at 0 and 100 stay inside the frame, a little room only
        if ax is fig.axes[0]:
            assert low < 0 and high > 100  # FPR 0 and 100 are drawn inside the frame
        labels = ax.get_legend_handles_labels()[1]
        assert "oracle (not deployable), M=64" in labels


def test_several_series_overlaid_with_what_differs_in_the_legend():
    rows = _rows() + _rows(method="eoe", fprs=(0.8, 0.6, 0.4)) + _rows(method="neglabel_eoe", fprs=(0.7, 0.3, 0.1))
    fig = sweep_figure(rows)
    for ax in fig.axes:
        labels = ax.get_legend_handles_labels()[1]
        assert [lab for lab in labels if "CI" not in lab] == ["neglabel", "eoe", "neglabel_eoe"]
        assert len(ax.lines) == 3 and len(ax.collections) == 3
    assert "neglabel" not in fig._suptitle.get_text() and "ViT-B-32" in fig._suptitle.get_text()
    models = sweep_figure(_rows() + _rows(model="ViT-L-14"))
    assert models.axes[0].get_legend_handles_labels()[1][0] == "ViT-B-32"


def test_several_ood_sets_draw_one_labelled_line_each_and_the_mean():
    rows = _rows(ood_set="A") + _rows(ood_set="B", fprs=(0.5, 0.4, 0.3)) + _rows(ood_set="mean", fprs=(0.7, 0.45, 0.16))
    fig = sweep_figure(rows)
    assert [ln.get_ydata()[0] for ln in fig.axes[0].lines] == [
        pytest.approx(90.0),
        pytest.approx(50.0),
        pytest.approx(70.0),
    ]
    assert [lab for lab in fig.axes[0].get_legend_handles_labels()[1] if "CI" not in lab] == [
        "OOD A",
        "OOD B",
        "OOD mean",
    ]
    assert len(sweep_figure(rows, ood_set="all").axes[0].lines) == 3
    assert [ln.get_ydata()[0] for ln in sweep_figure(rows, ood_set="B").axes[0].lines] == [pytest.approx(50.0)]


def test_the_notebook_draws_the_figure_through_the_same_function():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[2] / "notebooks" / "ablate_pool_size.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "negvocab.sweep_figure(" in code and "fill_between" not in code and "axhline" not in code


def _border_is_blank(png) -> bool:
    """True when the outermost pixel frame of a saved PNG is all background: no text crosses the edge."""
    import numpy as np

    a = np.asarray(Image.open(png).convert("L"))
    return bool(min(a[0].min(), a[-1].min(), a[:, 0].min(), a[:, -1].min()) > 245)


LONG = "a-very-long-model-name-that-goes-on-and-on-ViT-bigG-14-CLIPA-336-datacomp1b-laion2b-s39b-b160k"


def test_a_long_title_is_never_clipped_in_the_saved_file(tmp_path):
    """The issue's case: the sweep title cut at both ends. Saved through save_figure, the PNG's
    border is blank and every text box lies inside the figure; the same figure saved plainly is cut."""
    from negvocab.report.plots import outside_texts, save_figure

    rows = _rows(model=LONG, vocabulary="wordnet-farthest-first-" + "x" * 60)
    raw = sweep_figure(rows)
    raw.savefig(tmp_path / "raw.png", dpi=60)
    assert not _border_is_blank(tmp_path / "raw.png")  # the check can fail: a plain save clips the title
    fig = sweep_figure(rows)
    save_figure(fig, tmp_path / "fit.png")
    assert outside_texts(fig) == [] and _border_is_blank(tmp_path / "fit.png")
    assert LONG in fig._suptitle.get_text().replace("\n", "").replace(" ", "") or LONG[:40] in fig._suptitle.get_text()


@pytest.mark.parametrize("suffix", [".pdf", ".svg"])
def test_vector_files_are_real_and_carry_the_title(tmp_path, suffix):
    path = negvocab.plot_sweep(_rows(), tmp_path / f"f{suffix}")
    data = path.read_bytes()
    if suffix == ".pdf":
        assert (
            data.startswith(b"%PDF-") and b"%%EOF" in data[-64:] and b"Vocabulary size M" in data
        )  # the title in the metadata
    else:
        import xml.etree.ElementTree as ET

        root = ET.fromstring(data)
        assert root.tag.endswith("svg")
        assert any("Vocabulary size M" in (el.text or "") for el in root.iter() if el.tag.endswith("title"))


def test_a_reference_at_100_percent_is_inside_the_axes():
    ref = {**REF, "fpr": 1.0, "auroc": 0.0}
    fig = sweep_figure(_rows(fprs=(1.0, 1.0, 1.0)), references=[ref])
    low, high = fig.axes[0].get_ylim()
    assert high > 100 and low < 100  # the line at 100 is drawn inside the frame, not on it


def _sub_rows(**kw):
    import numpy as np

    rng = np.random.default_rng(0)
    return negvocab.subsample(rng.normal(1, 1, 200), rng.normal(0, 1, 40), **kw)


def test_subsample_figure_degenerate_cases_are_readable(tmp_path):
    """n = N (SD 0), all FPRs 100% and a single size: a linear axis from 0 with a note, never a log
    axis stretched to 1e-14, and no warning reaching the user."""
    import warnings

    import numpy as np

    from negvocab.report.plots import outside_texts, plot_subsample, subsample_figure

    cases = {
        "n=N": _sub_rows(sizes=[40], draws=20),
        "all 100%": negvocab.subsample(np.zeros(50), np.ones(30), sizes=[5, 30], draws=20),
    }
    for name, rows in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fig = subsample_figure(rows)
            plot_subsample(rows, tmp_path / f"{name}.png")
        ax = fig.axes[0]
        assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= 0.5, name
        notes = [t.get_text() for t in ax.texts]
        assert any("SD 0" in t or "SD is 0" in t for t in notes), (name, notes)
        assert outside_texts(fig) == [] and _border_is_blank(tmp_path / f"{name}.png")
    ok = subsample_figure(_sub_rows(sizes=[5, 10, 20], draws=30))
    assert ok.axes[0].get_yscale() == "log" and not ok.axes[0].texts


def test_subsample_figure_has_one_panel_per_ood_set():
    import numpy as np

    from negvocab.report.plots import subsample_figure

    rng = np.random.default_rng(1)
    rows = negvocab.subsample(
        rng.normal(1, 1, 100),
        rng.normal(0, 1, 60),
        sizes=[5, 20],
        draws=10,
        ood_sets=["a"] * 25 + ["b"] * 35,
        pooled=True,
    )
    fig = subsample_figure(rows)
    assert [ax.get_title() for ax in fig.axes] == ["OOD set a (N=25)", "OOD set b (N=35)", "OOD set pooled (N=60)"]


def test_scores_figure_marks_the_threshold_and_the_fpr95_point():
    """Histograms per OOD set with the paper threshold, ROC per set whose area is sklearn's AUROC and
    whose marked point is FPR@95 at that threshold (computed here directly)."""
    import numpy as np
    from sklearn.metrics import auc, roc_auc_score

    from negvocab.report.plots import scores_figure

    rng = np.random.default_rng(3)
    ids = rng.normal(2, 1, 300)
    oods = np.concatenate([rng.normal(0, 1, 80), rng.normal(1.5, 1, 50)])
    sets = ["far"] * 80 + ["near"] * 50
    fig = scores_figure(ids, oods, sets, detector="neglabel")
    thr = np.quantile(ids, 0.05)  # the paper convention's threshold: the 5% quantile of the ID scores
    hists, roc = fig.axes[:2], fig.axes[2]
    for ax, name in zip(hists, ("far", "near"), strict=True):
        line = [ln for ln in ax.lines if ln.get_linestyle() == "--"][0]
        assert line.get_xdata()[0] == pytest.approx(thr)
        o = oods[np.asarray(sets) == name]
        labels = ax.get_legend_handles_labels()[1]
        assert f"threshold at TPR 95%: FPR {100 * np.mean(o >= thr):.1f}%" in labels
    curves = [ln for ln in roc.lines if len(ln.get_xdata()) > 2]
    for ln, name in zip(curves, ("far", "near"), strict=True):
        o = oods[np.asarray(sets) == name]
        y = np.r_[np.ones(ids.size), np.zeros(o.size)]
        assert auc(ln.get_xdata(), ln.get_ydata()) == pytest.approx(roc_auc_score(y, np.r_[ids, o]), abs=1e-12)
    dots = [ln for ln in roc.lines if ln.get_marker() == "o"]
    assert [d.get_xdata()[0] for d in dots] == pytest.approx([np.mean(oods[:80] >= thr), np.mean(oods[80:] >= thr)])
    flat = scores_figure(np.ones(10), np.ones(5))
    assert any("every score is 1" in t.get_text() for t in flat.axes[0].texts)
