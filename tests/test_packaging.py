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
    return [Requirement(r) for r in reqs]


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
    optional = {canonicalize_name(r.name) for extra in ("gpu", "hf") for r in map(Requirement, PYPROJECT["project"]["optional-dependencies"][extra])}
    for req in _requirements():
        name = canonicalize_name(req.name)
        if name in optional:
            continue
        assert name in pins, f"constraints.txt has no pin for {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), f"constraints.txt pins {name}=={pins[name]} outside {req}"


def test_setup_script_and_ci_use_the_constraints():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.count("-c constraints.txt") >= 2
    assert "bash scripts/setup.sh" in (ROOT / ".ci" / "run").read_text()


def test_license_citation_and_py_typed():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "2026 negvocab developers" in license_text
    assert PYPROJECT["project"]["license"] == {"text": "MIT"}
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
