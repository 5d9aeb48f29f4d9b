"""Release question records and model prediction records, as the scorer reads them.

The scorer depends on the release format only (``questions.jsonl``), never on how questions were
generated. That format is owned by :mod:`needleforge.records.questions`: its
:class:`~needleforge.records.questions.GroundingQuestion` and
:class:`~needleforge.records.questions.ChoiceQuestion` are the scorer's questions, read by its
strict parser (errors are :class:`~needleforge.errors.EvaluationError`, naming line and field).
Keys it does not require are kept in ``extra`` and ignored here, so a release may carry extra
fields (prompts, plan ids). Predictions (what a model answered) are the scorer's own records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NoReturn, get_args

from needleforge.errors import EvaluationError
from needleforge.params import VNBenchTask
from needleforge.records.questions import (
    LETTERS,
    N_OPTIONS,
    N_TRIES,
    ChoiceQuestion,
    GroundingQuestion,
    ReleaseQuestion,
    Span,
    VNBenchGroup,
    check_span,
    is_finite,
    parse_question,
    vnbench_group,
)

__all__ = [
    "LETTERS",
    "N_OPTIONS",
    "N_TRIES",
    "VNBENCH_TASKS",
    "ChoiceQuestion",
    "GroundingQuestion",
    "Prediction",
    "ReleaseQuestion",
    "Span",
    "VNBenchGroup",
    "check_span",
    "question_from_json",
    "vnbench_group",
]

#: VNBench's 9 official tasks (seed 000, Table 1): the tasks its overall score averages, as
#: VideoNIAH's own evaluation does. Long (``*_long``) and Act (``*_act``) tasks are scored
#: per task but kept out of the overall. The names are owned by ``config.VNBenchTask``.
VNBENCH_TASKS: tuple[str, ...] = get_args(VNBenchTask)


def _fail(message: str) -> NoReturn:
    raise EvaluationError(message)


def _check_str(name: str, value: object, *, allow_empty: bool = False) -> None:
    if not isinstance(value, str) or not (value or allow_empty):
        _fail(f"{name} = {value!r:.60} must be a {'' if allow_empty else 'non-empty '}string")


def question_from_json(data: Any, *, line: int | None = None) -> ReleaseQuestion:
    """Build a question from one decoded ``questions.jsonl`` object (the strict parser of
    :func:`needleforge.records.questions.parse_question`).

    The kind is decided by the keys: ``answer_spans`` makes a grounding question, ``options``
    (with ``answer_index`` and ``try``) a multiple-choice try.

    Raises:
        EvaluationError: a missing or malformed field; the message names the line and field
            (a :class:`~needleforge.records.questions.QuestionRecordError`).
    """
    return parse_question(data, line=line)


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
                if not is_finite(score):
                    _fail(f"pred_spans[{i}] score = {score!r:.40} must be a finite number")

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
