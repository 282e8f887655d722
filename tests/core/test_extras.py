"""The light base install: the vocabulary tools run where no heavy package can be imported, and a
command that needs an extra says which one in one line (``negvocab/core/extras.py``).

The absent packages are emulated in a fresh interpreter: ``sys.modules[name] = None`` for each, which
is what Python does for a package that is not installed as far as ``import`` (ModuleNotFoundError,
with ``name`` set) and ``importlib.util.find_spec`` (None) can tell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from negvocab.core.errors import NegvocabError
from negvocab.core.extras import EXTRAS, MissingExtraError, extra_for, missing_extra, require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# every package that the base install must run the vocabulary tools without
HEAVY = ("torch", "torchvision", "open_clip", "faiss", "openai", "tenacity", "matplotlib", "sklearn", "scipy")
HEAVY += ("sympy", "jinja2", "safetensors", "PIL", "pandas", "pyarrow", "transformers", "ray", "pytorch_ood")


def run_without(args: list[str], cwd: Path, absent: tuple[str, ...] = HEAVY, code: str | None = None):
    """``negvocab ARGS`` (or the Python ``code``) in a fresh interpreter where ``absent`` cannot be imported."""
    block = f"import sys\nfor _n in {absent!r}:\n    sys.modules[_n] = None\n"
    body = (
        code
        if code is not None
        else f"import sys\nsys.argv = ['negvocab', *{args!r}]\nfrom negvocab.cli import main\nmain()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", block + body], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _extra_names(extra: str) -> set[str]:
    """The distributions an extra installs, self-references (negvocab[a,b]) followed."""
    names: set[str] = set()
    for raw in PROJECT["optional-dependencies"][extra]:
        req = Requirement(raw)
        if canonicalize_name(req.name) == "negvocab":
            for sub in req.extras:
                names |= _extra_names(sub)
        else:
            names.add(canonicalize_name(req.name))
    return names


def test_the_base_dependencies_are_the_light_set():
    base = {canonicalize_name(Requirement(r).name) for r in PROJECT["dependencies"]}
    assert base == {"numpy", "nltk", "pydantic", "typer", "rich", "tqdm", "platformdirs"}


def test_every_heavy_package_sits_in_the_extra_the_error_names():
    for module, (dist, extra) in EXTRAS.items():
        assert canonicalize_name(dist) in _extra_names(extra), f"{module}: [{extra}] does not install {dist}"
    # the runtime extras, all of them in [all] (FAISS on the CPU) and in [all-gpu] (on the GPU)
    runtime = {"vlm", "llm", "report", "hf", "grid", "ray", "pytorch-ood"}
    assert _extra_names("all") == set().union(*(_extra_names(x) for x in runtime))
    assert _extra_names("all-gpu") == (_extra_names("all") - {"faiss-cpu"}) | {"faiss-gpu"}


def test_the_gpu_extra_leaves_one_faiss():
    """faiss-cpu and faiss-gpu both ship a top-level faiss/: [gpu] is [vlm] with the one swapped for the other."""
    assert _extra_names("gpu") == (_extra_names("vlm") - {"faiss-cpu"}) | {"faiss-gpu"}
    for extra in PROJECT["optional-dependencies"]:
        faiss = {n for n in _extra_names(extra) if n.startswith("faiss")}
        assert len(faiss) <= 1, (extra, faiss)
    assert not any(
        n.startswith("faiss") for n in (canonicalize_name(Requirement(r).name) for r in PROJECT["dependencies"])
    )


def test_require_names_the_extra_and_is_still_an_import_error(monkeypatch):
    assert require("json") is json
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingExtraError) as e:
        require("openai")
    assert str(e.value) == "openai is not installed; this needs pip install 'negvocab[llm]' (or 'negvocab[all]')"
    assert isinstance(e.value, ModuleNotFoundError) and isinstance(e.value, NegvocabError) and e.value.name == "openai"
    assert extra_for("torch.nn.functional") == "vlm" and extra_for("pytorch_ood") == "pytorch-ood"
    assert extra_for("numpy") is None
    assert missing_extra(ModuleNotFoundError("x", name="somethingelse")) is None
    monkeypatch.setitem(sys.modules, "not_a_known_package_xyz", None)
    with pytest.raises(ModuleNotFoundError) as plain:  # an unknown package: the ordinary error, unchanged
        require("not_a_known_package_xyz")
    assert not isinstance(plain.value, MissingExtraError)


def test_vocabulary_commands_run_without_the_heavy_packages(tmp_path):
    """classes, candidates, filter, info, merge, methods and benchmarks on the base install alone."""
    steps = [
        ["classes", "-o", "classes.csv"],
        ["candidates", "--preset", "neglabel", "-o", "pool.tsv"],
        ["-q", "filter", "pool.tsv", "-o", "pool.clean.json"],
        ["info", "pool.clean.json", "-n", "3"],
        ["merge", "pool.clean.json", "pool.clean.json", "-o", "union.json"],
        ["methods", "-s", "conventions"],
        ["benchmarks"],
    ]
    for args in steps:
        r = run_without(args, tmp_path)
        assert r.returncode == 0, (args, r.stderr[-2000:])
    assert len((tmp_path / "classes.csv").read_text().splitlines()) >= 1000
    pool = (tmp_path / "pool.tsv").read_text().splitlines()
    clean = json.loads((tmp_path / "pool.clean.json").read_text())
    union = json.loads((tmp_path / "union.json").read_text())
    assert 70_000 < len(pool) and 0 < len(clean["labels"]) < len(pool)
    assert union["labels"] == clean["labels"]  # a union of a file with itself is that file
    # the same filter with every package importable: the same labels
    from negvocab.labels.synonyms import SynonymFilter  # noqa: F401  (importable here; the CLI is the check)

    r = subprocess.run(
        [sys.executable, "-c", "from negvocab.cli import main; main()", "-q", "filter", "pool.tsv", "-o", "full.json"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((tmp_path / "full.json").read_text())["labels"] == clean["labels"]


@pytest.mark.parametrize(
    ("args", "extra", "dist"),
    [
        (["build", "wordnet", "-m", "ViT-B-32", "--random-weights", "-o", "w.json"], "vlm", "torch"),
        (["score", "--id", "a", "--ood", "b=c", "--vocab", "v.json", "-o", "r"], "vlm", "torch"),
        (["models"], "vlm", "open_clip_torch"),
    ],
)
def test_a_model_command_names_the_extra_in_one_line(tmp_path, args, extra, dist):
    r = run_without(args, tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert (
        r.stderr.strip()
        == f"error: {dist} is not installed; this needs pip install 'negvocab[{extra}]' (or 'negvocab[all]')"
    )
    assert "Traceback" not in r.stderr + r.stdout


def test_an_llm_builder_without_openai_names_the_llm_extra(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")  # (a local server's placeholder key; nothing is sent)
    args = ["build", "gpt", "-m", "gpt-x", "--base-url", "http://127.0.0.1:9/v1", "-o", "g.json"]
    r = run_without(args, tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert (
        r.stderr.strip()
        == "error: openai is not installed; this needs pip install 'negvocab[llm]' (or 'negvocab[all]')"
    )


def test_the_library_names_the_extra_too(tmp_path):
    """negvocab.VLM(...) and negvocab.knn(...) without torch: MissingExtraError, also a ModuleNotFoundError."""
    code = (
        "import numpy as np\nimport negvocab\nx = np.eye(3, dtype='float32')\n"
        "for call in (lambda: negvocab.VLM('ViT-B-32', random_weights=True),\n"
        "             lambda: negvocab.knn(x, x, k=1, backend='torch')):\n"
        "    try:\n        call()\n"
        "    except negvocab.MissingExtraError as e:\n        print(isinstance(e, ModuleNotFoundError), e)\n"
    )
    r = run_without([], tmp_path, code=code)
    assert r.returncode == 0, r.stderr[-2000:]
    line = "True torch is not installed; this needs pip install 'negvocab[vlm]' (or 'negvocab[all]')"
    assert r.stdout.splitlines() == [line, line]


def test_the_llm_client_imported_directly_names_the_llm_extra(tmp_path):
    """``negvocab.llm.client.LLMClient`` made without openai: MissingExtraError naming [llm] (a
    ModuleNotFoundError still, with ``name``), not the interpreter's bare "import of openai halted"."""
    code = (
        "from negvocab.llm.client import LLMClient\nfrom negvocab.core.extras import MissingExtraError\n"
        "try:\n    LLMClient('m', base_url='http://127.0.0.1:9/v1', api_key='k')\n"
        "except MissingExtraError as e:\n    print(isinstance(e, ModuleNotFoundError), e.name, e)\n"
    )
    r = run_without([], tmp_path, code=code)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (
        r.stdout.strip()
        == "True openai openai is not installed; this needs pip install 'negvocab[llm]' (or 'negvocab[all]')"
    )


def test_the_control_a_command_that_imports_no_heavy_package_is_not_refused(tmp_path):
    """The blocker itself: with nothing blocked the model command gets past its imports (then fails on input)."""
    r = run_without(["score", "--id", "a", "--ood", "b=c", "--vocab", "v.json", "-o", "r"], tmp_path, absent=())
    assert "is not installed" not in r.stderr and r.returncode == 2, r.stderr[-2000:]
