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


@pytest.fixture
def model_reached(monkeypatch):
    """negvocab score's model loader made to exit 7: the command got past every check."""
    import negvocab.cli.score as cmd

    def loaded(*args, **kwargs):
        raise SystemExit(7)

    monkeypatch.setattr(cmd, "load_vlm", loaded)


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


def test_with_id_a_set_named_like_a_benchmark_is_the_user_s(model_reached, tiny, tmp_path):
    """With --id given, openod=PATH is a set of the user's: no suggestion (the sets open; the model is next)."""
    args = ["score", "--id", tiny / "id", "--ood", f"openod={tiny / 'ood'}", "--method", "mcm", "-o", tmp_path / "r"]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 7, r.output


def test_a_parameter_no_chosen_method_takes_is_refused(score_module, tiny, tmp_path):
    base = ["score", "--id", tiny / "id", "--ood", tiny / "ood", "-o", tmp_path / "r"]
    line = _one_error_line([*base, "--method", "mcm", "--tau", "0.5"])
    assert line.startswith("error: --tau: no chosen method takes it (--method mcm); it is a parameter of neglabel")
    line = _one_error_line([*base, "--method", "mcm", "--method", "msp", "--groups", "4"])
    assert "--groups: no chosen method takes it (--method mcm, msp)" in line
    assert not (tmp_path / "r" / "results.json").exists()


@pytest.mark.parametrize(
    "extra",
    [
        ["--method", "mcm", "--method", "neglabel", "--vocab", "{vocab}", "--tau", "0.5"],  # one chosen method takes it
        ["--method", "mcm", "--tau", "0.01"],  # the default value: nothing was changed
        ["--method", "mcm", "--seed", "3"],  # --seed seeds the bootstrap too
        ["--method", "mcm", "--temperature", "2"],
    ],
)
def test_a_parameter_a_chosen_method_takes_passes_to_the_model(model_reached, tiny, tmp_path, extra):
    extra = [str(tiny / "negA.txt") if a == "{vocab}" else a for a in extra]
    args = ["score", "--id", tiny / "id", "--ood", tiny / "ood", "-o", tmp_path / "r", *extra]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 7, r.output


def test_an_unknown_template_preset_is_refused_before_the_model(score_module, tiny, tmp_path):
    args = ["score", "--id", tiny / "id", "--ood", tiny / "ood", "--method", "mcm", "-t", "paper80"]
    line = _one_error_line([*args, "-o", tmp_path / "r"])
    assert "unknown template preset 'paper80'; did you mean 'paper8'?" in line
    assert not (tmp_path / "r" / "results.json").exists()


@pytest.mark.parametrize("templates", ["paper8", "single", "a photo of a {}."])
def test_a_known_template_preset_or_a_template_reaches_the_model(model_reached, tiny, tmp_path, templates):
    args = ["score", "--id", tiny / "id", "--ood", tiny / "ood", "--method", "mcm", "-t", templates]
    r = runner.invoke(app, [str(a) for a in [*args, "-o", tmp_path / "r"]])
    assert r.exit_code == 7, r.output
