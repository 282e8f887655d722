"""Packaging: ranges in pyproject.toml, exact pins only in constraints.txt, an install that keeps the
environment's torch, LICENSE / CITATION.cff / py.typed shipped."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _script():
    spec = importlib.util.spec_from_file_location("check_install_beside", ROOT / "scripts" / "check_install_beside.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _requirements() -> list[Requirement]:
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return [r for r in map(Requirement, reqs) if canonicalize_name(r.name) != "negvocab"]  # not [all]'s self-references


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    return pins


def test_dependencies_are_ranges_not_pins():
    for req in _requirements():
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"{req} pins an exact version"
    torch = next(r for r in _requirements() if r.name == "torch")
    assert any(s.operator == ">=" for s in torch.specifier) and any(s.operator == "<" for s in torch.specifier)


def test_constraints_pin_every_dependency_inside_its_range():
    pins = _constraints()
    optional = {
        canonicalize_name(r.name)
        for extra in ("gpu", "all-gpu")  # not installed by setup.sh: faiss-gpu (CUDA 12 libraries)
        for r in map(Requirement, PYPROJECT["project"]["optional-dependencies"][extra])
    }
    for req in _requirements():
        name = canonicalize_name(req.name)
        if name in optional:
            continue
        assert name in pins, f"constraints.txt has no pin for {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]} outside {req}"
        )


def test_setup_script_and_ci_use_the_constraints():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "-c constraints.txt" in setup and setup.count('run "${PIP[@]}"') == 2  # torch, then the package
    ci = (ROOT / ".ci" / "run").read_text()
    run = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert any(ln.startswith("bash scripts/setup.sh --system") for ln in run)  # CI: its python3, no .venv
    assert "-e '.[all,test,docs]'" in setup and "python3 -m venv .venv" in setup
    # the lower-bound job runs in CI (not only named in a comment), after its planted too-low bound
    assert run.index("bash scripts/check_lower_bounds.sh --planted") < run.index("bash scripts/check_lower_bounds.sh")
    lower = (ROOT / "scripts" / "check_lower_bounds.sh").read_text()
    assert (
        "--resolution lowest-direct" in lower
        and "tests/cli/test_app.py" in lower
        and "tests/llm/test_client.py" in lower
    )
    assert (
        "--planted" in lower and "| tar --null -T -" in lower
    )  # cp --parents dropped the negvocab/prompts link, silently


def test_no_private_module_of_a_dependency_is_imported():
    """typer._click (typer >= 0.26 only) broke negvocab --help on older typer: no '<pkg>._<mod>' imports."""
    import ast

    bad = []
    for f in (ROOT / "negvocab").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            bad += [
                f"{f.relative_to(ROOT)}: {n}"
                for n in names
                if not n.startswith("negvocab")
                and any(part.startswith("_") and not part.startswith("__") for part in n.split(".")[1:])
            ]
    assert bad == [], bad


def test_license_citation_and_py_typed():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "2026 negvocab developers" in license_text
    assert PYPROJECT["project"]["license"] == "MIT" and PYPROJECT["project"]["license-files"] == ["LICENSE"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == PYPROJECT["project"]["version"]
    paper = cff["preferred-citation"]
    assert paper["title"].startswith("Fi-ImageNet-1k") and paper["authors"][0]["family-names"] == "Rozumnyi"
    assert any(i["value"] == "arXiv:2609.01027" for i in paper["identifiers"])
    assert (ROOT / "negvocab" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["negvocab"]


def test_demo_folder_is_ignored():
    assert re.search(r"^/?negvocab-demo/?$", (ROOT / ".gitignore").read_text(), re.M)


def test_install_keeps_the_environments_torch_at_the_lower_ends(tmp_path):
    """pip's resolver, in a venv holding torch/torchvision at the declared lower ends: negvocab alone."""
    mod = _script()
    reqs = mod.declared()
    plan = mod.would_install(mod.lower_end(reqs, "torch"), mod.lower_end(reqs, "torchvision"), workdir=tmp_path)
    assert [p.split("==")[0] for p in plan] == ["negvocab"], plan


def test_an_exact_pin_would_replace_that_torch(tmp_path):
    """The control: the old exact pin cannot be met without replacing the environment's torch."""
    mod = _script()
    with pytest.raises(RuntimeError, match="ResolutionImpossible|No matching distribution"):
        mod.would_install("2.4", "0.19", ["torch==2.14.1", "numpy"], workdir=tmp_path)


