"""Reading ``questions.jsonl`` and predictions JSONL files, with line numbers in every error.

UTF-8 (a byte-order mark and CRLF line ends are accepted); blank lines are skipped; every
other line must be one JSON object. A file is read whole and
checked before anything is scored, so a bad line stops the run up front, never halfway.

A predictions file is either ours (``question_id``, ``try``, ``pred_spans`` or ``response``)
or a moment_detr (QVHighlights) submission, read as it is (``qid``,
``pred_relevant_windows``; see :mod:`needleforge.evaluate.qvhighlights`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

from needleforge.errors import EvaluationError
from needleforge.evaluate.qvhighlights import is_submission, prediction_from_submission
from needleforge.evaluate.records import Prediction, ReleaseQuestion, question_from_json

_T = TypeVar("_T", ReleaseQuestion, Prediction)
#: The layout of a predictions file.
PredictionFormat: TypeAlias = Literal["needleforge", "moment_detr"]


def _read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # tolerate a byte-order mark
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluationError(f"cannot read {path}: {exc}") from exc
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(
                f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from exc


def _load(path: str | Path, build: Callable[..., _T],
          rows: list[tuple[int, Any]] | None = None) -> list[_T]:
    path = Path(path)
    records: list[_T] = []
    first_line: dict[object, int] = {}
    for number, data in rows if rows is not None else _read_jsonl(path):
        try:
            record = build(data, line=number)
        except EvaluationError as exc:
            raise EvaluationError(f"{path}: {exc}") from exc
        if record.key in first_line:
            raise EvaluationError(
                f"{path}:{number}: duplicate {_describe(record.key)}, first on line "
                f"{first_line[record.key]}; each may appear once (it would count twice)")
        first_line[record.key] = number
        records.append(record)
    return records


def _describe(key: tuple[str, int | None]) -> str:
    question_id, try_index = key
    return f"question_id {question_id!r}" + ("" if try_index is None else f" try {try_index}")


def load_questions(path: str | Path) -> list[ReleaseQuestion]:
    """Read a release's ``questions.jsonl`` (record format: :mod:`needleforge.evaluate.records`).

    Raises:
        EvaluationError: unreadable file, malformed JSON or field (with the line number), or a
            duplicate ``question_id`` (``(question_id, try)`` for multiple choice).
    """
    return _load(path, question_from_json)


def load_predictions(path: str | Path) -> list[Prediction]:
    """Read a predictions JSONL file: ``{"question_id", ["try"], "pred_spans" | "response"}``.

    Raises:
        EvaluationError: unreadable file, malformed JSON or field (NaN, reversed span, mixed
            scored/unscored spans; with the line number), or a duplicate prediction.
    """
    return load_prediction_file(path)[0]


def load_prediction_file(path: str | Path) -> tuple[list[Prediction], PredictionFormat]:
    """Read a predictions file of either layout (see the module docstring) and say which.

    Raises:
        EvaluationError: as :func:`load_predictions`; also a file that mixes both layouts.
    """
    rows = list(_read_jsonl(Path(path)))
    flags = {is_submission(data) for _, data in rows}
    if flags == {True, False}:
        line = next(n for n, data in rows if not is_submission(data))
        raise EvaluationError(f"{path}:{line}: not a moment_detr line (no pred_relevant_windows)"
                              ", but other lines are; one file holds one layout")
    if flags == {True}:
        return _load(path, prediction_from_submission, rows), "moment_detr"
    return _load(path, Prediction.from_json, rows), "needleforge"
