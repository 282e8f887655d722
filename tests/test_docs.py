"""Every link and citation in the README, the docstrings, the notebooks and docs/ points inside the
repository: relative Markdown links name files that exist, and every ``docs/methods.md#anchor``
names a heading of the methods document (GitHub's anchor rules)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["README.md", "docs", "negvocab", "tests", "notebooks", "scripts", "benchmarks"]
SUFFIXES = {".md", ".py", ".ipynb", ".sh", ".toml", ".cff"}


def _files() -> list[Path]:
    out = []
    for name in SOURCES:
        p = ROOT / name
        out += [p] if p.is_file() else [f for f in sorted(p.rglob("*")) if f.suffix in SUFFIXES and f.is_file()]
    return out


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md: Path) -> set[str]:
    return {
        github_anchor(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", md.read_text(encoding="utf-8"), re.M)
    }


def test_github_anchor_rules():
    assert github_anchor("Conventions and the anchors' code") == "conventions-and-the-anchors-code"
    assert github_anchor("WordNet, farthest first") == "wordnet-farthest-first"
    assert github_anchor("FPR@95 and its conventions") == "fpr95-and-its-conventions"


def test_nothing_points_outside_the_repository():
    this = Path(__file__).resolve()
    bad = []
    for f in _files():
        if f.resolve() == this:
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if "../shared" in line or re.search(r"(?<![\w/])METHODS\.md", line):
                bad.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_methods_citations_name_existing_sections():
    known = anchors(ROOT / "docs" / "methods.md")
    assert "conventions-and-the-anchors-code" in known  # linked from results footers
    cited = []
    this = Path(__file__).resolve()
    for f in (f for f in _files() if f.resolve() != this):
        for m in re.finditer(r"docs/methods\.md#([\w\-]+)", f.read_text(encoding="utf-8")):
            cited.append((f.relative_to(ROOT), m.group(1)))
    assert len(cited) >= 14
    missing = [f"{f}: #{a}" for f, a in cited if a not in known]
    assert not missing, missing


@pytest.mark.parametrize("md", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])
def test_relative_markdown_links_resolve(md):
    path = ROOT / md
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(target)
    assert not broken, broken


def test_docs_copy_of_the_methods_document_is_current():
    """negvocab/methods.md is the one source (shipped in the package); docs/methods.md is its copy."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sync_docs.py"), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    copy = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    assert copy.endswith((ROOT / "negvocab" / "methods.md").read_text(encoding="utf-8")) and copy.startswith(
        "<!-- A copy of negvocab/methods.md"
    )


def test_results_cite_a_section_of_the_packaged_methods_document():
    from negvocab.evaluation.records import METHODS_SECTION

    heading = re.search(r'section "([^"]+)"', METHODS_SECTION).group(1)
    assert "negvocab/methods.md" in METHODS_SECTION and github_anchor(heading) in anchors(
        ROOT / "negvocab" / "methods.md"
    )


def test_the_docs_site_lists_every_page_and_builds_strictly():
    """mkdocs.yml's nav names every Markdown page under docs/ and only those; warnings are errors
    (CI runs ``mkdocs build --strict``, which also resolves every link and API reference)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert config["strict"] is True and config["docs_dir"] == "docs"

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for x in node:
                yield from pages(x)
        elif isinstance(node, dict):
            for x in node.values():
                yield from pages(x)

    nav = list(pages(config["nav"]))
    on_disk = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(nav) == on_disk and len(nav) == len(set(nav))
    assert {"methods.md", "layout.md", "tutorial.md"} <= set(nav) and sum(p.startswith("howto/") for p in nav) >= 5
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "mkdocs build --strict" in ci and "sync_docs.py --check" in ci


def test_the_screenshots_exist_are_small_and_are_shown():
    """Every image a page shows exists and is a PNG; each screenshot under docs/images/ is one (< 200 KB,
    its size as its PNG header says) and is shown by some page, so none is left behind."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    shown = {
        (page.parent / target).resolve(): page
        for page in pages
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    }
    missing = [f"{page.relative_to(ROOT)}: {img}" for img, page in shown.items() if not img.is_file()]
    assert not missing, missing
    shots = sorted((ROOT / "docs" / "images").glob("*"))
    assert len(shots) >= 2
    for shot in shots:
        head = shot.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", shot  # a PNG, as its name says
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
        assert shot.stat().st_size < 200_000 and 400 <= width <= 2000 and 300 <= height <= 3000, (shot, width, height)
        assert shot.resolve() in shown, f"{shot.relative_to(ROOT)} is shown by no page"
