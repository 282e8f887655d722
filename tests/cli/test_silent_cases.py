"""CLI cases that were silent or misleading: each is one line, said before any model loads."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from negvocab.cli import app

runner = CliRunner()


def _no_model(*args, **kwargs):
    raise AssertionError("the model was loaded")


@pytest.fixture
def score_module(monkeypatch):
    """negvocab score's module, its model loader made to fail if it is called."""
    import negvocab.cli.score as cmd

    monkeypatch.setattr(cmd, "load_vlm", _no_model)
    return cmd


def _one_error_line(args):
    r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def test_a_misspelt_benchmark_name_is_suggested_not_read_as_a_set(score_module, tiny, tmp_path):
    line = _one_error_line(["score", "--ood", f"openod={tiny / 'ood'}", "--method", "mcm", "-o", tmp_path / "r"])
    assert "unknown benchmark 'openod'; did you mean 'openood'" in line and "no ID images" not in line
    assert not (tmp_path / "r" / "results.json").exists()


def test_a_named_set_not_like_a_benchmark_still_asks_for_id(score_module, tiny, tmp_path):
    line = _one_error_line(["score", "--ood", f"mine={tiny / 'ood'}", "--method", "mcm", "-o", tmp_path / "r"])
    assert line.startswith("error: no ID images: pass --id")


def test_with_id_a_set_named_like_a_benchmark_is_the_user_s(tiny, monkeypatch, tmp_path):
    """With --id given, openod=PATH is a set of the user's: no suggestion (the sets open; the model is next)."""
    import negvocab.cli.score as cmd

    def loaded(*args, **kwargs):
        raise SystemExit(7)

    monkeypatch.setattr(cmd, "load_vlm", loaded)
    args = ["score", "--id", tiny / "id", "--ood", f"openod={tiny / 'ood'}", "--method", "mcm", "-o", tmp_path / "r"]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 7, r.output
