"""A small mutation check of the numeric core: does a plausible wrong answer fail the tests?

Each mutant changes one operator or constant of a module (``<`` to ``<=``, ``+`` to ``-``, ``/ 2`` to
``/ 4``, ...), found in its syntax tree and sampled evenly over the file; the module's tests run on a
copy of the tree holding the mutant, and a mutant that passes them "survived". The table it prints
(Markdown) is the one in docs/development.md. ``--tests-from`` runs another checkout's tests (the
same module), to compare the tests before and after a change.

    python3 scripts/mutation_check.py negvocab/scoring/metrics.py tests/scoring/test_metrics.py --max 12 \
        --also "375|[alpha / 2, 1 - alpha / 2]|[alpha, 1 - alpha]"
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SWAPS = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
}


def mutants(source: str) -> list[tuple[int, int, int, str, str]]:
    """(line, start col, end col, old text, new text) of every operator swap and numeric constant change."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[ast.AST, ast.AST, ast.AST]] = []
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                pairs.append((left, op, right))
                left = right
        elif isinstance(node, ast.BinOp):
            pairs.append((node.left, node.op, node.right))
        for left, op, right in pairs:
            if type(op) not in SWAPS or left.end_lineno != right.lineno:
                continue
            old, new = SWAPS[type(op)]
            line = lines[left.end_lineno - 1]
            gap = line[left.end_col_offset : right.col_offset]
            at = gap.find(old)
            if at < 0 or gap.count(old) != 1 or (old in "<>" and (old + "=") in gap):
                continue
            col = left.end_col_offset + at
            out.append((left.end_lineno, col, col + len(old), old, new))
        if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.lineno == node.end_lineno:
            if node.value in (0, 1) and isinstance(node.value, int):
                continue  # indices and flags: mostly equivalent mutants
            text = lines[node.lineno - 1][node.col_offset : node.end_col_offset]
            new = repr(node.value * 2) if isinstance(node.value, float) else str(node.value + 1)
            out.append((node.lineno, node.col_offset, node.end_col_offset, text, new))
    return sorted(set(out))


def in_docstring(source: str) -> set[int]:
    """Lines inside docstrings (their doctests are not the code)."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.update(range(value.lineno, value.end_lineno + 1))
    return out


def run(repo: Path, tests_from: Path, module: str, tests: list[str], mutant: tuple, timeout: int) -> str:
    """'killed', 'survived' or 'timeout' for one mutant, on a copy of the package and the tests."""
    line, start, end, _old, new = mutant
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(repo / "negvocab", work / "negvocab")
        shutil.copytree(tests_from / "tests", work / "tests")
        shutil.copy(repo / "pyproject.toml", work / "pyproject.toml")
        path = work / module
        lines = path.read_text().splitlines(keepends=True)
        lines[line - 1] = lines[line - 1][:start] + new + lines[line - 1][end:]
        path.write_text("".join(lines))
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests]
        env = {"PYTHONPATH": str(work), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
        try:
            done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout"
        return "survived" if done.returncode == 0 else "killed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("tests", nargs="+")
    ap.add_argument("--max", type=int, default=16, help="mutants, sampled evenly over the module")
    ap.add_argument("--tests-from", type=Path, default=None, help="a checkout whose tests/ to run")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--also", action="append", default=[], help="LINE|OLD|NEW, a mutant to add by hand")
    args = ap.parse_args()
    repo = Path(__file__).resolve().parent.parent
    source = (repo / args.module).read_text()
    skip = in_docstring(source)
    every = [m for m in mutants(source) if m[0] not in skip]
    picked = every[:: max(1, len(every) // args.max)][: args.max] if args.max else []
    lines = source.splitlines()
    for spec in args.also:
        n, old, new = spec.split("|", 2)
        col = lines[int(n) - 1].index(old)
        picked.append((int(n), col, col + len(old), old, new))
    print(f"{args.module}: {len(every)} mutants, {len(picked)} run against {' '.join(args.tests)}")
    print("| line | mutant | result |\n| --- | --- | --- |")
    for m in picked:
        result = run(repo, args.tests_from or repo, args.module, args.tests, m, args.timeout)
        print(f"| {m[0]} | `{m[3]}` -> `{m[4]}` in `{lines[m[0] - 1].strip()[:60]}` | {result} |", flush=True)


if __name__ == "__main__":
    main()
