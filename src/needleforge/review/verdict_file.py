"""The human verdict file: the durable, diffable copy of every verdict a pull recorded.

Human verdicts are human work, an input of the pipeline, while a DVC stage's store is an
output rebuilt from the previous stage's snapshot whenever the stage reruns: verdicts kept
only in a store are lost by the next ``dvc repro`` that rebuilds it. So every pull
(``needleforge review --from label-studio`` or ``--from yaml``) also merges the verdicts it
recorded into this file (``reviews/human_verdicts.jsonl`` by default, kept in git), and the
release stage records the file into its own store before it builds.

One JSON object per line, one per verdict, keys in the order of
:class:`~needleforge.records.human.HumanVerdict`'s fields, lines sorted as the store lists
them (question key, source, reference). Rows are keyed by (``source``, ``source_ref``) as
the store's are: a pull replaces the row of an annotation it read again and keeps every
other, so a second identical pull leaves the file byte for byte as it was, and nothing is
ever dropped (a verdict on a question that no longer exists stays, and is reported, not
applied, as in the store). An empty or missing file holds no verdicts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from needleforge.media.outputs import write_text_atomic
from needleforge.records.human import HumanVerdict
from needleforge.review.verdicts import VerdictError

_FIELDS = tuple(f.name for f in dataclasses.fields(HumanVerdict))
_ROW = TypeAdapter(HumanVerdict)
_Key = tuple[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class Kept:
    """What a pull did to the verdict file: rows in it now, rows new or changed."""

    path: Path
    rows: int
    written: int

    def to_text(self) -> str:
        return f"verdict file {self.path}: {self.rows} row(s), {self.written} new or changed"


def verdict_key(v: HumanVerdict) -> _Key:
    return v.source, v.source_ref


def _line(v: HumanVerdict) -> str:
    row = dataclasses.asdict(v)
    if v.answer_spans is not None:
        row["answer_spans"] = [list(s) for s in v.answer_spans]
    return json.dumps(row, ensure_ascii=False, allow_nan=False)


def _parse(text: str, where: str) -> HumanVerdict:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as err:
        raise VerdictError(f"{where}: not JSON ({err.msg}, column {err.colno})") from None
    if not isinstance(row, dict):
        raise VerdictError(f"{where}: a verdict must be a JSON object, not "
                           f"{type(row).__name__}")
    wrong = [f"{what} field(s) {sorted(names)}" for what, names in (
        ("missing", set(_FIELDS) - row.keys()), ("unknown", row.keys() - set(_FIELDS))) if names]
    if wrong:
        raise VerdictError(f"{where}: {', '.join(wrong)}; a verdict has exactly {list(_FIELDS)}")
    try:
        return _ROW.validate_json(text, strict=True)
    except ValidationError as err:
        raise VerdictError(f"{where}: {_problems(err)}") from None


def _problems(err: ValidationError) -> str:
    # a field's problem is prefixed by the field; the record's own check (__post_init__) has
    # no field and names the value itself
    return "; ".join((".".join(map(str, e["loc"])) + ": " if e["loc"] else "")
                     + e["msg"].removeprefix("Value error, ")
                     for e in err.errors(include_url=False))


def read_verdict_file(path: Path) -> list[HumanVerdict]:
    """Every verdict of the file ``path``, in file order; none when it does not exist.

    Raises:
        VerdictError: the file cannot be read, or a line is not JSON, not an object, lacks
            or adds a field, has a mistyped or disallowed value (a choice not among
            :data:`~needleforge.records.human.VERDICT_CHOICES`), or repeats a verdict's
            (source, source_ref); the message names the file and line.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as err:
        raise VerdictError(f"{path}: cannot read the verdict file ({err})") from None
    seen: dict[_Key, int] = {}
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        verdict = _parse(line, f"{path}:{n}")
        if (first := seen.setdefault(verdict_key(verdict), n)) != n:
            raise VerdictError(f"{path}:{n}: a second verdict from {verdict.source_ref!r} "
                               f"({verdict.source}; the first is on line {first})")
        out.append(verdict)
    return out


def merge_verdicts(kept: Iterable[HumanVerdict], pulled: Iterable[HumanVerdict]
                   ) -> list[HumanVerdict]:
    """``kept`` with each of ``pulled`` replacing the row of its (source, source_ref) or
    added, sorted as the file and the store list them."""
    rows = {verdict_key(v): v for v in kept} | {verdict_key(v): v for v in pulled}
    return sorted(rows.values(), key=lambda v: (v.question_key, v.source, v.source_ref))


def write_verdict_file(path: Path, verdicts: Sequence[HumanVerdict]) -> None:
    """Write ``verdicts`` (sorted, see :func:`merge_verdicts`) to ``path`` atomically, unless
    the file already holds exactly that text (a pull that changed nothing leaves it alone).

    Raises:
        OutputError: the folder cannot be created or written.
    """
    text = "".join(_line(v) + "\n" for v in verdicts)
    if not (path.is_file() and path.read_bytes() == text.encode("utf-8")):
        write_text_atomic(path, text, what="human verdict file")
