"""``negvocab report`` and the report written by score/coverage, loaded in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.report.html import MAX_CARDS, write_report

runner = CliRunner()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh installs Debian's chromium)"
)


class _Dom(HTMLParser):
    """Counts elements by class and collects the text of elements by id in a DOM dump."""

    def __init__(self):
        super().__init__()
        self.classes: dict[str, int] = {}
        self.by_id: dict[str, dict] = {}
        self.cards_in: dict[str, int] = {}  # element id -> cards inside it
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for c in (a.get("class") or "").split():
            self.classes[c] = self.classes.get(c, 0) + 1
        if "card" in (a.get("class") or "").split():
            for i in filter(None, self._open):
                self.cards_in[i] = self.cards_in.get(i, 0) + 1
        if tag in ("img", "br", "hr", "meta", "link", "input"):  # void: no end tag follows
            return
        if a.get("id"):
            self.by_id[a["id"]] = {"attrs": a, "text": ""}
            self._open.append(a["id"])
        else:
            self._open.append("")

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()

    def handle_data(self, data):
        for i in self._open:
            if i:
                self.by_id[i]["text"] += data


def _browser(html_path, shot):
    """The DOM Chromium renders (scripts run) and a screenshot of the page."""
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]
    dom = subprocess.run(
        [*base, "--dump-dom", html_path.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    subprocess.run(
        [*base, "--window-size=1280,1600", f"--screenshot={shot}", html_path.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    parser = _Dom()
    parser.feed(dom)
    return parser


@needs_chromium
def test_score_writes_a_report_whose_evasion_cards_chromium_renders(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(
        app,
        [
            "score",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tiny / "negA.txt"),
            "--groups",
            "4",
            "--n-boot",
            "20",
            "-o",
            str(out),
            *model_args,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    html = out / "report.html"
    assert html.is_file()
    # expected from the scores themselves: OOD images at or above the paper threshold (5% ID quantile)
    with np.load(out / "scores.npz") as z:
        s_id, s_ood = z["id/neglabel@negA"], z["ood/neglabel@negA"]
        flagged_expected = int(np.sum(s_id < np.quantile(s_id, 0.05)))
    expected = int(np.sum(s_ood >= np.quantile(s_id, 0.05)))
    assert expected > 0
    dom = _browser(html, tmp_path / "report.png")
    assert dom.classes.get("evasion-card", 0) == min(expected, MAX_CARDS)
    assert dom.classes.get("flagged-card", 0) == flagged_expected
    count = dom.by_id["evasion-count"]
    assert count["attrs"].get("data-rendered") == "1" and count["text"].strip() == str(
        expected
    )  # the page's script ran
    assert "RANDOM WEIGHTS" in dom.by_id["random-weights-banner"]["text"]
    assert "negA" in dom.by_id["results-table"]["text"]
    with Image.open(tmp_path / "report.png") as im:
        assert im.size == (1280, 1600)
        assert np.unique(np.asarray(im.convert("L"))).size > 10  # not a blank page
    text = html.read_text()
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text  # nothing fetched
    # the flagged ID images are explained (explanations.json "id_images") and their cards say what
    # they were taken for and which negatives fired; the OOD part keeps its older layout
    ex = json.loads((out / "explanations.json").read_text())
    assert len(ex["vocabularies"]["negA"]) == len(s_ood)
    with np.load(out / "scores.npz") as z:
        ids = [str(x) for x in z["id_image_ids"]]
    low = [ids[j] for j in np.argsort(s_id) if s_id[j] < np.quantile(s_id, 0.05)]
    id_ex = ex["id_images"]["negA"]
    assert [e["image"] for e in id_ex] == low and low
    negs, classes = (tiny / "negA.txt").read_text().split("\n"), (tiny / "classes.txt").read_text().split("\n")
    for e in id_ex:
        cos = [n["cosine"] for n in e["top_negatives"]]
        assert (
            cos == sorted(cos, reverse=True)
            and {n["label"] for n in e["top_negatives"]} <= set(negs)
            and e["top_id"][0]["label"] in classes
        )
        block = text[text.index(f'<div class="id">{e["image"]}</div>') :].split('<div class="card', 1)[0]
        assert f"taken for: <b>{e['top_id'][0]['label']}</b>" in block
        assert all(n["label"] in block for n in e["top_negatives"])
    assert "older version" not in text


def test_no_report_and_the_report_command(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(
        app,
        [
            "score",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tiny / "negA.txt"),
            "--n-boot",
            "0",
            "--no-report",
            "-o",
            str(out),
            *model_args,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert not (out / "report.html").exists()
    r = runner.invoke(
        app, ["report", str(out), "-o", str(tmp_path / "x.html"), "--max-cards", "1"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "x.html").read_text().count('class="card evasion-card"') == 1
    r = runner.invoke(app, ["report", str(out), "--run", "neglabel@nope"])
    assert r.exit_code == 2 and "'neglabel@nope' is not in" in r.output and "neglabel@negA" in r.output
    r = runner.invoke(app, ["report", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no such results folder" in r.output


@needs_chromium
def test_coverage_command_writes_its_report(tiny, model_args, tmp_path):
    out = tmp_path / "cov"
    pool = tmp_path / "pool.txt"
    pool.write_text("kite\ntowel\nfish\n")
    r = runner.invoke(
        app,
        [
            "coverage",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tiny / "negA.txt"),
            "--groups",
            "2",
            "--repair",
            "2",
            "--pool",
            str(pool),
            "-o",
            str(out),
            *model_args,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "RANDOM WEIGHTS" in r.output
    doc = json.loads((out / "coverage.json").read_text())
    assert sorted(c["label"] for c in doc["classes"]) == ["goldfish", "kite toy", "paper towel holder"]
    assert doc["repair"]["oracle"] is False  # from the pool: deployable
    imgs = json.loads((out / "coverage_images.json").read_text())["images"]
    dom = _browser(out / "report.html", tmp_path / "coverage.png")
    assert dom.classes.get("evasion-card", 0) == sum(1 for x in imgs if x["set"] == "ood" and x["misjudged"])
    assert "paper towel holder" in dom.by_id["coverage-table"]["text"]
    r = runner.invoke(
        app,
        [
            "coverage",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "id"),
            "--vocab",
            str(tiny / "negA.txt"),
            "-o",
            str(tmp_path / "c2"),
            *model_args,
        ],
    )
    assert r.exit_code == 2 and "carry no labels" in r.output


def test_a_large_run_stays_small_and_new_columns_are_shown(tmp_path):
    """50,000 ID + 10,000 OOD images: cards are capped, the file stays far below 20 MB; results
    with the newer columns (ood_set, deployable, caveats) and without CIs both render."""
    rng = np.random.default_rng(0)
    imgs = []
    for i in range(400):
        p = tmp_path / "img" / f"im{i}.jpg"
        p.parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(p)
        imgs.append(str(p))
    n_id, n_ood = 50_000, 10_000
    s_id, s_ood = rng.normal(1, 1, n_id), rng.normal(0, 1, n_ood)
    folder = tmp_path / "res"
    folder.mkdir()
    np.savez(
        folder / "scores.npz",
        **{"id/neglabel@big": s_id, "ood/neglabel@big": s_ood,
           "id_paths": np.array([imgs[i % 400] for i in range(n_id)]),
           "id_image_ids": np.array([f"id{i}" for i in range(n_id)]),
           "ood_paths": np.array([imgs[i % 400] for i in range(n_ood)]),
           "ood_image_ids": np.array([f"ood{i}" for i in range(n_ood)])},
    )  # fmt: skip
    neg = [{"label": f"negative label {k}", "cosine": 0.3, "share": 0.01} for k in range(5)]
    ex = [
        {
            "image": f"ood{i}",
            "path": imgs[i % 400],
            "negative_share": 0.1,
            "top_negatives": neg,
            "top_id": [{"label": "tench", "cosine": 0.3, "share": 0.5}],
        }
        for i in range(n_ood)
    ]
    (folder / "explanations.json").write_text(json.dumps({"vocabularies": {"big": ex}}))
    rows = [
        {
            "method": "neglabel",
            "vocabulary": "big",
            "ood_set": "setA",
            "deployable": True,
            "caveats": {},
            "fpr": 0.5,
            "auroc": 0.8,
            "convention": "paper",
            "tpr": 0.95,
            "fpr_ci": [0.4, 0.6],
        },
        {
            "method": "neglabel",
            "vocabulary": "oracle",
            "ood_set": "mean",
            "deployable": False,
            "caveats": {"oracle": "built from the OOD labels"},
            "fpr": 0.1,
            "auroc": 0.9,
        },
    ]
    (folder / "results.json").write_text(
        json.dumps({"model": "ViT-B-32", "random_weights": True, "convention": "paper", "tpr": 0.95, "rows": rows})
    )
    out = write_report(folder)
    size = out.stat().st_size
    assert size < 5 * 2**20  # the target is 20 MB
    text = out.read_text()
    passing = int(np.sum(s_ood >= np.quantile(s_id, 0.05)))
    assert text.count('class="card evasion-card"') == MAX_CARDS < passing
    assert f"of {passing} (capped" in text
    header = re.search(r"<thead>(.*?)</thead>", text, re.S).group(1)
    assert "ood set" in header and "deployable" in header and "caveats" in header
    assert "built from the OOD labels" in text and "[40.00, 60.00]" in text


def test_coverage_of_a_fi_imagenet_list_with_labels(tiny, model_args, tmp_path):
    lst = tmp_path / "fi_ood.csv"
    lst.write_text(
        "id,label\nILSVRC2012_val_00000002,paper towel "
        "holder\nILSVRC2012_val_00000005,kite\nILSVRC2012_val_00000006,kite\n"
    )
    out = tmp_path / "cov"
    r = runner.invoke(
        app,
        [
            "coverage",
            "--id",
            str(tiny / "val"),
            "--fi-ood",
            str(lst),
            "--vocab",
            str(tiny / "negA.txt"),
            "--method",
            "neglabel_eoe",
            "--groups",
            "3",
            "--repair",
            "1",
            "--no-report",
            "-o",
            str(out),
            *model_args,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "coverage.json").read_text())
    assert {c["label"]: c["n_images"] for c in doc["classes"]} == {"paper towel holder": 1, "kite": 2}
    assert doc["summary"]["n_ood_images"] == 3 and doc["method"] == "neglabel_eoe"
    assert doc["repair"]["oracle"] is True and "ORACLE" in doc["repair"]["note"]
    assert not (out / "report.html").exists()


def test_a_sweep_folder_and_a_damaged_results_file(tmp_path):
    from negvocab.core.errors import InputError
    from negvocab.report.plots import plot_sweep

    folder = tmp_path / "sw"
    folder.mkdir()
    rows = [
        {"M": m, "fpr": f, "auroc": 0.7, "fpr_ci": [f - 0.1, f + 0.1], "convention": "paper", "tpr": 0.95}
        for m, f in ((10, 0.6), (20, 0.5))
    ]
    plot_sweep(rows, folder / "sweep.png")
    (folder / "sweep.json").write_text(
        json.dumps(
            {
                "model": "m",
                "random_weights": False,
                "method": "neglabel",
                "rows": rows,
                "references": [{"name": "oracle", "M": 5, "fpr": 0.1, "auroc": 0.9}],
            }
        )
    )
    text = write_report(folder).read_text()
    assert "Vocabulary-size sweep" in text and "data:image/png;base64," in text and "oracle (M=5)" in text
    assert "random-weights-banner" not in text and "[50.00, 70.00]" in text
    doc = json.loads((folder / "sweep.json").read_text())  # this version's reference: named by its vocabulary
    doc["references"] = [{"vocabulary": "union", "M": 7, "fpr": 0.2, "auroc": 0.8, "fpr_ci_low": None}]
    (folder / "sweep.json").write_text(json.dumps(doc))
    assert "union (M=7)" in write_report(folder).read_text()
    mined = [{**r, "random_weights": True} for r in rows]  # a vocabulary mined with random weights
    (folder / "sweep.json").write_text(
        json.dumps({"model": "m", "pretrained": "openai", "random_weights": False, "method": "neglabel", "rows": mined})
    )
    assert "random-weights-banner" in write_report(folder).read_text()
    (folder / "results.json").write_text("{not json")
    with pytest.raises(
        InputError, match="results.json: not valid JSON"
    ):  # the one validation layer (negvocab.evaluation.stored)
        write_report(folder)


@pytest.mark.parametrize("convention", ["paper", "openood"])
def test_several_named_ood_sets_have_their_own_operating_points(tmp_path, convention):
    from negvocab.scoring.metrics import operating_point

    rng = np.random.default_rng(1)
    s_id, a, b = rng.normal(1, 1, 300), rng.normal(0, 1, 80), rng.normal(0.8, 0.5, 40)
    folder = tmp_path / "res"
    folder.mkdir()
    np.savez(
        folder / "scores.npz",
        **{"id/neglabel@v": s_id, "ood/neglabel@v": np.concatenate([a, b]),
           "ood_sets": np.array(["A"] * 80 + ["B"] * 40),
           "ood_paths": np.array([f"/nonexistent/{i}.png" for i in range(120)]),
           "ood_image_ids": np.array([f"o{i}" for i in range(120)])},
    )  # fmt: skip
    rows = [
        {"method": "neglabel", "vocabulary": "v", "ood_set": s, "fpr": 0.5, "auroc": 0.5} for s in ("A", "B", "mean")
    ]
    (folder / "results.json").write_text(json.dumps({"convention": convention, "tpr": 0.95, "rows": rows}))
    text = write_report(folder).read_text()
    want = sum(int(operating_point(s_id, x, convention=convention).ood_passing.sum()) for x in (a, b))
    assert text.count('class="card evasion-card"') == want
    assert "OOD set: B" in text and "image not found" in text


@needs_chromium
def test_several_named_ood_sets_from_score_have_their_own_sections(tiny, model_args, tmp_path):
    """score --ood A=... --ood B=...: one section per set in the rendered page, each with as many
    evasion cards as its scores in scores.npz put at or above the (paper) threshold."""
    out = tmp_path / "res"
    r = runner.invoke(
        app,
        [
            "score",
            "--id",
            str(tiny / "id"),
            "--ood",
            f"A={tiny / 'ood'}",
            "--ood",
            f"B={tiny / 'val'}",
            "--vocab",
            str(tiny / "negA.txt"),
            "--n-boot",
            "0",
            "-o",
            str(out),
            *model_args,
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    with np.load(out / "scores.npz") as z:
        s_id, s_ood, sets = z["id/neglabel@negA"], z["ood/neglabel@negA"], z["ood_sets"].astype(str)
    thr = np.quantile(s_id, 0.05)
    expected = {name: int(np.sum(s_ood[sets == name] >= thr)) for name in ("A", "B")}
    assert sum(sets == "A") == 4 and sum(sets == "B") == 8
    dom = _browser(out / "report.html", tmp_path / "sets.png")
    shown = {
        dom.by_id[f"evasion-cards-{k}"]["attrs"]["data-ood-set"]: dom.cards_in.get(f"evasion-cards-{k}", 0)
        for k in (1, 2)
    }
    assert shown == expected and "evasion-cards-3" not in dom.by_id
    for k, name in ((1, "A"), (2, "B")):
        assert dom.by_id[f"evasion-count-{k}"]["text"].strip() == str(expected[name])  # the page's script counted them
    assert dom.classes.get("ood-set-section") == 2 and dom.cards_in.get("evasion-cards", 0) == sum(expected.values())
    assert dom.by_id["evasion-count"]["text"].strip() == str(sum(expected.values()))
    assert "A: ood (4), B: val (8)" in (out / "report.html").read_text()  # the sets named in the header, not "mean"


def test_the_flagged_id_images_explained_are_capped_lowest_first():
    """50,000 ID images: the paper threshold flags 2,500; only the ``cap`` lowest are explained. An
    OOD-dependent convention (openood: OOD called at score <= the 95% OOD quantile) flags per set."""
    from negvocab.evaluation.evaluate import flagged_id_images

    rng = np.random.default_rng(2)
    s_id, a, b = rng.normal(1, 1, 50_000), rng.normal(0, 1, 300), rng.normal(-1, 0.5, 200)
    got = flagged_id_images(s_id, [a, b], 0.95, "paper", cap=40)
    order = np.argsort(s_id)
    assert got == order[:40].tolist() and np.sum(s_id < np.quantile(s_id, 0.05)) == 2500
    got = flagged_id_images(s_id, [a, b], 0.95, "openood", cap=10**6)
    want = set()
    for o in (a, b):
        t = np.sort(o)[int(np.ceil(0.95 * len(o))) - 1]
        want |= set(np.flatnonzero(s_id <= t).tolist())
    assert set(got) == want and len(got) == len(want)
    low_a = [j for j in order if s_id[j] <= np.sort(a)[284]]
    assert got[: len(low_a)] == low_a  # the first set's, lowest first, then the second's others
    assert flagged_id_images(s_id, [a[:0]], 0.95, "paper") == []


_OVERFLOW_JS = """<script>
addEventListener("load", () => {
  const vw = document.documentElement.clientWidth, bad = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible" || r.right > vw + 1)
      bad.push((el.id || el.tagName) + ":" + Math.round(r.right));
  }
  if (document.documentElement.scrollWidth > vw) bad.push("page:" + document.documentElement.scrollWidth);
  document.body.setAttribute("data-overflow", JSON.stringify(bad.slice(0, 20)));
});
</script>"""


def _overflow(html_path, width, shot):
    """Elements wider than a ``width`` px viewport, as Chromium lays the page out; a screenshot too."""
    probe = html_path.with_name(f"probe-{width}.html")
    probe.write_text(html_path.read_text().replace("</body>", _OVERFLOW_JS + "</body>"))
    base = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--window-size={width},1000",
    ]
    dom = subprocess.run(
        [*base, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    subprocess.run([*base, f"--screenshot={shot}", html_path.as_uri()], capture_output=True, timeout=120, check=True)
    found = re.search(r'data-overflow="([^"]*)"', dom)
    assert found, "the probe did not run"
    return json.loads(found.group(1).replace("&quot;", '"'))


def _study(tmp_path):
    """A study folder as a researcher has one: a score run (two OOD sets, an MCM baseline, 12 ID
    images), a sweep over two OOD sets, each in its own folder below the study."""
    rng = np.random.default_rng(2)
    study = tmp_path / "study"
    score = study / "score"
    score.mkdir(parents=True)
    s_id, s_ood = rng.normal(1, 1, 12), rng.normal(0, 1, 7)
    np.savez(score / "scores.npz",
             **{"id/neglabel@wn": s_id, "ood/neglabel@wn": s_ood, "id/mcm": s_id * 0.5, "ood/mcm": s_ood * 0.5,
             "ood_sets": np.array(["far"] * 4 + ["near"] * 3),
                "ood_paths": np.array([f"/nonexistent/{i}.png" for i in range(7)]),
             "ood_image_ids": np.array([f"o{i}" for i in range(7)])})  # fmt: skip
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    base = {
        "model": "ViT-B-32",
        "pretrained": "laion2b",
        "convention": "paper",
        "tpr": 0.95,
        "n_id": 12,
        "aupr_method": "average_precision",
        "cell": digest,
    }
    rows = [
        {**base, "method": "neglabel", "vocabulary": "wn", "vocab_size": 100, "deployable": True, "ood_set": "far",
         "n_ood": 4, "fpr": 0.0, "fpr_ci": [0.0, 0.0], "auroc": 0.9},
        {**base, "method": "neglabel", "vocabulary": "wn", "vocab_size": 100, "deployable": True, "ood_set": "near",
         "n_ood": 3, "fpr": 0.667, "fpr_ci": [0.0, 1.0], "auroc": 0.6},
        {**base, "method": "mcm", "vocabulary": "", "vocab_size": 0, "deployable": True, "ood_set": "far", "n_ood": 4,
         "fpr": 0.5, "auroc": 0.7},
    ]  # fmt: skip
    (score / "results.json").write_text(
        json.dumps({"model": "ViT-B-32", "random_weights": True, "convention": "paper", "tpr": 0.95, "rows": rows})
    )
    sweep = study / "sweep"
    sweep.mkdir()
    srows = [
        {"M": m, "fpr": f, "auroc": 0.7, "ood_set": s, "convention": "paper", "tpr": 0.95}
        for s in ("far", "near")
        for m, f in ((10, 0.6), (20, 0.5))
    ]
    (sweep / "sweep.json").write_text(
        json.dumps({"model": "m", "random_weights": True, "method": "neglabel", "rows": srows})
    )
    return study, digest


@needs_chromium
def test_one_study_report_over_several_folders_fits_1280_px_and_a4(tmp_path):
    study, digest = _study(tmp_path)
    out = tmp_path / "all.html"
    r = runner.invoke(app, ["report", str(study), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    toc = re.search(r'<nav class="toc" id="toc">(.*?)</nav>', text, re.S).group(1)
    assert toc.count("<li>") == 2 and 'href="#top"' in toc and 'href="#s2-top"' in toc
    assert 'id="s2-sweep"' in text and 'id="results-table"' in text
    table = re.search(r'<table id="results-table".*?</table>', text, re.S).group(0)
    header = re.search(r"<thead>(.*?)</thead>", table, re.S).group(1)
    assert "n id" not in header and "aupr method" not in header  # the same in every row: shown once, above
    constant = re.search(r'<dl class="meta constant" id="results-constant">(.*?)</dl>', text, re.S).group(1)
    assert "n id" in constant and "average_precision" in constant and "cell" not in constant or digest in constant
    mcm = [row for row in re.findall(r"<tr>(.*?)</tr>", table, re.S) if ">mcm<" in row][0]
    assert re.findall(r"<td[^>]*>([^<]*)</td>", mcm)[2:5] == [
        "-",
        "-",
        "-",
    ]  # vocabulary, M, deployable: none for a baseline
    assert "Small samples: fewer than 30" in text and "zero width [0.00, 0.00] from 4 OOD images" in text
    assert "100 points wide" in text
    sweep = re.search(r'<h2 id="s2-sweep">.*?</table>', text, re.S).group(0)
    assert "<th>OOD set</th>" in sweep and "<td>near</td>" in sweep and "<td>far</td>" in sweep
    assert 'id="scores-plot"' in text and "neglabel@wn" in text
    shots = tmp_path / "screenshots"
    shots.mkdir()
    for width in (1280, 794):  # a laptop screen, and an A4 page's width at 96 dpi
        assert _overflow(out, width, shots / f"study-{width}.png") == [], width
        assert Image.open(shots / f"study-{width}.png").size[0] == width


A4_PT = (595.28, 841.89)  # ISO 216 in PostScript points


def _print_pdf(html_path, pdf):
    """The page as Chromium prints it (its own print layout, the page's @page rules), and the page
    boxes of the PDF it writes: one (width, height) in points per page."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            CHROMIUM,
            *flags,
            f"--user-data-dir={profile}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            html_path.as_uri(),
        ]
        subprocess.run(cmd, capture_output=True, timeout=120, check=True)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:]
    boxes = [(float(w), float(h)) for w, h in re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", data)]
    assert len(boxes) == len(re.findall(rb"/Type /Page\b", data)) > 0, "a page without its box"
    return boxes


def _printable_px(html: str) -> int:
    """The width (CSS px at 96 dpi) inside the margins of the page's ``@page { size: A4; margin: Xmm }``."""
    found = re.search(r"@page\s*{\s*size:\s*A4;\s*margin:\s*([\d.]+)mm", html)
    assert found, "the report does not ask for A4 pages"
    return int((210 - 2 * float(found.group(1))) / 25.4 * 96)


@needs_chromium
def test_the_study_report_prints_on_a4_and_no_table_or_figure_is_cut(tmp_path):
    """Printed by Chromium, every page of the study report is A4; laid out with the print rules at
    the width inside the A4 margins, no table, figure or other element is wider than that width
    (Chromium would cut or shrink it). The PDF and a screenshot of the print layout are kept for a
    person to look at (``NEGVOCAB_SCREENSHOTS=DIR`` keeps them there)."""
    study, _ = _study(tmp_path)
    out = tmp_path / "all.html"
    assert runner.invoke(app, ["report", str(study), "-o", str(out)]).exit_code == 0
    shots = Path(os.environ.get("NEGVOCAB_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    boxes = _print_pdf(out, shots / "study-a4.pdf")
    assert all(abs(w - A4_PT[0]) < 1.5 and abs(h - A4_PT[1]) < 1.5 for w, h in boxes), boxes
    html = out.read_text()
    width = _printable_px(html)
    as_printed = tmp_path / "as-printed.html"  # the print rules applied on screen: Chromium's print layout, measurable
    as_printed.write_text(html.replace("@media print", "@media all"))
    assert _overflow(as_printed, width, shots / f"study-print-{width}.png") == []
    assert Image.open(shots / f"study-print-{width}.png").size[0] == width


def test_the_report_of_damaged_files_is_one_line(tmp_path):
    study, _ = _study(tmp_path)
    score = study / "score"
    good = (score / "scores.npz").read_bytes()
    cases = [
        (
            "results.json",
            "[1, 2]",
            "results.json: must hold a JSON object with 'rows', got a list",
        ),  # the one validation layer's lines
        ("results.json", json.dumps({"rows": [1]}), "results.json: rows[0] must be an object, got int"),
        (
            "results.json",
            json.dumps({"rows": [{"method": "mcm", "fpr": "0.5"}]}),
            "rows[0]['fpr'] must be a number or null, got str",
        ),
        ("scores.npz", "id,score\n", "scores.npz: not a readable scores.npz"),
        ("scores.npz", good[: len(good) // 2], "scores.npz: not a readable scores.npz"),
        ("scores.npz", None, "'id/a' must be a 1-D array of numbers, got <U3"),
    ]
    results = (score / "results.json").read_text()
    for name, data, msg in cases:
        (score / "results.json").write_text(results)
        (score / "scores.npz").write_bytes(good)
        if data is None:  # strings where scores go
            with open(score / name, "wb") as fh:
                np.savez(fh, **{"id/a": np.array(["1.0", "2.0"]), "ood/a": np.array(["0.5"])})
        else:
            (score / name).write_bytes(data if isinstance(data, bytes) else data.encode())
        r = runner.invoke(app, ["report", str(score), "-o", str(tmp_path / "r.html"), "--overwrite"])
        assert (
            r.exit_code == 2
            and msg in r.output
            and "re-run `negvocab score`" in r.output
            and len(r.output.strip().splitlines()) == 1
        ), (name, r.output)
    several = runner.invoke(app, ["report", str(study)])
    assert several.exit_code == 2 and "2 results folders make one page: give it a file name with -o" in several.output


def test_coverage_keeps_the_name_of_its_set_and_refuses_two_as_its_help_says(tiny, model_args, tmp_path):
    """``--ood graphics=labelled.csv`` is recorded as "graphics" (it was "labelled", the file's
    stem); two sets are refused in one line, and the command's help does not promise several."""
    ood = sorted((tiny / "ood").rglob("*.png"))
    lst = tmp_path / "labelled.csv"
    lst.write_text("path,label\n" + "".join(f"{p.relative_to(tiny)},{p.parent.name.replace('_', ' ')}\n" for p in ood))
    out = tmp_path / "cov"
    args = [
        "coverage",
        "--id",
        str(tiny / "id"),
        "--vocab",
        str(tiny / "negA.txt"),
        "--groups",
        "2",
        "--no-report",
        "--image-root",
        str(tiny),
        *model_args,
    ]
    r = runner.invoke(app, [*args, "--ood", f"graphics={lst}", "-o", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "coverage.json").read_text())
    assert '"ood_set": {"name": "graphics", "n": 4}' in json.dumps(doc) and "labelled" not in json.dumps(doc).replace(
        str(lst), ""
    )
    r = runner.invoke(app, [*args, "--ood", f"graphics={lst}", "--ood", f"more={lst}", "-o", str(tmp_path / "two")])
    assert (
        r.exit_code == 2 and "one OOD set at a time; got 2 (graphics, more)" in r.output and "Traceback" not in r.output
    )
    help_text = " ".join(runner.invoke(app, ["coverage", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "One set per run" in help_text and "repeat" not in help_text.lower()
