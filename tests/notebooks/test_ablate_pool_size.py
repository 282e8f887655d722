"""notebooks/ablate_pool_size.ipynb runs top to bottom (random weights, tiny images, small pool)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import negvocab
from tests.scoring.conftest import NEG_B

nbformat = pytest.importorskip("nbformat")  # the test extra; bare GPU machines lack it
pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "ablate_pool_size.ipynb"


def _with_parameters(nb, overrides):
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and params[0] is nb.cells[1], "the parameters cell must be at the top"
    src = params[0].source
    for name, value in overrides.items():
        assert f"\n{name} = " in f"\n{src}", name
        src += f"\n{name} = {json.dumps(value) if value is not None else 'None'}"
    params[0].source = src
    return nb


@pytest.fixture
def kernel_env(monkeypatch):
    # the kernel is a fresh process: make it import this checkout, not whatever negvocab is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def test_notebook_runs_with_random_weights(tiny, tmp_path, kernel_env):
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    oracle = negvocab.build_oracle_vocabulary(["paper towel holder", "kite toy"])
    oracle.save(tmp_path / "oracle.json")
    negvocab.Vocabulary.from_labels(NEG_B, source="gpt").save(tmp_path / "gpt.json")
    wnids = list(negvocab.imagenet1k().wnids[:8])
    out_png = tmp_path / "ablation.png"
    overrides = {
        "PRETRAINED": None,
        "DEVICE": "cpu",
        "CACHE_DIR": str(tiny / "cache"),
        "ID_WNIDS": wnids,
        "N_CANDIDATES": 80,
        "SIZES": [10, 20, 40],
        "GROUPS": 5,
        "GPT_VOCAB": str(tmp_path / "gpt.json"),
        "ORACLE_VOCAB": str(tmp_path / "oracle.json"),
        "OUT_PNG": str(out_png),
    }
    nb = _with_parameters(nb, overrides)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(
        o.get("text", "") if o.get("output_type") == "stream" else json.dumps(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert "WARNING: RANDOM WEIGHTS" in text
    assert "using a tiny generated image set" in text
    # the toy images' folder went with the kernel, and no widget-bar warning was printed
    toy = re.search(r"using a tiny generated image set: (\S+)", text).group(1)
    assert "negvocab-nb-" in toy and not Path(toy).exists()
    assert "IProgress" not in text
    assert all(f"M={m:>6}" in text for m in (10, 20, 40))
    assert "GPT siblings (M=8)" in text and "oracle (M=2)" in text
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(
        o.get("output_type") == "display_data" and "image/png" in o.get("data", {})
        for c in nb.cells
        for o in c.get("outputs", [])
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ID_DIR": "/some/val"}, "set ID_DIR and one of OOD_DIR / FI_OOD_LIST"),  # not silently the toy set
        ({"FI_OOD_LIST": "/some/fi.csv"}, "set ID_DIR and one of OOD_DIR / FI_OOD_LIST"),
        ({"SIZES": [10, 5000], "N_CANDIDATES": 40, "PRETRAINED": None, "DEVICE": "cpu"}, "sizes M [5000] exceed the"),
    ],
)
def test_notebook_refuses_half_given_data_and_sizes_beyond_the_ranking(tiny, tmp_path, kernel_env, overrides, message):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = _with_parameters(nbformat.read(NOTEBOOK, as_version=4), {"CACHE_DIR": str(tiny / "cache"), **overrides})
    with pytest.raises(CellExecutionError, match=re.escape(message)):
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        ).execute()


@pytest.mark.parametrize("name", ["negvocab.evaluation.evaluate", "negvocab.scoring.scores"])
def test_notebook_uses_only_the_public_api(name):
    code = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code")
    assert name not in code and "._" not in code  # no module paths, no private names
