"""Read and write NeMo generation: montage plans, questions and verification verdicts.

Rows are keyed by content-derived ids, so writing the same plan twice changes nothing;
a montage is written with its segments as one unit (segments replaced together).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import duckdb

from needleforge.records import Montage, Question, Segment, Verification

_QUESTION_COLUMNS = (
    "question_id, montage_id, needle_type, target_scene_id, target_object_id, description, "
    "text, template_id, backend, model_version"
)


def upsert_montages(con: duckdb.DuckDBPyConnection, montages: Iterable[Montage]) -> None:
    """Write montages and their segments; call inside a transaction."""
    for m in montages:
        con.execute("DELETE FROM montage_segments WHERE montage_id = ?", [m.montage_id])
        con.execute(
            "INSERT INTO montages VALUES (?, ?, ?, ?, ?) ON CONFLICT (montage_id) DO UPDATE SET "
            "bucket = excluded.bucket, duration_s = excluded.duration_s, "
            "n_segments = excluded.n_segments, seed = excluded.seed",
            [m.montage_id, m.bucket, m.duration_s, len(m.segments), m.seed],
        )
        con.executemany(
            "INSERT INTO montage_segments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(m.montage_id, s.position, s.video_id, s.scene_id, s.src_start_s, s.src_end_s,
              s.montage_start_s, s.role, s.needle_index, s.target_id) for s in m.segments],
        )


def delete_buckets(con: duckdb.DuckDBPyConnection, buckets: Iterable[str]) -> None:
    """Remove the montages of ``buckets`` with their segments, questions and verdicts."""
    wanted = sorted(set(buckets))
    if not wanted:
        return
    doomed = "SELECT montage_id FROM montages WHERE bucket IN (SELECT unnest(?))"
    con.execute(f"DELETE FROM verifications WHERE question_id IN (SELECT question_id FROM "
                f"questions WHERE montage_id IN ({doomed}))", [wanted])
    con.execute(f"DELETE FROM questions WHERE montage_id IN ({doomed})", [wanted])
    con.execute(f"DELETE FROM montage_segments WHERE montage_id IN ({doomed})", [wanted])
    con.execute("DELETE FROM montages WHERE bucket IN (SELECT unnest(?))", [wanted])


def delete_montages(con: duckdb.DuckDBPyConnection, montage_ids: Iterable[str]) -> None:
    """Remove the given montages with their segments, questions and verdicts."""
    ids = sorted(set(montage_ids))
    if not ids:
        return
    con.execute("DELETE FROM verifications WHERE question_id IN (SELECT question_id FROM "
                "questions WHERE montage_id IN (SELECT unnest(?)))", [ids])
    for table in ("questions", "montage_segments", "montages"):
        con.execute(f"DELETE FROM {table} WHERE montage_id IN (SELECT unnest(?))", [ids])


def upsert_questions(con: duckdb.DuckDBPyConnection, questions: Iterable[Question]) -> None:
    rows = [(q.question_id, q.montage_id, q.needle_type, q.target_scene_id, q.target_object_id,
             q.description, q.text, q.template_id, q.backend, q.model_version)
            for q in questions]
    if rows:
        con.executemany(
            f"INSERT OR REPLACE INTO questions ({_QUESTION_COLUMNS}) VALUES "
            f"({', '.join('?' * 10)})", rows,
        )


def upsert_verifications(
    con: duckdb.DuckDBPyConnection, verdicts: Iterable[Verification]
) -> None:
    rows = [(v.question_id, v.verifier, v.model_version, v.passed, v.reason) for v in verdicts]
    if rows:
        con.executemany("INSERT OR REPLACE INTO verifications VALUES (?, ?, ?, ?, ?)", rows)


def load_montages(con: duckdb.DuckDBPyConnection) -> list[Montage]:
    """Every montage with its segments, ordered by id."""
    segments: dict[str, list[Segment]] = defaultdict(list)
    for row in con.execute(
        "SELECT montage_id, position, video_id, scene_id, src_start_s, src_end_s, "
        "montage_start_s, role, needle_index, target_id FROM montage_segments "
        "ORDER BY montage_id, position"
    ).fetchall():
        segments[row[0]].append(Segment(*row[1:]))
    return [
        Montage(montage_id=mid, bucket=bucket, segments=tuple(segments[mid]), seed=seed)
        for mid, bucket, seed in con.execute(
            "SELECT montage_id, bucket, seed FROM montages ORDER BY montage_id"
        ).fetchall()
    ]


def load_questions(con: duckdb.DuckDBPyConnection) -> list[Question]:
    rows = con.execute(f"SELECT {_QUESTION_COLUMNS} FROM questions ORDER BY question_id")
    return [Question(*r) for r in rows.fetchall()]


def load_verifications(con: duckdb.DuckDBPyConnection) -> list[Verification]:
    rows = con.execute("SELECT question_id, verifier, model_version, passed, reason "
                       "FROM verifications ORDER BY question_id, verifier")
    return [Verification(*r) for r in rows.fetchall()]
