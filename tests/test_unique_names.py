"""A type name is defined once under src/, or every definition means the same thing.

Two ``Verdict`` classes (a verifier's and a judge's) or a ``FloatArray`` that is float64 here
and float32 there make a reader check which one a module means. The scan reads module-level
class definitions and type aliases (``X: TypeAlias = …``, or a capitalised name bound to a
subscripted, dotted or ``|`` expression: ``RGB = npt.NDArray[np.uint8]``) without importing
anything.

Allowed without a word: aliases whose definitions are the same text (one meaning written in two
places). Everything else defined more than once must be listed below with its files, so that a
new clash fails here, and a fixed one fails until its entry goes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "needleforge"
_TYPE_NAME = re.compile(r"_?[A-Z]\w*")

#: Names defined differently that still mean one thing.
SAME_MEANING: dict[str, frozenset[str]] = {}
#: Names whose definitions mean different things, not renamed yet: none left (issue 34 renamed
#: the last, the human judge's ``Verdict`` and nemo's ``_Piece``); a new one waits here.
TO_RENAME: dict[str, frozenset[str]] = {}


def _type_names(tree: ast.Module) -> dict[str, str]:
    """Name → its definition's text (``class`` for a class) of a module's type names."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found[node.name] = "class"
        elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
              and ast.unparse(node.annotation).endswith("TypeAlias") and node.value is not None):
            found[node.target.id] = ast.unparse(node.value)
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and _TYPE_NAME.fullmatch(node.targets[0].id)
              and isinstance(node.value, ast.Subscript | ast.Attribute | ast.BinOp)):
            found[node.targets[0].id] = ast.unparse(node.value)
    return found


def type_names() -> dict[str, dict[str, str]]:
    """Type name → {file under src/needleforge: its definition's text}."""
    names: dict[str, dict[str, str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, text in _type_names(tree).items():
            names.setdefault(name, {})[path.relative_to(SRC).as_posix()] = text
    return names


def clashes() -> dict[str, frozenset[str]]:
    """Names defined in more than one file, unless every definition is the same alias text."""
    out = {}
    for name, where in type_names().items():
        texts = set(where.values())
        if len(where) > 1 and (len(texts) > 1 or texts == {"class"}):
            out[name] = frozenset(where)
    return out


def test_no_type_name_means_two_things() -> None:
    known = {**SAME_MEANING, **TO_RENAME}
    new = {name: sorted(files) for name, files in clashes().items() if known.get(name) != files}
    assert not new, (f"defined more than once with different definitions: {new}; rename one "
                     "so each name says what it is (or list it in SAME_MEANING, with why)")


def test_the_lists_hold_only_live_clashes() -> None:
    found = clashes()
    stale = sorted(n for n in {**SAME_MEANING, **TO_RENAME} if n not in found)
    assert not stale, f"no longer defined twice: drop {stale} from the lists"
    assert not SAME_MEANING.keys() & TO_RENAME.keys()


def test_the_scan_tells_aliases_and_classes_apart() -> None:
    tree = ast.parse("import numpy as np\nclass Verdict: ...\n"
                     "FloatArray = np.ndarray[np.float32]\nSpan: TypeAlias = tuple[float, float]\n"
                     "LIMIT = 3\nName = 'x'\nKind = Literal['a'] | None\n"
                     "RGB = npt.NDArray[np.uint8]\nPATTERN = re.compile('x')\n")
    assert _type_names(tree) == {"Verdict": "class", "FloatArray": "np.ndarray[np.float32]",
                                 "Span": "tuple[float, float]", "Kind": "Literal['a'] | None",
                                 "RGB": "npt.NDArray[np.uint8]"}