def _source_copy(src: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored) copied to ``src``: a build there leaves
    no build/ or egg-info in the checkout."""
    import shutil
    import subprocess

    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        if (ROOT / name).is_dir():  # a link to a folder (negvocab/prompts -> prompts)
            shutil.copytree(ROOT / name, src / name)
        elif (ROOT / name).exists():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, src / name)  # follows links: resources/grid.toml is examples/grid.toml
    return src


WHEEL_CHECK = r"""
import json, re, subprocess, sys
from importlib import resources
from pathlib import Path
import negvocab
from negvocab.evaluation.records import METHODS_SECTION
pkg = Path(negvocab.__file__).parent
doc = (resources.files("negvocab") / "methods.md").read_text(encoding="utf-8")
heads = [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", doc, re.M)]
cited_files, cited_anchors = set(), set()
for f in pkg.rglob("*.py"):
    text = f.read_text(encoding="utf-8")
    cited_files |= set(re.findall(r"negvocab/([\w/]+\.(?:md|toml|tsv|txt|html))", text))
    cited_anchors |= set(re.findall(r"docs/methods\.md#([\w\-]+)", text))
print(json.dumps({"file": negvocab.__file__, "heads": heads, "files": sorted(cited_files), "missing": sorted(c for c in cited_files if not (pkg / c).is_file()),
                  "anchors": sorted(cited_anchors), "section": METHODS_SECTION}))
"""  # noqa: E501 (the script's own lines)


def test_the_wheel_ships_what_it_cites(tmp_path):
    """Build the wheel from a copy of the tree, install it (no deps; this environment's packages via
    --system-site-packages) into a fresh venv, and follow every citation from there."""
    import json
    import os
    import subprocess
    import sys
    import zipfile

    from tests.test_docs import github_anchor

    src = _source_copy(tmp_path / "src")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(src),
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    wheel = next((tmp_path / "dist").glob("negvocab-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"negvocab/methods.md", "negvocab/resources/grid.toml", "negvocab/py.typed"} <= names
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Project-URL: Paper, https://arxiv.org/abs/2609.01027" in meta
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    base = {  # the light base install: what pip installs for negvocab without an extra
        canonicalize_name(Requirement(line.split(":", 1)[1]).name)
        for line in meta.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    assert base == {"numpy", "nltk", "pydantic", "typer", "rich", "tqdm", "platformdirs"}, base
    assert {"negvocab/resources/demo/photos/china.jpg", "negvocab/resources/demo/NOTICE.md"} <= names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        env=env,
        capture_output=True,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    r = subprocess.run(
        [venv / "bin" / "python", "-c", WHEEL_CHECK], cwd=work, env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(venv)), got["file"]  # the wheel's copy, not this checkout
    assert "methods.md" in got["files"] and not got["missing"], got
    anchors = {github_anchor(h) for h in got["heads"]}
    assert len(got["anchors"]) >= 5 and set(got["anchors"]) <= anchors, set(got["anchors"]) - anchors
    assert "Conventions and the anchors' code" in got["section"] and "Conventions and the anchors' code" in got["heads"]
    cli = venv / "bin" / "negvocab"
    r = subprocess.run(
        [cli, "methods", "-s", "conventions"], cwd=work, env=env, capture_output=True, text=True, check=True
    )
    assert r.stdout.startswith("## Conventions and the anchors' code") and "hendrycks" in r.stdout
    r = subprocess.run([cli, "grid", "init", "g.toml"], cwd=work, env=env, capture_output=True, text=True, check=True)
    assert (work / "g.toml").read_text(encoding="utf-8") == (ROOT / "examples" / "grid.toml").read_text(
        encoding="utf-8"
    )
    r = subprocess.run([cli, "grid", "run", "--help"], cwd=work, env=env, capture_output=True, text=True, check=True)
    assert "negvocab grid init" in r.stdout and "examples/grid.toml" not in r.stdout


def test_the_wheel_builds_with_the_lowest_setuptools_of_the_range(tmp_path):
    """[build-system] says setuptools >= 77.0.3 (the first that reads an SPDX `license` string with
    `license-files`): an isolated build with exactly that version makes a wheel with the SPDX licence."""
    import os
    import subprocess
    import sys
    import zipfile

    low = re.search(r"setuptools>=([\d.]+),<(\d+)", " ".join(PYPROJECT["build-system"]["requires"]))
    assert low and low.group(1) == "77.0.3"
    assert int(_constraints()["setuptools"].split(".")[0]) < int(low.group(2))  # the pinned upper end is inside
    (tmp_path / "c.txt").write_text(f"setuptools=={low.group(1)}\n")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PIP_CONSTRAINT": str(tmp_path / "c.txt")}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-v",
            "--no-deps",
            "-w",
            str(tmp_path / "dist"),
            str(_source_copy(tmp_path / "src")),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "setuptools-77.0.3" in r.stdout + r.stderr  # the build environment held the lowest version
    wheel = next((tmp_path / "dist").glob("negvocab-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: MIT" in meta and "Provides-Extra: all" in meta
