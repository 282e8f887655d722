"""The anchors' published figures as data: the shipped file equals its sources (NegRefine's own
result log; AdaNeg's and TANL's result logs in OpenOOD-VLM's scripts; issue 30's table for NegLabel and
CSP, whose repositories hold no figure), validates, lists from the CLI and the API, and sits beside
matching rows."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import get_benchmark
from negvocab.data.published import (
    PUBLISHED_COLUMNS,
    published_beside,
    published_results,
    published_table_rows,
    read_published,
)
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
    """NegLabel's and CSP's repositories hold no figure: their rows stay the issue's, and say so; the
    issue's AdaNeg and TANL figures are rows read from OpenOOD-VLM's result logs."""
    quoted = {m: (float(a), float(b)) for m, a, b in re.findall(r"\| (\w+) \(.*?([\d.]+) / ([\d.]+)", ISSUE_30)}
    rows = [r for r in read_published() if r.source_kind == "issue table"]
    assert {r.paper for r in rows} == {"NegLabel", "CSP"}
    for r in rows:
        assert (r.fpr95, r.auroc) == quoted[r.paper] and "issue 30" in r.source
        assert "holds no result table or log" in r.note

    def first(paper: str, ood_set: str) -> tuple[float | None, float | None]:
        r = next(r for r in read_published() if (r.paper, r.ood_set) == (paper, ood_set))
        assert r.source_kind == "repository file"
        return r.fpr95, r.auroc

    assert first("AdaNeg", "mean") == quoted["AdaNeg"] and first("TANL", "far-ood") == quoted["TANL"]


#: OpenOOD-VLM's dataset names, as its logs print them; negvocab's
OPENOOD_VLM_SETS = {"ssb_hard": "ssb-hard", "ninco": "ninco", "inaturalist": "inaturalist", "sun": "sun"}
OPENOOD_VLM_SETS |= {"places": "places", "dtd": "textures", "textures": "textures", "openimageo": "openimage-o"}


def _openood_vlm_runs(name: str) -> list[dict[str, object]]:
    """Each ``python main.py`` run of an OpenOOD-VLM script excerpt: its flags and the figures of the log
    pasted under it, ``{(group, set): (fpr, auroc)}`` (``set`` ``mean`` for a group's mean)."""
    lines = [x for x in (SOURCES / name).read_text().splitlines() if not x.startswith("%%")]
    runs: list[dict[str, object]] = []
    shell: dict[str, str] = {}  # the script's variables (``x=1``, ``for x in 1``), to read ``${x}``
    group = current = ""
    for line in lines:
        if m := re.match(r"\s*(?:for )?(\w+)(?:=| in )(\S+)", line):
            shell[m[1]] = m[2]
        if "python main.py" in line:
            runs.append({"flags": {}, "figures": {}, "sizes": {}})
        elif m := re.match(r"\s*--config configs/datasets/\w+/(\S+)\.yml", line):
            runs[-1]["flags"]["config"] = re.sub(r"\$\{(\w+)\}", lambda v: shell[v[1]], m[1])
        elif m := re.match(r"\s*--([\w.]+) (\S+)", line):
            runs[-1]["flags"][m[1]] = re.sub(r"\$\{(\w+)\}", lambda v: shell[v[1]], m[2])
        elif m := re.match(r"# Processing (nearood|farood)\.\.\.", line):
            group = m[1]
        elif m := re.match(r"# Generating combined dataset with ID and OOD dataset of (\w+), total size (\d+)", line):
            runs[-1]["sizes"][m[1]] = int(m[2])
        elif m := re.match(r"# Computing metrics on (\w+) dataset", line):
            current = m[1]
        elif line.startswith("# Computing mean metrics"):
            current = "mean"
        elif m := re.match(r"# FPR@95: ([\d.]+), AUROC: ([\d.]+) ", line):
            runs[-1]["figures"][(group, current)] = (float(m[1]), float(m[2]))
    return runs


def _published_by_source(paper: str) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for r in published_results(method=paper):
        out.setdefault(r.source, {})[r.ood_set] = r
    return out


def test_adaneg_rows_are_its_two_logged_runs():
    """scripts/ood/adaneg/imagenet.sh: two runs (samada False: the headline; True), each logged per set."""
    runs = _openood_vlm_runs("openood_vlm_adaneg_imagenet.sh")
    assert len(runs) == 2 and [len(r["figures"]) for r in runs] == [8, 8]
    shipped = _published_by_source("adaneg")
    assert len(shipped) == 2
    for run in runs:
        flags = run["flags"]
        assert flags["config"] == "imagenet_traditional_four_ood" and flags["network.name"] == "fixedclip_negoodprompt"
        (source,) = [s for s in shipped if s.endswith(f"samada {flags['postprocessor.postprocessor_args.samada']})")]
        rows = shipped[source]
        want = {
            ("near-ood" if g == "nearood" else "mean") if s == "mean" else OPENOOD_VLM_SETS[s]: v
            for (g, s), v in run["figures"].items()
        }
        assert {k: (r.fpr95, r.auroc) for k, r in rows.items()} == want
        for r in rows.values():
            near = r.ood_set in ("ssb-hard", "ninco", "near-ood")
            assert r.benchmark == ("" if near else "mos") and r.id_set == "imagenet-1k val"
            assert (r.model, r.pretrained, r.convention, r.seeds) == ("ViT-B-16", "openai", "openood", "")
            assert r.size == int(flags["network.backbone.ood_number"]) == 10000
            assert r.source_kind == "repository file" and source.startswith("YBZh/OpenOOD-VLM@804f3310d304")
    headline = next(s for s in shipped if "first run" in s)
    assert "samada False" in headline and "adaneg_proxies=task" in shipped[headline]["mean"].note


def test_tanl_rows_are_its_openclip_log_with_the_weights_that_script_loads():
    """scripts/ood/TANL/openclip.sh: OpenOOD v1.5 near and far through OpenCLIP, whose default
    weights (backbone.pretrained unset) are read from the network's code, not assumed."""
    (run,) = _openood_vlm_runs("openood_vlm_tanl_openclip.sh")
    flags = run["flags"]
    assert flags["network.name"] == "fixedclip_negoodprompt_openclip" and flags["config"] == "imagenet_train_ood"
    assert "network.backbone.pretrained" not in flags and flags["network.backbone.name"] == "ViT-B/16"
    weights = re.search(r"'ViT-B-16': '(\w+)'", (SOURCES / "openood_vlm_openclip_weights.txt").read_text())[1]
    (rows,) = _published_by_source("tanl").values()
    want = {
        ("far-ood" if g == "farood" else "near-ood") if s == "mean" else OPENOOD_VLM_SETS[s]: v
        for (g, s), v in run["figures"].items()
    }
    assert len(want) == 7 and {k: (r.fpr95, r.auroc) for k, r in rows.items()} == want
    for r in rows.values():
        assert (r.model, r.pretrained, r.benchmark, r.convention) == ("ViT-B-16", weights, "openood", "openood")
        assert r.id_set == negvocab.get_benchmark("openood").id.name and r.size is None  # a corpus, not M
        assert (
            f"ood_number {flags['network.backbone.ood_number']})" in r.note
            and f"{flags['postprocessor.postprocessor_args.beta']} active" in r.note
        )
    # the ID set is OpenOOD v1.5's test split: 5000 images fewer than AdaNeg's whole val (50000), same OOD sets
    adaneg = _openood_vlm_runs("openood_vlm_adaneg_imagenet.sh")[0]["sizes"]
    assert adaneg["inaturalist"] - run["sizes"]["inaturalist"] == adaneg["ninco"] - run["sizes"]["ninco"] == 5000


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
    return {
        **base,
        "vocab_source": "wordnet",
        "ood_set": "mean",
        "convention": "hendrycks",
        "id_classes": "imagenet1k",
        **kw,
    }


def test_rows_meet_figures_only_when_the_settings_match():
    figures = read_published()
    pairs = published_beside([_row()], figures)
    assert [f.paper for _, f in pairs] == ["NegLabel"]  # CSP's figure needs a CSP vocabulary
    assert [f.paper for _, f in published_beside([_row(vocab_source="csp")], figures)] == ["CSP"]
    for other in (
        {"convention": "paper"},
        {"model": "ViT-B-32"},
        {"ood_set": "sun"},
        {"random_weights": True},
        {"id_classes": "custom:cub200.txt"},  # CUB-200 as ID: not ImageNet-1k's figure, whatever the OOD set
        {"id_classes": "imagenet1k-subset100"},  # ImageNet-100 (hard OOD) neither
    ):
        assert published_beside([_row(**other)], figures) == [], other
    with pytest.warns(UserWarning, match="1 result rows name no ID label space"):  # a row that does not say ...
        assert published_beside([_row(id_classes="")], figures) == []  # ... matches nothing, said
    # ... unless the caller says it
    assert [f.paper for _, f in published_beside([_row(id_classes="")], figures, id_classes="imagenet1k")] == [
        "NegLabel"
    ]
    got = published_table_rows([_row(), _row(vocabulary="wn2")])
    assert [r["vocabulary"] for r in got] == ["wn [published: NegLabel]", "wn2 [published: NegLabel]"]
    assert got[0]["fpr"] == pytest.approx(0.254) and got[0]["published"] and "issue 30" in got[0]["source"]
    assert got[0]["source"].endswith("(ID: imagenet-1k val)")


def test_every_figure_knows_its_id_label_space():
    """Each shipped figure names the label space rows are matched on; a benchmark with its own class
    list gives that list's name, as `negvocab score` records it."""
    assert {f.label_space for f in read_published()} == {"imagenet1k"}
    cub = dataclasses.replace(read_published()[0], benchmark="finegrained-cub200", ood_set="inaturalist")
    assert cub.label_space == get_benchmark("finegrained-cub200").id_classes().dataset == "custom:cub200.txt"
    assert dataclasses.replace(cub, benchmark="", id_set="CUB-200-2011 test").label_space == ""


def test_cli_lists_them():
    res = CliRunner().invoke(app, ["published"])
    assert res.exit_code == 0, res.output
    assert (
        "NegRefine  negrefine" in res.output and "1.51" in res.output and "Published, not computed here" in res.output
    )
    res = CliRunner().invoke(app, ["published", "--method", "nosuch", "-m", "ViT-B-16"])
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        "error: no published figure matches --method nosuch --model ViT-B-16; methods: AdaNeg, CSP, NegLabel, "
        "NegRefine, TANL, adaneg, neglabel, negrefine, tanl; models: ViT-B-16; benchmarks: mos, openood"
    ]  # not an empty table
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
    (out / "grid.json").write_text(json.dumps({"stats": {}, "id_classes": "imagenet1k"}))
    args = ["table", str(out), "--rows", "vocabulary", "--cols", "ood_set", "--metric", "fpr", "--bold", "none"]
    plain = CliRunner().invoke(app, args)
    res = CliRunner().invoke(app, [*args, "--published"])
    assert plain.exit_code == 0 and res.exit_code == 0, res.output
    assert "published" not in plain.stdout
    assert "wn [published: NegLabel]" in res.stdout and "25.40" in res.stdout
    assert f"{100 * rep['fpr']:.2f}" in res.stdout and not math.isnan(rep["fpr"]) and not res.stderr
    # the same row with CUB-200 as ID: ImageNet-1k's figure is not set beside it
    (out / "grid.json").write_text(json.dumps({"stats": {}, "id_classes": "custom:cub200.txt"}))
    res = CliRunner().invoke(app, [*args, "--published"])
    assert res.exit_code == 0 and "published" not in res.stdout and not res.stderr, res.output
    # a folder that does not say (an older release's grid): no figure, and one line saying why
    (out / "grid.json").write_text(json.dumps({"stats": {}}))
    res = CliRunner().invoke(app, [*args, "--published"])
    assert res.exit_code == 0 and "published" not in res.stdout, res.output
    assert "1 rows come from a folder that does not name its ID label space" in res.stderr
