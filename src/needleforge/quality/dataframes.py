"""The queries that turn the store's tables into the DataFrames the quality suites validate.

GX 1.x cannot validate DuckDB through its SQL datasource (upstream bug), so each suite gets a
pandas DataFrame from one DuckDB query (:func:`needleforge.stages.validate.store_frames` runs
them). Facts that need several rows (a scene's gap to the previous scene, a montage's count of
target segments) are computed here in SQL with window functions and joins, so every
expectation is a plain per-column check that names the row.

Each query is an inner ``SELECT`` whose columns are listed once in :data:`STORE_FRAMES`; the
outer query selects them in that order, so the DataFrame's column names cannot drift.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class FrameQuery:
    """One suite's DataFrame: ``columns`` of the rows of ``sql``.

    ``sql`` binds its ``?`` placeholders, in order, to the gate parameters named in ``binds``.
    """

    suite: str
    columns: tuple[str, ...]
    sql: str
    binds: tuple[str, ...] = ()

    @property
    def select(self) -> str:
        """The statement to run: ``columns`` of ``sql``'s rows, in that order, sorted."""
        return f"SELECT {', '.join(self.columns)} FROM ({self.sql}) ORDER BY ALL"


_VIDEOS = FrameQuery("videos", (
    "video_id", "sha256", "duration_s", "fps", "valid_until", "licence_days_left",
    "missing_scopes",
), """
    SELECT video_id, sha256, duration_s, fps, CAST(valid_until AS VARCHAR) AS valid_until,
           date_diff('day', CAST(? AS DATE), valid_until) AS licence_days_left,
           array_to_string([s FOR s IN CAST(? AS VARCHAR[])
                            IF NOT list_contains(scope, s)], ',') AS missing_scopes
    FROM videos
""", binds=("check_day", "scopes"))

# gap_s: a scene starts where the previous one (by index) ended; the first starts at 0.
_SCENES = FrameQuery("scenes", (
    "scene_id", "video_id", "idx", "start_s", "end_s", "duration_s", "gap_s", "has_video",
), """
    SELECT s.scene_id, s.video_id, s.idx, s.start_s, s.end_s, s.end_s - s.start_s AS duration_s,
           s.start_s - coalesce(lag(s.end_s) OVER (PARTITION BY s.video_id ORDER BY s.idx),
                                0.0) AS gap_s,
           v.video_id IS NOT NULL AS has_video
    FROM scenes s LEFT JOIN videos v ON v.video_id = s.video_id
""")

_OBJECTS = FrameQuery("objects", (
    "object_id", "scene_id", "tag", "visible_s", "visible_slack_s", "mean_area_frac",
    "referring_expression", "has_scene",
), """
    SELECT o.object_id, o.scene_id, o.tag, o.visible_s,
           (o.end_s - o.start_s) - o.visible_s AS visible_slack_s, o.mean_area_frac,
           trim(o.referring_expression) AS referring_expression,
           s.scene_id IS NOT NULL AS has_scene
    FROM objects o LEFT JOIN scenes s ON s.scene_id = o.scene_id
""")

_MONTAGES = FrameQuery("montages", (
    "montage_id", "bucket", "duration_s", "n_segments", "n_segments_found",
    "n_target_segments", "end_gap_s",
), """
    WITH seg AS (
        SELECT montage_id, count(*) AS n_found,
               count(*) FILTER (WHERE role = 'target') AS n_targets,
               max(montage_start_s + src_end_s - src_start_s) AS end_s
        FROM montage_segments GROUP BY montage_id
    )
    SELECT m.montage_id, m.bucket, m.duration_s, m.n_segments,
           coalesce(seg.n_found, 0) AS n_segments_found,
           coalesce(seg.n_targets, 0) AS n_target_segments,
           m.duration_s - seg.end_s AS end_gap_s
    FROM montages m LEFT JOIN seg ON seg.montage_id = m.montage_id
""")

# gap_s: tiling by position; target_gap_s: distance from the previous target segment in time
# (negative = two needles overlap); n_pieces: segments of the same target (>= 2 = multi-needle).
_SEGMENTS = FrameQuery("montage_segments", (
    "montage_id", "position", "role", "target_id", "needle_index", "duration_s",
    "montage_start_s", "montage_end_s", "gap_s", "overrun_s", "target_gap_s", "n_pieces",
    "has_montage",
), """
    WITH s AS (
        SELECT *, src_end_s - src_start_s AS duration_s,
               montage_start_s + src_end_s - src_start_s AS montage_end_s
        FROM montage_segments
    )
    SELECT s.montage_id, s.position, s.role, s.target_id, s.needle_index, s.duration_s,
           s.montage_start_s, s.montage_end_s,
           s.montage_start_s - coalesce(lag(s.montage_end_s) OVER (
               PARTITION BY s.montage_id ORDER BY s.position), 0.0) AS gap_s,
           s.montage_end_s - m.duration_s AS overrun_s,
           CASE WHEN s.role = 'target' THEN s.montage_start_s - lag(s.montage_end_s) OVER (
               PARTITION BY s.montage_id, s.role ORDER BY s.montage_start_s, s.position)
           END AS target_gap_s,
           CASE WHEN s.role = 'target' THEN count(*) OVER (
               PARTITION BY s.montage_id, s.role, coalesce(s.target_id, ''))
           END AS n_pieces,
           m.montage_id IS NOT NULL AS has_montage
    FROM s LEFT JOIN montages m ON m.montage_id = s.montage_id
""")

_QUESTIONS = FrameQuery("questions", (
    "question_id", "montage_id", "needle_type", "description", "text", "n_verdicts",
    "has_montage",
), """
    SELECT q.question_id, q.montage_id, q.needle_type, trim(q.description) AS description,
           trim(q.text) AS text,
           (SELECT count(*) FROM verifications v WHERE v.question_id = q.question_id)
               AS n_verdicts,
           EXISTS (SELECT 1 FROM montages m WHERE m.montage_id = q.montage_id) AS has_montage
    FROM questions q
""")

_VERIFICATIONS = FrameQuery("verifications", (
    "question_id", "verifier", "passed", "reason", "has_question",
), """
    SELECT v.question_id, v.verifier, CAST(v.passed AS INTEGER) AS passed,
           trim(v.reason) AS reason,
           EXISTS (SELECT 1 FROM questions q WHERE q.question_id = v.question_id)
               AS has_question
    FROM verifications v
""")

#: Every store DataFrame, in the order the gate validates them.
STORE_FRAMES: tuple[FrameQuery, ...] = (
    _VIDEOS, _SCENES, _OBJECTS, _MONTAGES, _SEGMENTS, _QUESTIONS, _VERIFICATIONS,
)

