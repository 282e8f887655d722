"""``negvocab score``, ``sweep``, ``build oracle`` and ``demo`` end to end (random ViT-B-32, tiny images)."""

from __future__ import annotations

import csv
import json
import logging

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.vocab import Vocabulary
from tests.scoring.conftest import NEG_A, NEG_B

runner = CliRunner()


def invoke(args):
    result = runner.invoke(app, args, catch_exceptions=False)
    return result


def _warning_before_numbers(stdout: str) -> None:
    lines = stdout.splitlines()
    warn = [i for i, ln in enumerate(lines) if "RANDOM WEIGHTS" in ln]
    numbers = [i for i, ln in enumerate(lines) if "%" in ln]
    assert warn and numbers and warn[0] < numbers[0], stdout


def test_score_end_to_end(tiny, model_args, tmp_path, caplog):
    out = tmp_path / "res"
    args = [
        "score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"),
        "--vocab", str(tiny / "negA.txt"), "--vocab", str(tiny / "negB.txt"),
        "--method", "neglabel", "--method", "mcm", "--groups", "4", "--n-boot", "50", "-o", str(out), *model_args,
    ]  # fmt: skip
    r = invoke(args)
    assert r.exit_code == 0, r.output
    _warning_before_numbers(r.stdout)
    doc = json.loads((out / "results.json").read_text())
    assert doc["random_weights"] is True and "meaningless" in doc["warning"]
    rows = doc["rows"]
    assert [(x["method"], x["vocabulary"]) for x in rows] == [("neglabel", "negA"), ("neglabel", "negB"), ("mcm", "")]
    assert all(x["random_weights"] is True and x["convention"] == "paper" for x in rows)
    assert rows[0]["vocab_size"] == len(NEG_A) and rows[1]["vocab_size"] == len(NEG_B)
    assert (rows[0]["n_id"], rows[0]["n_ood"]) == (6, 4)
    table = list(csv.DictReader((out / "results.csv").open()))
    assert len(table) == 3 and all(t["random_weights"] == "True" for t in table)
    assert table[0]["vocab_hash"] == Vocabulary.load(tiny / "negA.txt").short_hash
    # the metrics in the table follow from the per-image scores (sklearn and the paper's formula)
    npz = np.load(out / "scores.npz")
    assert list(npz["ood_image_ids"]) == [
        "goldfish/o1",
        "kite_toy/o3",
        "paper_towel_holder/o0",
        "paper_towel_holder/o2",
    ]
    for row in rows:
        key = f"{row['method']}@{row['vocabulary']}" if row["vocabulary"] else row["method"]
        ids, oods = npz[f"id/{key}"], npz[f"ood/{key}"]
        y = np.r_[np.ones(len(ids)), np.zeros(len(oods))]
        assert row["auroc"] == pytest.approx(roc_auc_score(y, np.r_[ids, oods]))
        assert row["fpr"] == pytest.approx(np.mean(oods >= np.quantile(ids, 0.05)))
    per_image = list(csv.DictReader((out / "scores.csv").open()))
    assert len(per_image) == 10 and float(per_image[0]["mcm"]) == pytest.approx(npz["id/mcm"][0])
    # the per-image files say on their own that the weights were random
    assert bool(npz["random_weights"]) is True and str(npz["model"]) == "ViT-B-32"
    assert all(row["random_weights"] == "True" for row in per_image)
    ex = json.loads((out / "explanations.json").read_text())
    assert ex["random_weights"] is True and set(ex["vocabularies"]) == {"negA", "negB"}
    for item in ex["vocabularies"]["negB"]:
        assert {n["label"] for n in item["top_negatives"]} <= set(NEG_B) and len(item["top_negatives"]) == 5

    # the same folder again: refused, the earlier results kept; with --overwrite every embedding
    # comes from the cache and the scores are identical
    before = (out / "results.json").read_bytes()
    again = invoke(args)
    assert (
        again.exit_code == 2
        and "holds the results of an earlier run (results.csv, scores.npz, scores.csv, "
        "explanations.json, report.html, results.json); give another -o, or --overwrite"
        in again.output
    )
    assert (out / "results.json").read_bytes() == before
    with caplog.at_level(logging.INFO, logger="negvocab"):
        r2 = invoke([*args, "--overwrite"])
    assert r2.exit_code == 0
    assert "image embeddings from the cache" in caplog.text and "text embeddings from the cache" in caplog.text
    assert not [m for m in caplog.messages if m.startswith("encoded ")], caplog.text  # nothing encoded again
    npz2 = np.load(out / "scores.npz")
    for key in npz.files:
        np.testing.assert_array_equal(npz[key], npz2[key])


def test_sweep_matches_score_and_draws_a_plot(tiny, model_args, tmp_path):
    vocab = Vocabulary.from_labels(NEG_A + NEG_B, source="wordnet")
    vocab.save(tmp_path / "ranked.json")
    oracle = tmp_path / "oracle.json"
    assert invoke(["build", "oracle", "--ood", str(tiny / "ood"), "-o", str(oracle)]).exit_code == 0
    sw = tmp_path / "sweep"
    common = ["--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--groups", "3", *model_args]
    r = invoke(
        [
            "sweep",
            "--vocab",
            str(tmp_path / "ranked.json"),
            "--sizes",
            "3,9,18",
            "-R",
            str(oracle),
            "-o",
            str(sw),
            "--n-boot",
            "20",
            "--plot-format",
            "pdf,svg",
            *common,
        ]
    )
    assert r.exit_code == 0, r.output
    _warning_before_numbers(r.stdout)
    table = list(csv.DictReader((sw / "sweep.csv").open()))
    rows = [x for x in table if x["kind"] == "sweep"]
    assert [int(x["M"]) for x in rows] == [3, 9, 18] and all(x["random_weights"] == "True" for x in table)
    # the reference vocabularies are in the table too, marked as not deployable
    (ref,) = [x for x in table if x["kind"] == "reference"]
    assert ref["vocabulary"] == "oracle" and ref["deployable"] == "False" and ref["caveats"].startswith("oracle: ")
    assert all(x["deployable"] == "True" for x in rows)
    assert (sw / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # always: the report shows it
    assert (sw / "sweep.pdf").read_bytes()[:5] == b"%PDF-" and b"<svg" in (sw / "sweep.svg").read_bytes()[:2000]
    doc = json.loads((sw / "sweep.json").read_text())
    assert doc["references"][0]["oracle"] is True and doc["random_weights"] is True
    # M = 18 (the whole vocabulary) by the one-pass sweep == a separate negvocab score run
    res = tmp_path / "res"
    assert (
        invoke(["score", "--vocab", str(tmp_path / "ranked.json"), "-o", str(res), "--n-boot", "0", *common]).exit_code
        == 0
    )
    row = json.loads((res / "results.json").read_text())["rows"][0]
    assert float(rows[-1]["auroc"]) == pytest.approx(row["auroc"], abs=1e-12)
    assert float(rows[-1]["fpr"]) == pytest.approx(row["fpr"], abs=1e-12)


def test_image_lists_score_like_the_folders(tiny, model_args, tmp_path):
    """--id/--ood list files (text and CSV, relative to --image-root) give the folders' scores."""
    ood = sorted((tiny / "ood").rglob("*.png"))
    (tmp_path / "id.txt").write_text("".join(f"id/id{i}.png\n" for i in range(6)))
    (tmp_path / "ood.csv").write_text("path,label\n" + "".join(f"{p.relative_to(tiny)},{p.parent.name}\n" for p in ood))
    common = ["--method", "mcm", "--n-boot", "0", *model_args]
    folders = invoke(
        ["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "-o", str(tmp_path / "f"), *common]
    )
    lists = invoke(
        [
            "score",
            "--id",
            str(tmp_path / "id.txt"),
            "--ood",
            str(tmp_path / "ood.csv"),
            "--image-root",
            str(tiny),
            "-o",
            str(tmp_path / "l"),
            *common,
        ]
    )
    assert folders.exit_code == 0 and lists.exit_code == 0, lists.output
    a, b = np.load(tmp_path / "f" / "scores.npz"), np.load(tmp_path / "l" / "scores.npz")
    np.testing.assert_array_equal(a["id/mcm"], b["id/mcm"])
    order = np.argsort(b["ood_image_ids"])  # the folder set is sorted by path, the list keeps its order
    np.testing.assert_array_equal(a["ood/mcm"], b["ood/mcm"][order])
    bad = invoke(
        [
            "score",
            "--id",
            str(tmp_path / "id.txt"),
            "--ood",
            str(tmp_path / "ood.csv"),
            "-o",
            str(tmp_path / "x"),
            *common,
        ]
    )
    assert bad.exit_code == 2 and "--image-root" in bad.output and "Traceback" not in bad.output


def test_fi_imagenet_lists(tiny, model_args, tmp_path):
    lst = tmp_path / "fi_ood.csv"
    lst.write_text(
        "id,label\nILSVRC2012_val_00000002,paper towel "
        "holder\nILSVRC2012_val_00000005,kite\nILSVRC2012_val_00009999,lost\n"
    )
    amb = tmp_path / "amb.txt"
    amb.write_text("ILSVRC2012_val_00000007\n")
    out = tmp_path / "res"
    r = invoke(
        [
            "score",
            "--id",
            str(tiny / "val"),
            "--fi-ood",
            str(lst),
            "--fi-ambiguous",
            str(amb),
            "--method",
            "mcm",
            "-T",
            "0.5",
            "-o",
            str(out),
            "--n-boot",
            "0",
            *model_args,
        ]
    )
    assert r.exit_code == 0, r.output
    assert "not in" in r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert (doc["rows"][0]["n_id"], doc["rows"][0]["n_ood"]) == (5, 2) and doc["rows"][0]["params"] == {"T": 0.5}
    assert doc["ood_set"]["not_found"] == ["ILSVRC2012_val_00009999"] and doc["ood_set"]["ambiguous_excluded"] == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "odin"], "unknown method"),
        (["--convention", "sklearn"], "convention"),
        (["--vocab", "/nonexistent/v.json"], "no such vocabulary"),
        (["--groups", "0"], "--groups must be >= 1"),
        (["--tau", "0"], "--tau must be a positive number"),
        (["--grouping", "zigzag"], "unknown --grouping"),
        (["--tpr", "1.5"], "--tpr must be in (0, 1]"),
        (["--topk", "0"], "--topk must be >= 1"),
        (["--temperature", "-1"], "--temperature must be a positive number"),
        (["--explain", "-1"], "--explain must be >= 0"),
        (["--lambda", "-1"], "--lambda must be a number >= 0"),
        (["--n-boot", "100000000000"], "--n-boot must be between 0 and 100,000"),
    ],
)
def test_score_errors_are_one_line(tiny, tmp_path, extra, message):
    # no weights given: had the model been loaded first, the error would ask for --pretrained
    r = invoke(
        [
            "score",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tiny / "negA.txt"),
            "-o",
            str(tmp_path / "r"),
            *extra,
        ]
    )
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sizes", "3,500"], "vocabulary size 500 exceeds the 18 ranked labels"),
        (["--sizes", "3,x"], "not an integer"),
        (["--sizes", "3", "--method", "mcm"], "mcm does not use negative labels"),
        (["--sizes", "3", "--convention", "fpr"], "unknown --convention"),
        (["--sizes", "3", "--plot-format", "pdf,jpg"], "unknown --plot-format 'jpg'; choose png, pdf or svg"),
    ],
)
def test_sweep_option_errors_come_before_loading_a_model(tiny, tmp_path, extra, message):
    Vocabulary.from_labels(NEG_A + NEG_B, source="wordnet").save(tmp_path / "ranked.json")
    # no weights given: had the model been loaded first, the error would ask for --pretrained
    r = invoke(
        [
            "sweep",
            "--id",
            str(tiny / "id"),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tmp_path / "ranked.json"),
            "-o",
            str(tmp_path / "s"),
            *extra,
        ]
    )
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "s").exists()


