"""Read and write human verdicts (table ``human_verdicts``, schema version 6).

Rows are keyed by where a verdict came from (``source``, ``source_ref``): pulling the same
annotations again rewrites nothing, and :func:`record_human_verdicts` says how many rows were
new, changed and unchanged. Verdicts are never deleted here: one on a question that changed
or vanished stays, and no longer applies to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from needleforge.records.human import HumanVerdict, Recorded
from needleforge.store.db import Store

_COLUMNS = ("source", "source_ref", "question_key", "question_id", "annotator", "choice",
            "valid", "spans_right", "negatives_clean", "note", "answer_spans_json", "updated_at")


def _row(v: HumanVerdict) -> tuple[Any, ...]:
    spans = None if v.answer_spans is None else json.dumps([list(s) for s in v.answer_spans])
    return (v.source, v.source_ref, v.question_key, v.question_id, v.annotator, v.choice,
            v.valid, v.spans_right, v.negatives_clean, v.note, spans, v.updated_at)


def _verdict(row: tuple[Any, ...]) -> HumanVerdict:
    fields = dict(zip(_COLUMNS, row, strict=True))
    raw = fields.pop("answer_spans_json")
    spans = None if raw is None else tuple((float(s), float(e)) for s, e in json.loads(raw))
    return HumanVerdict(answer_spans=spans, **fields)


def human_verdicts(store: Store) -> list[HumanVerdict]:
    """Every stored human verdict, ordered by question key, source and reference."""
    rows = store.query(f"SELECT {', '.join(_COLUMNS)} FROM human_verdicts "
                       "ORDER BY question_key, source, source_ref")
    return [_verdict(r) for r in rows]


def record_human_verdicts(store: Store, verdicts: Iterable[HumanVerdict]) -> Recorded:
    """Upsert ``verdicts`` in one transaction; rows equal to the stored ones are not written.

    Raises:
        StoreError: the write failed (nothing of the batch is kept).
    """
    given = {(v.source, v.source_ref): v for v in verdicts}  # the last of a repeated ref wins
    stored = {(v.source, v.source_ref): v for v in human_verdicts(store)}
    todo = [v for v in given.values() if stored.get((v.source, v.source_ref)) != v]
    new = sum(1 for v in todo if (v.source, v.source_ref) not in stored)
    if todo:
        with store.transaction() as con:
            con.executemany(
                f"INSERT OR REPLACE INTO human_verdicts ({', '.join(_COLUMNS)}) VALUES "
                f"({', '.join('?' * len(_COLUMNS))})", [_row(v) for v in todo])
    return Recorded(new=new, changed=len(todo) - new, unchanged=len(given) - len(todo))
