"""The layout docs/architecture.md describes: what may import what, and what the root holds."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "needleforge"
#: The top layers: nothing below them may import them.
TOP = ("needleforge.stages", "needleforge.cli", "needleforge.orchestration")
#: (importing module, imported module) → why it is allowed for now.
EXCEPTIONS = {
    ("needleforge.review.labelstudio_push", "needleforge.stages.render"):
        "the review workflow renders its montages; it becomes a stage module later",
}
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


def test_nothing_below_the_stages_imports_them() -> None:
    wrong = [f"{_module(p)}:{line} imports {name}" for p in sorted(PACKAGE.rglob("*.py"))
             if not _in(_module(p), TOP)
             for name, line in _imports(ast.parse(p.read_text(encoding="utf-8")))
             if _in(name, TOP) and (_module(p), name) not in EXCEPTIONS]
    assert not wrong, "imports against docs/architecture.md:\n  " + "\n  ".join(wrong)


def test_exceptions_are_still_needed() -> None:
    found = {(_module(p), name) for p in PACKAGE.rglob("*.py")
             for name, _ in _imports(ast.parse(p.read_text(encoding="utf-8")))}
    assert set(EXCEPTIONS) <= found, sorted(set(EXCEPTIONS) - found)


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
