"""The shape of the code: imports point down the pipeline's layers, no circles, small modules, a CLI on public names.

The layers and the no-circle rule are import-linter contracts in pyproject.toml (``lint-imports``, run by
CI and here); this file checks them on the real tree and on a tree with a planted upward import and a
planted circle, and adds what import-linter does not check: package imports hidden inside functions
(allowed only where they defer a heavy third-party package), module and function sizes, and that the
CLI imports only names a module lists in its ``__all__``.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "negvocab"
#: third-party packages that are slow to import or optional: a package import inside a function may defer these
HEAVY = {
    "torch",
    "torchvision",
    "open_clip",
    "faiss",
    "ray",
    "matplotlib",
    "pandas",
    "pyarrow",
    "jinja2",
    "openai",
    "sklearn",
    "transformers",
    "PIL",
    "nltk",
    "numpy",  # issue 31: `negvocab --help`/`--version` start without numpy and pydantic (tests/cli/test_commands.py)
    "pydantic",
}
MAX_MODULE_LINES = 700  # ruff-formatted lines (600 before the formatter ran; it adds ~15%)
MAX_FUNCTION_LINES = 100  # ruff-formatted lines (80 before the formatter ran)
LONG_REASON = "# long:"  # a function over the limit says why in a comment that starts so
#: deprecation shims: re-exports of old module paths, kept for one release
SHIMS = ("negvocab.build", "negvocab.scoring.run")
#: function-level imports of one-release deprecation shims, as pyproject.toml's import contracts ignore them
SHIM_EDGES = {("negvocab.evaluation.stream_evaluation", "negvocab.evaluation.evaluate")}

lint_imports = shutil.which("lint-imports")


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        out[name] = p
    return out


MODULES = _modules()


def _tree(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"))


def _is_shim(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in SHIMS)


def _imports(name: str) -> list[tuple[ast.AST, list[str], bool]]:
    """(node, imported module names, inside a function) of every import outside ``if TYPE_CHECKING``."""
    pkg = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[ast.AST, list[str], bool]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.append((child, [a.name for a in child.names], inner))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - child.level + 1]
                    base = ".".join(parts + ([child.module] if child.module else []))
                found.append(
                    (child, [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in child.names], inner)
                )
            walk(child, inner)

    walk(_tree(name), False)
    return found


_HEAVY: dict[str, bool] = {}


def _heavy(name: str) -> bool:
    """Whether importing module ``name`` imports a heavy package (through module-level imports, its
    packages' ``__init__`` included)."""
    if name not in _HEAVY:
        _HEAVY[name] = False  # in progress: a package and its submodules import each other's names
        for _, targets, inner in _imports(name):
            for t in [] if inner else targets:
                parts = t.split(".")
                chain = [".".join(parts[:k]) for k in range(2, len(parts) + 1)]
                if parts[0] in HEAVY or any(c in MODULES and c != name and _heavy(c) for c in chain):
                    _HEAVY[name] = True
    return _HEAVY[name]


# -- the contracts ---------------------------------------------------------------------------------
@pytest.mark.skipif(lint_imports is None, reason="import-linter is not installed (pip install -e '.[test]')")
def test_the_import_contracts_hold():
    r = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 kept, 0 broken" in r.stdout


@pytest.mark.skipif(lint_imports is None, reason="import-linter is not installed (pip install -e '.[test]')")
@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        # labels (L1) reaching up to the CLI, hidden in a function
        (
            "labels/clean.py",
            "\n\ndef _planted():\n    from negvocab.cli.app import app\n\n    return app\n",
            "layers: every import points down",
        ),
        # vocab (L2) reaching up to evaluation at module level
        (
            "vocab/tables.py",
            "\nfrom negvocab.evaluation import records as _planted  # noqa\n",
            "layers: every import points down",
        ),
        # a circle inside the grid package: work -> run -> work
        (
            "grid/work.py",
            "\n\ndef _planted():\n    from negvocab.grid.run import run_grid\n\n    return run_grid\n",
            "siblings in a package never import in a circle",
        ),
    ],
)
def test_a_planted_upward_import_or_circle_breaks_a_contract(tmp_path, module, planted, contract):
    shutil.copytree(PACKAGE, tmp_path / "negvocab", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "negvocab" / module, "a", encoding="utf-8") as fh:
        fh.write(planted)
    env = {"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    r = subprocess.run([lint_imports, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode != 0, r.stdout
    assert f"{contract} BROKEN" in r.stdout


# -- what import-linter does not check -------------------------------------------------------------
def test_package_imports_inside_functions_only_defer_heavy_packages():
    hidden = []
    for name in MODULES:
        if _is_shim(name):
            continue
        for node, targets, inner in _imports(name):
            ours = [t for t in targets if t.split(".")[0] == "negvocab"]
            if (
                inner
                and ours
                and not any(
                    _heavy(t) or any(_heavy(".".join(t.split(".")[:k])) for k in range(2, len(t.split("."))))
                    for t in ours
                )
            ):
                hidden.append(f"{MODULES[name].relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not hidden, "move these imports to the top of their module (they defer nothing heavy):\n" + "\n".join(hidden)


def test_the_cli_and_config_checks_do_not_import_torch():
    code = (
        "import sys, negvocab.cli, negvocab.scoring.methods; print(sorted(m "
        "for m in ('torch', 'open_clip', 'faiss') if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_modules_are_small_enough_to_read_in_one_sitting():
    big = {
        str(p.relative_to(ROOT)): n
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not big, f"split these modules (> {MAX_MODULE_LINES} lines): {big}"


def test_long_functions_say_why():
    long = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(_tree(name)):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
            ):
                body = lines[node.lineno - 1 : node.end_lineno]
                if not any(line.strip().startswith(LONG_REASON) for line in body):
                    long.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                        f"({node.end_lineno - node.lineno + 1} lines)"
                    )
    assert not long, f"split these functions or state the reason in a '{LONG_REASON}' comment:\n" + "\n".join(long)


def _all_of(name: str) -> set[str] | None:
    for node in _tree(name).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def test_the_cli_imports_only_public_names():
    bad = []
    for name in [m for m in MODULES if m.startswith("negvocab.cli")]:
        for node, _, _ in _imports(name):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("negvocab"):
                continue
            if node.module == "negvocab":
                continue  # the package's own lazy exports are its public API
            if node.module not in MODULES:
                continue  # a submodule imported from its package: checked where it is used
            public = _all_of(node.module)
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    continue  # a module, not a name
                if a.name.startswith("_") or public is None or a.name not in public:
                    bad.append(f"{MODULES[name].relative_to(ROOT)}:{node.lineno}: {a.name} from {node.module}")
    assert not bad, "the CLI may use only names a module lists in __all__:\n" + "\n".join(bad)


def test_the_import_graph_has_no_circle():
    """Module-level and function-level imports together (a cross-check of the acyclic_siblings contract)."""
    graph = {
        name: {
            t
            for _, targets, _ in _imports(name)
            for t in targets
            if t in MODULES and t != name and (name, t) not in SHIM_EDGES
        }
        for name in MODULES
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for name in sorted(MODULES):
        if name not in state and (cycle := visit(name)):
            pytest.fail("import circle: " + " -> ".join(cycle))


def test_layout_lists_every_module():
    """docs/layout.md has a row for every module of the package (and none that is gone)."""
    import re

    listed = set(re.findall(r"^\| L\d \| `(negvocab/[^`]+\.py)` \|", (ROOT / "docs" / "layout.md").read_text(), re.M))
    modules = {
        str(p.relative_to(ROOT))
        for p in MODULES.values()
        if p.name != "__init__.py" and not str(p.relative_to(ROOT)).startswith("negvocab/build/")
    }
    assert listed == modules, f"missing: {sorted(modules - listed)}; gone: {sorted(listed - modules)}"
