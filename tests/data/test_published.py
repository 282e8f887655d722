"""The anchors' published figures as data: the shipped file equals its sources (NegRefine's own
result log; issue 30's table), validates, lists from the CLI and the API, and sits beside matching rows."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.data.published import (
    PUBLISHED_COLUMNS,
    published_beside,
    published_results,
    published_table_rows,
    read_published,
)
from negvocab.errors import InputError
from negvocab.scoring import metrics as M

SOURCES = Path(__file__).parent / "published_sources"
#: issue 30's table, as filed (method | ... | ImageNet-1k FPR95 / AUROC)
ISSUE_30 = """
| NegLabel (ICLR 24) | WordNet farthest 15% per part of speech, grouped score | yes | 25.40 / 94.21 |
| CSP (NeurIPS 24) | NegLabel's pool plus "conjugated" labels | yes | 17.51 / 95.76 |
| AdaNeg (NeurIPS 24) | memory bank of confident test-image features | test-time | 17.95 / 96.70 |
| TANL (CVPR 26) | per batch, the negatives of the ~70k corpus | test-time | far-OOD 20.43 / 95.77 (OpenOOD v1.5) |
"""
#: NegRefine's log names its sets so; negvocab names them so
NEGREFINE_SETS = {"inaturalist": "inaturalist", "open_image": "openimage-o", "clean": "clean", "ninco": "ninco"}
NEGREFINE_SETS |= {"sun": "sun", "places": "places", "texture": "textures"}


def test_negrefine_rows_are_its_result_log_rounded_as_its_readme():
    text = (SOURCES / "negrefine_result.txt").read_text()
    found = re.findall(r"-+ (\w+) -+\nscore0\s+auroc: ([\d.]+)\s+fpr: ([\d.]+)", text)
    assert len(found) == 7
    rows = {r.ood_set: r for r in published_results(method="negrefine")}
    assert len(rows) == 7
    for name, auroc, fpr in found:
        r = rows[NEGREFINE_SETS[name]]
        assert (r.auroc, r.fpr95) == (round(100 * float(auroc), 2), round(100 * float(fpr), 2)), name
        assert r.source_kind == "repository file" and "output/imagenet/seed_0/result.txt" in r.source
        assert (r.model, r.pretrained, r.seeds, r.size, r.convention) == ("ViT-B-16", "openai", "0", 6370, "hendrycks")


def test_issue_rows_are_the_issue_table():
    quoted = {m: (float(a), float(b)) for m, a, b in re.findall(r"\| (\w+) \(.*?([\d.]+) / ([\d.]+)", ISSUE_30)}
    rows = [r for r in read_published() if r.source_kind == "issue table"]
    assert {r.paper for r in rows} == set(quoted)
    for r in rows:
        assert (r.fpr95, r.auroc) == quoted[r.paper] and "issue 30" in r.source
    assert next(r for r in rows if r.paper == "TANL").ood_set == "far-ood"


def test_every_row_names_its_source_and_settings():
    rows = read_published()
    assert rows and all(r.source and r.source_kind and r.model and r.convention for r in rows)
    assert all(r.fpr95 is not None or r.auroc is not None for r in rows)
    assert negvocab.published_results() == rows  # the API


def _write(tmp_path, lines):
    p = tmp_path / "pub.csv"
    p.write_text("\n".join([",".join(PUBLISHED_COLUMNS), *lines]) + "\n")
    return p


GOOD = "X,neglabel,,ViT-B-16,openai,,,mos,val,sun,10,90,paper,,readme,a README,"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (GOOD.replace(",10,90,", ",110,90,"), r"pub.csv:3: fpr95 must be in \[0, 100\] \(percent\), got 110"),
        (GOOD.replace(",10,90,", ",,,"), "neither fpr95 nor auroc"),
        (GOOD.replace(",sun,", ",ninco,"), "ood_set 'ninco' is not a set of benchmark 'mos'"),
        (GOOD.replace(",readme,a README,", ",readme,,"), "source is empty"),
        (GOOD.replace(",paper,", ",percentile,"), "unknown convention 'percentile'"),
        (GOOD.replace(",readme,", ",blog,"), "unknown source_kind 'blog'"),
        (GOOD.replace(",,mos,", ",-5,mos,"), "size must be a positive integer"),
        (GOOD.replace(",mos,", ",nope,"), "nope"),
    ],
)
def test_a_bad_row_is_one_line_naming_file_line_and_column(tmp_path, line, message):
    with pytest.raises(InputError, match=message):
        read_published(_write(tmp_path, [GOOD.replace(",sun,", ",places,"), line]))


def test_header_and_duplicates_are_refused(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("method,model\nneglabel,ViT-B-16\n")
    with pytest.raises(InputError, match="the header must be"):
        read_published(p)
    with pytest.raises(InputError, match="two rows for neglabel on sun"):
        read_published(_write(tmp_path, [GOOD, GOOD]))
    assert read_published(_write(tmp_path, [GOOD]))[0].auroc == 90.0


def _row(**kw):
    base = {"model": "ViT-B-16", "pretrained": "openai", "method": "neglabel", "vocabulary": "wn"}
    return {**base, "vocab_source": "wordnet", "ood_set": "mean", "convention": "hendrycks", **kw}


def test_rows_meet_figures_only_when_the_settings_match():
    figures = read_published()
    pairs = published_beside([_row()], figures)
    assert [f.paper for _, f in pairs] == ["NegLabel"]  # CSP's figure needs a CSP vocabulary
    assert [f.paper for _, f in published_beside([_row(vocab_source="csp")], figures)] == ["CSP"]
    for other in ({"convention": "paper"}, {"model": "ViT-B-32"}, {"ood_set": "sun"}, {"random_weights": True}):
        assert published_beside([_row(**other)], figures) == [], other
    got = published_table_rows([_row(), _row(vocabulary="wn2")])
    assert [r["vocabulary"] for r in got] == ["wn [published: NegLabel]", "wn2 [published: NegLabel]"]
    assert got[0]["fpr"] == pytest.approx(0.254) and got[0]["published"] and "issue 30" in got[0]["source"]


def test_cli_lists_them():
    res = CliRunner().invoke(app, ["published"])
    assert res.exit_code == 0, res.output
    assert (
        "NegRefine  negrefine" in res.output and "1.51" in res.output and "Published, not computed here" in res.output
    )
    res = CliRunner().invoke(app, ["published", "--method", "CSP", "--csv"])
    lines = res.output.strip().splitlines()
    assert lines[0] == ",".join(PUBLISHED_COLUMNS) and len(lines) == 2 and ",17.51,95.76," in lines[1]


def test_table_shows_a_matching_figure_beside_the_row(tmp_path):
    """A grid cell with NegLabel's published settings: --published adds the figure as a marked row."""
    out = tmp_path / "g"
    (out / "cells").mkdir(parents=True)
    rng = np.random.default_rng(0)
    s_id, s_ood = rng.normal(1, 1, 30), rng.normal(0, 1, 20)
    rep = M.evaluate(s_id, s_ood, n_boot=0, convention="hendrycks")
    row = {
        "model": "ViT-B-16", "pretrained": "openai", "random_weights": False, "vocabulary": "wn", "vocab_source":
        "wordnet", "deployable": True, "caveats": "", "ood_set": "mean", "method": "neglabel",
        "convention": "hendrycks", "tpr": 0.95, "fpr": rep["fpr"], "auroc": rep["auroc"], "aupr_in": rep["aupr_in"],
        "aupr_out": rep["aupr_out"], "n_id": 30, "n_ood": 20, "templates": "neglabel", "cell": "c1",
    }  # fmt: skip
    (out / "cells" / "c1.json").write_text(json.dumps({"row": row, "digest": "c1"}))
    (out / "scores_index.json").write_text("{}")
    args = ["table", str(out), "--rows", "vocabulary", "--cols", "ood_set", "--metric", "fpr", "--bold", "none"]
    plain = CliRunner().invoke(app, args)
    res = CliRunner().invoke(app, [*args, "--published"])
    assert plain.exit_code == 0 and res.exit_code == 0, res.output
    assert "published" not in plain.stdout
    assert "wn [published: NegLabel]" in res.stdout and "25.40" in res.stdout
    assert f"{100 * rep['fpr']:.2f}" in res.stdout and not math.isnan(rep["fpr"])
