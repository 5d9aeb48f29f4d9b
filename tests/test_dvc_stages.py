"""Every ``dvc.yaml`` stage lists the needleforge code and params its command runs on.

DVC reruns a stage when one of its ``deps`` or ``params`` changes; a source file the command
runs but the stage does not list makes ``dvc repro`` keep a stale output it calls up to date.
Hand-copied lists drift, so this test derives each stage's code from the code itself:

1. The stage's ``cmd`` is split into shell commands; each ``needleforge <subcommand>`` names a
   command of the Typer app the ``needleforge`` console script runs (``[project.scripts]``):
   a function decorated with ``@app.command()`` or registered by ``app.command()(func)``.
2. From that function and the app, definitions are followed statically with ``ast`` (nothing
   is imported or run), name by name: the names a reached function, class or module-level
   assignment reads are resolved through module-level and function-local imports, re-exports
   in package ``__init__`` files, submodules (``from pkg import submodule``) and attribute
   chains on modules (``needleforge.__version__``). Python's scoping is respected (a
   parameter named ``vnbench`` is not the ``vnbench`` command); a reached class is reached
   whole (its methods are what its instances run); backends are reached because
   :func:`~needleforge.backends.registry.default_registry` names every factory. Not
   followed: code found by a computed name (``getattr``, ``importlib.import_module``), which
   needleforge uses only for third-party packages.
3. The stage needs every file holding reached code, every package ``__init__`` a name was
   resolved through, and every file of a package its code reads as files rather than imports:
   ``pkg.__file__`` (the release's code hash covers every ``*.py`` of the package) and
   ``importlib.resources.files("pkg")`` (the release ships two modules' text).

Modules every command imports (``cli.py``, ``config.py``, ``errors.py``) need no special
case: each command reaches them (it is defined in or registered by ``cli.py``, loads params
with ``config``, reports errors from ``errors``), so they are deps like any reached file. What
a command imports but never runs is not a dep: ``cli.py`` imports ``cli_release`` for other
commands, ``pipeline.py`` imports every stage for its other functions. That is sound because
importing a needleforge module only defines things (DESIGN.md: an explicit registry, nothing
registered on import), which :func:`test_modules_only_define_on_import` keeps true.

A listed ``src/`` path fails when it does not exist or holds no reached file: that is drift
the other way (a moved module, a stage that stopped using a package), and it makes ``dvc
repro`` rerun the stage for edits that cannot change its output. A folder holding reached
and unreached files passes: listing a package whole is a deliberate coarseness that keeps
``dvc.yaml`` short and stays right when the package grows.

Params are checked by section, for the commands a stage runs with ``--params`` (without it a
command reads the built-in defaults, never a file: :func:`~needleforge.config.resolve_params`;
the check is per command, so one without ``--params`` in a stage adds nothing): a reached
function's argument annotated ``Params`` (or a local set from a call returning ``Params``)
read as ``params.<section>`` needs that section, ``params.model_dump()`` needs all of them
(the release manifest records the whole file). The check is path-insensitive, so a section
read only behind an option the stage does not pass is exempted by name, with the reason, in
:data:`_PARAMS_EXEMPT`. A ``Params`` value passed anywhere but to a parameter annotated
``Params`` cannot be followed, and fails instead of being guessed.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import shlex
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "needleforge"
PARAMS_CLASS = (f"{PACKAGE}.config", "Params")
DVC_PARAMS_FILE = "params.yaml"  # what a plain ``params:`` entry of dvc.yaml refers to
#: Shell words that end one command of a stage's ``cmd``.
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})

#: (stage, section) → why the stage never reads a section the path-insensitive check finds.
_PARAMS_EXEMPT: Mapping[tuple[str, str], str] = {
    ("validate", "release"): "pipeline.run_checks reads it only for --release, which the "
                             "validate stage does not pass",
}
#: Stages whose ``params:`` are still to be settled (issue 18): the params test is a strict
#: expected failure for them, so it fails once the list is right and the entry is removed.
_PARAMS_PENDING: Mapping[str, str] = {}


# --- the source: modules and what their top-level names are bound to ----------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Import:
    """A name bound by an import: ``module`` itself, or its attribute ``attr``."""

    module: str
    attr: str | None


_Binding = _Import | ast.stmt


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class _Module:
    name: str
    path: Path
    is_package: bool
    bindings: Mapping[str, tuple[_Binding, ...]]
    #: top-level statements that are neither definitions nor attached to one
    loose: tuple[ast.stmt, ...]


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a ``from ... import`` names, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _import_bindings(module: str, is_package: bool,
                     node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, _Import]]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.partition(".")[0]
            yield (alias.asname, _Import(alias.name, None)) if alias.asname \
                else (top, _Import(top, None))
        return
    source = _absolute(module, is_package, node)
    for alias in node.names:
        assert alias.name != "*" or not source.startswith(PACKAGE), (
            f"{module}: 'from {source} import *' cannot be followed; import the names")
        yield alias.asname or alias.name, _Import(source, alias.name)


def _guard(node: ast.If) -> str | None:
    """``TYPE_CHECKING`` or ``__main__`` for the two guards whose body an import skips."""
    test = ast.unparse(node.test).replace("'", '"')
    if test.endswith("TYPE_CHECKING"):
        return "TYPE_CHECKING"
    return "__main__" if test == '__name__ == "__main__"' else None


def _executed(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements an import runs: ``if``/``try`` blocks flattened, the bodies of
    ``if TYPE_CHECKING:`` and ``if __name__ == "__main__":`` left out."""
    for node in body:
        if isinstance(node, ast.If):
            if _guard(node) is None:
                yield from _executed(node.body)
            yield from _executed(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                          node.finalbody):
                yield from _executed(block)
        else:
            yield node


