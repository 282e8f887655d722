"""The anchors' published figures as data: the shipped file equals its sources (NegRefine's own
result log; AdaNeg's and TANL's result logs in OpenOOD-VLM's scripts; the papers' abstracts for the
papers' figures that the abstracts fix), validates, lists from the CLI and the API, and sits beside rows
of its own benchmark and ID split only."""

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
    row_benchmark,
)
from negvocab.report.latex import latex_escape
from negvocab.report.tables import build_table
from negvocab.scoring import metrics as M

SOURCES = Path(__file__).parent / "published_sources"
#: the sentences of the papers' abstracts that state ImageNet-1k figures (arXiv ids in the rows' sources)
ABSTRACTS = (SOURCES / "abstracts.txt").read_text()
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
        assert r.kind == "one seed of 10" and "output/imagenet/seed_0/result.txt" in r.source
        assert (r.model, r.pretrained, r.seeds, r.size, r.convention) == ("ViT-B-16", "openai", "0", 6370, "hendrycks")
        assert r.id_split == "ImageNet-1k val" and "10 seeds is not read here" in r.checked
    # OpenImage-O ran against the whole val (17632 images, which its FPR counts in): no negvocab benchmark pairs them
    fpr = float(dict((n, f) for n, _, f in found)["open_image"])
    assert fpr * 17632 == pytest.approx(round(fpr * 17632), abs=1e-6)
    assert rows["openimage-o"].benchmark == "" and "17632 images" in rows["openimage-o"].note
    assert {rows[s].benchmark for s in ("inaturalist", "sun", "places", "textures")} == {"mos"}


def _gain(paper: str, what: str) -> float:
    """The gain over the prior best that ``paper``'s abstract states for ``what`` (FPR95 or AUROC)."""
    text = ABSTRACTS.split(f"[{paper}]")[1].split("[")[0]
    found = re.search(rf"([\d.]+)% (?:increase in |reduction in |in ){what}", text)
    assert found, (paper, what)
    return float(found[1])


def test_the_papers_figures_name_the_papers_and_agree_with_their_abstracts():
    """NegLabel's, CSP's and AdaNeg's means over the MOS four are the papers' (their tables could not be
    read here: each row says so); what the abstracts state fixes them: CSP's FPR95 gain over the prior
    best (NegLabel), AdaNeg's FPR95 and AUROC gains; AdaNeg's authors' log of the same run differs and is
    shown beside it."""
    paper = {r.paper: r for r in read_published() if r.kind == "paper table"}
    assert set(paper) == {"NegLabel", "CSP", "AdaNeg"}
    for name, arxiv in (("NegLabel", "2403.20078"), ("CSP", "2410.08611"), ("AdaNeg", "2410.20149")):
        r = paper[name]
        assert f"arXiv {arxiv}" in r.source and r.checked.startswith("not checked against the paper's table")
        assert (r.benchmark, r.id_split, r.ood_set, r.model, r.pretrained) == (
            "mos", "ImageNet-1k val", "mean", "ViT-B-16", "openai"
        )  # fmt: skip
    neglabel, csp, adaneg = paper["NegLabel"], paper["CSP"], paper["AdaNeg"]
    assert csp.fpr95 == pytest.approx(neglabel.fpr95 - _gain("CSP", "FPR95"))
    assert adaneg.fpr95 == pytest.approx(neglabel.fpr95 - _gain("AdaNeg", "FPR95"))
    assert adaneg.auroc == pytest.approx(neglabel.auroc + _gain("AdaNeg", "AUROC"))
    log = next(
        r for r in read_published() if r.kind == "authors' log" and "first run" in r.source and r.ood_set == "mean"
    )
    assert (log.fpr95, log.auroc) == (17.95, 96.70) != (adaneg.fpr95, adaneg.auroc)
    assert (log.benchmark, log.id_split) == (adaneg.benchmark, adaneg.id_split)  # the same run, two figures
    tanl = next(r for r in read_published() if r.paper == "TANL" and r.kind == "paper abstract")
    assert re.search(rf"from {csp.fpr95:.1f}% to {tanl.fpr95}%", ABSTRACTS) and tanl.auroc is None


