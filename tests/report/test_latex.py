"""The LaTeX tables compile in a two-column paper (pdflatex and lualatex, booktabs + siunitx) with no
overfull box, print >= as the glyph (not an inverted question mark) and are ASCII; skipped without TeX."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from negvocab.grid.tidy import Pivot
from negvocab.report.tables import build_table, latex_escape

ENGINES = [e for e in ("pdflatex", "lualatex") if shutil.which(e)]
needs_tex = pytest.mark.skipif(
    not ENGINES, reason="TeX is not installed (scripts/setup.sh installs Debian's texlive-latex-recommended and others)"
)
# A two-column page as IEEE/CVPR set it: 505 pt text width, 23 pt between the columns = 241 pt columns.
# No fontenc: pdflatex's default OT1 encoding, where a literal ">" prints as an inverted question mark.
PREAMBLE = r"""\documentclass[10pt,twocolumn]{article}
\setlength{\textwidth}{505pt}\setlength{\columnsep}{23pt}\setlength{\oddsidemargin}{-25pt}
\setlength{\textheight}{680pt}\setlength{\topmargin}{-40pt}
\usepackage{booktabs,siunitx,graphicx}
\sisetup{detect-weight=true}
\begin{document}
"""
MODELS = ["CLIP ViT-B/32", "CLIP RN50", "EVA02-L-14-336"]
VOCABS = ["wordnet@100", "wordnet@200", "wordnet@400", "handpicked", "oracle"]


def _rows():
    """The example grid's Table-2 shape: models x (vocabularies + MCM), FPR and AUROC with intervals."""
    rng = np.random.default_rng(0)
    rows = []
    for m in MODELS:
        for v in [*VOCABS, ""]:
            fpr, auroc = float(rng.uniform(0, 1)), float(rng.uniform(0.5, 1))
            rows.append(
                {
                    "model": m, "vocabulary": v, "method": "neglabel" if v else "mcm", "ood_set": "mean",
                    "convention": "paper", "tpr": 0.95, "fpr": fpr, "fpr_ci_low": fpr * 0.9,
                    "fpr_ci_high": min(1, fpr * 1.1),
                    "auroc": auroc, "auroc_ci_low": auroc * 0.95, "auroc_ci_high": min(1.0, auroc * 1.02),
                    "aupr_in": 0.5, "aupr_out": 0.5, "n_id": 12, "n_ood": 31, "templates": "single",
                    "random_weights": True, "deployable": v != "oracle",
                    "caveats": "oracle: the OOD set's labels" if v == "oracle" else (
                        "id_names: 2 of 24 labels are ID class names ('mountain', 'volcano')"
                        if v == "handpicked" else ""),
                }
            )  # fmt: skip
    return rows


def _tables() -> dict[str, str]:
    rows = _rows()
    t2 = dict(rows_by="model", cols_by="vocabulary", where={"method": "neglabel"}, mean_rows=True, intervals=True)
    one = build_table(rows, metric="fpr", **t2)
    narrow = [r for r in rows if r["vocabulary"] in ("wordnet@100", "wordnet@200", "handpicked", "")]
    four = build_table(narrow, metric="fpr", **t2)
    two = build_table(rows, metric=["fpr", "auroc"], **t2)
    pivot = Pivot("fpr", MODELS, ["graphics", "noise", "stripes", "mean"], np.full((3, 4), 0.5), False,
                  notes=["FPR@95 (%), paper convention.", "Threshold: FPR = share of OOD scores >= it."])  # fmt: skip
    return {
        "fpr-4": four.to_latex(),
        "fpr": one.to_latex(),
        "fpr-siunitx": one.to_latex(siunitx=True),
        "fpr-auroc": two.to_latex(),
        "fpr-auroc-siunitx-wide": two.to_latex(siunitx=True, wide=True),
        "pivot": pivot.to_latex(caption="wordnet / neglabel / paper"),
    }


def test_latex_is_ascii_with_geq_and_a_short_caption():
    for name, tex in _tables().items():
        assert tex.isascii(), name
        assert ">=" not in tex and "$\\geq$" in tex, name
        caption = re.search(r"\\caption\{(.*)\}", tex).group(1)
        assert len(caption) < 200, (name, caption)  # details go to the notes under the table
    assert latex_escape("a >= b <= c ± d_e 50%") == "a $\\geq$ b $\\leq$ c $\\pm$ d\\_e 50\\%"
    assert "\\begin{table*}" in _tables()["fpr-auroc-siunitx-wide"]


@needs_tex
@pytest.mark.parametrize("engine", ENGINES)
def test_tables_compile_in_a_two_column_paper_without_overfull_boxes(engine, tmp_path):
    body = []
    for name, tex in _tables().items():
        measure = f"\\typeout{{NVWIDTH {name} \\the\\wd\\nvtablebox}}"  # inside the float: the box is local
        body += [tex.replace("\\end{table", measure + "\n\\end{table"), "\\clearpage"]
    (tmp_path / "paper.tex").write_text(PREAMBLE + "\n".join(body) + "\n\\end{document}\n")
    run = subprocess.run(
        [engine, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert run.returncode == 0, log[-3000:]
    assert "Overfull \\hbox" not in log and "Overfull \\vbox" not in log, log
    widths = dict(re.findall(r"NVWIDTH (\S+) ([\d.]+)pt", log))
    print(engine, widths)  # the natural widths (pt) before any shrinking to the column
    assert set(widths) == set(_tables())
    assert float(widths["fpr-4"]) <= 241.0  # Table 2 with intervals, 4 entries: a column without shrinking
    shrunk = set(re.findall(r"negvocab: table (\S+) is", log))
    assert shrunk == {"tab:results"} or not shrunk  # wider tables say they were shrunk (--wide: table*)
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", "paper.pdf", "-"], cwd=tmp_path, capture_output=True, text=True).stdout
        # the math glyph (cmsy's slot 0x15 without a ToUnicode map under pdflatex), never OT1's inverted marks
        assert ("≥" in text or "\x15" in text) and "¿" not in text and "¡" not in text
