"""The package's shape (docs/architecture.md): no import cycle, and no import inside a function
except to keep start-up fast or to reach an optional dependency, each saying so.

The layer contracts themselves are `.importlinter`'s, checked by `lint-imports` in CI; this
test also runs them, so a broken contract fails `pytest` on a developer's machine first.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "knowl_build"
# A function-level import must say why it is there, in a comment just above it (or above the
# run of imports it belongs to), or, in the CLI, in the module's docstring (every command
# loads what it needs when it runs, so that `knowl --help` loads none of it).
REASONS = ("start-up", "optional")


def _function_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [
                node for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)
            ]
    return found


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment lines just above `lineno`, skipping the imports and blank lines between."""
    i = lineno - 2
    while i >= 0 and (
        not lines[i].strip()
        or lines[i].lstrip().startswith(("import ", "from "))
        or lines[i].strip().endswith((",", "(", ")"))
    ):
        i -= 1
    comment = []
    while i >= 0 and lines[i].lstrip().startswith("#"):
        comment.append(lines[i])
        i -= 1
    return " ".join(comment).lower()


def test_every_function_level_import_says_why() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        doc = (ast.get_docstring(tree) or "").lower()
        lines = source.splitlines()
        for node in _function_imports(tree):
            why = _comment_above(lines, node.lineno)
            in_cli = path.parent.name == "cli" and "start-up" in doc
            if not in_cli and not any(reason in why for reason in REASONS):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unexplained == [], "function-level imports without a reason: " + ", ".join(unexplained)


def test_the_package_has_no_import_cycle() -> None:
    """Every import counts, those inside functions too: a lazy import may not hide a cycle."""
    graph = grimp.build_graph("knowl_build", cache_dir=None)
    edges = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if not imported.startswith(module + ".") and not module.startswith(imported + "."):
                edges.add_edge(module, imported)
    cycles = [c for c in nx.simple_cycles(edges) if len(c) > 1]
    assert cycles == [], f"import cycles: {sorted(cycles)[:5]}"


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_the_layer_contracts_hold() -> None:
    run = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout
