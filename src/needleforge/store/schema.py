"""The DuckDB schema: every table, in one place, with its version and migrations.

Ids are stable strings derived from content (``v{sha256[:16]}``, ``{video_id}-s{index:04d}``),
never auto-increment, so reruns upsert instead of duplicating. Times are float seconds and
column names carry units. ``MIGRATIONS[n]`` takes a store from version ``n`` to ``n + 1``;
a fresh store runs them all in order.
"""

from __future__ import annotations

SCHEMA_VERSION = 6

_V1 = (
    """
    CREATE TABLE IF NOT EXISTS videos (
        video_id      VARCHAR PRIMARY KEY,
        sha256        VARCHAR NOT NULL UNIQUE,
        program       VARCHAR NOT NULL,
        title         VARCHAR NOT NULL,
        source_path   VARCHAR NOT NULL,
        stored_path   VARCHAR NOT NULL,
        subtitle_path VARCHAR,
        size_bytes    BIGINT NOT NULL,
        duration_s    DOUBLE NOT NULL,
        fps           DOUBLE NOT NULL,
        width         INTEGER NOT NULL,
        height        INTEGER NOT NULL,
        video_codec   VARCHAR NOT NULL,
        audio_codec   VARCHAR,
        rotation_deg  INTEGER NOT NULL,
        n_frames      BIGINT NOT NULL,
        container     VARCHAR NOT NULL,
        rights_holder VARCHAR NOT NULL,
        licence_id    VARCHAR NOT NULL,
        scope         VARCHAR[] NOT NULL,
        valid_until   DATE NOT NULL,
        published_at  DATE,
        ingested_at   TIMESTAMP NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS ingest_rejections (
        rejection_id  VARCHAR PRIMARY KEY,
        manifest_path VARCHAR NOT NULL,
        row           INTEGER NOT NULL,
        source_path   VARCHAR NOT NULL,
        reason        VARCHAR NOT NULL,
        detail        VARCHAR NOT NULL,
        first_seen_at TIMESTAMP NOT NULL
    )
    """,
)

# Version 2: the video representation (scenes, tags, tracked objects) of NeMo Sec. 3.2.1.
_V2 = (
    """
    CREATE TABLE IF NOT EXISTS scenes (
        scene_id      VARCHAR PRIMARY KEY,
        video_id      VARCHAR NOT NULL,
        idx           INTEGER NOT NULL,
        start_s       DOUBLE NOT NULL,
        end_s         DOUBLE NOT NULL,
        n_frames      INTEGER NOT NULL,
        subtitle_text VARCHAR NOT NULL,
        UNIQUE (video_id, idx)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS scene_tags (
        scene_id      VARCHAR NOT NULL,
        tag           VARCHAR NOT NULL,
        score         DOUBLE NOT NULL,
        backend       VARCHAR NOT NULL,
        model_version VARCHAR NOT NULL,
        PRIMARY KEY (scene_id, tag, backend)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS objects (
        object_id            VARCHAR PRIMARY KEY,
        scene_id             VARCHAR NOT NULL,
        idx                  INTEGER NOT NULL,
        tag                  VARCHAR NOT NULL,
        start_s              DOUBLE NOT NULL,
        end_s                DOUBLE NOT NULL,
        visible_s            DOUBLE NOT NULL,
        mean_area_frac       DOUBLE NOT NULL,
        mean_score           DOUBLE NOT NULL,
        referring_expression VARCHAR NOT NULL,
        colour               VARCHAR NOT NULL,
        position             VARCHAR NOT NULL,
        size_rank            INTEGER NOT NULL,
        attributes           JSON NOT NULL,
        backend              VARCHAR NOT NULL,
        model_version        VARCHAR NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS object_boxes (
        object_id VARCHAR NOT NULL,
        t_s       DOUBLE NOT NULL,
        x         DOUBLE NOT NULL,
        y         DOUBLE NOT NULL,
        w         DOUBLE NOT NULL,
        h         DOUBLE NOT NULL,
        PRIMARY KEY (object_id, t_s)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS representations (
        video_id       VARCHAR PRIMARY KEY,
        n_scenes       INTEGER NOT NULL,
        n_objects      INTEGER NOT NULL,
        scene_detector VARCHAR NOT NULL,
        config_hash    VARCHAR NOT NULL,
        decode_error   VARCHAR
    )
    """,
)