def test_interneg_rows_are_the_table_its_readme_shows():
    """InterNeg's rows equal Table 1 of its paper as the authors' README shows it (an image, transcribed by hand
    in published_sources/): the per-set figures, the average as the mean of the four (a slip in one figure
    fails it), and the abstract's 3.47% FPR95 reduction over the second best of the same table (CSP)."""
    table = {}
    for line in (SOURCES / "interneg_readme_table1.txt").read_text().splitlines():
        name, *cells = line.split() or [""]
        if name in ("CSP", "InterNeg") and len(cells) == 10:
            table[name] = [float(x) for x in cells]
    sets = ["inaturalist", "sun", "places", "textures", "mean"]
    rows = {r.ood_set: r for r in published_results(method="interneg")}
    assert list(rows) == sets
    for i, name in enumerate(sets):
        auroc, fpr = table["InterNeg"][2 * i], table["InterNeg"][2 * i + 1]
        assert (rows[name].fpr95, rows[name].auroc) == (fpr, auroc), name
    for col in (0, 1):  # AUROC, FPR95: the average column is the mean of the four (as printed, to 0.01)
        assert abs(np.mean(table["InterNeg"][col:8:2]) - table["InterNeg"][8 + col]) <= 0.0051
        assert abs(np.mean(table["CSP"][col:8:2]) - table["CSP"][8 + col]) <= 0.0051
    gain = float(re.search(r"([\d.]+)% reduction in FPR95", ABSTRACTS.split("[InterNeg]")[1])[1])
    assert rows["mean"].fpr95 == pytest.approx(table["CSP"][9] - gain)
    for r in rows.values():  # what a reader needs: the kind, the source, the ID split and that it is test-time
        assert r.kind == "authors' README" and "arXiv 2603.02618" in r.source and "figures/results.png" in r.source
        assert r.benchmark == "" and "45000" in r.id_split and r.convention == "openood"
        assert "test-time" in r.note and "text side only" in r.note and r.size == 2000


def test_the_package_cites_no_tracker():
    """Nothing in the package refers to this project's issue tracker (history belongs in git)."""
    package = Path(negvocab.__file__).parent
    tracker = re.compile(r"issue ?[0-9]+|negvocab issue|issue table", re.IGNORECASE)
    elsewhere = re.compile(r"[\w.-]+/[\w.-]+ issue ?[0-9]+", re.IGNORECASE)  # another project's, named by repository
    hits = [
        f"{p.relative_to(package)}:{n}"
        for p in sorted(package.rglob("*"))
        if p.is_file() and p.suffix in (".py", ".csv", ".toml", ".txt", ".md", ".json", ".html", ".yaml")
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if tracker.search(elsewhere.sub("", line))
    ]
    assert hits == []


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
        if r.kind == "authors' log":
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
            assert r.benchmark == ("" if near else "mos") and r.id_split.startswith("ImageNet-1k val")
            assert (r.model, r.pretrained, r.convention, r.seeds) == ("ViT-B-16", "openai", "openood", "")
            assert r.size == int(flags["network.backbone.ood_number"]) == 10000
            assert source.startswith("YBZh/OpenOOD-VLM@804f3310d304") and r.checked.startswith("equal to the log")
        # the ID set is the whole val: each combined set is its OOD images and the 50000 ID images
        assert run["sizes"]["inaturalist"] == 50000 + 10000
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
        assert r.id_split == negvocab.get_benchmark("openood").id.name and r.size is None  # a corpus, not M
        assert r.kind == "authors' log" and "LAION-2B weights, not the paper's headline" in r.checked
        assert (
            f"ood_number {flags['network.backbone.ood_number']})" in r.note
            and f"{flags['postprocessor.postprocessor_args.beta']} active" in r.note
        )
    # the ID set is OpenOOD v1.5's test split: 5000 images fewer than AdaNeg's whole val (50000), same OOD sets
    adaneg = _openood_vlm_runs("openood_vlm_adaneg_imagenet.sh")[0]["sizes"]
    assert adaneg["inaturalist"] - run["sizes"]["inaturalist"] == adaneg["ninco"] - run["sizes"]["ninco"] == 5000


