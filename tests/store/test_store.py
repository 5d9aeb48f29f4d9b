"""The DuckDB store: migrations, schema version guard, upserts, rollback, bad files."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from needleforge.errors import StoreError
from needleforge.records import Authorization, IngestRejection, MediaInfo, Video, video_id_for
from needleforge.store import SCHEMA_VERSION, Store
from needleforge.store.schema import MIGRATIONS


def store_at_version(db: Path, version: int, *, edit: Callable[[str], str] = str) -> None:
    """Write an empty store as needleforge left it at schema ``version`` (each migration
    statement passed through ``edit`` first, e.g. to drop a column a later one adds)."""
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, "
                "applied_at TIMESTAMP NOT NULL)")
    for step in range(version):
        for statement in MIGRATIONS[step]:
            con.execute(edit(statement))
    con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    con.close()


def make_video(sha_digit: str = "a", **auth: object) -> Video:
    sha = sha_digit * 64
    authorization = Authorization(
        rights_holder="R", licence_id="L", scope=("benchmark",),
        valid_until=dt.date(2030, 1, 1), published_at=None,
    )
    return Video(
        video_id=video_id_for(sha), sha256=sha, program="p", source_path="/s.mp4",
        stored_path="/m.mp4", size_bytes=10,
        media=MediaInfo(duration_s=2.0, fps=25.0, width=64, height=64, video_codec="h264",
                        n_frames=50),
        authorization=dataclasses.replace(authorization, **auth),  # type: ignore[arg-type]
    )


def test_fresh_store_is_migrated_to_current_version(tmp_path: Path) -> None:
    with Store(tmp_path / "sub" / "nf.duckdb") as store:
        assert store.schema_version == SCHEMA_VERSION
        assert set(store.counts().values()) == {0}


def test_upsert_is_idempotent_and_roundtrips(tmp_path: Path) -> None:
    video = make_video()
    with Store(tmp_path / "nf.duckdb") as store:
        assert store.upsert_videos([video]) == 1
        assert store.upsert_videos([video]) == 0
        assert store.videos() == [video]
        assert store.video_by_sha256("a" * 64) == video
        assert store.video_by_sha256("b" * 64) is None
        renewed = make_video(valid_until=dt.date(2040, 1, 1))
        assert store.upsert_videos([renewed]) == 0
        assert store.videos()[0].authorization.valid_until == dt.date(2040, 1, 1)


def test_rejections_keep_first_seen(tmp_path: Path) -> None:
    rej = IngestRejection(rejection_id="r1", manifest_path="/m.yaml", row=3, source_path="x",
                          reason="expired", detail="row 3 (x): expired")
    with Store(tmp_path / "nf.duckdb") as store:
        assert store.upsert_rejections([rej, rej]) == 1
        first = store.query("SELECT first_seen_at FROM ingest_rejections")
        assert store.upsert_rejections([rej]) == 0
        assert store.query("SELECT first_seen_at FROM ingest_rejections") == first
        assert store.rejections() == [rej]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "nf.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_version VALUES (?, now())", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        Store(db)


def test_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "nf.duckdb"
    db.write_text("hello, I am a text file\n" * 100)
    with pytest.raises(StoreError, match="cannot open as a DuckDB store"):
        Store(db)
    assert db.read_text().startswith("hello")


def test_read_only_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="store not found"):
        Store(tmp_path / "absent.duckdb", read_only=True)
    assert not (tmp_path / "absent.duckdb").exists()


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    with Store(tmp_path / "nf.duckdb") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.query("INSERT INTO ingest_rejections VALUES "
                        "('r', 'm', 1, 's', 'expired', 'd', now())")
            raise RuntimeError("crash mid-write")
        assert store.counts()["ingest_rejections"] == 0