# Version 3: NeMo generation (seed 001, Sec. 3.2.2): montage plans, questions, verdicts.
# Answers are not stored: they derive from the target segments of the question's montage.
_V3 = (
    """
    CREATE TABLE IF NOT EXISTS montages (
        montage_id  VARCHAR PRIMARY KEY,
        bucket      VARCHAR NOT NULL,
        duration_s  DOUBLE NOT NULL,
        n_segments  INTEGER NOT NULL,
        seed        BIGINT NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS montage_segments (
        montage_id      VARCHAR NOT NULL,
        position        INTEGER NOT NULL,
        video_id        VARCHAR NOT NULL,
        scene_id        VARCHAR NOT NULL,
        src_start_s     DOUBLE NOT NULL,
        src_end_s       DOUBLE NOT NULL,
        montage_start_s DOUBLE NOT NULL,
        role            VARCHAR NOT NULL,
        needle_index    INTEGER,
        target_id       VARCHAR,
        PRIMARY KEY (montage_id, position)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS questions (
        question_id      VARCHAR PRIMARY KEY,
        montage_id       VARCHAR NOT NULL,
        needle_type      VARCHAR NOT NULL,
        target_scene_id  VARCHAR NOT NULL,
        target_object_id VARCHAR,
        description      VARCHAR NOT NULL,
        text             VARCHAR NOT NULL,
        template_id      VARCHAR NOT NULL,
        backend          VARCHAR NOT NULL,
        model_version    VARCHAR NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS verifications (
        question_id   VARCHAR NOT NULL,
        verifier      VARCHAR NOT NULL,
        model_version VARCHAR NOT NULL,
        passed        BOOLEAN NOT NULL,
        reason        VARCHAR NOT NULL,
        PRIMARY KEY (question_id, verifier)
    )
    """,
)

# Version 4: segments name their target (several targets per long montage). Version 3 stores
# written before the column existed get it here; fresh ones already have it (no-op).
_V4 = ("ALTER TABLE montage_segments ADD COLUMN IF NOT EXISTS target_id VARCHAR",)

# Version 5: the negative check's scans (store/checks.py), kept so that expand, reruns and
# resumed flows reuse them and the store shows why a negative was refused.
_V5 = (
    """
    CREATE TABLE IF NOT EXISTS negative_scans (
        scene_id  VARCHAR NOT NULL,
        probe_key VARCHAR NOT NULL,
        n_frames  INTEGER NOT NULL,
        PRIMARY KEY (scene_id, probe_key)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS negative_sightings (
        scene_id  VARCHAR NOT NULL,
        probe_key VARCHAR NOT NULL,
        label     VARCHAR NOT NULL,
        score     DOUBLE NOT NULL,
        t_s       DOUBLE NOT NULL,
        x         DOUBLE NOT NULL,
        y         DOUBLE NOT NULL,
        w         DOUBLE NOT NULL,
        h         DOUBLE NOT NULL,
        PRIMARY KEY (scene_id, probe_key, label)
    )
    """,
)

# Version 6: human verdicts (review/labelstudio_pull.py, records/human.py), keyed by where they
# came from; a verdict on a question that changed or vanished stays (it no longer applies).
_V6 = (
    """
    CREATE TABLE IF NOT EXISTS human_verdicts (
        source            VARCHAR NOT NULL,
        source_ref        VARCHAR NOT NULL,
        question_key      VARCHAR NOT NULL,
        question_id       VARCHAR NOT NULL,
        annotator         VARCHAR NOT NULL,
        choice            VARCHAR NOT NULL,
        valid             BOOLEAN,
        spans_right       BOOLEAN,
        negatives_clean   BOOLEAN,
        note              VARCHAR NOT NULL,
        answer_spans_json VARCHAR,
        updated_at        VARCHAR NOT NULL,
        PRIMARY KEY (source, source_ref)
    )
    """,
)

#: ``MIGRATIONS[n]`` upgrades a store at version ``n`` to ``n + 1`` (version 0 = empty file).
MIGRATIONS: dict[int, tuple[str, ...]] = {0: _V1, 1: _V2, 2: _V3, 3: _V4, 4: _V5, 5: _V6}

TABLES: tuple[str, ...] = (
    "videos", "ingest_rejections", "scenes", "scene_tags", "objects", "object_boxes",
    "representations", "montages", "montage_segments", "questions", "verifications",
    "negative_scans", "negative_sightings", "human_verdicts",
)
