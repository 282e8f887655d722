"""Does installing negvocab keep the torch an environment already has?

An OpenOOD or pytorch-ood environment holds its own torch. This script builds such an environment
(a venv that sees this Python's packages, with a torch and torchvision of the chosen versions
installed on top: metadata-only stand-ins, since only pip's resolver is under test) and asks pip
what ``pip install 'negvocab[vlm]'`` would install there (``--dry-run --report``, no index: nothing is
downloaded). With pyproject.toml's ranges the answer must be negvocab alone; the torch stays.

    python scripts/check_install_beside.py                     # torch/torchvision at the lower ends
    python scripts/check_install_beside.py --torch 2.9.0 --torchvision 0.24.0
    python scripts/check_install_beside.py --require torch==2.14.1   # an exact pin: must replace torch

Prints one line per check and exits 1 when the outcome is not the expected one.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


EXTRA = "vlm"  # torch lives in the [vlm] extra: what an OpenOOD / pytorch-ood user installs


def declared(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The ``[project] dependencies`` of ``pyproject`` and those of its ``[vlm]`` extra."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"][EXTRA]]


def lower_end(requirements: list[str], name: str) -> str:
    """The ``>=`` bound that ``requirements`` declare for ``name`` (error when there is none)."""
    for req in requirements:
        m = re.match(rf"{re.escape(name)}\s*(?:\[.*?\])?\s*(.*)$", req, re.I)
        if m and (low := re.search(r">=\s*([\w.]+)", m.group(1))):
            return low.group(1)
    raise SystemExit(f"pyproject.toml declares no lower end for {name}")


def stub_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A metadata-only wheel of ``name`` ``version``: enough for pip's resolver."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\n',
        f"{dist}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: check_install_beside\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for arc, text in files.items():
            data = text.encode()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={digest},{len(data)}")
            zf.writestr(arc, data)
        zf.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")
    return path


def project_copy(folder: Path, requirements: list[str] | None) -> Path:
    """A copy of the project's metadata (pyproject.toml, README, an empty package); with
    ``requirements``, those replace the declared dependencies."""
    dest = folder / "project"
    (dest / "negvocab").mkdir(parents=True)
    (dest / "negvocab" / "__init__.py").write_text("")
    shutil.copy(ROOT / "README.md", dest / "README.md")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if requirements is not None:
        body = "".join(f'    "{r}",\n' for r in requirements)
        text = re.sub(r"(?ms)^dependencies = \[\n.*?^\]", f"dependencies = [\n{body}]", text, count=1)
    (dest / "pyproject.toml").write_text(text, encoding="utf-8")
    return dest


def would_install(
    torch: str, torchvision: str, requirements: list[str] | None = None, workdir: Path | None = None
) -> list[str]:
    """``name==version`` of what ``pip install 'negvocab[vlm]'`` would install into an environment that
    holds torch ``torch`` and torchvision ``torchvision``. Raises ``RuntimeError`` with pip's last
    line when pip finds no solution without replacing them (it may not download one)."""
    tmp = Path(tempfile.mkdtemp(prefix="negvocab-beside-", dir=workdir))
    try:
        venv = tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
        py = str(venv / "bin" / "python")
        wheels = [
            stub_wheel(tmp, "torch", torch, []),
            stub_wheel(tmp, "torchvision", torchvision, [f"torch=={torch}"]),
        ]
        pip = [py, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        subprocess.run([*pip, "install", "-q", "--no-deps", "--no-index", *map(str, wheels)], check=True)
        have = subprocess.run(
            [py, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, check=True
        )
        assert have.stdout.strip() == torch, f"the environment's torch is {have.stdout.strip()}, not {torch}"
        report = tmp / "report.json"
        proc = subprocess.run(
            [
                *pip,
                "install",
                "--dry-run",
                "--no-index",
                "--no-build-isolation",
                "--report",
                str(report),
                "-q",
                f"{project_copy(tmp, requirements)}[{EXTRA}]",
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
            raise RuntimeError(lines[-1] if lines else f"pip exited {proc.returncode}")
        items = json.loads(report.read_text())["install"]
        return [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    reqs = declared()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--torch", default=lower_end(reqs, "torch"), help="the environment's torch (default: the lower end)"
    )
    ap.add_argument(
        "--torchvision", default=lower_end(reqs, "torchvision"), help="its torchvision (default: the lower end)"
    )
    ap.add_argument("--require", action="append", help="check these requirements instead of pyproject's (repeatable)")
    args = ap.parse_args()
    expect_kept = args.require is None
    try:
        plan = would_install(args.torch, args.torchvision, args.require)
        kept = not any(p.split("==")[0].lower() in ("torch", "torchvision") for p in plan)
        print(
            f"torch {args.torch} / torchvision {args.torchvision}: pip would install {', '.join(plan) or 'nothing'}"
            f" -> torch {'kept' if kept else 'REPLACED'}"
        )
    except RuntimeError as e:
        kept = False
        print(f"torch {args.torch} / torchvision {args.torchvision}: pip finds no plan that keeps them ({e})")
    ok = kept == expect_kept
    print(
        "OK"
        if ok
        else f"UNEXPECTED: torch {'kept' if kept else 'not kept'} with {'pyproject' if expect_kept else args.require}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
