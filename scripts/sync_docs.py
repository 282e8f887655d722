"""Write docs/methods.md, the docs site's copy of the methods document, from negvocab/methods.md
(the one source, shipped in the package). tests/test_docs.py fails while the two differ."""

from __future__ import annotations

import sys
from pathlib import Path

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


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        sys.exit(
            0
            if COPY.read_text(encoding="utf-8") == expected()
            else f"{COPY} differs from {SOURCE}: run python3 scripts/sync_docs.py"
        )
    COPY.write_text(expected(), encoding="utf-8")
    print(f"wrote {COPY.relative_to(ROOT)}")