def test_every_row_names_its_source_and_settings():
    rows = read_published()
    assert rows and all(r.source and r.kind and r.checked and r.model and r.convention and r.id_split for r in rows)
    assert all(r.fpr95 is not None or r.auroc is not None for r in rows)
    assert negvocab.published_results() == rows  # the API


def _write(tmp_path, lines):
    p = tmp_path / "pub.csv"
    p.write_text("\n".join([",".join(PUBLISHED_COLUMNS), *lines]) + "\n")
    return p


GOOD = "X,neglabel,,ViT-B-16,openai,,,mos,ImageNet-1k val,sun,10,90,paper,,paper table,a paper,read there,"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (GOOD.replace(",10,90,", ",110,90,"), r"pub.csv:3: fpr95 must be in \[0, 100\] \(percent\), got 110"),
        (GOOD.replace(",10,90,", ",,,"), "neither fpr95 nor auroc"),
        (GOOD.replace(",sun,", ",ninco,"), "ood_set 'ninco' is not a set of benchmark 'mos'"),
        (GOOD.replace(",a paper,", ",,"), "source is empty"),
        (GOOD.replace(",read there,", ",,"), "checked is empty"),
        (GOOD.replace(",paper,", ",percentile,"), "unknown convention 'percentile'"),
        (
            GOOD.replace(",paper table,", ",blog,"),
            "pub.csv:3: unknown kind 'blog'; choose one of paper table, .*, rerun or ",
        ),
        (GOOD.replace(",paper table,", ",one seed of 1,"), "unknown kind 'one seed of 1'"),
        (GOOD.replace(",,mos,", ",-5,mos,"), "size must be a positive integer"),
        (GOOD.replace(",mos,", ",nope,"), "pub.csv:3: benchmark 'nope': "),
        (
            GOOD.replace("ImageNet-1k val", "ImageNet-1k (OpenOOD test)"),
            "pub.csv:3: id_split 'ImageNet-1k \\(OpenOOD test\\)' is not the ID split of benchmark 'mos'; "
            "allowed: 'ImageNet-1k val'",
        ),
        (GOOD.replace("ImageNet-1k val", ""), "id_split is empty"),
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


#: the MOS four as a results file records where they came from, and its ID split
MOS = {
    "id_split": "ImageNet-1k val",
    "set_benchmarks": dict.fromkeys(("inaturalist", "sun", "places", "textures"), "mos"),
}
#: OpenOOD v1.5 full-spectrum: the same set names (textures, mean) on another ID split and other files
FS = negvocab.get_benchmark("openood-fs")
FULL_SPECTRUM = {
    "id_split": negvocab.data.benchmarks.id_split_name(FS),
    "set_benchmarks": {s.name: "openood-fs" for s in FS.sets},
}


def _row(**kw):
    base = {"model": "ViT-B-16", "pretrained": "openai", "method": "neglabel", "vocabulary": "wn"}
    return {
        **base,
        "vocab_source": "wordnet",
        "ood_set": "mean",
        "convention": "hendrycks",
        "id_classes": "imagenet1k",
        **MOS,
        **kw,
    }


def _papers(pairs):
    return [f.paper for _, f in pairs]


def test_rows_meet_figures_only_when_the_settings_match():
    figures = read_published()
    assert _papers(published_beside([_row()], figures)) == ["NegLabel"]  # CSP's figure needs a CSP vocabulary
    assert _papers(published_beside([_row(vocab_source="csp")], figures)) == ["CSP"]
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
    assert _papers(published_beside([_row(id_classes="")], figures, id_classes="imagenet1k")) == ["NegLabel"]
    got = published_table_rows([_row(), _row(vocabulary="wn2")])
    assert [r["vocabulary"] for r in got] == [
        "wn [published: NegLabel, paper table]",
        "wn2 [published: NegLabel, paper table]",
    ]
    assert got[0]["fpr"] == pytest.approx(0.254) and got[0]["published"] and "arXiv 2403.20078" in got[0]["source"]
    assert (got[0]["benchmark"], got[0]["id_split"], got[0]["kind"]) == ("mos", "ImageNet-1k val", "paper table")


