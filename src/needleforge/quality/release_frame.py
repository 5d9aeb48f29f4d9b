"""A release's question records (``questions.jsonl`` objects) as one DataFrame to validate.

The records are read leniently on purpose: a malformed record must become a failing
expectation that names it, not an exception that hides every other problem. So nothing here
raises on bad data; a missing or mistyped field becomes a null (or a count of bad items) that
an expectation then rejects.

One row per record. Grounding rows (``answer_spans``) get span facts; multiple-choice rows
(``options``) get option facts and facts about their *sample* (all tries sharing the
``question_id``): the sorted letters of the correct answers over the tries (``ABCD`` when the
4 rotations put the answer under each letter once), the sorted try numbers (``0123``), and how
many distinct answer texts the tries have (1 when they are rotations of one question).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

LETTERS = "ABCD"
N_OPTIONS = 4

#: Columns of the release DataFrame, in order.
RELEASE_COLUMNS: tuple[str, ...] = (
    "key", "question_id", "kind", "family", "task", "bucket", "needle_type", "duration_s",
    "n_needles", "needles", "n_spans", "n_bad_spans", "span_start_min_s", "span_overrun_s",
    "span_min_len_s", "n_options", "n_distinct_options", "n_correct_options", "answer_index",
    "try", "answer_letter", "sample_letters", "sample_tries", "sample_answers",
)


def _number(value: Any) -> float | None:
    """A finite JSON number as float; None for anything else (bool included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _norm(option: Any) -> str:
    """Options compare case- and space-insensitively: "Bob" and " bob" are the same answer."""
    return option.strip().casefold() if isinstance(option, str) else repr(option)


def _good_spans(spans: list[Any]) -> list[tuple[float, float]]:
    good = []
    for span in spans:
        if isinstance(span, list | tuple) and len(span) == 2:
            start, end = _number(span[0]), _number(span[1])
            if start is not None and end is not None and start <= end:
                good.append((start, end))
    return good


def _grounding(record: Mapping[str, Any], *, duration: float | None) -> dict[str, Any]:
    raw = record.get("answer_spans")
    spans = raw if isinstance(raw, list) else []
    good = _good_spans(spans)
    task = str(record.get("task", "")) + str(record.get("needle_type", ""))
    multi = len(spans) >= 2 or "multi" in task.lower()
    return {
        "needles": "multi" if multi else "single",
        "n_spans": len(spans),
        "n_bad_spans": len(spans) - len(good) if isinstance(raw, list) else 1,
        "span_start_min_s": min((s for s, _ in good), default=None),
        "span_overrun_s": (max(e for _, e in good) - duration
                           if good and duration is not None else None),
        "span_min_len_s": min((e - s for s, e in good), default=None),
    }


def _choice(record: Mapping[str, Any]) -> dict[str, Any]:
    options = record.get("options")
    options = options if isinstance(options, list) else []
    answer = _int(record.get("answer_index"))
    right = _norm(options[answer]) if answer is not None and 0 <= answer < len(options) else None
    return {
        "n_options": len(options),
        "n_distinct_options": len({_norm(o) for o in options}),
        "n_correct_options": sum(_norm(o) == right for o in options) if right else 0,
        "answer_index": answer,
        "try": _int(record.get("try")),
        "answer_letter": LETTERS[answer] if answer is not None and 0 <= answer < 4 else None,
        "_answer_text": right,
    }


def _row(record: Any) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        return {"kind": "not_an_object", "key": repr(record)[:60]}
    duration = _number(record.get("duration_s"))
    kind = ("grounding" if "answer_spans" in record else "choice" if "options" in record
            else "unknown")
    if "answer_spans" in record and "options" in record:
        kind = "ambiguous"
    row: dict[str, Any] = {
        "question_id": _text(record.get("question_id")), "kind": kind,
        "family": _text(record.get("family")), "task": _text(record.get("task")),
        "bucket": _text(record.get("bucket")), "needle_type": _text(record.get("needle_type")),
        "duration_s": duration, "n_needles": _int(record.get("n_needles")),
    }
    if kind == "grounding":
        row.update(_grounding(record, duration=duration))
    elif kind == "choice":
        row.update(_choice(record))
    row["key"] = f"{row['question_id']}#{row['try']}" if kind == "choice" else row["question_id"]
    return row


def _add_sample_facts(rows: list[dict[str, Any]]) -> None:
    """Give each multiple-choice row the letters, tries and answers of its whole sample."""
    samples: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["kind"] == "choice":
            samples[row["question_id"]].append(row)
    for tries in samples.values():
        letters = "".join(sorted(r["answer_letter"] or "?" for r in tries))
        numbers = "".join(sorted("?" if r["try"] is None else str(r["try"]) for r in tries))
        answers = len({r["_answer_text"] for r in tries})
        for row in tries:
            row.update(sample_letters=letters, sample_tries=numbers, sample_answers=answers)


def release_frame(records: Sequence[Any]) -> pd.DataFrame:
    """One row per release question record, with the facts the release suite checks.

    Never raises on bad records (see the module docstring).
    """
    import pandas as pd

    rows = [_row(r) for r in records]
    _add_sample_facts(rows)
    return pd.DataFrame.from_records(
        [{c: row.get(c) for c in RELEASE_COLUMNS} for row in rows], columns=list(RELEASE_COLUMNS)
    )
