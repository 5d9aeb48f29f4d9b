"""Human verdicts on questions, kept in a versioned YAML file and keyed by content.

A judge looks at a contact sheet (:mod:`needleforge.review.sheets`) and records whether the
question is valid (its description fits the target and no negative), whether its answer
spans are right and whether its negatives are clean. The file lives in git beside the
benchmarks (e.g. ``benchmarks/verdicts/realfootage.yaml``)::

    version: 1
    verdicts:
      - key: k3f9a0c2d4e5b6a7f          # question_key: what the judge looked at
        question_id: q0123456789abcdef  # for reading only
        valid: true                     # true / false, or null = not judged yet
        spans_right: true               # null allowed only while valid is null
        negatives_clean: true
        note: "the red car is also parked in negative 4, but only its roof"

Why a content key rather than the question id: a verdict is about what the judge saw. When
the question's text, description, needle type, target object or any of its segments
changes, :func:`question_key` changes too, so an old verdict never silently applies to a
changed question; it shows up as stale instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from needleforge.errors import NeedleforgeError
from needleforge.records import Montage, Question, Segment
from needleforge.review.items import ReviewItem, other_segments, target_segments

VERDICTS_VERSION = 1
_FIELDS = ("key", "question_id", "valid", "spans_right", "negatives_clean", "note")
_FLAGS = ("valid", "spans_right", "negatives_clean")


class VerdictError(NeedleforgeError):
    """A verdict file cannot be used: unreadable, bad YAML, a missing, unknown or mistyped
    field, a duplicate key; the message names the file and the entry."""


@dataclasses.dataclass(frozen=True, slots=True)
class FileVerdict:
    """One judge's verdict on the question whose :func:`question_key` is ``key``, as an entry
    of the YAML verdict file (the store's record is :class:`~needleforge.records.human
    .HumanVerdict`; a verifier's is :class:`~needleforge.backends.writing.Verdict`).

    ``valid`` None means not judged yet (a template entry); then the other flags may be None
    too. A judged entry (``valid`` true or false) carries both other flags.
    """

    key: str
    question_id: str
    valid: bool | None
    spans_right: bool | None
    negatives_clean: bool | None
    note: str = ""

    @property
    def judged(self) -> bool:
        return self.valid is not None


def _spans(segments: Iterable[Segment]) -> list[list[Any]]:
    # Rounded to 0.01 s and written as text, so float noise (9.499999 vs 9.5) keeps the key.
    return [[s.video_id, f"{s.src_start_s:.2f}", f"{s.src_end_s:.2f}"] for s in segments]


def question_key(question: Question, montage: Montage) -> str:
    """``k`` + 16 hex digits of the sha256 of what a judge of ``question`` looks at.

    Hashed: the question text, description, needle type, target object id, the target
    segments (needle order) and the other segments (montage order: negatives, and other
    questions' needles in a shared montage), each as source video id + source start/end
    rounded to 0.01 s. Not hashed: ids derived from these (question,
    montage, scene ids), the writer's model name, the verifier's verdicts.
    """
    content = {
        "text": question.text,
        "description": question.description,
        "needle_type": question.needle_type,
        "target_object_id": question.target_object_id,
        "targets": _spans(target_segments(question, montage)),
        "negatives": _spans(other_segments(question, montage)),
    }
    blob = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "k" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a mapping holding the same key twice (PyYAML would keep
    the last one silently, and a judge's first answer would vanish)."""


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"field {key!r} appears twice in one mapping", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def load_verdicts(path: Path) -> dict[str, FileVerdict]:
    """The verdicts of the file at ``path``, by key (judged and not-yet-judged entries).

    Raises:
        VerdictError: naming ``path`` (and the entry: its number and key) when the file is
            missing or unreadable, is not YAML, has another shape or version, an entry
            misses a field, has an unknown one or a value of the wrong type, or two
            entries share a key.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise VerdictError(f"verdict file {path}: cannot read it ({err})") from None
    try:
        doc = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise VerdictError(f"verdict file {path}: not valid YAML ({err})") from None
    entries = _entries(path, doc)
    out: dict[str, FileVerdict] = {}
    for number, raw in enumerate(entries, start=1):
        verdict = _verdict(path, number, raw)
        if verdict.key in out:
            first = out[verdict.key].question_id
            raise VerdictError(f"verdict file {path}: entry {number} (key {verdict.key}) "
                               f"repeats the key of an earlier entry (question {first})")
        out[verdict.key] = verdict
    return out


def _entries(path: Path, doc: Any) -> list[Any]:
    if not isinstance(doc, dict) or set(doc) != {"version", "verdicts"}:
        keys = sorted(map(str, doc)) if isinstance(doc, dict) else type(doc).__name__
        raise VerdictError(f"verdict file {path}: expected a mapping with exactly 'version' "
                           f"and 'verdicts', got {keys}")
    if doc["version"] != VERDICTS_VERSION:
        raise VerdictError(f"verdict file {path}: version = {doc['version']!r}; this "
                           f"needleforge reads version {VERDICTS_VERSION}")
    entries = doc["verdicts"]
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise VerdictError(f"verdict file {path}: 'verdicts' must be a list of entries, got "
                           f"{type(entries).__name__}")
    return entries


def _verdict(path: Path, number: int, raw: Any) -> FileVerdict:
    where = f"verdict file {path}: entry {number}"
    if not isinstance(raw, dict):
        raise VerdictError(f"{where}: expected a mapping of {', '.join(_FIELDS)}, got "
                           f"{type(raw).__name__}")
    if isinstance(raw.get("key"), str) and raw["key"].strip():
        where += f" (key {raw['key']})"
    missing = [f for f in _FIELDS if f not in raw]
    unknown = sorted(str(f) for f in raw if f not in _FIELDS)
    if missing or unknown:
        raise VerdictError(f"{where}: missing field(s) {missing}, unknown field(s) {unknown}; "
                           f"an entry has exactly {', '.join(_FIELDS)}")
    for name in ("key", "question_id"):
        if not isinstance(raw[name], str) or not raw[name].strip():
            raise VerdictError(f"{where}: {name} must be a non-empty string, got "
                               f"{raw[name]!r}")
    if not isinstance(raw["note"], str | None):
        raise VerdictError(f"{where}: note must be a string, got {raw['note']!r}")
    for name in _FLAGS:
        if not isinstance(raw[name], bool | None):
            raise VerdictError(f"{where}: {name} must be true, false or null, got "
                               f"{raw[name]!r}")
    if raw["valid"] is not None and (raw["spans_right"] is None
                                     or raw["negatives_clean"] is None):
        raise VerdictError(f"{where}: a judged entry (valid: {str(raw['valid']).lower()}) "
                           "needs spans_right and negatives_clean set to true or false")
    return FileVerdict(key=raw["key"], question_id=raw["question_id"], valid=raw["valid"],
                       spans_right=raw["spans_right"], negatives_clean=raw["negatives_clean"],
                       note=raw["note"] or "")


def template_yaml(items: Sequence[ReviewItem], verdicts: Mapping[str, FileVerdict],
                  *, sheet_names: Mapping[str, str] | None = None) -> str:
    """A verdict file listing every question of ``items`` not judged in ``verdicts``, each
    with ``valid: null``, for a judge to fill in and merge into the real file.

    Each entry is preceded by comments naming its sheet and quoting the question, so the
    judge need not look the key up. The result loads with :func:`load_verdicts`.
    """
    body: list[str] = []
    for item in items:
        key = question_key(item.question, item.montage)
        if key in verdicts and verdicts[key].judged:
            continue
        sheet = (sheet_names or {}).get(item.question_id)
        body += [f"  # {item.question.needle_type} question"
                 + (f", sheet {sheet}" if sheet else "") + ":",
                 f"  #   {_one_line(item.question.text)}",
                 f"  - key: {key}", f"    question_id: {json.dumps(item.question_id)}",
                 "    valid: null", "    spans_right: null", "    negatives_clean: null",
                 '    note: ""']
    todo = sum(1 for line in body if line.startswith("  - key:"))
    head = [f"# {todo} question(s) still to judge: set valid, spans_right and",
            "# negatives_clean to true or false, then move the entries into the verdict file.",
            f"version: {VERDICTS_VERSION}", "verdicts:" if body else "verdicts: []"]
    return "\n".join(head + body) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())
