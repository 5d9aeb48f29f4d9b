"""Authorized ingest on real files, real PyAV probing and a real DuckDB store.

Bad inputs tried here (each must be refused with a message naming the row and the problem,
while the good rows still go in): missing file, zero-length file, truncated (corrupt) mp4,
a text file named .mp4, an audio-only file, a directory, unknown row keys, a row without a
licence, an expired licence, a licence without the required scope, duplicate rows, duplicate
content under another name, ``../`` escapes and a symlink escape, bad dates, missing and
non-UTF-8 subtitle sidecars. Whole-manifest problems (non-UTF-8, unknown top-level keys, bad
YAML, wrong shape, unknown CSV column) raise and leave the store exactly as it was.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from needleforge.errors import ManifestError
from needleforge.ingest import ingest
from needleforge.params import IngestParams
from needleforge.records import IngestRejection
from needleforge.store import Store

TODAY = dt.date(2026, 6, 1)
PARAMS = IngestParams(as_of=TODAY, required_scopes=["benchmark"])


def licence(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "program": "test-program",
        "rights_holder": "Test Studio",
        "licence_id": "CC-BY-4.0",
        "scope": ["benchmark", "research"],
        "valid_until": "2030-01-01",
        "published_at": "2025-01-01",
    }
    row.update(overrides)
    return row


def write_manifest(folder: Path, rows: list[dict[str, Any]], name: str = "manifest.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"version": 1, "sources": rows}, sort_keys=False))
    return path


@pytest.fixture()
def library(tmp_path: Path, media_dir: Path) -> Path:
    """A source folder holding copies of every tiny clip, so tests may add and break files."""
    lib = tmp_path / "library"
    shutil.copytree(media_dir, lib)
    return lib


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    with Store(db) as store:
        return {
            "videos": store.query("SELECT * FROM videos ORDER BY video_id"),
            "rejections": store.query("SELECT * FROM ingest_rejections ORDER BY rejection_id"),
        }


def by_row(rejections: tuple[IngestRejection, ...]) -> dict[int, IngestRejection]:
    return {r.row: r for r in rejections}


def test_mixed_manifest_ingests_good_rows_and_refuses_each_bad_one(
    library: Path, tmp_path: Path
) -> None:
    (library / "sub.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello\n")
    (library / "latin1.srt").write_bytes("1\n00:00:00,000 --> 00:00:01,000\ncaf\xe9\n".encode(
        "latin-1"))
    (library / "folder.mp4").mkdir()
    (tmp_path / "outside.mp4").write_bytes((library / "blue.mp4").read_bytes())
    (library / "link.mp4").symlink_to(tmp_path / "outside.mp4")
    shutil.copy(library / "bars.mp4", library / "bars-copy.mp4")
    rows = [
        {"path": "bars.mp4", **licence(), "subtitles": "sub.srt"},         # 1 ok
        {"path": "blue.mp4", **licence(title="Blue")},                      # 2 ok
        {"path": "gone.mp4", **licence()},                                  # 3 missing
        {"path": "empty.mp4", **licence()},                                 # 4 empty
        {"path": "truncated.mp4", **licence()},                             # 5 corrupt
        {"path": "notes.mp4", **licence()},                                 # 6 text
        {"path": "tone.m4a", **licence()},                                  # 7 audio only
        {"path": "bars.mp4", **licence(colour="red")},                      # 8 unknown key
        {"path": "rotated.mp4", **licence(licence_id=None)},                # 9 no licence
        {"path": "rotated.mp4", **licence(valid_until="2026-05-31")},       # 10 expired
        {"path": "rotated.mp4", **licence(scope=["research"])},             # 11 scope
        {"path": "blue.mp4", **licence()},                                  # 12 dup row
        {"path": "bars-copy.mp4", **licence()},                             # 13 dup content
        {"path": "../outside.mp4", **licence()},                            # 14 escape
        {"path": "link.mp4", **licence()},                                  # 15 symlink escape
        {"path": "rotated.mp4", **licence(valid_until="soon")},             # 16 bad date
        {"path": "rotated.mp4", **licence(), "subtitles": "nope.srt"},      # 17 missing subs
        {"path": "rotated.mp4", **licence(), "subtitles": "latin1.srt"},    # 18 latin-1 subs
        {"path": "folder.mp4", **licence()},                                # 19 directory
    ]
    manifest = write_manifest(library, rows)
    result = ingest(manifest, media_dir=tmp_path / "media", params=PARAMS)

    assert [v.source_path for v in result.videos] == [
        str(library / "bars.mp4"), str(library / "blue.mp4")]
    refused = by_row(result.rejections)
    expected = {
        3: ("missing_file", "not found"),
        4: ("empty_file", "empty"),
        5: ("not_video", "not a readable media file"),
        6: ("not_video", "not a readable media file"),
        7: ("no_video_stream", "no video stream"),
        8: ("invalid_row", "unknown key(s) ['colour']"),
        9: ("unauthorized", "missing required key(s) ['licence_id']"),
        10: ("expired", "expired on 2026-05-31"),
        11: ("out_of_scope", "requires ['benchmark']"),
        12: ("duplicate_row", "same file as row 2"),
        13: ("duplicate_content", "same content"),
        14: ("path_escape", "outside the manifest folder"),
        15: ("path_escape", "outside the manifest folder"),
        16: ("invalid_row", "valid_until = 'soon' is not a date"),
        17: ("bad_subtitles", "nope.srt not found"),
        18: ("bad_subtitles", "not UTF-8"),
        19: ("not_video", "is a directory"),
    }
    assert set(refused) == set(expected)
    for row, (reason, words) in expected.items():
        assert refused[row].reason == reason, (row, refused[row])
        assert words in refused[row].detail, (row, refused[row].detail)
        assert refused[row].detail.startswith(f"row {row} ("), refused[row].detail

    bars = result.videos[0]
    assert bars.media.has_audio and bars.media.width == 160 and bars.media.fps == 10
    assert bars.subtitle_path is not None and Path(bars.subtitle_path).read_text().endswith(
        "Hello\n")
    assert Path(bars.stored_path).read_bytes() == (library / "bars.mp4").read_bytes()
    assert Path(bars.stored_path).name == f"{bars.sha256}.mp4"
    assert result.videos[1].title == "Blue"


def test_rerun_changes_nothing(library: Path, tmp_path: Path) -> None:
    manifest = write_manifest(library, [
        {"path": "bars.mp4", **licence()},
        {"path": "rotated.mp4", **licence()},
        {"path": "gone.mp4", **licence()},
    ])
    db = tmp_path / "nf.duckdb"
    media = tmp_path / "media"
    for expected_new in ((2, 1), (0, 0)):
        result = ingest(manifest, media_dir=media, params=PARAMS)
        with Store(db) as store:
            assert store.record_ingest(result.videos, result.rejections) == expected_new
        if expected_new != (0, 0):
            first = snapshot(db)
    assert snapshot(db) == first
    stored = sorted(p.name for p in media.rglob("*") if p.is_file())
    assert len(stored) == 2 and not any(name.startswith(".incoming") for name in stored)
    with Store(db) as store:
        rotated = [v for v in store.videos() if v.source_path.endswith("rotated.mp4")]
    assert rotated[0].media.rotation_deg == 90


def test_renewed_licence_updates_known_video(library: Path, tmp_path: Path) -> None:
    db = tmp_path / "nf.duckdb"
    for valid_until in ("2027-01-01", "2031-12-31"):
        manifest = write_manifest(library, [{"path": "blue.mp4",
                                             **licence(valid_until=valid_until)}])
        result = ingest(manifest, media_dir=tmp_path / "media", params=PARAMS)
        with Store(db) as store:
            store.record_ingest(result.videos, result.rejections)
    with Store(db) as store:
        (video,) = store.videos()
    assert video.authorization.valid_until == dt.date(2031, 12, 31)


def test_csv_manifest(library: Path, tmp_path: Path) -> None:
    (library / "m.csv").write_text(
        "path,program,rights_holder,licence_id,scope,valid_until\n"
        "bars.mp4,p,Studio,CC0-1.0,benchmark;research,2030-01-01\n"
        "blue.mp4,p,Studio,CC0-1.0,research,2030-01-01\n"
        "rotated.mp4,p,Studio,CC0-1.0,benchmark,2030-01-01,extra-cell\n"
    )
    result = ingest(library / "m.csv", media_dir=tmp_path / "media", params=PARAMS)
    assert [Path(v.source_path).name for v in result.videos] == ["bars.mp4"]
    assert result.videos[0].authorization.scope == ("benchmark", "research")
    refused = by_row(result.rejections)
    assert refused[2].reason == "out_of_scope"
    assert refused[3].reason == "invalid_row" and "more cells than the header" in refused[3].detail


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("m.yaml", b"version: 1\nsources: []\nowner: me\n",
         "unknown top-level key(s) ['owner']"),
        ("m.yaml", "sources:\n  - path: caf\xe9.mp4\n".encode("latin-1"),
         "not UTF-8 text (byte 0xe9 on line 2)"),
        ("m.yaml", b"sources: [unclosed\n", "not valid YAML"),
        ("m.yaml", b"- just\n- a list\n", "expected a mapping"),
        ("m.yaml", b"version: 7\nsources: []\n", "version = 7 unsupported"),
        ("m.csv", b"path,program,owner\nx.mp4,p,me\n", "unknown column(s) ['owner']"),
        ("m.txt", b"path: x\n", "unknown manifest format '.txt'"),
    ],
)
def test_whole_manifest_errors_leave_the_store_untouched(
    library: Path, tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    db = tmp_path / "nf.duckdb"
    good = ingest(write_manifest(library, [{"path": "blue.mp4", **licence()}]),
                  media_dir=tmp_path / "media", params=PARAMS)
    with Store(db) as store:
        store.record_ingest(good.videos, good.rejections)
    before = snapshot(db)
    bad = library / name
    bad.write_bytes(content)
    with pytest.raises(ManifestError) as err:
        ingest(bad, media_dir=tmp_path / "media", params=PARAMS)
    assert str(bad) in str(err.value) and message in str(err.value)
    assert snapshot(db) == before


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="manifest not found"):
        ingest(tmp_path / "nope.yaml", media_dir=tmp_path / "media", params=PARAMS)


def test_failed_write_rolls_back(library: Path, tmp_path: Path) -> None:
    """A write that fails midway (a refusal with a NULL field) stores neither table."""
    db = tmp_path / "nf.duckdb"
    result = ingest(write_manifest(library, [{"path": "bars.mp4", **licence()}]),
                    media_dir=tmp_path / "media", params=PARAMS)
    broken = IngestRejection.__new__(IngestRejection)
    for field, value in {"rejection_id": "rX", "manifest_path": None, "row": 1,
                         "source_path": "x", "reason": "invalid_row", "detail": "d"}.items():
        object.__setattr__(broken, field, value)
    with Store(db) as store:
        with pytest.raises(Exception, match="NOT NULL"):
            store.record_ingest(result.videos, [broken])
        assert set(store.counts().values()) == {0}
