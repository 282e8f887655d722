"""Write the docs site's generated pages: docs/methods.md, the copy of negvocab/methods.md (the one source,
shipped in the package), and the API reference pages docs/reference/*.md, one entry per public name
(scripts/api_reference.py). ``--check`` writes nothing and fails while a page differs; tests/test_docs.py
and CI run it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api_reference import pages  # a sibling script

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "negvocab" / "methods.md"
COPY = ROOT / "docs" / "methods.md"
HEADER = (
    "<!-- A copy of negvocab/methods.md, the methods document shipped in the package (negvocab methods prints it). "
    "Edit that file, then run: python3 scripts/sync_docs.py -->\n"
)


def expected() -> str:
    """What docs/methods.md must hold."""
    return HEADER + SOURCE.read_text(encoding="utf-8")


def generated() -> dict[Path, str]:
    """Every generated page -> what it must hold."""
    return {COPY: expected(), **pages()}


def stale() -> list[Path]:
    """The generated pages that differ from what they must hold (or are missing)."""
    return [p for p, text in generated().items() if not p.exists() or p.read_text(encoding="utf-8") != text]


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        old = stale()
        sys.exit(
            0
            if not old
            else f"{', '.join(str(p.relative_to(ROOT)) for p in old)} differ: run python3 scripts/sync_docs.py"
        )
    for path, text in generated().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
