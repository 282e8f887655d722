"""``negvocab score --authors NAME``: the authors' scoring setting from the one table of
negvocab/builders/authors.py, equal to the same flags spelled out, a conflicting flag refused in one line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from negvocab.builders.authors import AUTHORS
from negvocab.cli import app

runner = CliRunner()


def _args(tiny, out, *more):
    """A random ViT-B-32 on the CPU (no --templates: the setting's own), the tiny ID and OOD sets."""
    return [
        "score", "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), "--vocab", str(tiny / "negA.txt"),
        "--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--id-classes", str(tiny / "classes.txt"),
        "--cache-dir", str(tiny / "cache"), "--n-boot", "20", "--no-report", "-o", str(out), *more,
    ]  # fmt: skip


def _rows(out):
    return json.loads((out / "results.json").read_text())["rows"]


def test_score_authors_csp_equals_its_flags_spelled_out_and_records_the_setting(tiny, tmp_path):
    by_hand = ["--method", "neglabel", "--grouping", "neglabel", "--groups", "100", "--seed", "0", "--templates", "csp"]
    assert AUTHORS["csp"].score_flags == " ".join(by_hand)  # the table's setting, written out independently
    a = runner.invoke(app, _args(tiny, tmp_path / "a", "--authors", "csp"), catch_exceptions=False)
    assert a.exit_code == 0, a.output
    assert f"--authors csp: {' '.join(by_hand)}" in a.stderr  # what it set, printed
    b = runner.invoke(app, _args(tiny, tmp_path / "b", *by_hand), catch_exceptions=False)
    assert b.exit_code == 0, b.output
    rows_a, rows_b = _rows(tmp_path / "a"), _rows(tmp_path / "b")
    assert [r["authors"] for r in rows_a] == ["csp"] and all("authors" not in r for r in rows_b)
    assert rows_a[0]["authors_setting"] == " ".join(by_hand)
    strip = [{k: v for k, v in r.items() if k not in ("authors", "authors_setting")} for r in rows_a]
    assert strip == rows_b  # every metric, parameter and identity field the same
    assert rows_b[0]["templates"].startswith("csp") and rows_b[0]["params"]["grouping"] == "neglabel"
    # the tables say so: the results.csv columns and the terminal footer
    head = (tmp_path / "a" / "results.csv").read_text().splitlines()[0].split(",")
    assert head[-2:] == ["authors", "authors_setting"]
    assert "settings of --authors csp (the authors' code)" in a.stdout
    assert "--authors" not in b.stdout
    table = runner.invoke(app, ["table", str(tmp_path / "a"), "--cols", "ood_set"], catch_exceptions=False)
    assert table.exit_code == 0, table.output
    assert "Settings of --authors csp (the authors' code): " + " ".join(by_hand) in table.stdout


def test_score_authors_refuses_a_conflicting_flag_in_one_line(tiny, tmp_path):
    for more, conflict in (
        (["--groups", "50"], "--groups 50"),
        (["--templates", "single"], "--templates single"),
        (["--method", "mcm"], "--method mcm"),
    ):
        r = runner.invoke(app, _args(tiny, tmp_path / "c", "--authors", "csp", *more))
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output, r.output
        assert "--authors csp sets" in lines[0] and conflict in lines[0], lines[0]
    # the same value given beside it is no conflict; an unknown name is one line naming the choices
    r = runner.invoke(app, _args(tiny, tmp_path / "d", "--authors", "nosuch"))
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and "csp, interneg, neglabel, negrefine" in lines[0], r.output
    assert not (tmp_path / "c").exists() and not (tmp_path / "d").exists()  # refused before anything is written


def test_the_table_holds_neglabels_setting_as_its_code_reads():
    """NegLabel's code (XueJiang16/NegLabel@3253db6): custom_config/clip.py ngroup=100 and prompt_idx 85 (the
    template 'the nice {}'), 'This is a {} photo' for adjectives, clip_ood.py's torch.randperm after SEED=0."""
    from negvocab.vlm.templates import resolve_templates

    assert AUTHORS["neglabel"].score_flags == (
        "--method neglabel --grouping neglabel --groups 100 --seed 0 --templates neglabel"
    )
    t = resolve_templates(AUTHORS["neglabel"].score["templates"])
    assert dict(t.by_pos or {}) == {"n": ("the nice {}",), "a": ("This is a {} photo",)} and t.default == (
        "the nice {}",
    )
