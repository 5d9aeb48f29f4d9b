"""The release question record: one row of a release's ``questions.jsonl`` and Parquet files.

The one owner of the format that the release builder (:mod:`needleforge.release.answers`),
the VNBench stage (:mod:`needleforge.vnbench.export`), the Parquet writer
(:mod:`needleforge.release.file_io`), the scorer (:mod:`needleforge.evaluate`, whose questions
these classes are) and the quality gate (:mod:`needleforge.quality.release_frame`) share, and
of its constants: option letters, families, length buckets and their bounds.

A **grounding** question (it has ``answer_spans``) is identified by ``question_id``; a
**multiple-choice** question (it has ``options``) is one *try* of a *sample*: ``question_id``
is the sample id shared by its 4 rotations and ``try`` (0–3) tells them apart.

:data:`COLUMNS` names every column a release writes, with its JSON type, in Parquet order. The
required ones are fields of :class:`GroundingQuestion` / :class:`ChoiceQuestion`; the others
(plan ids, needle spans, source ids) travel in ``extra``, after them. An extra column is checked
against its type when a row is written (``to_dict``) and passed through when it is read
(readers ignore what they do not use); keys outside :data:`COLUMNS` are kept as they are.

Reading has two modes of the same rules (the kind, the column types, what a span is):

- **strict** (:func:`parse_question`, :func:`parse_jsonl`): the first problem raises
  :class:`QuestionRecordError` naming the file and line, the question and the field;
- **lenient** (:func:`read_lenient`): never raises; a column's value is kept when it has the
  column's JSON type (a list column: when it is a list, its well-formed spans listed apart),
  else None. Why: the quality gate reports every malformed record as a failing expectation
  that names it instead of stopping at the first, and judges the *values* (bucket known,
  spans inside the video, 4 distinct options) itself, so a wrong value of the right type stays.

Imports nothing of needleforge but :mod:`needleforge.errors`, and pyarrow only for a schema.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Self, TypeAlias, get_args

from needleforge.errors import EvaluationError

if TYPE_CHECKING:
    import pyarrow as pa

QuestionFamily: TypeAlias = Literal["nemo", "vnbench"]
FAMILIES: tuple[QuestionFamily, ...] = get_args(QuestionFamily)
#: Length buckets (NeMo, seed 001, Sec. 3.1): short < 150 s ≤ medium ≤ 900 s < long.
Bucket: TypeAlias = Literal["short", "medium", "long"]
BUCKETS: tuple[Bucket, ...] = get_args(Bucket)
SHORT_MAX_S = 150.0
LONG_MIN_S = 900.0
#: How tables and cards name the buckets.
BUCKET_LABELS: Mapping[Bucket, str] = {
    "short": f"Short (< {SHORT_MAX_S / 60:g} min)",
    "medium": f"Medium ({SHORT_MAX_S / 60:g}–{LONG_MIN_S / 60:g} min)",
    "long": f"Long (> {LONG_MIN_S / 60:g} min)",
}
VNBenchGroup: TypeAlias = Literal["retrieval", "ordering", "counting"]
#: The option letters of a multiple-choice try; a sample has one try per rotation.
LETTERS = "ABCD"
N_OPTIONS = len(LETTERS)
N_TRIES = N_OPTIONS
#: A closed time range in seconds, ``(start_s, end_s)``.
Span: TypeAlias = tuple[float, float]
#: What a decoded row looks like: a mapping with exactly one of ``answer_spans``/``options``.
Kind: TypeAlias = Literal["grounding", "choice", "ambiguous", "unknown", "not_an_object"]
#: The JSON type of a column (and so its Parquet type, :func:`arrow_types`).
ColumnType: TypeAlias = Literal["string", "int", "number", "strings", "spans"]

#: Every column a release question may carry, in Parquet column order.
COLUMNS: Mapping[str, ColumnType] = {
    "question_id": "string", "family": "string", "task": "string", "bucket": "string",
    "needle_type": "string", "n_needles": "int", "question": "string", "video": "string",
    "duration_s": "number", "answer_spans": "spans", "options": "strings",
    "answer_index": "int", "try": "int", "needle_time": "spans", "needle_spans": "spans",
    "haystack": "string", "montage_id": "string", "target_scene_id": "string",
    "target_object_id": "string", "description": "string", "template_id": "string",
    "backend": "string", "model_version": "string", "verified_by": "strings",
    "source_video_ids": "strings", "answer_changed_by": "strings",
}
#: Fields every question has; a row missing one is named in this order.
COMMON_KEYS = ("question_id", "family", "task", "question", "video", "duration_s", "bucket",
               "needle_type", "n_needles")
#: Key order of written rows (kept from the first releases, so their bytes do not change).
GROUNDING_KEYS = ("question_id", "family", "task", "bucket", "needle_type", "n_needles",
                  "question", "video", "duration_s", "answer_spans")
CHOICE_KEYS = (*COMMON_KEYS, "options", "answer_index", "try")
_REQUIRED = frozenset(GROUNDING_KEYS) | frozenset(CHOICE_KEYS)
_WANTED = {"grounding": (*COMMON_KEYS, "answer_spans"), "choice": CHOICE_KEYS}  # in error order
_WANTED_SET = {kind: frozenset(keys) for kind, keys in _WANTED.items()}
#: Ground-truth spans may overshoot the video by rounding noise of this many seconds.
_DURATION_EPS_S = 1e-6
_MAX_ABS = 1e300  # a JSON integer of 400 digits is finite but has no float value
_GROUP_PREFIXES: tuple[tuple[str, VNBenchGroup], ...] = (
    ("ret", "retrieval"), ("ord", "ordering"), ("cnt", "counting"), ("count", "counting"),
)


def bucket_for(duration_s: float) -> Bucket:
    """The bucket of a video length (short < 150 s, medium 150–900 s, long > 900 s)."""
    if duration_s < SHORT_MAX_S:
        return "short"
    return "medium" if duration_s <= LONG_MIN_S else "long"


def vnbench_group(task: str) -> VNBenchGroup | None:
    """The VNBench task group of a task name (``ret_edit1`` → retrieval), None if unknown.

    VNBench's overall score is the mean of its three group means, so every VNBench task must
    belong to one group; the prefix (``ret``, ``ord``, ``cnt``) decides.
    """
    lowered = task.lower()
    for prefix, group in _GROUP_PREFIXES:
        if lowered.startswith(prefix):
            return group
    return None


class QuestionRecordError(EvaluationError, ValueError):
    """A malformed release question row: the message names the file and line (when known),
    the question and the field; ``field`` is the column at fault (None: the whole row). The
    scorer's error (it cannot read the row) and a ``ValueError`` (as every record check's)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _fail(field: str | None, message: str) -> NoReturn:
    raise QuestionRecordError(message, field=field)


