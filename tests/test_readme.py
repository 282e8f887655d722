"""The code blocks of the README and of the docs pages run as written, in order, in one empty folder.

The order is the README's, then the docs pages' in the order of ``mkdocs.yml``'s nav (the README's
tour moved there: a page's blocks use what the pages before it made). Every ```python and ```bash
block runs, top to bottom: bash blocks with ``bash -euo pipefail`` (the
``negvocab`` command is this checkout's), python blocks in one shared namespace (a later block uses
the names an earlier one made). Later blocks use the files that earlier blocks or ``negvocab demo``
wrote, with random weights. A block preceded by ``<!-- skip: reason -->`` does not run (it needs an
API key, a model hub or a machine set-up); keep those few. A block preceded by
``<!-- needs: MODULE -->`` runs where MODULE imports (an optional extra that the set-up installs).
"""

from __future__ import annotations

import importlib.util
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
MAX_SKIPPED = 22  # OpenOOD's Evaluator (needs an OpenOOD checkout), LiteLLM's install, the example grids' runs (2), the
# test-time how-to's MOS-four phase loop, its figure's outline, its OpenOOD tuning run (each runs on tiny data), the
# venv recipe for a full OpenOOD checkout (installs into a venv of its own)
SETUP_COMMANDS = (
    "bash scripts/setup.sh && . .venv/bin/activate && negvocab demo --random-weights   # the main job: the whole "
    "pipeline, offline\n"
    "bash scripts/setup.sh && . .venv/bin/activate && python3 -m pytest -q -n auto --dist "
    "loadgroup   # the test suite, one worker per CPU (what .ci/run runs)\n"
)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    skip: str | None
    needs: str | None = None


def readme_blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text`` with their language, first line, skip reason and needed module."""
    blocks = []
    pattern = re.compile(
        r"^(?:<!--\s*(?:skip:\s*(?P<reason>.*?)|needs:\s*(?P<needs>[\w.]+))\s*-->\s*\n)?"
        r"```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```\s*$",
        re.M | re.S,
    )
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start("code"))
        blocks.append(Block(m.group("lang").lower(), m.group("code"), line, m.group("reason"), m.group("needs")))
    return blocks


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    items = node.values() if isinstance(node, dict) else node
    return [p for x in items for p in _nav_pages(x)]


def doc_chain() -> list[Path]:
    """The files whose blocks run, in order: the README, then every docs page in the nav's order."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)["nav"]
    return [README] + [ROOT / "docs" / p for p in _nav_pages(nav)]


def chain_blocks() -> list[tuple[Path, Block]]:
    return [(f, b) for f in doc_chain() for b in readme_blocks(f.read_text(encoding="utf-8"))]


def test_block_parser():
    text = "x\n```bash\necho 1\n```\n<!-- skip: needs a key -->\n```python\nimport os\n```\n```text\nno\n```\n"
    blocks = readme_blocks(text)
    assert [(b.lang, b.code, b.skip) for b in blocks] == [
        ("bash", "echo 1\n", None),
        ("python", "import os\n", "needs a key"),
        ("text", "no\n", None),
    ]
    assert blocks[0].line == 2
    needs = readme_blocks("<!-- needs: pytorch_ood -->\n```python\nimport pytorch_ood\n```\n")
    assert [(b.skip, b.needs) for b in needs] == [(None, "pytorch_ood")]


def test_the_chain_is_the_readme_then_every_docs_page_in_nav_order():
    chain = doc_chain()
    assert chain[0] == README and len(chain) == len(set(chain)) and all(f.is_file() for f in chain)
    rel = [str(f.relative_to(ROOT)) for f in chain]
    assert rel.index("docs/howto/labels.md") < rel.index("docs/howto/models.md") < rel.index("docs/howto/scorers.md")


def test_few_blocks_are_skipped_and_each_says_why():
    blocks = [(f, b) for f, b in chain_blocks() if b.lang in RUNNABLE]
    skipped = [(f.name, b.line) for f, b in blocks if b.skip is not None]
    assert len(blocks) >= 25
    assert len(skipped) <= MAX_SKIPPED, skipped
    assert all(b.skip for _, b in blocks if b.skip is not None)


def test_readme_starts_with_the_two_setup_commands():
    """The two set-up commands are the README's first code block, exactly (.ci/run runs the same)."""
    first = readme_blocks(README.read_text(encoding="utf-8"))[0]
    assert first.lang == "bash" and first.code == SETUP_COMMANDS
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bash scripts/setup.sh" in ci and "python3 -m pytest -q -n auto --dist loadgroup" in ci


def _shim(folder: Path) -> Path:
    """A ``negvocab`` command running this checkout (never another installed copy)."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    exe = bin_dir / "negvocab"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from negvocab.cli import main; main()" "$@"\n')
    exe.chmod(0o755)
    return bin_dir


def test_readme_and_docs_blocks_run_in_order(tmp_path, monkeypatch, restored_registries):
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
    for path, block in chain_blocks():
        if block.lang not in RUNNABLE or block.skip is not None:
            continue
        if block.needs and importlib.util.find_spec(block.needs) is None:
            continue  # an optional extra this environment lacks (scripts/setup.sh installs it)
        where = f"{path.relative_to(ROOT)} line {block.line + 1} ({block.lang} block)"
        if block.lang == "bash":
            proc = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code], cwd=work, env=env, capture_output=True, text=True
            )
            if proc.returncode:
                pytest.fail(
                    f"{where} failed (exit {proc.returncode}):\n{block.code}\n--- "
                    f"stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"
                )
        else:
            try:
                exec(compile(textwrap.dedent(block.code), where, "exec"), namespace)
            except Exception as e:  # the block, not the harness, failed: say which
                pytest.fail(f"{where} failed: {type(e).__name__}: {e}\n{block.code}")
        ran += 1
    assert ran >= 18
