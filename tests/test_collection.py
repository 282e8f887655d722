"""Every test file is collected: pytest skips some folder names (``build``, ``dist``, dot-folders) by
default, and a test folder named so would never run while CI stays green."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_test_file_and_doctest_module_is_collected():
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    collected = {line.split("::", 1)[0] for line in r.stdout.splitlines() if "::" in line}
    files = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")}
    assert files - collected == set(), "test files pytest does not collect"
    # every module with a docstring example is collected as a doctest (the deprecation shims aside)
    examples = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "negvocab").rglob("*.py")
        if re.search(r"^\s*>>> ", p.read_text(encoding="utf-8"), flags=re.M) and "negvocab/build/" not in str(p)
    }
    assert examples - collected == set(), "modules whose examples do not run"
    assert "tests/builders/test_mined.py" in collected  # the folder that used to be named build/