def test_a_figure_meets_rows_of_its_own_benchmark_and_id_split_only():
    """Set names are shared across benchmarks: NegLabel's mean over the MOS four (the 50,000-image val)
    is not the mean of an OpenOOD full-spectrum run, nor of a run on part of the MOS four, nor of rows that
    do not say where their sets came from; MOS's Textures is not OpenOOD's Textures list."""
    figures = read_published()
    assert published_beside([_row(**FULL_SPECTRUM)], figures) == []
    negrefine = {"method": "negrefine", "vocab_source": "negrefine", "ood_set": "textures"}
    assert _papers(published_beside([_row(**negrefine)], figures)) == ["NegRefine"]
    assert published_beside([_row(**negrefine, **FULL_SPECTRUM)], figures) == []
    openood = {"set_benchmarks": {s.name: "openood" for s in negvocab.get_benchmark("openood").sets}}
    assert published_beside([_row(**negrefine, **openood)], figures) == []  # another ID split, another list
    three = {"set_benchmarks": dict.fromkeys(("inaturalist", "sun", "places"), "mos")}
    for unsaid in (three, {"set_benchmarks": {}}, {"id_split": ""}):
        with pytest.warns(UserWarning, match="0 result rows name no ID label space .* and 1 no benchmark or ID split"):
            assert published_beside([_row(**unsaid)], figures) == [], unsaid
    assert published_beside([_row(id_split="ImageNet-1k (OpenOOD test)")], figures) == []
    # the same sets from another registered benchmark, on the same ID split, are the same figure's
    negvocab.register_benchmark(
        negvocab.Benchmark("mos-copy", "the MOS four again", get_benchmark("mos").sets, get_benchmark("mos").id)
    )
    try:
        copy = {"set_benchmarks": dict.fromkeys(MOS["set_benchmarks"], "mos-copy")}
        assert _papers(published_beside([_row(**copy)], figures)) == ["NegLabel"]
    finally:
        negvocab.unregister_benchmark("mos-copy")
    # the summary's sets must all come from one benchmark and be all of them
    assert row_benchmark(_row()) == "mos" and row_benchmark(_row(**three)) == ""
    assert row_benchmark(_row(ood_set="sun", **three)) == "mos"


def test_every_figure_knows_its_id_label_space():
    """Each shipped figure names the label space rows are matched on; a benchmark with its own class
    list gives that list's name, as `negvocab score` records it."""
    assert {f.label_space for f in read_published()} == {"imagenet1k"}
    cub = dataclasses.replace(read_published()[0], benchmark="finegrained-cub200", ood_set="inaturalist")
    assert cub.label_space == get_benchmark("finegrained-cub200").id_classes().dataset == "custom:cub200.txt"
    assert dataclasses.replace(cub, benchmark="", id_split="CUB-200-2011 test").label_space == ""


def test_cli_lists_them():
    res = CliRunner().invoke(app, ["published"])
    assert res.exit_code == 0, res.output
    assert (
        "NegRefine  negrefine" in res.output and "1.51" in res.output and "Published, not computed here" in res.output
    )
    lines = res.output.splitlines()
    negrefine = r"^NegRefine .* \(none\)\s+openimage-o\s+24\.03\s+95\.02\s+hendrycks\s+one seed of 10$"
    assert sum(bool(re.search(negrefine, x)) for x in lines) == 1  # its own ID split: no negvocab benchmark
    assert any(x.startswith("[1] NegLabel mean (paper table; ID ImageNet-1k val): Jiang et al.") for x in lines)
    res = CliRunner().invoke(app, ["published", "--method", "nosuch", "-m", "ViT-B-16"])
    assert res.exit_code == 2 and res.stderr.strip().splitlines() == [
        "error: no published figure matches --method nosuch --model ViT-B-16; methods: AdaNeg, CSP, InterNeg, "
        "NegLabel, NegRefine, TANL, adaneg, interneg, neglabel, negrefine, tanl; models: ViT-B-16; benchmarks: mos, "
        "openood"
    ]  # not an empty table
    res = CliRunner().invoke(app, ["published", "--method", "CSP", "--csv"])
    lines = res.output.strip().splitlines()
    assert lines[0] == ",".join(PUBLISHED_COLUMNS) and len(lines) == 2 and ",17.51,95.76," in lines[1]


