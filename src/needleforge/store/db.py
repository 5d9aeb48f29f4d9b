"""Open, migrate and write the DuckDB store.

Only the flow (or CLI) process writes the store: workers return records and the caller hands
them here. Every write happens inside one transaction, so a failure leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import duckdb

from needleforge.errors import StoreError
from needleforge.records import (
    Authorization,
    IngestRejection,
    MediaInfo,
    Montage,
    ObjectTrack,
    Question,
    Representation,
    Scene,
    SceneScan,
    SceneTag,
    Verification,
    Video,
)
from needleforge.store import checks as check_rows
from needleforge.store import nemo as nemo_rows
from needleforge.store import representation as rep_rows
from needleforge.store.paths import StorePaths
from needleforge.store.schema import MIGRATIONS, SCHEMA_VERSION, TABLES

_VIDEO_COLUMNS = (
    "video_id", "sha256", "program", "title", "source_path", "stored_path", "subtitle_path",
    "size_bytes", "duration_s", "fps", "width", "height", "video_codec", "audio_codec",
    "rotation_deg", "n_frames", "container", "rights_holder", "licence_id", "scope",
    "valid_until", "published_at", "ingested_at",
)
# Re-ingesting a known video may renew its licence, move its source or its stored copy (a
# store whose files moved is mended by ingesting its manifest again); its content and
# first-ingest time never change.
_VIDEO_UPDATABLE = (
    "program", "title", "source_path", "stored_path", "subtitle_path", "rights_holder",
    "licence_id", "scope", "valid_until", "published_at",
)
_REJECTION_COLUMNS = (
    "rejection_id", "manifest_path", "row", "source_path", "reason", "detail", "first_seen_at",
)


class Store:
    """A needleforge DuckDB file at ``path`` (created and migrated on first open).

    Media paths are kept relative to the store file's folder (or absolute) and read back
    absolute (:mod:`~needleforge.store.paths`); opening for writing mends rows an older
    needleforge kept relative to the folder it ran in, and scene tag rows it stored under the
    tagger's and detector's names joined.

    Raises :class:`StoreError` when the file is not a DuckDB database, is locked by another
    writer, or was written by a newer needleforge (higher schema version).
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self._paths = StorePaths.of(path)
        if read_only and not path.exists():
            raise StoreError(f"{path}: store not found")
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as err:
            raise StoreError(f"{path}: cannot open as a DuckDB store ({err})") from None
        try:
            self._migrate(read_only=read_only)
            if not read_only:
                self._mend_legacy_paths()
                self._mend_joined_tags()
        except BaseException:
            self._con.close()
            raise

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (DuckDB checkpoints its write-ahead log here).

        Raises:
            StoreError: naming the store when the checkpoint cannot be written (disk full);
                committed writes stay in the write-ahead log and are replayed on next open.
        """
        try:
            self._con.close()
        except duckdb.Error as err:
            raise StoreError(f"{self.path}: cannot close cleanly ({err}); committed writes "
                             "are kept in its write-ahead log") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Run the block in one transaction: all of its writes land, or none do.

        Raises:
            StoreError: naming the store when DuckDB cannot write (disk full, file-size
                limit, read-only file); the transaction is rolled back, so the store keeps
                exactly what it had.
        """
        try:
            self._con.begin()
            try:
                yield self._con
                self._con.commit()
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    self._con.rollback()
                raise
        except duckdb.Error as err:
            raise StoreError(f"{self.path}: write failed, nothing of it was stored ({err})"
                             ) from None

    @property
    def schema_version(self) -> int:
        row = self._con.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def _migrate(self, *, read_only: bool) -> None:
        has_meta = self._con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
        ).fetchone()
        current = self.schema_version if has_meta and has_meta[0] else 0
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: schema version {current} is newer than this needleforge "
                f"understands ({SCHEMA_VERSION}); upgrade needleforge"
            )
        if current == SCHEMA_VERSION:
            return
        if read_only:
            raise StoreError(
                f"{self.path}: schema version {current} needs migrating to {SCHEMA_VERSION}; "
                "open it once for writing"
            )
        with self.transaction() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                "version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
            )
            for version in range(current, SCHEMA_VERSION):
                for statement in MIGRATIONS[version]:
                    con.execute(statement)
                con.execute("INSERT INTO schema_version VALUES (?, ?)", [version + 1, _now()])

    def _mend_legacy_paths(self) -> None:
        """Rewrite paths an older needleforge kept relative to its working folder (see
        :mod:`~needleforge.store.paths`), in one transaction; most opens find none."""
        rows = self._con.execute("SELECT video_id, stored_path, subtitle_path FROM videos "
                                 "WHERE NOT (stored_path LIKE '/%' AND "
                                 "coalesce(subtitle_path, '/') LIKE '/%')").fetchall()
        fixes = []
        for video_id, stored, subtitle in rows:
            new_stored, new_subtitle = (self._paths.legacy_fixes(stored),
                                        self._paths.legacy_fixes(subtitle))
            if new_stored or new_subtitle:
                fixes.append((new_stored or stored, new_subtitle or subtitle, video_id))
        if fixes:
            with self.transaction() as con:
                con.executemany("UPDATE videos SET stored_path = ?, subtitle_path = ? "
                                "WHERE video_id = ?", fixes)

    def _mend_joined_tags(self) -> None:
        """Name the one model behind each scene tag row an older needleforge stored with the
        tagger's and detector's names joined (:func:`~needleforge.store.representation.
        split_joined_tag_sources`), in one transaction; most opens find none."""
        if self._con.execute("SELECT 1 FROM scene_tags WHERE backend LIKE '%+%' "
                             "LIMIT 1").fetchone() is not None:
            with self.transaction() as con:
                rep_rows.split_joined_tag_sources(con)

    # -- generic helpers -------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read query and return all rows."""
        return self._con.execute(sql, list(params)).fetchall()

    def counts(self) -> dict[str, int]:
        """Row count of every table, for reports and tests."""
        out: dict[str, int] = {}
        for table in TABLES:
            row = self._con.execute(f"SELECT count(*) FROM {table}").fetchone()
            out[table] = int(row[0]) if row else 0
        return out

    # -- videos ----------------------------------------------------------------------------

    def upsert_videos(self, videos: Iterable[Video]) -> int:
        """Insert new videos and refresh the licence fields of known ones.

        Returns how many were new. One transaction for the whole batch.
        """
        with self.transaction() as con:
            return _upsert_videos(con, list(videos), self._paths)

    def record_ingest(
        self, videos: Iterable[Video], rejections: Iterable[IngestRejection]
    ) -> tuple[int, int]:
        """Store an ingest's outcome in one transaction; returns (new videos, new refusals)."""
        with self.transaction() as con:
            return (_upsert_videos(con, list(videos), self._paths),
                    _upsert_rejections(con, list(rejections)))

    def videos(self) -> list[Video]:
        """All videos, ordered by id."""
        cur = self._con.execute(f"SELECT {', '.join(_VIDEO_COLUMNS)} FROM videos ORDER BY 1")
        return [_video_from_row(r, self._paths) for r in cur.fetchall()]

    def video_by_sha256(self, sha256: str) -> Video | None:
        cur = self._con.execute(
            f"SELECT {', '.join(_VIDEO_COLUMNS)} FROM videos WHERE sha256 = ?", [sha256]
        )
        row = cur.fetchone()
        return _video_from_row(row, self._paths) if row else None

    # -- rejections ------------------------------------------------------------------------

    def upsert_rejections(self, rejections: Iterable[IngestRejection]) -> int:
        """Record refused rows; a refusal seen before keeps its first-seen time. Returns new."""
        with self.transaction() as con:
            return _upsert_rejections(con, list(rejections))

    def rejections(self) -> list[IngestRejection]:
        cur = self._con.execute(
            "SELECT rejection_id, manifest_path, row, source_path, reason, detail "
            "FROM ingest_rejections ORDER BY manifest_path, row, rejection_id"
        )
        return [
            IngestRejection(
                rejection_id=r[0], manifest_path=r[1], row=r[2], source_path=r[3],
                reason=r[4], detail=r[5],
            )
            for r in cur.fetchall()
        ]

    # -- representation ------------------------------------------------------------------------

    def record_representation(self, rep: Representation) -> None:
        """Replace a video's scenes, tags, objects and boxes in one transaction."""
        if self.video_by_id(rep.video_id) is None:
            raise StoreError(f"{self.path}: video {rep.video_id} is not ingested")
        with self.transaction() as con:
            rep_rows.replace_representation(con, rep)

    def representation_hashes(self) -> dict[str, str]:
        """``video_id → config_hash`` of every represented video."""
        return rep_rows.config_hashes(self._con)

    def scenes(self, video_id: str | None = None) -> list[Scene]:
        return rep_rows.load_scenes(self._con, video_id)

    def scene_tags(self) -> list[SceneTag]:
        return rep_rows.load_scene_tags(self._con)

    def objects(self) -> list[ObjectTrack]:
        return rep_rows.load_objects(self._con)

    # -- NeMo generation ---------------------------------------------------------------------

    def record_generation(
        self,
        montages: Iterable[Montage],
        questions: Iterable[Question],
        verifications: Iterable[Verification] = (),
        *,
        replace_buckets: Iterable[str] = (),
    ) -> None:
        """Store montage plans, their questions and verdicts in one transaction.

        ``replace_buckets`` first removes every montage of those buckets (with its segments,
        questions and verdicts): a stage rerun with other parameters then leaves no stale
        plans behind, while the same parameters write the same rows again.
        """
        with self.transaction() as con:
            nemo_rows.delete_buckets(con, replace_buckets)
            nemo_rows.upsert_montages(con, montages)
            nemo_rows.upsert_questions(con, questions)
            nemo_rows.upsert_verifications(con, verifications)

    def record_negative_scans(self, scans: Iterable[SceneScan]) -> int:
        """Keep the negative check's scans (one transaction); a scene scanned again by the
        same probe replaces its row. Returns how many were written.

        Raises:
            StoreError: a scan of a scene the store does not hold (nothing is written).
        """
        rows = list(scans)
        known = {r[0] for r in self.query("SELECT scene_id FROM scenes")}
        missing = sorted({s.scene_id for s in rows} - known)
        if missing:
            raise StoreError(f"{self.path}: scans of unknown scene(s) {missing[:5]}; "
                             "nothing was written")
        with self.transaction() as con:
            return check_rows.replace_scans(con, rows)

    def negative_scans(self, probe_key: str | None = None) -> list[SceneScan]:
        """Stored scans of one probe configuration (``TiledProbe.key``), or of all."""
        return check_rows.load_scans(self._con, probe_key)

    def drop_montages(self, montage_ids: Iterable[str]) -> None:
        """Remove montages with their segments, questions and verdicts (one transaction)."""
        with self.transaction() as con:
            nemo_rows.delete_montages(con, montage_ids)

    def montages(self) -> list[Montage]:
        return nemo_rows.load_montages(self._con)

    def questions(self) -> list[Question]:
        return nemo_rows.load_questions(self._con)

    def verifications(self) -> list[Verification]:
        return nemo_rows.load_verifications(self._con)

    def video_by_id(self, video_id: str) -> Video | None:
        cur = self._con.execute(
            f"SELECT {', '.join(_VIDEO_COLUMNS)} FROM videos WHERE video_id = ?", [video_id]
        )
        row = cur.fetchone()
        return _video_from_row(row, self._paths) if row else None


