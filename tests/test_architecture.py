"""The layout docs/architecture.md describes: what may import what, who opens the store, and
what the root holds."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "needleforge"
#: The top layers: nothing below them may import them.
TOP = ("needleforge.stages", "needleforge.cli", "needleforge.orchestration")
#: The only packages that open the DuckDB store: the store itself, and the layers above the
#: domain packages, which hand those what they read and write what they return.
STORE_OPENERS = (*TOP, "needleforge.store")
#: What opening the store takes: its package, or DuckDB itself.
STORE_MODULES = ("needleforge.store", "duckdb")
#: The only modules of the package root: everything else lives in a package (the params in
#: ``params/``).
ROOT_MODULES = {"__init__", "errors"}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, node.lineno


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def _imports_of(outside: tuple[str, ...], of: tuple[str, ...]) -> list[str]:
    """``module:line imports name`` for each import of ``of`` by a module outside ``outside``
    (at any depth: inside functions and ``TYPE_CHECKING`` blocks too)."""
    return [f"{_module(p)}:{line} imports {name}" for p in sorted(PACKAGE.rglob("*.py"))
            if not _in(_module(p), outside)
            for name, line in _imports(ast.parse(p.read_text(encoding="utf-8")))
            if _in(name, of)]


def test_nothing_below_the_stages_imports_them() -> None:
    wrong = _imports_of(TOP, TOP)
    assert not wrong, "imports against docs/architecture.md:\n  " + "\n  ".join(wrong)


def test_only_the_stages_and_the_store_open_the_store() -> None:
    """Domain packages take records in and return results: none imports the store or DuckDB."""
    wrong = _imports_of(STORE_OPENERS, STORE_MODULES)
    assert not wrong, "store access outside stages/, store/, cli/, orchestration/:\n  " \
        + "\n  ".join(wrong)


def test_the_cli_imports_stage_modules_only_inside_commands() -> None:
    """So a command loads its own stage alone (and ``--help`` none)."""
    eager = [f"{_module(p)}:{line} imports {name}" for p in sorted((PACKAGE / "cli").glob("*.py"))
             for node in ast.parse(p.read_text(encoding="utf-8")).body
             if isinstance(node, ast.Import | ast.ImportFrom)
             for name, line in _imports(node) if _in(name, ("needleforge.stages",))]
    assert not eager, "stage modules imported at module level:\n  " + "\n  ".join(eager)


def test_the_package_root_holds_only_init_and_errors() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules <= ROOT_MODULES, f"root modules without a package: {modules - ROOT_MODULES}"