def test_one_image_for_a_set_is_named_as_such(tiny, tmp_path):
    one = sorted((tiny / "id").iterdir())[0]
    r = invoke(
        [
            "score",
            "--id",
            str(one),
            "--ood",
            str(tiny / "ood"),
            "--vocab",
            str(tiny / "negA.txt"),
            "-o",
            str(tmp_path / "r"),
        ]
    )
    assert r.exit_code == 2 and "is one image; give a folder of images or an image list" in r.stderr


def test_unwritable_outputs_fail_first_in_one_line(tiny, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    common = ["--id", str(tiny / "id"), "--ood", str(tiny / "ood")]  # no weights: a model load would fail first
    for args in (
        ["score", *common, "--vocab", str(tiny / "negA.txt"), "-o", str(blocker / "res")],
        ["sweep", *common, "--vocab", str(tiny / "negA.txt"), "--sizes", "3", "-o", str(blocker / "sw")],
        ["build", "oracle", "--ood", str(tiny / "ood"), "-o", str(blocker / "o.json")],
        ["demo", "--random-weights", "-o", str(blocker)],
    ):
        r = invoke(args)
        assert r.exit_code == 2 and "is not a folder" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
            args,
            r.stderr,
        )
    r = invoke(["build", "oracle", "--ood", str(tiny / "ood"), "-o", str(tmp_path)])
    assert r.exit_code == 2 and "it is a folder; give a file name" in r.stderr
    assert blocker.read_text() == "x"


