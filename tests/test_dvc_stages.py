"""Every ``dvc.yaml`` stage lists the needleforge code and params its commands import.

DVC reruns a stage when one of its ``deps`` or ``params`` changes; a source file the command
runs but the stage does not list makes ``dvc repro`` keep a stale output it calls up to date.
So each stage depends on whole folders (its module of ``needleforge.stages`` and the packages
that imports) and this test checks them against the stage's import closure, read with ``ast``
(nothing is imported): from the console script's module (``[project.scripts]``), every
``needleforge`` import is followed, at module level and inside functions (a backend the
registry builds on demand is imported inside a function), with each package ``__init__`` an
import runs. Two kinds of import are not followed, since a command that does not run them
never executes them: one in the body of a CLI command the stage does not run, and one of
another stage's module from outside ``needleforge.stages``. Each imported file must lie under
a ``src/`` dep, and each ``src/`` dep must hold an imported file (else it is drift: every
edit there reruns the stage for nothing).

Params are checked by section, for the commands a stage runs with ``--params``: a closure
file reading ``<p>.<section>`` of a ``Params`` value (an argument annotated ``Params``, or a
local set from :func:`~needleforge.params.resolve_params`) needs that section, and
``<p>.model_dump()`` needs them all. The check is path-insensitive, so a section read only
behind an option the stage does not pass is exempted by name in :data:`_PARAMS_EXEMPT`.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import shlex
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "needleforge"
DVC_PARAMS_FILE = "params.yaml"  # what a plain ``params:`` entry of dvc.yaml refers to
#: Shell words that end one command of a stage's ``cmd``.
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
#: Calls that return a whole ``Params`` value.
_PARAMS_CALLS = frozenset({"resolve_params", "load_params", "_params"})

#: Functions whose imports no command runs: ``needleforge.load_release`` (PEP 562) serves
#: library users; the CLI never reads it.
_NEVER_RUN = frozenset({(PACKAGE, "__getattr__")})
#: (stage, section) → why the stage never reads a section the path-insensitive check finds.
_PARAMS_EXEMPT: Mapping[tuple[str, str], str] = {
    ("validate", "release"): "stages.validate.run_checks reads it only for --release, which "
                             "the validate stage does not pass",
}


@functools.cache
def _stages() -> Mapping[str, Mapping[str, Any]]:
    stages: Mapping[str, Mapping[str, Any]] = yaml.safe_load(
        (ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return stages


STAGES = sorted(_stages())


def _invocations(stage: str) -> list[list[str]]:
    """The words after ``needleforge`` of each needleforge command a stage's ``cmd`` runs."""
    cmd = _stages()[stage]["cmd"]
    found: list[list[str]] = []
    for line in [cmd] if isinstance(cmd, str) else cmd:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for word in [*lexer, ";"]:
            if word not in _SEPARATORS:
                words.append(word)
                continue
            while words and "=" in words[0] and not words[0].startswith("-"):
                words.pop(0)  # VAR=value before the program
            if words and Path(words[0]).name == PACKAGE:
                found.append(words[1:])
            words = []
    return found


def _subcommand(words: Sequence[str]) -> str:
    return next(w for w in words if not w.startswith("-"))


@functools.cache
def _script() -> tuple[str, str]:
    """(module, app name) of the ``needleforge`` console script."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, app = scripts[PACKAGE].partition(":")
    return module, app


@functools.cache
def _commands() -> Mapping[str, tuple[str, str]]:
    """Subcommand → (module, name) of the function the console script's app runs for it."""
    module, attr = _script()
    app = getattr(__import__(module, fromlist=[attr]), attr)
    found: dict[str, tuple[str, str]] = {}
    for info in app.registered_commands:
        func = inspect.unwrap(info.callback)
        found[info.name or func.__name__.replace("_", "-")] = (func.__module__, func.__name__)
    return found


def _path(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()),
                None)


def _nodes(module: str, skip: frozenset[tuple[str, str]]) -> Iterator[ast.AST]:
    """The syntax nodes of ``module``, less the functions named in ``skip``."""
    path = _path(module)
    assert path is not None, f"{module} is imported but has no file"
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if not (isinstance(node, ast.FunctionDef) and (module, node.name) in skip):
            stack.extend(ast.iter_child_nodes(node))
            yield node


def _imports(module: str, skip: frozenset[tuple[str, str]]) -> Iterator[str]:
    """The needleforge modules ``module`` imports, outside the functions named in ``skip``."""
    for node in _nodes(module, skip):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names
                                    if _path(f"{node.module}.{a.name}") is not None)]
        yield from (n for n in names if n.split(".")[0] == PACKAGE)


