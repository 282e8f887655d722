"""``negvocab methods`` and ``negvocab models``: the packaged methods document and open_clip's list."""

from __future__ import annotations

import re
from pathlib import Path

import open_clip
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.cli.discover import PRESETS, methods_document, section

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "negvocab" / "methods.md").read_text(encoding="utf-8")
runner = CliRunner()


def _section_by_hand(heading: str) -> str:
    """The section from its '## heading' line to the next heading of its level or above."""
    lines = DOC.splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if ln.rstrip() == heading)
    level = len(heading.split()[0])
    end = next((j for j in range(start + 1, len(lines)) if re.match(rf"#{{1,{level}}}\s", lines[j])), len(lines))
    return "".join(lines[start:end])


def test_methods_prints_the_document_a_section_or_writes_a_file(tmp_path):
    r = runner.invoke(app, ["methods"])
    assert r.exit_code == 0 and r.stdout == DOC
    r = runner.invoke(
        app, ["methods", "-s", "conventions"]
    )  # the heading that starts with it, not one that contains it
    assert r.exit_code == 0 and r.stdout == _section_by_hand("## Conventions and the anchors' code")
    r = runner.invoke(app, ["methods", "--section", "FPR@95"])
    assert r.stdout == _section_by_hand("### FPR@95 and its conventions")
    r = runner.invoke(app, ["methods", "-o", str(tmp_path / "m.md")])
    assert r.exit_code == 0 and (tmp_path / "m.md").read_text(encoding="utf-8") == DOC


def test_an_unknown_section_is_one_line_naming_the_sections():
    r = runner.invoke(app, ["methods", "-s", "no such thing"])
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert "\n" not in line and line.startswith("error: --section 'no such thing'") and "Metrics" in line


def test_models_lists_open_clips_pretrained_and_the_preset():
    known = open_clip.list_pretrained()
    r = runner.invoke(app, ["models"])
    rows = [tuple(ln.split()) for ln in r.stdout.splitlines()]
    assert r.exit_code == 0 and rows == [(n, t) for n, t in known]
    r = runner.invoke(app, ["models", "--preset", "paper8"])
    rows = [tuple(ln.split()) for ln in r.stdout.splitlines()]
    assert len(rows) == 8 == len(set(rows)) and set(rows) <= set(known) and rows == PRESETS["paper8"]
    # not the paper's own list (its methods document does not hold it): said beside the list, and
    # SigLIP2-g, the one VLM the document names, is in it
    assert "not the paper's own list" in r.stderr and ("ViT-gopt-16-SigLIP2-384", "webli") in rows
    assert "SigLIP2-g" in section(methods_document(), "The benchmark and reference numbers")
    r = runner.invoke(app, ["models", "--grep", "SigLIP2"])
    assert [tuple(ln.split()) for ln in r.stdout.splitlines()] == [
        (n, t) for n, t in known if "siglip2" in f"{n} {t}".lower()
    ]
    r = runner.invoke(app, ["models", "--preset", "paper9"])
    assert r.exit_code == 2 and "unknown preset" in r.stderr and "paper8" in r.stderr
