"""Every distribution our code imports is declared in pyproject.toml, so none arrives only
because some other package happens to depend on it (jinja2 came with great-expectations, httpx
with prefect, until a release of theirs drops them).

The scan reads ``src/`` and ``flows/`` without importing them: ``import x`` and ``from x import``
statements (at any depth, so lazy imports count) and ``importlib.import_module("x")`` /
``importlib.util.find_spec("x")`` calls with a literal name. Each top-level module is mapped to
its installed distribution by :func:`importlib.metadata.packages_distributions`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "flows")
#: Modules imported where no distribution of ours can provide them, and why.
NOT_OURS: dict[str, str] = {
    "vlmeval": "release/vlmevalkit_dataset.py is shipped to run inside VLMEvalKit",
    "ram": "RAM++ runs from its own environment (make ram-env), never from this one",
    "ram_checkpoint": "backends/ram_worker.py, run as a script in RAM++'s environment, imports "
                      "backends/ram_checkpoint.py, the file beside it, by that name",
}
_FIRST_PARTY = {"needleforge", "flows", "__future__"}
_BY_NAME = {"import_module", "find_spec"}


def _imported_in(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _BY_NAME and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return {name.split(".")[0] for name in found}


def imported_modules() -> dict[str, list[str]]:
    """Third-party top-level module → the files (relative to the repository) importing it."""
    users: dict[str, list[str]] = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for module in _imported_in(tree) - _FIRST_PARTY:
                if module not in sys.stdlib_module_names:
                    users.setdefault(module, []).append(str(path.relative_to(ROOT)))
    return users


def declared_distributions() -> set[str]:
    """Canonical names of the dependencies and every optional-dependency group."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [*project["dependencies"], *(line for group in
                                         project.get("optional-dependencies", {}).values()
                                         for line in group)]
    return {canonicalize_name(Requirement(line).name) for line in lines}


def test_every_imported_distribution_is_declared() -> None:
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    missing, unknown = [], []
    for module, files in sorted(imported_modules().items()):
        if module in NOT_OURS:
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists:
            unknown.append(f"{module} (imported by {files[0]})")
        elif not dists & declared:
            missing.append(f"{module} from {sorted(dists)} (imported by {files[0]})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
    assert not unknown, f"imported but installed by no distribution here: {unknown}"


def test_the_exceptions_are_imported_and_not_installed_here() -> None:
    imported = imported_modules()
    for module in NOT_OURS:
        assert module in imported, f"{module} is no longer imported: drop it from NOT_OURS"
        if importlib.util.find_spec(module) is not None:
            origin = importlib.util.find_spec(module)
            pytest.fail(f"{module} is installed here ({origin}): declare it instead")


def test_the_scan_sees_lazy_imports_and_literal_module_names() -> None:
    tree = ast.parse("def f():\n    import jinja2.sandbox\n    from httpx import Client\n"
                     "    importlib.import_module('ram.models')\n"
                     "    importlib.util.find_spec('matplotlib')\n"
                     "    from . import sibling\n    importlib.import_module(name)\n")
    assert _imported_in(tree) == {"jinja2", "httpx", "ram", "matplotlib"}


def test_installed_versions_fall_inside_the_declared_ranges() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    outside = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        try:
            version = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            outside.append(f"{requirement.name} is not installed")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            outside.append(f"{requirement.name} {version} is outside {requirement.specifier}")
    assert not outside, outside