def _count_ids(con: duckdb.DuckDBPyConnection, table: str, column: str, ids: list[str]) -> int:
    row = con.execute(
        f"SELECT count(*) FROM {table} WHERE {column} IN (SELECT unnest(?))", [ids]
    ).fetchone()
    return int(row[0]) if row else 0


def _upsert_videos(con: duckdb.DuckDBPyConnection, videos: list[Video],
                   paths: StorePaths) -> int:
    if not videos:
        return 0
    rows = [_video_row(v, paths) for v in videos]
    ids = sorted({v.video_id for v in videos})
    before = _count_ids(con, "videos", "video_id", ids)
    placeholders = ", ".join("?" for _ in _VIDEO_COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in _VIDEO_UPDATABLE)
    con.executemany(
        f"INSERT INTO videos ({', '.join(_VIDEO_COLUMNS)}) VALUES ({placeholders}) "
        f"ON CONFLICT (video_id) DO UPDATE SET {updates}",
        rows,
    )
    return len(ids) - before


def _upsert_rejections(con: duckdb.DuckDBPyConnection, rejections: list[IngestRejection]) -> int:
    if not rejections:
        return 0
    rows = [(*_rejection_fields(r), _now()) for r in rejections]
    ids = sorted({r.rejection_id for r in rejections})
    before = _count_ids(con, "ingest_rejections", "rejection_id", ids)
    con.executemany(
        f"INSERT INTO ingest_rejections ({', '.join(_REJECTION_COLUMNS)}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (rejection_id) DO NOTHING",
        rows,
    )
    return len(ids) - before


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def _video_row(v: Video, paths: StorePaths) -> tuple[Any, ...]:
    m, a = v.media, v.authorization
    subtitle = paths.to_row(v.subtitle_path) if v.subtitle_path else None
    return (
        v.video_id, v.sha256, v.program, v.title, v.source_path, paths.to_row(v.stored_path),
        subtitle,
        v.size_bytes, m.duration_s, m.fps, m.width, m.height, m.video_codec, m.audio_codec,
        m.rotation_deg, m.n_frames, m.container, a.rights_holder, a.licence_id, list(a.scope),
        a.valid_until, a.published_at, _now(),
    )


def _video_from_row(r: tuple[Any, ...], paths: StorePaths) -> Video:
    d = dict(zip(_VIDEO_COLUMNS, r, strict=True))
    subtitle = paths.from_row(d["subtitle_path"]) if d["subtitle_path"] else None
    return Video(
        video_id=d["video_id"], sha256=d["sha256"], program=d["program"], title=d["title"],
        source_path=d["source_path"], stored_path=paths.from_row(d["stored_path"]),
        subtitle_path=subtitle, size_bytes=d["size_bytes"],
        media=MediaInfo(
            duration_s=d["duration_s"], fps=d["fps"], width=d["width"], height=d["height"],
            video_codec=d["video_codec"], n_frames=d["n_frames"], audio_codec=d["audio_codec"],
            rotation_deg=d["rotation_deg"], container=d["container"],
        ),
        authorization=Authorization(
            rights_holder=d["rights_holder"], licence_id=d["licence_id"],
            scope=tuple(d["scope"]), valid_until=d["valid_until"],
            published_at=d["published_at"],
        ),
    )


def _rejection_fields(r: IngestRejection) -> tuple[Any, ...]:
    return (r.rejection_id, r.manifest_path, r.row, r.source_path, r.reason, r.detail)
