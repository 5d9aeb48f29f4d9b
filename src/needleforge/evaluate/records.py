"""Release question records and model prediction records, as the scorer reads them.

The scorer depends on the release format only (``questions.jsonl``), never on how questions were
generated, so these records are defined here rather than borrowed from the generation stages.

Identity of a question:

- a **grounding** question (it has ``answer_spans``) is identified by ``question_id`` alone;
- a **multiple-choice** question (it has ``options``) is one *try* of a *sample*: ``question_id``
  is the sample id shared by the 4 rotations and ``try`` (0–3) tells the rotations apart, so the
  key is ``(question_id, try)``. Circular accuracy groups the tries by ``question_id``.

Keys not listed here are ignored, so a release may carry extra fields (prompts, plan ids).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal, NoReturn, Self, TypeAlias, get_args

from needleforge.config import VNBenchTask
from needleforge.errors import EvaluationError

Family: TypeAlias = Literal["nemo", "vnbench"]
Bucket: TypeAlias = Literal["short", "medium", "long"]
VNBenchGroup: TypeAlias = Literal["retrieval", "ordering", "counting"]
#: A closed time range in seconds, ``(start_s, end_s)``.
Span: TypeAlias = tuple[float, float]

N_TRIES = 4
#: VNBench's 9 official tasks (seed 000, Table 1): the tasks its overall score averages, as
#: VideoNIAH's own evaluation does. Long (``*_long``) and Act (``*_act``) tasks are scored
#: per task but kept out of the overall. The names are owned by ``config.VNBenchTask``.
VNBENCH_TASKS: tuple[str, ...] = get_args(VNBenchTask)
N_OPTIONS = 4
LETTERS = "ABCD"
#: Ground-truth spans may overshoot the video by rounding noise of this many seconds.
_DURATION_EPS_S = 1e-6
_GROUP_PREFIXES: tuple[tuple[str, VNBenchGroup], ...] = (
    ("ret", "retrieval"), ("ord", "ordering"), ("cnt", "counting"), ("count", "counting"),
)


def vnbench_group(task: str) -> VNBenchGroup | None:
    """The VNBench task group of a subtask name (``ret_edit1`` → retrieval), None if unknown.

    VNBench's overall score is the mean of its three group means, so every VNBench subtask must
    belong to one group; the prefix (``ret``, ``ord``, ``cnt``) decides.
    """
    lowered = task.lower()
    for prefix, group in _GROUP_PREFIXES:
        if lowered.startswith(prefix):
            return group
    return None


def _fail(message: str) -> NoReturn:
    raise EvaluationError(message)


def _check_str(name: str, value: object, *, allow_empty: bool = False) -> None:
    if not isinstance(value, str) or not (value or allow_empty):
        _fail(f"{name} = {value!r:.60} must be a {'' if allow_empty else 'non-empty '}string")


_FAMILIES = frozenset(get_args(Family))
_BUCKETS = frozenset(get_args(Bucket))
_MAX_ABS = 1e300  # a JSON integer of 400 digits is finite but has no float value


def _finite(value: object) -> bool:
    """A finite JSON number; exact types, because bool is an int subclass and is refused."""
    if type(value) is float:
        return math.isfinite(value)
    return type(value) is int and -_MAX_ABS < value < _MAX_ABS


def _check_finite(name: str, value: object) -> None:
    if not _finite(value):
        _fail(f"{name} = {value!r:.40} must be a finite number")


def check_span(span: Any, *, field: str, index: int) -> Span:
    """Validate ``field[index]``, one ``[start_s, end_s]`` pair, and return it as floats.

    Why: NaN compares false with everything and would silently score as a miss, and a reversed
    span would silently become an empty set; both are rejected instead. (The message is only
    formatted on failure: releases hold hundreds of thousands of spans.)

    Raises:
        EvaluationError: not a pair of finite numbers, or ``start_s > end_s``.
    """
    if type(span) in (list, tuple) and len(span) == 2:
        start, end = span
        if _finite(start) and _finite(end) and start <= end:
            return (float(start), float(end))
    name = f"{field}[{index}]"
    if not isinstance(span, list | tuple) or len(span) != 2:
        _fail(f"{name} = {span!r:.60} must be a [start_s, end_s] pair")
    _check_finite(f"{name} start", span[0])
    _check_finite(f"{name} end", span[1])
    _fail(f"{name} = {list(span)!r} is reversed (start_s > end_s); spans are never swapped")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _QuestionBase:
    """Fields every release question has, whatever its kind (see the module docstring)."""

    question_id: str
    family: Family
    task: str
    question: str
    video: str
    duration_s: float
    bucket: Bucket
    needle_type: str
    n_needles: int

    @classmethod
    def from_json(cls, data: Any, *, line: int | None = None) -> Self:
        """Build this kind of question from one decoded ``questions.jsonl`` object.

        Raises:
            EvaluationError: a malformed field, or the object is the other kind of question.
        """
        question = question_from_json(data, line=line)
        if not isinstance(question, cls):
            where = f"line {line}: " if line is not None else ""
            raise EvaluationError(f"{where}question {question.question_id!r} is a "
                                  f"{type(question).__name__}, not a {cls.__name__}")
        return question

    def _check_common(self) -> None:
        for name in ("question_id", "family", "task", "video", "bucket", "needle_type"):
            _check_str(name, getattr(self, name))  # first: the set lookups below need a str
        _check_str("question", self.question, allow_empty=True)
        if self.family not in _FAMILIES:
            _fail(f"family = {self.family!r} must be one of {list(get_args(Family))}")
        if self.bucket not in _BUCKETS:
            _fail(f"bucket = {self.bucket!r} must be one of {list(get_args(Bucket))}")
        _check_finite("duration_s", self.duration_s)
        if self.duration_s <= 0:
            _fail(f"duration_s = {self.duration_s!r} must be > 0")
        if isinstance(self.n_needles, bool) or not isinstance(self.n_needles, int) \
                or self.n_needles < 1:
            _fail(f"n_needles = {self.n_needles!r} must be an integer >= 1")
        if self.family == "vnbench" and vnbench_group(self.task) is None:
            _fail(f"task = {self.task!r}: a vnbench task must start with ret, ord or cnt")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GroundingQuestion(_QuestionBase):
    """A temporal grounding question: the answer is one or more time spans of the video.

    ``answer_spans`` must be non-empty, finite, ordered (``start_s <= end_s``) and inside
    ``[0, duration_s]``: ground truth is never clipped or repaired.
    """

    answer_spans: tuple[Span, ...]

    def __post_init__(self) -> None:
        self._check_common()
        if not self.answer_spans:
            _fail("answer_spans must hold at least one [start_s, end_s] span")
        spans = tuple(check_span(s, field="answer_spans", index=i)
                      for i, s in enumerate(self.answer_spans))
        for i, (start, end) in enumerate(spans):
            if start < 0 or end > self.duration_s + _DURATION_EPS_S:
                _fail(f"answer_spans[{i}] = {[start, end]!r} lies outside the video "
                      f"[0, {self.duration_s}]")
        object.__setattr__(self, "answer_spans", spans)  # lists from JSON become tuples

    @property
    def key(self) -> tuple[str, None]:
        """The identity of this question among all questions of a release."""
        return (self.question_id, None)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChoiceQuestion(_QuestionBase):
    """One try (rotation) of a 4-option multiple-choice sample; ``try_index`` is JSON ``try``."""

    options: tuple[str, ...]
    answer_index: int
    try_index: int

    def __post_init__(self) -> None:
        self._check_common()
        opts = self.options
        if len(opts) != N_OPTIONS or not all(isinstance(o, str) and o.strip() for o in opts):
            _fail(f"options = {list(opts)!r} must be {N_OPTIONS} non-empty strings")
        if len({o.strip().casefold() for o in opts}) != N_OPTIONS:
            _fail(f"options = {list(opts)!r} must be distinct (exactly one can be correct)")
        for name in ("answer_index", "try_index"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < N_TRIES:
                label = "try" if name == "try_index" else name
                _fail(f"{label} = {value!r} must be an integer in 0..{N_TRIES - 1}")

    @property
    def key(self) -> tuple[str, int]:
        """The identity of this try among all questions of a release."""
        return (self.question_id, self.try_index)

    @property
    def answer_text(self) -> str:
        """The correct option's text (identical across the rotations of one sample)."""
        return self.options[self.answer_index]


