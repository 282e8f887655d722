"""CLI: several named OOD sets (--ood NAME=PATH), repeated single-value options refused, --seed, traceable results."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.cli import app, load_commands
from negvocab.cli.app import refuse_repeats
from negvocab.vocab import Vocabulary

runner = CliRunner()


def invoke(args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _one_error_line(r):
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def test_several_named_ood_sets_end_to_end(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    r = invoke([
        "score", "--id", tiny / "id", "--ood", f"ninco={tiny / 'ood'}", "--ood", tiny / "val",
        "--vocab", tiny / "negA.txt", "--groups", "4", "--n-boot", "30", "--seed", "5", "-o", out, *model_args,
    ])  # fmt: skip
    assert r.exit_code == 0, r.output
    table = list(csv.DictReader((out / "results.csv").open()))
    assert [t["ood_set"] for t in table] == ["ninco", "val", "mean"]
    # each set's FPR uses the one ID threshold (the paper's formula on the stored scores)
    npz = np.load(out / "scores.npz")
    ids, oods, sets = npz["id/neglabel@negA"], npz["ood/neglabel@negA"], npz["ood_sets"]
    threshold = np.quantile(ids.astype(np.float64), 0.05)
    for t in table[:2]:
        assert float(t["fpr"]) == pytest.approx(np.mean(oods[sets == t["ood_set"]] >= threshold))
    assert float(table[2]["fpr"]) == pytest.approx((float(table[0]["fpr"]) + float(table[1]["fpr"])) / 2)
    assert (int(table[0]["n_ood"]), int(table[1]["n_ood"])) == (4, 8)
    doc = json.loads((out / "results.json").read_text())
    assert (
        doc["bootstrap"]["seed"] == 5
        and doc["command"][:2] == ["negvocab", "score"]
        and f"ninco={tiny / 'ood'}" in doc["command"]
    )
    assert doc["versions"]["torch"] and doc["versions"]["open_clip"]
    assert doc["id_class_list"]["names"][:2] == ["goldfish", "tench"]
    assert doc["vocabularies"]["negA"]["file_sha256"]  # the vocabulary file's own hash
    assert "OOD set" in r.stdout and "negvocab/methods.md" in r.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ood", "{ood}", "--ood", "{ood}"], "two OOD sets are named 'ood'"),
        (["--ood", "mean={ood}"], "'mean' names the average"),
        (["--ood", "{ood}", "--model", "ViT-B-16"], "option --model given 2 times (--model --model)"),
        (
            ["--ood", "{ood}", "-t", "single", "--templates", "paper8"],
            "option --templates given 3 times (--templates -t --templates); "
            "it takes one value, give it once (see 'negvocab score --help')",
        ),
        (["--ood", "{ood}", "--tau=0.5", "--tau", "0.1"], "option --tau given 2 times"),
        (["--ood", "{ood}", "--random-weights"], "option --random-weights given 2 times"),
    ],
)
def test_repeats_are_refused_in_one_line_before_loading_a_model(tiny, model_args, tmp_path, extra, message):
    args = ["score", "--id", tiny / "id", "--vocab", tiny / "negA.txt", "-o", tmp_path / "r", *model_args]
    r = invoke([*args, *(x.format(ood=tiny / "ood") for x in extra)])
    assert message in _one_error_line(r)
    assert not (tmp_path / "r").exists()


def test_repeatable_options_and_values_that_look_like_options_are_left_alone():
    import typer.main

    load_commands()
    cmd = typer.main.get_command(app).commands["score"]
    refuse_repeats(
        cmd, ["--vocab", "a", "--vocab", "b", "--method", "mcm", "--method", "eoe", "--ood", "x", "--ood", "y"]
    )
    refuse_repeats(cmd, ["--templates", "--model", "--model", "x"])  # the first --model is --templates' value
    refuse_repeats(cmd, ["--model", "x", "--", "--model"])  # after --, not an option
    with pytest.raises(Exception, match="given 2 times"):
        refuse_repeats(cmd, ["-mViT-B-32", "--model", "x"])


def test_other_commands_refuse_repeats_too(tmp_path):
    (tmp_path / "a.txt").write_text("kayak\n")
    r = invoke(["merge", tmp_path / "a.txt", "-o", tmp_path / "u.json", "-o", tmp_path / "v.json"])
    assert "option -o given 2 times" in _one_error_line(r)
    assert not (tmp_path / "u.json").exists() and not (tmp_path / "v.json").exists()
    log = tmp_path / "l.log"
    r = invoke(["--log-file", log, "--log-file", log, "info", tmp_path / "a.txt"])  # the top-level options too
    assert "option --log-file given 2 times" in _one_error_line(r)
    r = invoke(["--verbose", "info", tmp_path / "a.txt", "--json", "-v"])  # a sub-command's own options are its own
    assert r.exit_code == 0 and json.loads(r.stdout)["size"] == 1
    r = invoke(["-vv", "info", tmp_path / "a.txt", "--json"])  # a counter may repeat: -vv is more detail
    assert r.exit_code == 0 and json.loads(r.stdout)["size"] == 1


def test_sweep_refuses_a_union_unless_the_order_is_given(tiny, model_args, tmp_path):
    union = Vocabulary.union(Vocabulary.load(tiny / "negA.txt"), Vocabulary.load(tiny / "negB.txt")).save(
        tmp_path / "u.json"
    )
    args = [
        "sweep",
        "--id",
        tiny / "id",
        "--ood",
        tiny / "ood",
        "--vocab",
        union,
        "--sizes",
        "4,8",
        "--n-boot",
        "0",
        *model_args,
    ]
    msg = _one_error_line(invoke([*args, "-o", tmp_path / "s"]))
    assert (
        "is a union: it has no farthest-first order" in msg and "--order given" in msg and not (tmp_path / "s").exists()
    )
    r = invoke([*args, "--order", "given", "-o", tmp_path / "s2", "--ood", f"second={tiny / 'val'}"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "s2" / "sweep.json").read_text())
    assert {x["order"] for x in doc["rows"]} == {"given"} and [x["ood_set"] for x in doc["rows"][:3]] == [
        "ood",
        "second",
        "mean",
    ]
    assert (tmp_path / "s2" / "sweep.png").read_bytes()[:4] == b"\x89PNG"