def _root_name(node: ast.expr) -> str | None:
    """``X`` of ``X.a.b(...)[k](...)``."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _target_names(target: ast.expr) -> Iterator[str]:
    """Names an assignment binds; ``X.attr = ...`` and ``X[k] = ...`` configure ``X``."""
    if isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)
    elif (root := _root_name(target)) is not None:
        yield root


def _registration(node: ast.stmt) -> tuple[str, ast.Call, ast.expr] | None:
    """``app.command(...)(func)`` as (app name, the ``command(...)`` call, ``func``)."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and len(node.value.args) == 1 and isinstance(node.value.func, ast.Call)):
        return None
    command = node.value.func
    if isinstance(command.func, ast.Attribute) and command.func.attr == "command" \
            and isinstance(command.func.value, ast.Name):
        return command.func.value.id, command, node.value.args[0]
    return None


@functools.cache
def _read_module(path: Path) -> _Module:
    """A module's top-level bindings: definitions, assignments and imports by name.

    A top-level call on a bound name (``Loader.add_constructor(...)``) configures that name,
    so it is kept with the name's bindings; a command registration runs nothing and is left
    to :func:`_commands`.
    """
    name = _module_name(path)
    is_package = path.name == "__init__.py"
    bindings: dict[str, list[_Binding]] = collections.defaultdict(list)
    loose: list[ast.stmt] = []
    body = ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for node in _executed(body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bindings[node.name].append(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for bound, target in _import_bindings(name, is_package, node):
                bindings[bound].append(target)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for bound in dict.fromkeys(n for t in targets for n in _target_names(t)):
                bindings[bound].append(node)
        elif _registration(node) is not None:
            continue
        elif isinstance(node, ast.Expr) and (root := _root_name(node.value)) in bindings:
            bindings[root].append(node)
        else:
            loose.append(node)
    return _Module(name, path, is_package, {k: tuple(v) for k, v in bindings.items()},
                   tuple(loose))


@functools.cache
def _module_paths() -> Mapping[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _module(name: str) -> _Module | None:
    """A needleforge module, parsed on first use (None for other packages)."""
    path = _module_paths().get(name)
    return None if path is None else _read_module(path)


# --- what a definition reads: dotted names, resolved by Python's scoping ------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Mod:
    """A whole module (every top-level name)."""

    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Sym:
    """The definitions of one top-level name of a module."""

    module: str
    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Files:
    """Every file under a module's folder, read as files (``__file__``, resources)."""

    module: str


_Target = _Mod | _Sym | _Files
_Start = str | _Import  # a global name, or a name a function-local import bound
_Ref = tuple[_Start, tuple[str, ...]]
#: Nodes that neither read nor bind a name, skipped by the walk.
_LEAVES = (ast.Constant, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else [*base, node.attr]
    return None


def _own_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of one scope: nested scopes are yielded but not entered."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _arguments(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = node.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs,
            *(x for x in (a.vararg, a.kwarg) if x is not None)]


@dataclasses.dataclass(slots=True)
class _Frame:
    """One scope being read: the names it binds (to an import, or None: a plain local) and
    the dotted names read in it, resolved when the scope ends (Python binds per scope)."""

    is_class: bool
    bound: dict[str, _Import | None]
    reads: list[list[str]] = dataclasses.field(default_factory=list)
    declared_global: set[str] = dataclasses.field(default_factory=set)


class _Refs:
    """The dotted names a top-level statement reads, each with where its first name is bound
    (a function-local import, or a global of the module), and the packages it reads as
    files. One pass; a read is resolved when its scope ends, so a local bound later in the
    scope still shadows (a parameter named ``vnbench`` is not the ``vnbench`` command)."""

    def __init__(self, module: _Module, node: ast.stmt) -> None:
        self.module = module
        self.frames: list[_Frame] = []
        self.refs: list[_Ref] = []
        self.resources: list[str] = []
        self.visit(node)

    def _read(self, chain: list[str]) -> None:
        if self.frames:
            self.frames[-1].reads.append(chain)
        else:
            self.refs.append((chain[0], tuple(chain[1:])))

    def _bind(self, name: str, bound: _Import | None = None) -> None:
        if self.frames:
            self.frames[-1].bound[name] = bound

    def _scope(self, is_class: bool, bound: dict[str, _Import | None],
               body: Iterable[ast.AST]) -> None:
        frame = _Frame(is_class, bound)
        self.frames.append(frame)
        for child in body:
            self.visit(child)
        self.frames.pop()
        outer = next((f for f in reversed(self.frames) if not f.is_class), None)
        for chain in frame.reads:
            name, rest = chain[0], tuple(chain[1:])
            if name in frame.declared_global or (outer is None and name not in frame.bound):
                self.refs.append((name, rest))
            elif name in frame.bound:
                if (imported := frame.bound[name]) is not None:
                    self.refs.append((imported, rest))
            elif outer is not None:  # a free name: the enclosing function's (not a class's)
                outer.reads.append(chain)

    def visit(self, node: ast.AST) -> None:
        """The nodes that bind or read names, or open a scope; any other is walked through."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self._read([node.id])
            else:
                self._bind(node.id)
        elif isinstance(node, ast.Attribute) and (chain := _dotted(node)) is not None:
            self._read(chain)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for outer in (*getattr(node, "decorator_list", ()), node.args,
                          getattr(node, "returns", None)):
                if outer is not None:
                    self.visit(outer)  # decorators, defaults, annotations: the enclosing scope
            if not isinstance(node, ast.Lambda):
                self._bind(node.name)
            body = [node.body] if isinstance(node, ast.Lambda) else node.body
            self._scope(False, {a.arg: None for a in _arguments(node)}, body)
        elif isinstance(node, ast.ClassDef):
            for outer in (*node.decorator_list, *node.bases, *node.keywords):
                self.visit(outer)
            self._bind(node.name)
            self._scope(True, {}, node.body)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            self._scope(False, {}, [*node.generators, node.elt])
        elif isinstance(node, ast.DictComp):
            self._scope(False, {}, [*node.generators, node.key, node.value])
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for name, bound in _import_bindings(self.module.name, self.module.is_package, node):
                self._bind(name, bound)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            if self.frames:
                self.frames[-1].declared_global.update(node.names)
        else:
            if isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(node.name)
            elif isinstance(node, ast.Call):
                self._resource(node)
            for child in ast.iter_child_nodes(node):
                if not isinstance(child, _LEAVES):
                    self.visit(child)

    def _resource(self, node: ast.Call) -> None:
        chain = _dotted(node.func)
        first = node.args[0] if node.args else None
        if chain is not None and chain[-2:] == ["resources", "files"] \
                and isinstance(first, ast.Constant) and isinstance(first.value, str):
            self.resources.append(first.value)


_Found = tuple[tuple[_Target, ...], frozenset[Path]]  # targets, files resolved through


@functools.cache
def _lookup(module: str, name: str, attribute: bool = True) -> _Found:
    """What ``module.name`` is: its definitions there, a re-export followed to its owner
    (the re-exporting file is reached too), a submodule, or ``__getattr__``. A global name
    bound nowhere is a builtin; an attribute bound nowhere was set some other way, so the
    whole module is taken."""
    mod = _module(module)
    if mod is None:
        return (), frozenset()
    if name == "__file__":
        return (_Files(module),), frozenset()
    if name in mod.bindings:
        targets: list[_Target] = []
        files = {mod.path}
        for bound in mod.bindings[name]:
            if not isinstance(bound, _Import):
                targets.append(_Sym(module, name))
            elif bound.attr is None:
                targets.append(_Mod(bound.module))
            elif (bound.module, bound.attr) != (module, name):
                found, through = _lookup(bound.module, bound.attr)
                targets += found
                files |= through
        return tuple(dict.fromkeys(targets)), frozenset(files)
    if mod.is_package and f"{module}.{name}" in _module_paths():
        return (_Mod(f"{module}.{name}"),), frozenset()
    if attribute and "__getattr__" in mod.bindings:
        return _lookup(module, "__getattr__")
    return ((_Mod(module),) if attribute else ()), frozenset()


def _resolve(module: str, start: _Start, attrs: Sequence[str]) -> _Found:
    """The targets of a dotted name read in ``module``."""
    if isinstance(start, str):
        targets, files = _lookup(module, start, False)
    elif start.attr is None:
        targets, files = (_Mod(start.module),), frozenset()
    else:
        targets, files = _lookup(start.module, start.attr)
    for attr in attrs:
        found: list[_Target] = []
        for target in targets:
            if isinstance(target, _Mod):
                more, through = _lookup(target.name, attr)
                found += more
                files |= through
            else:
                found.append(target)  # an attribute of a definition: the definition
        targets = tuple(found)
    return targets, files


@functools.cache
def _statement_reads(mod: _Module, node: ast.stmt) -> _Found:
    """What one top-level statement reads, resolved."""
    refs = _Refs(mod, node)
    targets: list[_Target] = [_Files(p) for p in refs.resources if _module(p) is not None]
    files: set[Path] = set()
    for start, attrs in dict.fromkeys(refs.refs):
        found, through = _resolve(mod.name, start, attrs)
        targets += found
        files |= through
    return tuple(dict.fromkeys(targets)), frozenset(files)


@dataclasses.dataclass(frozen=True)
class _Reach:
    """The code some entry names can run: its files and its top-level statements."""

    files: frozenset[Path]
    statements: tuple[tuple[_Module, ast.stmt], ...]


def _reach(entries: Iterable[_Target]) -> _Reach:
    files: set[Path] = set()
    statements: list[tuple[_Module, ast.stmt]] = []
    seen: set[_Target] = set()
    todo = list(entries)
    while todo:
        target = todo.pop()
        if target in seen:
            continue
        seen.add(target)
        if isinstance(target, _Files):
            folder = _module_paths()[target.module].parent
            files.update(p for p in folder.rglob("*")
                         if p.is_file() and "__pycache__" not in p.parts)
        elif (mod := _module(target.module if isinstance(target, _Sym) else target.name)):
            files.add(mod.path)
            names = [target.name] if isinstance(target, _Sym) else list(mod.bindings)
            for name in names:
                for bound in mod.bindings.get(name, ()):
                    if isinstance(bound, _Import):
                        found, through = _lookup(mod.name, name)
                    else:
                        statements.append((mod, bound))
                        found, through = _statement_reads(mod, bound)
                    todo += found
                    files |= through
    return _Reach(frozenset(files), tuple(statements))


# --- the CLI and dvc.yaml -------------------------------------------------------------------


@functools.cache
def _entry_point() -> tuple[str, str]:
    """(module, app name) of the ``needleforge`` console script."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, app = scripts[PACKAGE].partition(":")
    return module, app


def _command_name(call: ast.Call, func_name: str) -> str:
    """The name Typer gives a command: ``command("name")``, ``name=``, else the function's."""
    if call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    for kw in call.keywords:
        if kw.arg == "name" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    return func_name.replace("_", "-")


@functools.cache
def _commands() -> Mapping[str, str]:
    """Subcommand → the name its function has in the CLI module."""
    module, app = _entry_point()
    cli = _module(module)
    assert cli is not None, f"console script module {module} not found"
    found: dict[str, str] = {}
    for node in ast.parse(cli.path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and _dotted(deco.func) == [app, "command"]:
                    found[_command_name(deco, node.name)] = node.name
        elif (reg := _registration(node)) is not None and reg[0] == app:
            _, call, func = reg
            assert isinstance(func, ast.Name), ast.unparse(node)
            bound = cli.bindings[func.id][0]
            real = bound.attr if isinstance(bound, _Import) and bound.attr else func.id
            found[_command_name(call, real)] = func.id
    return found


@functools.cache
def _command_reach(subcommands: tuple[str, ...]) -> _Reach:
    """The code ``needleforge <sub>`` can run, for each of ``subcommands``."""
    module, app = _entry_point()
    entries = [t for name in (app, *(_commands()[s] for s in subcommands))
               for t in _lookup(module, name, False)[0]]
    return _reach(entries)


@functools.cache
def _stages() -> Mapping[str, Mapping[str, Any]]:
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    stages: Mapping[str, Mapping[str, Any]] = doc["stages"]
    return stages


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


def _params_file(words: Sequence[str]) -> str | None:
    """The ``--params`` file a command line passes, or None."""
    for i, word in enumerate(words):
        if word == "--params" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--params="):
            return word.partition("=")[2]
    return None


def _stage_reach(stage: str) -> _Reach:
    subs = tuple(sorted({_subcommand(w) for w in _invocations(stage)}))
    unknown = sorted(set(subs) - set(_commands()))
    assert not unknown, f"stage {stage!r} runs needleforge commands that do not exist: {unknown}"
    return _command_reach(subs)


def _reached_files(stage: str) -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in _stage_reach(stage).files)


def _src_deps(stage: str) -> list[str]:
    deps = _stages()[stage].get("deps") or []
    return [d.rstrip("/") for d in deps if isinstance(d, str) and d.startswith("src/")]


def _covers(dep: str, file: str) -> bool:
    return file == dep or file.startswith(f"{dep}/")


STAGES = sorted(_stages())


# --- params ---------------------------------------------------------------------------------


@functools.cache
def _sections() -> tuple[str, ...]:
    """The sections of a params file: the fields of :class:`~needleforge.config.Params`."""
    module, name = PARAMS_CLASS
    mod = _module(module)
    assert mod is not None
    (node,) = (b for b in mod.bindings[name] if isinstance(b, ast.ClassDef))
    return tuple(s.target.id for s in node.body
                 if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))


@functools.cache
def _is_params(owner: _Module, annotation: ast.expr | None) -> bool:
    """Whether an annotation in ``owner`` names ``Params`` (``Params | None`` too)."""
    for sub in ast.walk(annotation) if annotation is not None else ():
        chain = _dotted(sub) if isinstance(sub, ast.Name | ast.Attribute) else None
        if chain and _Sym(*PARAMS_CLASS) in _resolve(owner.name, chain[0], chain[1:])[0]:
            return True
    return False


_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions(mod: _Module, scope: Mapping[str, _Import], func: ast.expr
                 ) -> list[tuple[_Module, _Def]]:
    """The functions and classes (with their modules) a called expression can be."""
    chain = _dotted(func)
    if chain is None:
        return []
    found: list[tuple[_Module, _Def]] = []
    for target in _resolve(mod.name, scope.get(chain[0], chain[0]), chain[1:])[0]:
        owner = _module(target.module) if isinstance(target, _Sym) else None
        if owner is not None and isinstance(target, _Sym):
            found += [(owner, b) for b in owner.bindings.get(target.name, ())
                      if isinstance(b, _Def)]
    return found


class _ParamsUse(ast.NodeVisitor):
    """The sections one reached top-level statement reads of whole ``Params`` values: names
    bound to one (arguments annotated ``Params``, locals set from one) per function, closures
    included, and what each use of such a value does with it."""

    def __init__(self, mod: _Module, node: ast.stmt) -> None:
        self.mod = mod
        self.scope = {name: bound for sub in ast.walk(node)
                      if isinstance(sub, ast.Import | ast.ImportFrom)
                      for name, bound in _import_bindings(mod.name, mod.is_package, sub)}
        self.parents = {child: parent for parent in ast.walk(node)
                        for child in ast.iter_child_nodes(parent)}
        self.names: frozenset[str] = frozenset()
        self.found: list[tuple[str | None, str]] = []  # (section or None: lost, where)
        self.visit(node)

    def _is_value(self, node: ast.AST, names: frozenset[str]) -> bool:
        if isinstance(node, ast.Name):
            return isinstance(node.ctx, ast.Load) and node.id in names
        return isinstance(node, ast.Call) and any(
            not isinstance(d, ast.ClassDef) and _is_params(owner, d.returns)
            for owner, d in _definitions(self.mod, self.scope, node.func))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                          ) -> None:
        outer = self.names
        args = _arguments(node)
        names = (outer - {a.arg for a in args}) | {
            a.arg for a in args if _is_params(self.mod, a.annotation)}
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        for _ in range(2):  # params = _params(path); p = params
            names |= {n for s in _own_nodes(body) if isinstance(s, ast.Assign)
                      and self._is_value(s.value, names) for t in s.targets
                      for n in _target_names(t)}
        self.names = names
        self.generic_visit(node)
        self.names = outer

    visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    def visit_Name(self, node: ast.Name) -> None:
        if self._is_value(node, self.names):
            self.found += self._use(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self._is_value(node, self.names):
            self.found += self._use(node)
        self.generic_visit(node)

    def _use(self, value: ast.expr) -> list[tuple[str | None, str]]:
        where = f"{self.mod.path.relative_to(ROOT)}:{value.lineno}"
        parent = self.parents.get(value)
        if isinstance(parent, ast.Attribute):
            if parent.attr in _sections():
                return [(parent.attr, where)]
            return [(s, f"{where} (.{parent.attr})") for s in _sections()]  # model_dump()
        if isinstance(parent, ast.Assign) and all(isinstance(t, ast.Name)
                                                  for t in parent.targets):
            return []  # a local alias, followed by visit_FunctionDef
        if self._returned(parent) or self._passed_to_params(value, parent):
            return []  # the caller's or the callee's own reads count
        return [(None, f"{where}: {ast.unparse(parent or value)[:80]}")]

    def _returned(self, parent: ast.AST | None) -> bool:
        """Whether ``parent`` returns the value from a function annotated ``-> Params``."""
        func = parent
        while func is not None and not isinstance(func, ast.FunctionDef):
            func = self.parents.get(func)
        return isinstance(parent, ast.Return) and func is not None \
            and _is_params(self.mod, func.returns)

    def _passed_to_params(self, value: ast.expr, parent: ast.AST | None) -> bool:
        """Whether ``value`` is an argument bound to a parameter annotated ``Params`` in
        every function the call can be."""
        keyword = parent.arg if isinstance(parent, ast.keyword) else None
        call = self.parents.get(parent) if isinstance(parent, ast.keyword) else parent
        if not isinstance(call, ast.Call) or (keyword is None and value not in call.args):
            return False
        callees = _definitions(self.mod, self.scope, call.func)
        return bool(callees) and all(_takes_params(owner, d, call.args.index(value)
                                                   if keyword is None else keyword)
                                     for owner, d in callees)


def _takes_params(owner: _Module, d: _Def, arg: int | str) -> bool:
    """Whether the parameter of ``d`` that positional ``arg`` (or keyword) binds is
    annotated ``Params``; a class stores the value, to be read later as an attribute."""
    if isinstance(d, ast.ClassDef):
        return False
    positional = [*d.args.posonlyargs, *d.args.args]
    if isinstance(arg, str):
        matched = next((a for a in _arguments(d) if a.arg == arg), None)
    else:
        index = arg + (bool(positional) and positional[0].arg in {"self", "cls"})
        matched = positional[index] if index < len(positional) else None
    return matched is not None and _is_params(owner, matched.annotation)


@functools.cache
def _returns_params(target: _Target) -> bool:
    """Whether ``target`` is ``Params`` itself or a function returning one."""
    if target == _Sym(*PARAMS_CLASS):
        return True
    owner = _module(target.module) if isinstance(target, _Sym) else None
    return owner is not None and isinstance(target, _Sym) and any(
        isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef) and _is_params(owner, d.returns)
        for d in owner.bindings.get(target.name, ()))


@functools.cache
def _statement_params(mod: _Module, node: ast.stmt) -> tuple[tuple[str | None, str], ...]:
    """The params uses of a statement; one that names neither ``Params`` nor a function
    returning it holds none (the quick answer for most)."""
    if not any(map(_returns_params, _statement_reads(mod, node)[0])):
        return ()
    return tuple(_ParamsUse(mod, node).found)


def _params_read(subcommand: str) -> tuple[dict[str, list[str]], list[str]]:
    """Sections a command reads (each with where), and the uses that cannot be followed."""
    read: dict[str, list[str]] = collections.defaultdict(list)
    lost: list[str] = []
    for mod, node in _command_reach((subcommand,)).statements:
        for section, where in _statement_params(mod, node):
            if section is None:
                lost.append(where)
            else:
                read[section].append(where)
    return read, lost


def _listed_sections(stage: str) -> dict[str, set[str]]:
    """Params file → the sections a stage lists of it (``nemo.seed`` counts as ``nemo``;
    ``params.yaml:`` with no keys is the whole file)."""
    listed: dict[str, set[str]] = collections.defaultdict(set)
    for entry in _stages()[stage].get("params") or []:
        items = {DVC_PARAMS_FILE: [entry]} if isinstance(entry, str) else entry
        for file, keys in items.items():
            listed[file].update(str(k).partition(".")[0] for k in keys or _sections())
    return listed


# --- the tests ------------------------------------------------------------------------------


def test_every_stage_runs_a_known_command() -> None:
    """The derivation is anchored: each stage maps to commands the CLI has."""
    assert STAGES, "dvc.yaml holds no stage"
    assert {"studio", "release", "evaluate", "score"} <= set(_commands())
    for stage in STAGES:
        assert _invocations(stage), f"stage {stage!r} runs no needleforge command"
        assert _stage_reach(stage).files


@pytest.mark.parametrize("stage", STAGES)
def test_stage_deps_cover_the_code_it_runs(stage: str) -> None:
    deps = _src_deps(stage)
    missing = [f for f in _reached_files(stage) if not any(_covers(d, f) for d in deps)]
    assert not missing, (
        f"stage {stage!r} of dvc.yaml runs code its deps do not list, so an edit there "
        f"leaves its output stale; add to its deps:\n  " + "\n  ".join(missing))


@pytest.mark.parametrize("stage", STAGES)
def test_stage_src_deps_exist_and_are_used(stage: str) -> None:
    reached = _reached_files(stage)
    missing = [d for d in _src_deps(stage) if not (ROOT / d).exists()]
    unused = [d for d in _src_deps(stage)
              if d not in missing and not any(_covers(d, f) for f in reached)]
    assert not missing, f"stage {stage!r} lists deps that do not exist: {missing}"
    assert not unused, (
        f"stage {stage!r} lists deps holding no code its command runs (drift; each edit "
        f"there reruns the stage for nothing): {unused}")


def _params_problems(stage: str) -> list[str]:
    """What a stage's ``params:`` misses or lists in vain, per params file."""
    needed: dict[str, dict[str, str]] = collections.defaultdict(dict)
    problems: list[str] = []
    for words in _invocations(stage):
        file = _params_file(words)
        read, lost = _params_read(_subcommand(words))
        problems += [f"a whole Params value goes where this test cannot follow it "
                     f"(pass a section, or annotate the parameter Params): {w}" for w in lost]
        if file is not None:
            for section, where in read.items():
                if (stage, section) not in _PARAMS_EXEMPT:
                    needed[file].setdefault(section, where[0])
    listed = _listed_sections(stage)
    for file in sorted(set(needed) | set(listed)):
        problems += [f"reads {file} section {s!r} (first at {w}), not listed"
                     for s, w in sorted(needed[file].items()) if s not in listed[file]]
        problems += [f"lists {file} section {s!r}, never read" for s in
                     sorted(listed[file] - set(needed[file]))]
    return problems


@pytest.mark.parametrize("stage", [
    pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=_PARAMS_PENDING[s]))
    if s in _PARAMS_PENDING else s for s in STAGES])
def test_stage_params_cover_the_sections_it_reads(stage: str) -> None:
    problems = _params_problems(stage)
    assert not problems, f"stage {stage!r} params:\n  " + "\n  ".join(problems)


def test_params_exemptions_are_still_needed() -> None:
    """An exemption for a section the command no longer reads at all is stale."""
    stale = [(stage, section) for stage, section in _PARAMS_EXEMPT
             if not any(section in _params_read(_subcommand(w))[0]
                        for w in _invocations(stage))]
    assert not stale, f"_PARAMS_EXEMPT entries no longer needed: {stale}"


def test_modules_only_define_on_import() -> None:
    """Importing a module runs nothing but definitions: the deps rule relies on it."""
    loose = [f"{m.path.relative_to(ROOT)}:{n.lineno}: {ast.unparse(n)[:60]}"
             for m in map(_read_module, _module_paths().values()) for n in m.loose]
    assert not loose, "module-level statements with effects on import:\n  " + "\n  ".join(loose)