Question: TypeAlias = GroundingQuestion | ChoiceQuestion

_COMMON = ("question_id", "family", "task", "question", "video", "duration_s", "bucket",
           "needle_type", "n_needles")


def question_from_json(data: Any, *, line: int | None = None) -> Question:
    """Build a question from one decoded ``questions.jsonl`` object.

    The kind is decided by the keys: ``answer_spans`` makes a grounding question, ``options``
    (with ``answer_index`` and ``try``) a multiple-choice try.

    Raises:
        EvaluationError: a missing or malformed field; the message names the line and field.
    """
    where = f"line {line}: " if line is not None else ""
    if not isinstance(data, Mapping):
        raise EvaluationError(f"{where}a question must be a JSON object, got {data!r:.60}")
    has_spans, has_options = "answer_spans" in data, "options" in data
    if has_spans == has_options:
        raise EvaluationError(f"{where}question {data.get('question_id')!r} must have exactly "
                              "one of answer_spans (grounding) or options (multiple choice)")
    wanted = _COMMON + (("answer_spans",) if has_spans else ("options", "answer_index", "try"))
    missing = [k for k in wanted if k not in data]
    if missing:
        raise EvaluationError(f"{where}question {data.get('question_id')!r} misses {missing}")
    kwargs = {k: data[k] for k in _COMMON}
    try:
        if has_spans:
            spans = data["answer_spans"]
            if not isinstance(spans, list):
                _fail(f"answer_spans = {spans!r:.60} must be a list of [start_s, end_s]")
            return GroundingQuestion(**kwargs, answer_spans=tuple(spans))
        options = data["options"]
        if not isinstance(options, list):
            _fail(f"options = {options!r:.60} must be a list of {N_OPTIONS} strings")
        return ChoiceQuestion(**kwargs, options=tuple(options),
                              answer_index=data["answer_index"], try_index=data["try"])
    except EvaluationError as exc:
        raise EvaluationError(f"{where}question {data.get('question_id')!r}: {exc}") from exc


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Prediction:
    """A model's answer to one question (grounding) or one try (multiple choice).

    Exactly one of ``spans`` (structured, optionally scored) and ``response`` (raw text, parsed
    by :mod:`needleforge.evaluate.parse`) is set. ``scores`` is None or has one finite score per
    span. ``line`` is the source line, used only in messages.
    """

    question_id: str
    try_index: int | None = None
    spans: tuple[Span, ...] | None = None
    scores: tuple[float, ...] | None = None
    response: str | None = None
    line: int | None = None

    def __post_init__(self) -> None:
        _check_str("question_id", self.question_id)
        if self.try_index is not None and (isinstance(self.try_index, bool) or not isinstance(
                self.try_index, int) or not 0 <= self.try_index < N_TRIES):
            _fail(f"try = {self.try_index!r} must be an integer in 0..{N_TRIES - 1}")
        if (self.spans is None) == (self.response is None):
            _fail("a prediction needs exactly one of pred_spans or response")
        if self.response is not None:
            _check_str("response", self.response, allow_empty=True)
        if self.spans is not None:
            spans = tuple(check_span(s, field="pred_spans", index=i)
                          for i, s in enumerate(self.spans))
            object.__setattr__(self, "spans", spans)
        if self.scores is not None:
            if self.spans is None or len(self.scores) != len(self.spans):
                _fail("scores need one score per span")
            for i, score in enumerate(self.scores):
                if not _finite(score):
                    _check_finite(f"pred_spans[{i}] score", score)

    @property
    def key(self) -> tuple[str, int | None]:
        """The question this prediction answers: ``(question_id, try)``."""
        return (self.question_id, self.try_index)

    @classmethod
    def from_json(cls, data: Any, *, line: int | None = None) -> Prediction:
        """Build a prediction from one decoded predictions-JSONL object.

        ``pred_spans`` items are ``[start_s, end_s]`` or ``[start_s, end_s, score]``; either all
        items carry a score or none does.

        Raises:
            EvaluationError: a missing or malformed field; the message names the line and field.
        """
        where = f"line {line}: " if line is not None else ""
        if not isinstance(data, Mapping):
            raise EvaluationError(f"{where}a prediction must be a JSON object, got {data!r:.60}")
        if "question_id" not in data:
            raise EvaluationError(f"{where}prediction misses question_id")
        try:
            spans, scores = _split_scored(data.get("pred_spans"))
            return cls(question_id=data["question_id"], try_index=data.get("try"), spans=spans,
                       scores=scores, response=data.get("response"), line=line)
        except EvaluationError as exc:
            raise EvaluationError(
                f"{where}prediction for {data.get('question_id')!r}: {exc}") from exc


def _split_scored(items: Any) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
    """``[[s, e, score], ...]`` → (spans, scores); unscored lists give ``scores = None``."""
    if items is None:
        return None, None
    if not isinstance(items, list) or not all(isinstance(i, list) for i in items):
        _fail(f"pred_spans = {items!r:.80} must be a list of [start_s, end_s(, score)] lists")
    lengths = {len(i) for i in items}
    if not lengths <= {2, 3}:
        _fail(f"pred_spans = {items!r:.80}: each item must be [start_s, end_s] or "
              "[start_s, end_s, score]")
    if lengths == {2, 3}:
        _fail("pred_spans mixes scored and unscored items; score all of them or none")
    if lengths == {3}:
        return tuple(i[:2] for i in items), tuple(i[2] for i in items)
    return tuple(items), None