def _grid(folder: Path, rows: list[dict], identity: dict) -> None:
    """A grid output folder holding ``rows`` as its cells and ``identity`` (ID split, each set's benchmark)
    in its grid.json, as `negvocab grid run` writes them."""
    (folder / "cells").mkdir(parents=True)
    for n, row in enumerate(rows):
        (folder / "cells" / f"c{n}.json").write_text(json.dumps({"row": {**row, "cell": f"c{n}"}, "digest": f"c{n}"}))
    (folder / "scores_index.json").write_text("{}")
    (folder / "grid.json").write_text(json.dumps({"stats": {}, "id_classes": "imagenet1k", **identity}))


def _cell(rep: dict, **kw) -> dict:
    return {
        "model": "ViT-B-16", "pretrained": "openai", "random_weights": False, "vocabulary": "wn", "vocab_source":
        "wordnet", "deployable": True, "caveats": "", "ood_set": "mean", "method": "neglabel",
        "convention": "hendrycks", "tpr": 0.95, "fpr": rep["fpr"], "auroc": rep["auroc"], "aupr_in": rep["aupr_in"],
        "aupr_out": rep["aupr_out"], "n_id": 30, "n_ood": 20, "templates": "neglabel", **kw,
    }  # fmt: skip


def test_table_shows_a_matching_figure_beside_the_row(tmp_path):
    """A grid cell with NegLabel's published settings: --published adds the figure as a marked row."""
    out = tmp_path / "g"
    rng = np.random.default_rng(0)
    s_id, s_ood = rng.normal(1, 1, 30), rng.normal(0, 1, 20)
    rep = M.evaluate(s_id, s_ood, n_boot=0, convention="hendrycks")
    _grid(out, [_cell(rep)], MOS)
    args = ["table", str(out), "--rows", "vocabulary", "--cols", "ood_set", "--metric", "fpr", "--bold", "none"]
    plain = CliRunner().invoke(app, args)
    res = CliRunner().invoke(app, [*args, "--published"])
    assert plain.exit_code == 0 and res.exit_code == 0, res.output
    assert "published" not in plain.stdout
    assert "wn [published: NegLabel, paper table]" in res.stdout and "25.40" in res.stdout
    assert f"{100 * rep['fpr']:.2f}" in res.stdout and not math.isnan(rep["fpr"]) and not res.stderr
    # the same row with CUB-200 as ID: ImageNet-1k's figure is not set beside it
    (out / "grid.json").write_text(json.dumps({"stats": {}, "id_classes": "custom:cub200.txt", **MOS}))
    res = CliRunner().invoke(app, [*args, "--published"])
    assert res.exit_code == 0 and "published" not in res.stdout and not res.stderr, res.output
    # a folder that does not say (an older release's grid): no figure, and one line saying why
    (out / "grid.json").write_text(json.dumps({"stats": {}}))
    res = CliRunner().invoke(app, [*args, "--published"])
    assert res.exit_code == 0 and "published" not in res.stdout, res.output
    assert "1 rows come from a folder that does not name its ID label space" in res.stderr
    # one that names its label space but not its benchmark and ID split: none either, said
    (out / "grid.json").write_text(json.dumps({"stats": {}, "id_classes": "imagenet1k"}))
    res = CliRunner().invoke(app, [*args, "--published"])
    assert res.exit_code == 0 and "published" not in res.stdout, res.output
    assert "1 rows were not measured on a registered benchmark's sets and ID split" in res.stderr