def _where(line: int | None, path: str | Path | None) -> str:
    if path is not None:
        return f"{path}:{line}: " if line is not None else f"{path}: "
    return f"line {line}: " if line is not None else ""


def is_finite(value: object) -> bool:
    """A finite JSON number; exact types, because bool is an int subclass and is refused."""
    if type(value) is float:
        return math.isfinite(value)
    return type(value) is int and -_MAX_ABS < value < _MAX_ABS


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_str(name: str, value: object, *, allow_empty: bool = False) -> None:
    if not isinstance(value, str) or not (value or allow_empty):
        _fail(name, f"{name} = {value!r:.60} must be a "
                    f"{'' if allow_empty else 'non-empty '}string")


def _check_finite(name: str, value: object, *, field: str | None = None) -> None:
    if not is_finite(value):
        _fail(field or name, f"{name} = {value!r:.40} must be a finite number")


def span_or_none(span: Any) -> Span | None:
    """``span`` as floats when it is a ``[start_s, end_s]`` pair of finite numbers with
    ``start_s <= end_s``; None otherwise (the rule both reading modes share)."""
    if type(span) in (list, tuple) and len(span) == 2:
        start, end = span
        if is_finite(start) and is_finite(end) and start <= end:
            return (float(start), float(end))
    return None


def check_span(span: Any, *, field: str, index: int) -> Span:
    """Validate ``field[index]``, one ``[start_s, end_s]`` pair, and return it as floats.

    Why: NaN compares false with everything and would silently score as a miss, and a reversed
    span would silently become an empty set; both are rejected instead. (The message is only
    formatted on failure: releases hold hundreds of thousands of spans.)

    Raises:
        QuestionRecordError: not a pair of finite numbers, or ``start_s > end_s``.
    """
    good = span_or_none(span)
    if good is not None:
        return good
    name = f"{field}[{index}]"
    if not isinstance(span, list | tuple) or len(span) != 2:
        _fail(field, f"{name} = {span!r:.60} must be a [start_s, end_s] pair")
    _check_finite(f"{name} start", span[0], field=field)
    _check_finite(f"{name} end", span[1], field=field)
    _fail(field, f"{name} = {list(span)!r} is reversed (start_s > end_s); spans are never "
                 "swapped")


