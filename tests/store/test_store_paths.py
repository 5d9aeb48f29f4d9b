"""Media paths in the store: absolute, whatever folder a command ran in, and older stores'
relative rows still found (and mended when opened for writing)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from needleforge.cli import app
from needleforge.store import Store
from needleforge.store.paths import StorePaths
from tests.store.test_store import make_video

LICENCE = {"program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
           "scope": ["benchmark"], "valid_until": "2099-01-01"}


def raw_paths(db: Path) -> list[tuple[str, str | None]]:
    """``(stored_path, subtitle_path)`` rows exactly as the file holds them."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [(r[0], r[1]) for r in con.execute(
            "SELECT stored_path, subtitle_path FROM videos ORDER BY video_id").fetchall()]
    finally:
        con.close()


def test_a_relative_media_dir_is_stored_absolute_and_found_from_anywhere(
    media_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest … --media-dir media`` run in one folder, ``status`` and the store read from
    another: the rows hold absolute paths to files that exist."""
    work = tmp_path / "work"
    (work / "lib").mkdir(parents=True)
    shutil.copy(media_dir / "bars.mp4", work / "lib" / "bars.mp4")
    (work / "lib" / "bars.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n")
    (work / "lib" / "m.yaml").write_text(yaml.safe_dump({"sources": [
        {"path": "bars.mp4", "subtitles": "bars.srt", **LICENCE}]}))
    monkeypatch.chdir(work)
    result = CliRunner().invoke(app, ["ingest", "lib/m.yaml", "--db", "data/nf.duckdb",
                                      "--media-dir", "media"])
    assert result.exit_code == 0, result.output
    [(stored, subtitle)] = raw_paths(work / "data" / "nf.duckdb")
    assert stored.startswith(f"{work}/media/") and Path(stored).is_file()
    assert subtitle is not None and subtitle.startswith(f"{work}/media/")
    monkeypatch.chdir(tmp_path)
    with Store(Path("work/data/nf.duckdb"), read_only=True) as store:
        [video] = store.videos()
    assert video.stored_path == stored and Path(video.stored_path).is_file()


def old_store(db: Path, kept: str, subtitle: str | None = None) -> None:
    """A store as an older needleforge left it: the video's path as it was given."""
    with Store(db) as store:
        store.upsert_videos([make_video()])
    con = duckdb.connect(str(db))
    con.execute("UPDATE videos SET stored_path = ?, subtitle_path = ?", [kept, subtitle])
    con.close()


def test_an_older_store_with_working_folder_paths_is_read_and_mended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths an older ingest kept relative to its working folder: read from that folder they
    are found (read-only too); opening for writing there rewrites them absolute, after which
    any folder finds them."""
    project = tmp_path / "project"
    media = project / "data" / "media" / "aa"
    media.mkdir(parents=True)
    (media / "a.mp4").write_bytes(b"video")
    (media / "a.srt").write_text("1\n")
    db = project / "data" / "db" / "nf.duckdb"
    db.parent.mkdir()
    old_store(db, "data/media/aa/a.mp4", "data/media/aa/a.srt")
    monkeypatch.chdir(project)
    with Store(db, read_only=True) as store:
        [video] = store.videos()
    assert video.stored_path == str(media / "a.mp4")
    assert raw_paths(db) == [("data/media/aa/a.mp4", "data/media/aa/a.srt")]  # untouched
    Store(db).close()  # what any writing command does first
    assert raw_paths(db) == [(str(media / "a.mp4"), str(media / "a.srt"))]
    monkeypatch.chdir(tmp_path)
    with Store(db, read_only=True) as store:
        assert store.videos()[0].subtitle_path == str(media / "a.srt")


def test_an_older_row_found_nowhere_names_the_path_tried_beside_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a folder where the old relative path leads nowhere, the row is read relative
    to the store file (the path an error then names, absolute) and left as it was."""
    db = tmp_path / "store" / "nf.duckdb"
    db.parent.mkdir()
    old_store(db, "media/aa/gone.mp4")
    monkeypatch.chdir(tmp_path)
    with Store(db) as store:
        [video] = store.videos()
    assert video.stored_path == str(tmp_path / "store" / "media" / "aa" / "gone.mp4")
    assert raw_paths(db) == [("media/aa/gone.mp4", None)]


def test_a_row_relative_to_the_store_file_is_found_first(tmp_path: Path) -> None:
    """A store moved with its media (relative rows, no working folder that fits)."""
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "a.mp4").write_bytes(b"video")
    paths = StorePaths.of(tmp_path / "nf.duckdb")
    assert paths.from_row("media/a.mp4") == str(tmp_path / "media" / "a.mp4")
    assert paths.legacy_fixes("media/a.mp4") == str(tmp_path / "media" / "a.mp4")
    assert paths.legacy_fixes(str(tmp_path / "media" / "a.mp4")) is None
    assert paths.to_row(str(tmp_path / "x" / ".." / "media" / "a.mp4")) == \
        str(tmp_path / "media" / "a.mp4")


def test_reingesting_records_where_a_moved_copy_is_now(tmp_path: Path) -> None:
    """The stored copy is the one thing a re-ingest into another media folder moves."""
    db = tmp_path / "nf.duckdb"
    video = make_video()
    moved = dataclasses.replace(video, stored_path=str(tmp_path / "new" / "m.mp4"))
    with Store(db) as store:
        store.upsert_videos([video])
        assert store.upsert_videos([moved]) == 0
        assert store.videos()[0].stored_path == str(tmp_path / "new" / "m.mp4")


def test_a_project_moved_whole_finds_its_content_addressed_media(tmp_path: Path) -> None:
    """The store and its media moved together (a renamed project folder, a DVC stage's store
    restored into another checkout): the stale absolute rows are found by their hashed names
    beside the store; a copy of the store file alone still reads the absolute rows."""
    sha = "ab" * 32
    old = tmp_path / "old" / "data"
    (old / "media" / "ab").mkdir(parents=True)
    (old / "media" / "ab" / f"{sha}.mp4").write_bytes(b"video")
    db = old / "db" / "nf.duckdb"
    db.parent.mkdir()
    with Store(db) as store:
        store.upsert_videos([dataclasses.replace(
            make_video(), stored_path=str(old / "media" / "ab" / f"{sha}.mp4"))])
    copy = tmp_path / "scratch" / "copy.duckdb"
    copy.parent.mkdir()
    shutil.copy(db, copy)
    with Store(copy, read_only=True) as store:
        assert store.videos()[0].stored_path == str(old / "media" / "ab" / f"{sha}.mp4")
    (tmp_path / "old").rename(tmp_path / "new")
    new = tmp_path / "new" / "data"
    with Store(new / "db" / "nf.duckdb", read_only=True) as store:
        assert store.videos()[0].stored_path == str(new / "media" / "ab" / f"{sha}.mp4")
    gone = StorePaths.of(new / "db" / "nf.duckdb")
    assert gone.from_row(str(old / "media" / "ab" / "bars.mp4")) == \
        str(old / "media" / "ab" / "bars.mp4")  # not a hashed name: not searched for
