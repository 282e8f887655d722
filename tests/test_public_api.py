"""The public names: every one in ``negvocab.__all__`` resolves, and the CLI starts without torch."""

from __future__ import annotations

import subprocess
import sys

import negvocab


def test_every_public_name_resolves():
    for name in negvocab.__all__:
        assert getattr(negvocab, name) is not None, name
    assert negvocab.metrics.auroc([1, 2], [0]) == 1.0


def test_the_cli_imports_no_torch():
    code = "import sys, negvocab.cli; print(sorted(m for m in ('torch', 'open_clip', 'faiss') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