@functools.cache
def _skip(stage: str) -> frozenset[tuple[str, str]]:
    """The functions whose imports (and params reads) the stage's commands never run: the
    commands it does not run, and the functions of their modules only those call."""
    runs = {_subcommand(w) for w in _invocations(stage)}
    unknown = sorted(runs - set(_commands()))
    assert not unknown, f"stage {stage!r} runs needleforge commands that do not exist: {unknown}"
    skip = set(_NEVER_RUN) | {f for name, f in _commands().items() if name not in runs}
    for module in {m for m, _ in _commands().values()}:
        users = _users(module)
        while more := {f for f, by in users.items() if by and all((module, u) in skip
                                                                  for u in by)} - {
                n for m, n in skip if m == module}:
            skip |= {(module, f) for f in more}
    return frozenset(skip)


@functools.cache
def _users(module: str) -> Mapping[str, frozenset[str]]:
    """Each top-level function of ``module`` → the top-level names whose code names it
    (``""`` for module-level code)."""
    path = _path(module)
    assert path is not None, module
    body = ast.parse(path.read_text(encoding="utf-8")).body
    funcs = {n.name for n in body if isinstance(n, ast.FunctionDef)}
    users: dict[str, set[str]] = collections.defaultdict(set)
    for node in body:
        owner = node.name if isinstance(node, ast.FunctionDef) else ""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in funcs and sub.id != owner:
                users[sub.id].add(owner)
    return {f: frozenset(users[f]) for f in funcs}


@functools.cache
def _modules(stage: str) -> frozenset[str]:
    """The needleforge modules a stage's commands can import (module docstring)."""
    own, seen = f"{PACKAGE}.stages.{stage}", set()
    todo = [_script()[0], own]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            parts = module.split(".")
            todo += [".".join(parts[:i]) for i in range(1, len(parts))]
            todo += [m for m in _imports(module, _skip(stage))
                     if module.startswith(f"{PACKAGE}.stages.")
                     or not m.startswith(f"{PACKAGE}.stages.") or m == own]
    return frozenset(seen)


def _closure(stage: str) -> list[str]:
    """The files of :func:`_modules`, relative to the repository."""
    return sorted(str(p.relative_to(ROOT)) for p in map(_path, _modules(stage)) if p)


def _src_deps(stage: str) -> list[str]:
    deps = _stages()[stage].get("deps") or []
    return [d.rstrip("/") for d in deps if isinstance(d, str) and d.startswith("src/")]


def _covers(dep: str, file: str) -> bool:
    return file == dep or file.startswith(f"{dep}/")


@functools.cache
def _sections() -> tuple[str, ...]:
    from needleforge.params import Params

    return tuple(Params.model_fields)


def _section_reads(module: str, stage: str) -> Iterator[tuple[str, str]]:
    """(section, where) for each section of a ``Params`` value ``module`` reads, outside the
    functions the stage never runs."""
    skip = _skip(stage)
    stack: list[tuple[ast.AST, frozenset[str]]] = [(next(_nodes(module, skip)), frozenset())]
    while stack:
        node, names = stack.pop()
        if isinstance(node, ast.FunctionDef) and (module, node.name) in skip:
            continue
        if isinstance(node, ast.FunctionDef | ast.Lambda):
            args = [*node.args.args, *node.args.kwonlyargs]
            names = (names - {a.arg for a in args}) | {
                a.arg for a in args if a.annotation is not None
                and "Params" in ast.unparse(a.annotation).split(" | ")} | {
                t.id for n in ast.walk(node) if isinstance(n, ast.Assign)
                and _is_params(n.value) for t in n.targets if isinstance(t, ast.Name)}
        stack += [(child, names) for child in ast.iter_child_nodes(node)]
        if isinstance(node, ast.Attribute) and (
                (isinstance(node.value, ast.Name) and node.value.id in names)
                or _is_params(node.value)):
            where = f"{module}:{node.lineno}"
            reads = [node.attr] if node.attr in _sections() else (
                list(_sections()) if node.attr == "model_dump" else [])
            yield from ((s, where) for s in reads)


