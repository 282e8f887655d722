"""The docs site as a reader sees it: built once (``mkdocs build --strict``, as CI does), its HTML has
no raw reST roles, no visible doctest flags, examples as code, an entry for every public name, and the
methods page's lists as lists. The griffe extension (scripts/griffe_sphinx.py) that makes the Markdown
is tested on its own, and every "docs/methods.md, "Section"" citation names a section that
``negvocab methods -s`` finds."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str) -> ModuleType:
    """A module of scripts/ (not a package), imported from its file."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "scripts"))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocstrings")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def _pages(site: Path) -> dict[str, str]:
    return {str(p.relative_to(site)): p.read_text(encoding="utf-8") for p in sorted(site.rglob("*.html"))}


def _text(page: str) -> str:
    """What a reader sees: the tags gone, entities decoded (scripts and styles dropped)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_no_raw_roles_no_doctest_flags_and_examples_are_code(site):
    pages = _pages(site)
    reference = {k: v for k, v in pages.items() if k.startswith("reference/")}
    assert len(reference) >= 9
    raw = {
        k: re.findall(r":(?:class|func|meth|mod|attr|data|exc|obj|math):`[^`]*`", _text(v)) for k, v in pages.items()
    }
    assert not {k: v for k, v in raw.items() if v}
    assert not [k for k, v in pages.items() if "doctest:" in _text(v)]
    ref_html = "".join(reference.values())
    # every ">>>" a reader sees is a prompt inside a highlighted code block, never quoted prose
    prompts = ref_html.count('<span class="gp">&gt;&gt;&gt; </span>')
    assert prompts >= 20 and _text(ref_html).count(">>>") == prompts
    assert not re.search(r"<blockquote>(?:(?!</blockquote>).)*&gt;&gt;&gt;", ref_html, re.S)
    # reST forms are gone too: a "::" literal block marker, a math directive
    assert ".. math::" not in _text(ref_html) and not re.search(r"\w::\s*$", _text(ref_html), re.M)
    # roles became links where the target has an entry: many internal links, not just code
    assert ref_html.count("autorefs-internal") >= 200


def test_every_public_name_has_an_entry(site):
    import negvocab

    api = _script("api_reference")
    names = api.public_names()
    by_name = {n.name: n for n in names}
    # the names come from negvocab itself (imported here, independently of the script's static reading)
    expected = {f"negvocab.{k}" for k in negvocab.__all__ if k != "__version__"}
    for module in ("pytorch_ood", "openood", "zeroshot"):
        expected |= {
            f"negvocab.adapters.{module}.{k}" for k in _static_all(ROOT / "negvocab/adapters" / f"{module}.py")
        }
    assert set(by_name) == expected
    # the canonical path is where Python says the object is defined
    for key in negvocab._EXPORTS:
        obj = getattr(negvocab, key)
        if getattr(obj, "__qualname__", None) == key:
            assert by_name[f"negvocab.{key}"].canonical == f"{obj.__module__}.{key}", key
    ids: set[str] = set()
    index = (site / "reference" / "index.html").read_text(encoding="utf-8")
    for page in (site / "reference").rglob("index.html"):
        ids |= set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))
    missing = [n.canonical for n in names if n.canonical not in ids]
    assert not missing
    # the overview links every name to its entry
    unlinked = [n.name for n in names if f"#{n.canonical}" not in index]
    assert not unlinked


def _static_all(path: Path) -> list[str]:
    import ast

    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return list(ast.literal_eval(node.value))
    return []


def test_the_methods_page_lists_are_lists(site):
    page = (site / "methods" / "index.html").read_text(encoding="utf-8")
    start, end = page.index('id="text-embeddings"'), page.index('id="synonym-filtering"')
    section = page[start:end]
    assert section.count("<li>") == 5 and section.count("<table>") == 1
    assert section.index("<ul>") < section.index("<table>") < section.index("</ul>")  # the table is in its item
    # no list marker shows as text anywhere on the site (a list folded into a paragraph)
    folded = [
        k
        for k, v in _pages(site).items()
        for p in re.findall(r"<p>((?:(?!</p>).)*)</p>", v, re.S)
        if re.search(r"\n\s*- \S", p)
    ]
    assert not folded


# -- the griffe extension on its own ---------------------------------------------------------------


@pytest.fixture(scope="module")
def ext() -> ModuleType:
    pytest.importorskip("griffe")
    return _script("griffe_sphinx")


def _resolver(target: str) -> str:
    return {"score": "negvocab.scoring.scores.score"}.get(target, target)


def test_roles_become_optional_cross_references(ext):
    got = ext.rewrite("See :func:`score`, :class:`~negvocab.vocab.Vocabulary` and :mod:`x.y`.", _resolver)
    assert got == (
        'See <autoref identifier="negvocab.scoring.scores.score" optional><code>score</code></autoref>, '
        '<autoref identifier="negvocab.vocab.Vocabulary" optional><code>Vocabulary</code></autoref> and '
        '<autoref identifier="x.y" optional><code>x.y</code></autoref>.'
    )
    assert ext.rewrite(":func:`the score <score>`", _resolver).endswith("optional><code>the score</code></autoref>")
    assert ext.rewrite(":math:`s_i = x`", _resolver) == "`s_i = x`"


def test_doctests_math_and_literal_blocks_become_fenced_code(ext):
    text = "Intro.\n\n>>> f(1)  # doctest: +SKIP\n2\n\nMore::\n\n    a = 1\n\nEnd.\n\n.. math:: a = b\n          + c\n"
    got = ext.rewrite(text, _resolver)
    assert "```pycon\n>>> f(1)\n2\n```" in got and "doctest" not in got
    assert "More:\n\n```\na = 1\n```" in got
    fence = got[got.index("```tex") :]
    assert fence.splitlines()[1].strip() == "a = b" and fence.splitlines()[2].strip() == "+ c"
    # inside a NumPy "Examples" section the parser renders the doctest itself: left as is, flags dropped
    numpy = "Examples\n--------\n>>> f(1)  # doctest: +SKIP, +ELLIPSIS\n2\n"
    assert ext.rewrite(numpy, _resolver) == "Examples\n--------\n>>> f(1)\n2"


def test_methods_citations_become_links_from_the_reference_pages(ext):
    got = ext.rewrite("As (docs/methods.md#scores); [m](docs/methods.md#csp); ``docs/methods.md#metrics``.", _resolver)
    assert (
        got
        == "As ([docs/methods.md#scores](../methods.md#scores)); [m](../methods.md#csp); ``docs/methods.md#metrics``."
    )


def test_numpy_items_written_as_name_colon_description(ext):
    text = "Attributes\n----------\nk : the number of neighbours.\nscores : ndarray\n    The scores.\n"
    got = ext.rewrite(text, _resolver).splitlines()
    assert got[2:4] == ["k", "    the number of neighbours."]  # prose: moved under the name
    assert got[4] == "scores : ndarray"  # a type: kept


def test_methods_citations_are_found_by_negvocab_methods_s():
    from negvocab.cli.discover import methods_document, section

    text = methods_document()
    cited = []
    for folder in ("negvocab", "docs", "README.md"):
        path = ROOT / folder
        files = [path] if path.is_file() else [f for f in path.rglob("*") if f.suffix in {".py", ".md"}]
        for f in files:
            for m in re.finditer(r'methods\.md,\s+(?:section\s+)?"([^"]+)"', f.read_text(encoding="utf-8")):
                cited.append((f.relative_to(ROOT), m.group(1)))
    assert len(cited) >= 10
    for f, name in cited:
        assert section(text, name).lstrip("#").strip().lower().startswith(name.lower()), (f, name)


def _entries(page: str) -> list[tuple[str, str, str]]:
    """(kind, id, html up to the next entry) of each class and function entry of a reference page."""
    starts = list(re.finditer(r'<div class="doc doc-object doc-(\w+)">\s*<h\d id="([^"]+)"', page))
    return [
        (m.group(1), m.group(2), page[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(page)])
        for i, m in enumerate(starts)
        if m.group(1) in ("class", "function")
    ]


def test_every_class_and_function_entry_shows_its_signature(site):
    """A class's heading shows its constructor (``NegvocabDetector(vlm, method, ...)``), a function's its
    parameters, with their annotations and defaults."""
    entries = [e for p in (site / "reference").rglob("index.html") for e in _entries(p.read_text(encoding="utf-8"))]
    assert len(entries) >= 150
    unsigned = {i for _, i, body in entries if 'class="doc-signature' not in body}
    # no constructor of their own to show: pydantic models (made by their classmethods) and a warning class
    assert unsigned <= {
        "negvocab.vocab.vocabulary.Vocabulary",
        "negvocab.builders.registry.BuilderOptions",
        "negvocab.scoring.metrics.UndefinedMetricWarning",
    }, unsigned
    detector = next(body for _, i, body in entries if i == "negvocab.adapters.pytorch_ood.NegvocabDetector")
    signature = _text(detector.split("</pre>")[0])
    assert all(p in signature for p in ("NegvocabDetector(", "vlm: VLM", "method: str | None = None", "**params"))


def test_no_raw_double_backticks_and_no_flipped_code_spans(site):
    """reST's ``code`` never shows as backticks, and a stray fence in a docstring or page never flips
    the code spans after it (prose set as code, code as prose: a span that starts or ends with a space)."""
    raw, flipped = {}, {}
    for name, page in _pages(site).items():
        prose = re.sub(r"<pre\b.*?</pre>", "", page, flags=re.S)  # code blocks may hold backticks
        if "``" in _text(prose):
            raw[name] = _text(prose).count("``")
        spans = [s for s in re.findall(r"<code>([^<]*)</code>", prose) if s != s.strip() or s.startswith(", ")]
        if spans:
            flipped[name] = spans[:3]
    assert not raw and not flipped, (raw, flipped)


#: public callables whose entry has no "Parameters" section yet (their parameters are in prose): this list
#: may shrink, never grow; tests/test_docs_site.py prints what is missing
WITHOUT_PARAMETERS = ROOT / "tests" / "docs_without_parameters.txt"


def test_public_callables_have_parameter_lists(site):
    """Every public class and function takes its parameters as a NumPy "Parameters" section, except the
    known ones (listed, to be converted); a new public callable without one fails."""
    api = _script("api_reference")
    public = {n.canonical for n in api.public_names() if n.kind in ("class", "function")}
    pages = [p.read_text(encoding="utf-8") for p in (site / "reference").rglob("index.html")]
    entries = {i: body for page in pages for _, i, body in _entries(page)}

    def inside(i: str) -> str:  # what the signature's parentheses hold
        signature = _text(entries[i].split("</pre>")[0])
        return signature.split("(", 1)[1].rsplit(")", 1)[0] if "(" in signature else ""

    takes = {i for i in public if inside(i).strip()}
    missing = sorted(i for i in public if i in takes and 'doc-section-title">Parameters' not in entries[i])
    known = set(WITHOUT_PARAMETERS.read_text(encoding="utf-8").split())
    print(f"{len(public) - len(missing)} of {len(public)} public callables have a parameter list; without one:")
    print("\n".join(missing))
    assert not set(missing) - known, sorted(set(missing) - known)