def test_score_neglabel_without_a_vocabulary_fails_before_loading_a_model(tiny, tmp_path):
    r = invoke(["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "-o", str(tmp_path / "r")])
    assert r.exit_code == 2 and "--method neglabel needs a vocabulary: pass --vocab FILE" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def test_score_without_ood_or_weights(tiny, model_args):
    r = invoke(["score", "--id", str(tiny / "id"), "--method", "mcm", *model_args])
    assert r.exit_code == 2 and "no OOD images" in r.stderr
    r = invoke(["score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--method", "mcm", "--device", "cpu"])
    assert r.exit_code == 2 and "--pretrained" in r.stderr


def test_build_oracle(tiny, tmp_path):
    out = tmp_path / "oracle.json"
    r = invoke(["build", "oracle", "--ood", str(tiny / "ood"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    v = Vocabulary.load(out)
    # "goldfish" names an ImageNet-1k class: removed by the synonym filter
    assert v.source == "oracle" and v.labels == ["kite toy", "paper towel holder"]  # folder order
    assert v.settings["oracle"] is True and v.settings["deployable"] is False
    assert v.meta["paper towel holder"]["images"] == 2
    lst = tmp_path / "fi.tsv"
    lst.write_text(
        "ILSVRC2012_val_00000001\tsea lion\nILSVRC2012_val_00000002\tcorn snake\nILSVRC2012_val_00000003\tsea lion\n"
    )
    r = invoke(["build", "oracle", "--labels", str(lst), "-o", str(out), "--no-synonym-filter", "--overwrite"])
    assert r.exit_code == 0 and Vocabulary.load(out).labels == ["sea lion", "corn snake"]
    r = invoke(["build", "oracle", "-o", str(out)])
    assert r.exit_code == 2 and "exactly one" in r.stderr
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    for args, message in [
        (["--labels", str(latin)], "latin1.txt: not a UTF-8 text file"),
        (["--labels", str(tiny / "ood")], "is a folder; for class folders (NINCO layout) use --ood"),
        (["--ood", str(lst)], "is a file; for a labels file or an image list use --labels"),
    ]:
        r = invoke(["build", "oracle", *args, "-o", str(tmp_path / "x.json")])
        assert r.exit_code == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "x.json").exists()


def test_demo_random_weights(tiny, tmp_path):
    out = tmp_path / "demo"
    r = invoke(
        ["demo", "--random-weights", "--device", "cpu", "--n-candidates", "60",
         "--id-classes", str(tiny / "classes.txt"), "--cache-dir", str(tiny / "cache"), "-o", str(out)]
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # the banner once, above every number (the demo's whole report is a few lines)
    assert lines[0].startswith("WARNING: RANDOM WEIGHTS")
    assert sum("RANDOM WEIGHTS" in ln for ln in r.output.splitlines()) == 1, r.output
    assert "No pretrained weights loaded" not in r.output  # open_clip's repeat of it is not shown
    doc = json.loads((out / "results" / "results.json").read_text())
    assert doc["random_weights"] is True and {x["method"] for x in doc["rows"]} == {"neglabel", "mcm"}
    assert doc["rows"][0]["n_id"] == 12 and doc["rows"][0]["n_ood"] >= 4
    v = Vocabulary.load(out / "vocab.json")
    assert v.source == "wordnet" and v.settings["random_weights"] is True
    assert (out / "sweep" / "sweep.png").is_file()
    # the reports: the results' (tables, per-image cards, RANDOM WEIGHTS banner) and the sweep's
    for sub, part in (("results", 'id="evasions"'), ("sweep", 'id="sweep"')):
        report = out / sub / "report.html"
        assert f"wrote {report}" in r.stdout
        assert part in report.read_text() and "random-weights-banner" in report.read_text()
    r = invoke(
        ["demo", "--random-weights", "--device", "cpu", "--n-candidates", "60",
         "--id-classes", str(tiny / "classes.txt"), "--cache-dir", str(tiny / "cache"), "-o", str(tmp_path / "d2"),
         "--no-report"]
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (tmp_path / "d2" / "results" / "results.json").is_file() and not list((tmp_path / "d2").rglob("report.html"))
    assert "report.html" not in r.stdout


def test_demo_without_weights_says_how_to_pass_a_checkpoint(tmp_path):
    r = invoke(["demo", "--device", "cpu", "--cache-dir", str(tmp_path / "c"), "-o", str(tmp_path / "d")])
    assert r.exit_code == 2
    assert "--pretrained" in r.stderr and "--random-weights" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--random-weights", "--n-candidates", "0"], "--n-candidates must be >= 2"),
        (["--random-weights", "--size", "0"], "size M must be between 1 and the number of candidates (1000), got 0"),
        (
            ["--random-weights", "--n-candidates", "50", "--size", "51"],
            "between 1 and the number of candidates (50), got 51",
        ),
        (["--random-weights", "-p", "laion2b_s34b_b79k"], "not both"),
        (["--random-weights", "--device", "bogus"], "unknown device 'bogus'"),
        (["-p", "/nonexistent/weights.bin"], "no such file or folder"),
    ],
)
def test_demo_option_errors_are_one_plain_line(tmp_path, extra, message):
    r = invoke(["demo", "--cache-dir", str(tmp_path / "c"), "-o", str(tmp_path / "d"), *extra])
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--random-weights" not in r.stderr.split(message, 1)[1]  # no advice to do what was done
    assert "--tag /" not in r.stderr
    assert not (tmp_path / "d").exists()