def _is_params(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return isinstance(func, ast.Name | ast.Attribute) and \
        (func.id if isinstance(func, ast.Name) else func.attr) in _PARAMS_CALLS


def _params_problems(stage: str) -> list[str]:
    """What a stage's ``params:`` misses or lists in vain, for each params file it passes."""
    needed: dict[str, str] = {}
    for module in sorted(_modules(stage)):
        for section, where in _section_reads(module, stage):
            if (stage, section) not in _PARAMS_EXEMPT:
                needed.setdefault(section, where)
    files = {_params_file(w) for w in _invocations(stage)} - {None}
    listed: dict[str, set[str]] = collections.defaultdict(set)
    for entry in _stages()[stage].get("params") or []:
        for file, keys in ({DVC_PARAMS_FILE: [entry]} if isinstance(entry, str)
                           else entry).items():
            listed[file].update(str(k).partition(".")[0] for k in keys or _sections())
    problems = [f"lists params of {f}, which no command passes" for f in set(listed) - files]
    for file in sorted(f for f in files if f is not None):
        problems += [f"reads {file} section {s!r} (first at {w}), not listed"
                     for s, w in sorted(needed.items()) if s not in listed[file]]
        problems += [f"lists {file} section {s!r}, never read"
                     for s in sorted(listed[file] - set(needed))]
    return problems


def _params_file(words: Sequence[str]) -> str | None:
    """The ``--params`` file a command line passes, or None."""
    for i, word in enumerate(words):
        if word == "--params" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--params="):
            return word.partition("=")[2]
    return None


def test_every_stage_runs_a_known_command() -> None:
    """The derivation is anchored: each stage runs CLI commands and has a stage module."""
    assert STAGES, "dvc.yaml holds no stage"
    assert {"studio", "release", "evaluate", "score"} <= set(_commands())
    for stage in STAGES:
        assert _invocations(stage), f"stage {stage!r} runs no needleforge command"
        assert _path(f"{PACKAGE}.stages.{stage}"), f"stage {stage!r} has no stages module"


@pytest.mark.parametrize("stage", STAGES)
def test_stage_deps_cover_its_import_closure(stage: str) -> None:
    deps = _src_deps(stage)
    missing = sorted(f for f in _closure(stage) if not any(_covers(d, f) for d in deps))
    assert not missing, (
        f"stage {stage!r} of dvc.yaml imports code its deps do not list, so an edit there "
        f"leaves its output stale; add to its deps:\n  " + "\n  ".join(missing))


@pytest.mark.parametrize("stage", STAGES)
def test_stage_src_deps_exist_and_are_used(stage: str) -> None:
    missing = [d for d in _src_deps(stage) if not (ROOT / d).exists()]
    unused = [d for d in _src_deps(stage) if d not in missing
              and not any(_covers(d, f) for f in _closure(stage))]
    assert not missing, f"stage {stage!r} lists deps that do not exist: {missing}"
    assert not unused, (
        f"stage {stage!r} lists deps holding no code its commands import (drift; each edit "
        f"there reruns the stage for nothing): {unused}")


@pytest.mark.parametrize("stage", STAGES)
def test_stage_params_cover_the_sections_it_reads(stage: str) -> None:
    problems = _params_problems(stage)
    assert not problems, f"stage {stage!r} params:\n  " + "\n  ".join(problems)


def test_params_exemptions_are_still_needed() -> None:
    """An exemption for a section the stage's code no longer reads at all is stale."""
    stale = [(stage, section) for stage, section in _PARAMS_EXEMPT
             if not any(s == section for m in _modules(stage)
                        for s, _ in _section_reads(m, stage))]
    assert not stale, f"_PARAMS_EXEMPT entries no longer needed: {stale}"


def _top_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements an import runs: ``if``/``try`` flattened, ``if TYPE_CHECKING:`` and ``if
    __name__ == "__main__":`` bodies left out."""
    for node in body:
        if isinstance(node, ast.If):
            test = ast.unparse(node.test).replace("'", '"')
            if not test.endswith("TYPE_CHECKING") and test != '__name__ == "__main__"':
                yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                          node.finalbody):
                yield from _top_level(block)
        else:
            yield node


def _root(node: ast.expr) -> str | None:
    """``X`` of ``X.a.b(...)[k](...)``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def test_modules_only_define_on_import() -> None:
    """Importing a module runs nothing but definitions (DESIGN.md: an explicit registry,
    nothing registered on import): module-level statements are definitions, imports,
    assignments, or calls that configure a name bound above (``app.command()(pull)``)."""
    loose: list[str] = []
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        bound: set[str] = set()
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node in _top_level(body[1:] if body and isinstance(body[0], ast.Expr) else body):
            if isinstance(node, ast.Import | ast.ImportFrom):
                bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            elif not (isinstance(node, ast.Expr) and _root(node.value) in bound):
                loose.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                             f"{ast.unparse(node)[:60]}")
    assert not loose, "module-level statements with effects on import:\n  " + "\n  ".join(loose)
