"""The README's code blocks run as written, in order, in one empty folder.

Every ```python and ```bash block runs, top to bottom: bash blocks with ``bash -euo pipefail`` (the
``negvocab`` command is this checkout's), python blocks in one shared namespace (a later block uses
the names an earlier one made). Later blocks use the files that earlier blocks or ``negvocab demo``
wrote, with random weights. A block preceded by ``<!-- skip: reason -->`` does not run (it needs an
API key, a model hub or a machine set-up); keep those few.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUNNABLE = ("python", "bash")
MAX_SKIPPED = 4


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    skip: str | None


def readme_blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text`` with their language, first line and skip reason."""
    blocks = []
    pattern = re.compile(r"^(?:<!--\s*skip:\s*(?P<reason>.*?)\s*-->\s*\n)?```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```\s*$", re.M | re.S)
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start("code"))
        blocks.append(Block(m.group("lang").lower(), m.group("code"), line, m.group("reason")))
    return blocks


def test_block_parser():
    text = "x\n```bash\necho 1\n```\n<!-- skip: needs a key -->\n```python\nimport os\n```\n```text\nno\n```\n"
    blocks = readme_blocks(text)
    assert [(b.lang, b.code, b.skip) for b in blocks] == [("bash", "echo 1\n", None), ("python", "import os\n", "needs a key"), ("text", "no\n", None)]
    assert blocks[0].line == 2


def test_few_blocks_are_skipped_and_each_says_why():
    blocks = [b for b in readme_blocks(README.read_text(encoding="utf-8")) if b.lang in RUNNABLE]
    skipped = [b for b in blocks if b.skip is not None]
    assert len(blocks) >= 8
    assert len(skipped) <= MAX_SKIPPED, [b.line for b in skipped]
    assert all(b.skip for b in skipped)


def _shim(folder: Path) -> Path:
    """A ``negvocab`` command running this checkout (never another installed copy)."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    exe = bin_dir / "negvocab"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from negvocab.cli import main; main()" "$@"\n')
    exe.chmod(0o755)
    return bin_dir


def test_readme_blocks_run_in_order(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        "PATH": f"{_shim(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        "NEGVOCAB_CACHE_DIR": str(tmp_path / "cache"),
        "MPLBACKEND": "Agg",
        "OPENAI_API_KEY": "",  # nothing here may reach a paid API
    }
    monkeypatch.chdir(work)
    for key in ("NEGVOCAB_CACHE_DIR", "MPLBACKEND"):
        monkeypatch.setenv(key, env[key])
    namespace: dict[str, object] = {"__name__": "__readme__"}
    ran = 0
    for block in readme_blocks(README.read_text(encoding="utf-8")):
        if block.lang not in RUNNABLE or block.skip is not None:
            continue
        where = f"README.md line {block.line + 1} ({block.lang} block)"
        if block.lang == "bash":
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=work, env=env, capture_output=True, text=True)
            if proc.returncode:
                pytest.fail(f"{where} failed (exit {proc.returncode}):\n{block.code}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
        else:
            try:
                exec(compile(textwrap.dedent(block.code), where, "exec"), namespace)
            except Exception as e:  # the block, not the harness, failed: say which
                pytest.fail(f"{where} failed: {type(e).__name__}: {e}\n{block.code}")
        ran += 1
    assert ran >= 6