def test_one_table_of_a_full_spectrum_and_a_mos_run_sets_each_figure_beside_its_own_benchmark(tmp_path):
    """An OpenOOD v1.5 full-spectrum run and a MOS run share set names (mean, textures): under
    --published NegLabel's MOS mean and NegRefine's MOS Textures sit beside the MOS rows only, and the
    caption names each figure's source and kind, in Markdown and in LaTeX."""
    rng = np.random.default_rng(3)
    rep = M.evaluate(rng.normal(1, 1, 30), rng.normal(0, 1, 20), n_boot=0, convention="hendrycks")
    runs = {"mos": ("wn-mos", MOS), "fs": ("wn-fs", FULL_SPECTRUM)}
    for name, (vocab, identity) in runs.items():
        cells = [
            _cell(rep, vocabulary=vocab, ood_set=s, method=m, vocab_source=m.replace("neglabel", "wordnet"))
            for s in identity["set_benchmarks"]
            for m in ("neglabel", "negrefine")
        ]  # the grid adds each run's mean over its sets
        _grid(tmp_path / name, cells, identity)
    args = ["table", str(tmp_path / "mos"), str(tmp_path / "fs"), "--rows", "method,vocabulary", "--cols", "ood_set"]
    args += ["--metric", "fpr", "--bold", "none", "--published"]
    md = CliRunner().invoke(app, [*args, "--format", "md"])
    tex = CliRunner().invoke(app, [*args, "--format", "tex"])
    assert md.exit_code == 0 and tex.exit_code == 0, md.output + tex.output
    marked = [x for x in md.stdout.splitlines() if "published:" in x and x.startswith("|")]
    assert len(marked) == 2 and all("wn-mos [published: " in x for x in marked), marked
    neglabel = next(x for x in marked if "NegLabel, paper table" in x)
    negrefine = next(x for x in marked if "NegRefine, one seed of 10" in x)
    cells = lambda line: [c.strip() for c in line.strip("|").split("|")]  # noqa: E731
    head = cells(next(x for x in md.stdout.splitlines() if x.startswith("|")))
    assert cells(neglabel)[head.index("mean")] == "25.40" and cells(negrefine)[head.index("textures")] == "21.15"
    assert "wn-fs [published" not in md.stdout and "wn-fs [published" not in tex.stdout
    caption = md.stdout.split("\n\n")[-1]
    for figure in (published_results(method="neglabel")[0], published_results(method="negrefine")[-1]):
        assert figure.source in caption and f"[{figure.tag}] ({figure.kind})" in caption
        assert f"benchmark {figure.benchmark}, ID {figure.id_split}" in caption
    latex_caption = re.search(r"\\caption\{(.*?)\}\n", tex.stdout, re.S)[1]
    assert "arXiv 2403.20078" in latex_caption and "one seed of 10" in latex_caption
    assert "output/imagenet/seed\\_0/result.txt" in latex_caption  # escaped for LaTeX


def test_an_api_table_names_the_figures_it_shows_and_no_other():
    """build_table over negvocab's rows and their published figures: the caption names the source of each
    figure the table shows (here, under --where), none of the figures it leaves out."""
    rng = np.random.default_rng(5)
    rep = M.evaluate(rng.normal(1, 1, 30), rng.normal(0, 1, 20), n_boot=0, convention="hendrycks")
    rows = [
        {**_cell(rep, ood_set=s, method=m, vocab_source=m.replace("neglabel", "wordnet")), "id_classes": "imagenet1k"}
        | MOS
        for s in ("inaturalist", "sun", "places", "textures", "mean")
        for m in ("neglabel", "negrefine")
    ]
    shown = rows + published_table_rows(rows)
    neglabel, negrefine = published_results(method="neglabel")[0], published_results(method="negrefine")[0]
    for method, said, unsaid in (("neglabel", neglabel, negrefine), ("negrefine", negrefine, neglabel)):
        t = build_table(
            shown, rows_by="vocabulary", cols_by="ood_set", where={"method": method, "convention": "hendrycks"}
        )
        caption = t.full_caption()
        assert said.source in caption and f"[{said.tag}] ({said.kind})" in caption, method
        assert unsaid.source not in caption and unsaid.paper not in caption, method
        assert latex_escape(said.source) in t.to_latex().split("\\caption{")[1].split("}\n")[0]  # the caption
    # AdaNeg on the MOS four: the paper's mean beside the authors' log of the headline run (its first of two)
    adaneg = [{**r, "method": "adaneg", "convention": "openood"} for r in rows if r["method"] == "neglabel"]
    t = build_table(adaneg + published_table_rows(adaneg), rows_by="vocabulary", cols_by="ood_set")
    assert t.index == ["wn", "wn [published: AdaNeg, authors' log]", "wn [published: AdaNeg, paper table]"]
    mean = t.columns.index("mean")
    assert [round(100 * float(t.values[i, mean, 0]), 2) for i in (1, 2)] == [17.95, 18.92]