def _column_ok(kind: ColumnType, value: Any) -> bool:
    """Whether a written extra column value has its column's type (null is always allowed)."""
    if value is None:
        return True
    if kind == "string":
        return isinstance(value, str)
    if kind == "int":
        return _is_int(value)
    if kind == "number":
        return is_finite(value)
    if kind == "strings":
        return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    return isinstance(value, list | tuple) and all(span_or_none(s) for s in value)


def check_extra(extra: Mapping[str, Any]) -> None:
    """Check the extra columns of a row to be written: none is a required column, and each
    one of :data:`COLUMNS` has its type or is null (else :class:`QuestionRecordError`)."""
    for name, value in extra.items():
        if name in _REQUIRED:
            _fail(name, f"{name} is a required column, not an extra one")
        kind = COLUMNS.get(name)
        if kind is not None and not _column_ok(kind, value):
            _fail(name, f"{name} = {value!r:.60} is not of its column type ({kind})")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Question:
    """Fields every release question has, whatever its kind (see the module docstring);
    ``extra`` holds its other columns in their order (kept as given, not copied)."""

    question_id: str
    family: QuestionFamily
    task: str
    question: str
    video: str
    duration_s: float
    bucket: Bucket
    needle_type: str
    n_needles: int
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    @classmethod
    def from_json(cls, data: Any, *, line: int | None = None,
                  path: str | Path | None = None) -> Self:
        """:func:`parse_question`, refusing the other kind (:class:`QuestionRecordError`)."""
        question = parse_question(data, line=line, path=path)
        if not isinstance(question, cls):
            _fail(None, f"{_where(line, path)}question {question.question_id!r} is a "
                        f"{type(question).__name__}, not a {cls.__name__}")
        return question

    def _check_common(self) -> None:
        for name in ("question_id", "family", "task", "video", "bucket", "needle_type"):
            _check_str(name, getattr(self, name))  # first: the set lookups below need a str
        _check_str("question", self.question, allow_empty=True)
        if self.family not in FAMILIES:
            _fail("family", f"family = {self.family!r} must be one of {list(FAMILIES)}")
        if self.bucket not in BUCKETS:
            _fail("bucket", f"bucket = {self.bucket!r} must be one of {list(BUCKETS)}")
        _check_finite("duration_s", self.duration_s)
        if self.duration_s <= 0:
            _fail("duration_s", f"duration_s = {self.duration_s!r} must be > 0")
        if not _is_int(self.n_needles) or self.n_needles < 1:
            _fail("n_needles", f"n_needles = {self.n_needles!r} must be an integer >= 1")
        if self.family == "vnbench" and vnbench_group(self.task) is None:
            _fail("task", f"task = {self.task!r}: a vnbench task must start with ret, ord or cnt")
        if type(self.extra) is not dict and not isinstance(self.extra, Mapping):
            _fail("extra", f"extra = {self.extra!r:.60} must be a mapping of column to value")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GroundingQuestion(_Question):
    """A temporal grounding question: the answer is one or more time spans of the video.

    ``answer_spans`` must be non-empty, finite, ordered (``start_s <= end_s``) and inside
    ``[0, duration_s]``: ground truth is never clipped or repaired.
    """

    answer_spans: tuple[Span, ...]

    def __post_init__(self) -> None:
        self._check_common()
        if not self.answer_spans:
            _fail("answer_spans", "answer_spans must hold at least one [start_s, end_s] span")
        spans = tuple(check_span(s, field="answer_spans", index=i)
                      for i, s in enumerate(self.answer_spans))
        for i, (start, end) in enumerate(spans):
            if start < 0 or end > self.duration_s + _DURATION_EPS_S:
                _fail("answer_spans", f"answer_spans[{i}] = {[start, end]!r} lies outside the "
                                      f"video [0, {self.duration_s}]")
        object.__setattr__(self, "answer_spans", spans)  # lists from JSON become tuples

    @property
    def key(self) -> tuple[str, None]:
        """The identity of this question among all questions of a release."""
        return (self.question_id, None)

    def to_dict(self) -> dict[str, Any]:
        """The row as written: :data:`GROUNDING_KEYS`, then ``extra`` (:func:`check_extra`)."""
        check_extra(self.extra)
        return {
            "question_id": self.question_id, "family": self.family, "task": self.task,
            "bucket": self.bucket, "needle_type": self.needle_type, "n_needles": self.n_needles,
            "question": self.question, "video": self.video, "duration_s": self.duration_s,
            "answer_spans": [[start, end] for start, end in self.answer_spans], **self.extra,
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceQuestion(_Question):
    """One try (rotation) of a 4-option multiple-choice sample; ``try_index`` is JSON ``try``."""

    options: tuple[str, ...]
    answer_index: int
    try_index: int

    def __post_init__(self) -> None:
        self._check_common()
        opts = self.options
        if len(opts) != N_OPTIONS or not all(isinstance(o, str) and o.strip() for o in opts):
            _fail("options", f"options = {list(opts)!r} must be {N_OPTIONS} non-empty strings")
        if len({o.strip().casefold() for o in opts}) != N_OPTIONS:
            _fail("options", f"options = {list(opts)!r} must be distinct (exactly one can be "
                             "correct)")
        for name in ("answer_index", "try_index"):
            value = getattr(self, name)
            if not _is_int(value) or not 0 <= value < N_TRIES:
                label = "try" if name == "try_index" else name
                _fail(label, f"{label} = {value!r} must be an integer in 0..{N_TRIES - 1}")

    @property
    def key(self) -> tuple[str, int]:
        """The identity of this try among all questions of a release."""
        return (self.question_id, self.try_index)

    @property
    def answer_text(self) -> str:
        """The correct option's text (identical across the rotations of one sample)."""
        return self.options[self.answer_index]

    def to_dict(self) -> dict[str, Any]:
        """The row as written: :data:`CHOICE_KEYS`, then ``extra`` (:func:`check_extra`)."""
        check_extra(self.extra)
        return {
            "question_id": self.question_id, "family": self.family, "task": self.task,
            "question": self.question, "video": self.video, "duration_s": self.duration_s,
            "bucket": self.bucket, "needle_type": self.needle_type, "n_needles": self.n_needles,
            "options": list(self.options), "answer_index": self.answer_index,
            "try": self.try_index, **self.extra,
        }


#: A release question of either kind.
ReleaseQuestion: TypeAlias = GroundingQuestion | ChoiceQuestion


def kind_of(data: Any) -> Kind:
    """Which kind of row ``data`` is, by its keys (both reading modes decide so)."""
    if not isinstance(data, Mapping):
        return "not_an_object"
    has_spans, has_options = "answer_spans" in data, "options" in data
    if has_spans and has_options:
        return "ambiguous"
    return "grounding" if has_spans else "choice" if has_options else "unknown"


def parse_question(data: Any, *, line: int | None = None,
                   path: str | Path | None = None) -> ReleaseQuestion:
    """Read one decoded ``questions.jsonl`` object strictly (see the module docstring).

    The kind is decided by the keys: ``answer_spans`` makes a grounding question, ``options``
    (with ``answer_index`` and ``try``) a multiple-choice try. Keys other than the required
    ones are kept in ``extra``, in their order.

    Raises:
        QuestionRecordError: a missing or malformed field; the message names the path and line
            (when given), the question and the field.
    """
    where = _where(line, path)
    kind = kind_of(data)
    if kind == "not_an_object":
        _fail(None, f"{where}a question must be a JSON object, got {data!r:.60}")
    qid = data.get("question_id")
    if kind not in ("grounding", "choice"):
        _fail(None, f"{where}question {qid!r} must have exactly one of answer_spans "
                    "(grounding) or options (multiple choice)")
    if not _WANTED_SET[kind] <= data.keys():
        missing = [k for k in _WANTED[kind] if k not in data]
        _fail(missing[0], f"{where}question {qid!r} misses {missing}")
    common = {k: data[k] for k in COMMON_KEYS}
    extra = dict(data)  # the other keys, in their order (faster than filtering item by item)
    for k in _WANTED[kind]:
        del extra[k]
    try:
        if kind == "grounding":
            spans = data["answer_spans"]
            if not isinstance(spans, list):
                _fail("answer_spans", f"answer_spans = {spans!r:.60} must be a list of "
                                      "[start_s, end_s]")
            return GroundingQuestion(**common, answer_spans=tuple(spans), extra=extra)
        options = data["options"]
        if not isinstance(options, list):
            _fail("options", f"options = {options!r:.60} must be a list of {N_OPTIONS} strings")
        return ChoiceQuestion(**common, options=tuple(options), answer_index=data["answer_index"],
                              try_index=data["try"], extra=extra)
    except QuestionRecordError as exc:
        raise QuestionRecordError(f"{where}question {qid!r}: {exc}", field=exc.field) from exc


def parse_jsonl(text: str, *, path: str | Path) -> list[ReleaseQuestion]:
    """Read a whole ``questions.jsonl`` text strictly: one row per non-blank line (a
    byte-order mark is tolerated), each key (``question_id``, or it and ``try``) once.

    Raises:
        QuestionRecordError: a line that is not JSON or not a valid row, or a repeated key;
            the message names ``path`` and the line.
    """
    rows: list[ReleaseQuestion] = []
    first_line: dict[tuple[str, int | None], int] = {}
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionRecordError(f"{path}:{number}: not valid JSON ({exc.msg} at column "
                                      f"{exc.colno})") from exc
        row = parse_question(data, line=number, path=path)
        if row.key in first_line:
            what = f"question_id {row.question_id!r}" + (
                f" try {row.try_index}" if isinstance(row, ChoiceQuestion) else "")
            _fail("question_id", f"{path}:{number}: duplicate {what}, first on line "
                                 f"{first_line[row.key]}")
        first_line[row.key] = number
        rows.append(row)
    return rows


@dataclasses.dataclass(frozen=True, slots=True)
class LenientQuestion:
    """One row read leniently (:func:`read_lenient`; why: see the module docstring).

    ``values`` holds every column of :data:`COLUMNS` the row has: its value when it has the
    column's JSON type (a number as a float), None otherwise; a list column is kept whole when
    it is a list. ``good_spans`` holds, for each span column that is a list, its well-formed
    spans (:func:`span_or_none`); the others are its malformed items.
    """

    kind: Kind
    values: Mapping[str, Any]
    good_spans: Mapping[str, tuple[Span, ...]]


def _lenient_value(kind: ColumnType, value: Any) -> Any:
    if kind == "string":
        return value if isinstance(value, str) else None
    if kind == "int":
        return value if _is_int(value) else None
    if kind == "number":
        return float(value) if is_finite(value) else None
    return value if isinstance(value, list) else None


def read_lenient(data: Any) -> LenientQuestion:
    """Read one decoded row without ever raising (the lenient mode of the module docstring)."""
    kind = kind_of(data)
    if kind == "not_an_object":
        return LenientQuestion(kind, {}, {})
    values = {name: _lenient_value(t, data[name]) for name, t in COLUMNS.items() if name in data}
    good = {name: tuple(s for s in map(span_or_none, values[name]) if s is not None)
            for name, t in COLUMNS.items() if t == "spans" and values.get(name) is not None}
    return LenientQuestion(kind, values, good)


def arrow_types() -> dict[str, pa.DataType]:
    """The Arrow type of every column of :data:`COLUMNS`, in order (Hugging Face ``datasets``
    maps each to a plain feature; spans become ``Sequence(Sequence(float64))``)."""
    import pyarrow as pa  # costs ~0.2 s: only where Parquet is written

    types = {"string": pa.string(), "int": pa.int64(), "number": pa.float64(),
             "strings": pa.list_(pa.string()), "spans": pa.list_(pa.list_(pa.float64()))}
    return {name: types[kind] for name, kind in COLUMNS.items()}


def parquet_schema(rows: Iterable[Mapping[str, Any]]) -> pa.Schema:
    """The Parquet schema of ``rows``: the columns any row has, in :data:`COLUMNS` order, typed
    explicitly (never inferred from the first row); columns no row has are left out.

    Raises:
        QuestionRecordError: a row has a key with no declared type (it would be guessed).
    """
    import pyarrow as pa

    present = {k for r in rows for k in r}
    unknown = sorted(present - set(COLUMNS))
    if unknown:
        _fail(unknown[0], f"question keys {unknown} have no Parquet type; add them to COLUMNS "
                          "in needleforge.records.questions")
    types = arrow_types()
    return pa.schema([pa.field(k, types[k]) for k in COLUMNS if k in present])
