"""No pipeline tests a method's name: outside the registry (scoring/methods.py) and the kernel modules,
code asks a method's entry for its capabilities (issue 29). A grep over the package's sources."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "negvocab"
BUILT_IN = ["mcm", "glmcm", "neglabel", "eoe", "neglabel_eoe", "msp", "maxlogit", "energy", "gen"]
#: the registry and the kernels, which define the methods
ALLOWED = {
    "scoring/methods.py",
    "scoring/mcm.py",
    "scoring/neglabel.py",
    "scoring/eoe.py",
    "scoring/logits.py",
    "scoring/explain.py",
    "scoring/grouping.py",
    "scoring/incremental.py",
}
#: the same words with other meanings: NegLabel's grouping, the template and candidate presets
OTHER_MEANINGS = re.compile(r"grouping|preset|spec ==|PRESETS")


def _pattern(names: list[str]) -> re.Pattern[str]:
    alt = "|".join(map(re.escape, names))
    quoted = rf"[\"']({alt})[\"']"
    return re.compile(
        rf"(==|!=)\s*{quoted}"  # x == "glmcm"
        rf"|{quoted}\s*(==|!=|in\b|not\s+in\b)"  # "glmcm" in methods
        rf"|\bin\s*[(\[{{]\s*{quoted}"  # x in ("neglabel", ...)
        rf"|\.name\s*(==|!=)\s*{quoted}"
    )


def _offences(text: str, pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if pattern.search(line) and not OTHER_MEANINGS.search(line)
    ]


def test_no_method_name_is_tested_outside_the_registry_and_the_kernels():
    pattern = _pattern(BUILT_IN)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in ALLOWED:
            found += [f"negvocab/{rel}:{x}" for x in _offences(path.read_text(encoding="utf-8"), pattern)]
    assert not found, "\n".join(found)


def test_the_grep_finds_what_it_should():
    """The pattern catches the shapes that were in the pipelines before (a plausible wrong answer fails)."""
    pattern = _pattern(["glmcm", "neglabel", "eoe", "neglabel_eoe"])
    for line in (
        'if method == "glmcm":',
        'local = "glmcm" in methods',
        'uses = self.method in ("neglabel", "neglabel_eoe")',
        'any(W.method_spec(cfg, m).name == "glmcm" for m in x)',
        "if key != 'eoe':",
    ):
        assert _offences(line, pattern), line
    for line in ('method: str = "neglabel",', 'if grouping == "neglabel":', 'methods = ("neglabel", "mcm")'):
        assert not _offences(line, pattern), line
