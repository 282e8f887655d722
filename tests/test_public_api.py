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


def test_public_submodules_import_as_documented():
    """``negvocab.metrics`` is documented as a module: ``from negvocab.metrics import auroc`` works as
    ``negvocab.metrics.auroc`` does, the same objects, without a deprecation warning."""
    import importlib
    import subprocess
    import sys

    import negvocab

    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from negvocab.metrics import auroc, evaluate\n"
        "import negvocab, negvocab.scoring.metrics as m\n"
        "assert auroc is m.auroc and evaluate is m.evaluate and negvocab.metrics is m\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name, path in negvocab._MODULES.items():
        assert importlib.import_module(f"negvocab.{name}") is importlib.import_module(path)
