"""plot_sweep: the suffix's format, a paper-ready figure (title, CI bands, FPR within [0, 100], overlays)."""

from __future__ import annotations

import pytest
from PIL import Image

import negvocab
from negvocab.errors import InputError
from negvocab.report.plots import sweep_figure


def _rows(method="neglabel", model="ViT-B-32", vocabulary="wn", fprs=(0.9, 0.5, 0.02), ood_set="ood"):
    out = []
    for m, f in zip((1000, 2000, 5000), fprs, strict=True):
        out.append({
            "M": m, "method": method, "model": model, "pretrained": "laion2b", "random_weights": False, "vocabulary": vocabulary,
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
        assert 0 <= low < high <= 100
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


def test_several_ood_sets_draw_their_mean_unless_asked():
    rows = _rows(ood_set="A") + _rows(ood_set="B", fprs=(0.5, 0.4, 0.3)) + _rows(ood_set="mean", fprs=(0.7, 0.45, 0.16))
    assert [ln.get_ydata()[0] for ln in sweep_figure(rows).axes[0].lines] == [pytest.approx(70.0)]
    assert len(sweep_figure(rows, ood_set="all").axes[0].lines) == 3
    assert [ln.get_ydata()[0] for ln in sweep_figure(rows, ood_set="B").axes[0].lines] == [pytest.approx(50.0)]


def test_the_notebook_draws_the_figure_through_the_same_function():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[2] / "notebooks" / "ablate_pool_size.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "negvocab.sweep_figure(" in code and "fill_between" not in code and "axhline" not in code
