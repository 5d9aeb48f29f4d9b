"""A release's question records (``questions.jsonl`` objects) as one DataFrame to validate.

The records are read leniently on purpose: a malformed record must become a failing
expectation that names it, not an exception that hides every other problem. So nothing here
raises on bad data; a missing or mistyped field becomes a null (or a count of bad items) that
an expectation then rejects. The reading is the lenient mode of the release question format
(:func:`needleforge.records.questions.read_lenient`: same kinds, column types and span rule as
the scorer's strict parser); this module only turns what it read into facts.

One row per record. Grounding rows (``answer_spans``) get span facts; multiple-choice rows
(``options``) get option facts and facts about their *sample* (all tries sharing the
``question_id``): the sorted letters of the correct answers over the tries (``ABCD`` when the
4 rotations put the answer under each letter once), the sorted try numbers (``0123``), and how
many distinct answer texts the tries have (1 when they are rotations of one question).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from needleforge.records.questions import LETTERS, LenientQuestion, read_lenient

if TYPE_CHECKING:
    import pandas as pd

#: Columns of the release DataFrame, in order.
RELEASE_COLUMNS: tuple[str, ...] = (
    "key", "question_id", "kind", "family", "task", "bucket", "needle_type", "duration_s",
    "n_needles", "needles", "n_spans", "n_bad_spans", "span_start_min_s", "span_overrun_s",
    "span_min_len_s", "n_options", "n_distinct_options", "n_correct_options", "answer_index",
    "try", "answer_letter", "sample_letters", "sample_tries", "sample_answers",
    "needle_count_gap", "needle_overrun_s", "video_ok", "n_unlicensed_sources",
)

#: Columns of the release sources DataFrame (``sources.json`` entries), in order.
SOURCE_COLUMNS: tuple[str, ...] = (
    "video_id", "sha256", "rights_holder", "licence_id", "valid_until", "licence_days_left",
    "missing_scopes",
)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _norm(option: Any) -> str:
    """Options compare case- and space-insensitively: "Bob" and " bob" are the same answer."""
    return option.strip().casefold() if isinstance(option, str) else repr(option)


def _grounding(record: Mapping[str, Any], read: LenientQuestion) -> dict[str, Any]:
    raw = read.values.get("answer_spans")
    spans = raw if raw is not None else []
    good = read.good_spans.get("answer_spans", ())
    duration = read.values.get("duration_s")
    task = str(record.get("task", "")) + str(record.get("needle_type", ""))
    multi = len(spans) >= 2 or "multi" in task.lower()
    return {
        "needles": "multi" if multi else "single",
        "n_spans": len(spans),
        "n_bad_spans": len(spans) - len(good) if raw is not None else 1,
        "span_start_min_s": min((s for s, _ in good), default=None),
        "span_overrun_s": (max(e for _, e in good) - duration
                           if good and duration is not None else None),
        "span_min_len_s": min((e - s for s, e in good), default=None),
    }


def _choice(read: LenientQuestion) -> dict[str, Any]:
    options = read.values.get("options") or []
    answer = read.values.get("answer_index")
    right = _norm(options[answer]) if answer is not None and 0 <= answer < len(options) else None
    letter = LETTERS[answer] if answer is not None and 0 <= answer < len(LETTERS) else None
    return {
        "n_options": len(options),
        "n_distinct_options": len({_norm(o) for o in options}),
        "n_correct_options": sum(_norm(o) == right for o in options) if right else 0,
        "answer_index": answer,
        "try": read.values.get("try"),
        "answer_letter": letter,
        "_answer_text": right,
        **_needle_facts(read),
    }


def _needle_facts(read: LenientQuestion) -> dict[str, Any]:
    """VNBench needles: ``n_needles`` minus the spans listed, malformed spans, and how far the
    last ends past the video (none of it when the record lists no ``needle_spans``)."""
    raw = read.values.get("needle_spans")
    if raw is None:
        return {}
    good = read.good_spans.get("needle_spans", ())
    n_needles = read.values.get("n_needles")
    duration = read.values.get("duration_s")
    return {
        "needle_count_gap": None if n_needles is None else n_needles - len(raw),
        "n_bad_spans": len(raw) - len(good),
        "needle_overrun_s": (max(e for _, e in good) - duration
                             if good and duration is not None else None),
    }


def _context_facts(read: LenientQuestion, ctx: ReleaseContext | None) -> dict[str, Any]:
    """Facts that need the release folder or its sources (None when not checked)."""
    if ctx is None:
        return {}
    out: dict[str, Any] = {}
    if ctx.root is not None and read.values.get("family") in ctx.video_families:
        video = read.values.get("video")
        out["video_ok"] = (video is not None and not video.startswith("/")
                           and ".." not in video.split("/") and (ctx.root / video).is_file())
    if ctx.licensed is not None:
        ids = read.values.get("source_video_ids") or [None]
        out["n_unlicensed_sources"] = sum(1 for v in ids if v not in ctx.licensed)
    return out


def _row(record: Any, ctx: ReleaseContext | None = None) -> dict[str, Any]:
    read = read_lenient(record)
    if read.kind == "not_an_object":
        return {"kind": read.kind, "key": repr(record)[:60]}
    row: dict[str, Any] = {"kind": read.kind, **{c: read.values.get(c) for c in (
        "question_id", "family", "task", "bucket", "needle_type", "duration_s", "n_needles")}}
    if read.kind == "grounding":
        row.update(_grounding(record, read))
    elif read.kind == "choice":
        row.update(_choice(read))
    key = f"{row['question_id']}#{row['try']}" if read.kind == "choice" else row["question_id"]
    row["key"] = key
    row.update(_context_facts(read, ctx))
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


@dataclasses.dataclass(frozen=True, slots=True)
class ReleaseContext:
    """What the release checks need beyond the records themselves.

    ``root`` is the release folder: the video of every record whose family is in
    ``video_families`` must be a file under it. ``licensed`` holds the ids of the sources the
    release lists (``sources.json``): every record's ``source_video_ids`` must be among them.
    """

    root: Path | None = None
    video_families: frozenset[str] = frozenset()
    licensed: frozenset[str] | None = None


def release_frame(records: Sequence[Any], *, context: ReleaseContext | None = None
                  ) -> pd.DataFrame:
    """One row per release question record, with the facts the release suite checks.

    Never raises on bad records (see the module docstring).
    """
    import pandas as pd

    rows = [_row(r, context) for r in records]
    _add_sample_facts(rows)
    return pd.DataFrame.from_records(
        [{c: row.get(c) for c in RELEASE_COLUMNS} for row in rows], columns=list(RELEASE_COLUMNS)
    )


def _date(value: Any) -> dt.date | None:
    try:
        return dt.date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _source_row(entry: Any, *, day: dt.date, scopes: Sequence[str]) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        return {"video_id": repr(entry)[:60]}
    until = _date(entry.get("valid_until"))
    scope = entry.get("scope")
    granted = {s for s in scope if isinstance(s, str)} if isinstance(scope, list) else set()
    return {
        "video_id": _text(entry.get("video_id")), "sha256": _text(entry.get("sha256")),
        "rights_holder": _text(entry.get("rights_holder")),
        "licence_id": _text(entry.get("licence_id")),
        "valid_until": _text(entry.get("valid_until")),
        "licence_days_left": (until - day).days if until is not None else None,
        "missing_scopes": ",".join(s for s in scopes if s not in granted),
    }


def sources_frame(entries: Sequence[Any], *, day: dt.date, scopes: Sequence[str]
                  ) -> pd.DataFrame:
    """One row per ``sources.json`` entry: its licence, days left on ``day``, scopes missing.

    Never raises on bad entries: a missing or malformed field becomes a null that the
    ``release_sources`` suite rejects.
    """
    import pandas as pd

    rows = [_source_row(e, day=day, scopes=scopes) for e in entries]
    return pd.DataFrame.from_records(
        [{c: row.get(c) for c in SOURCE_COLUMNS} for row in rows], columns=list(SOURCE_COLUMNS))
