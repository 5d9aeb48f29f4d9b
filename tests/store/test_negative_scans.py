"""Storing the negative check's scans: round trip, replacement, keys, refusals, migration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from needleforge.errors import StoreError
from needleforge.records import Box, SceneScan, Sighting
from needleforge.store import SCHEMA_VERSION, Store
from tests.store.test_representation import make_representation
from tests.store.test_store import make_video, store_at_version


def _scan(scene_id: str, key: str = "ssd@1 every 2 s", *labels: str) -> SceneScan:
    return SceneScan(scene_id, key, 3, tuple(
        Sighting(scene_id, label, 0.5 + i / 10, 1.0 + i, Box(0.1, 0.1, 0.2, 0.2))
        for i, label in enumerate(sorted(labels))))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    video = make_video()
    with Store(tmp_path / "nf.duckdb") as opened:
        opened.upsert_videos([video])
        opened.record_representation(make_representation(video.video_id, n_scenes=3))
        yield opened


def test_scans_round_trip_with_and_without_sightings(store: Store) -> None:
    a, b, _ = (s.scene_id for s in store.scenes())
    scans = [_scan(a, "k", "cat", "cup"), _scan(b, "k")]  # b: looked at, nothing seen
    assert store.record_negative_scans(scans) == 2
    assert store.negative_scans("k") == scans
    assert store.negative_scans("other") == []


def test_a_rescan_replaces_and_other_keys_stay(store: Store) -> None:
    a = store.scenes()[0].scene_id
    store.record_negative_scans([_scan(a, "k", "cat"), _scan(a, "k2", "dog")])
    store.record_negative_scans([_scan(a, "k")])
    assert store.negative_scans("k") == [_scan(a, "k")]
    assert store.negative_scans("k2") == [_scan(a, "k2", "dog")]
    assert len(store.negative_scans()) == 2


def test_scans_of_unknown_scenes_are_refused_whole(store: Store) -> None:
    a = store.scenes()[0].scene_id
    with pytest.raises(StoreError, match=r"unknown scene.*nope.*nothing was written"):
        store.record_negative_scans([_scan(a, "k", "cat"), _scan("nope", "k")])
    assert store.negative_scans() == []


def test_representing_a_video_again_drops_its_scans(store: Store) -> None:
    video_id = store.scenes()[0].video_id
    store.record_negative_scans([_scan(s.scene_id, "k", "cat") for s in store.scenes()])
    store.record_representation(make_representation(video_id, n_scenes=2))
    assert store.negative_scans() == []
    assert store.counts()["negative_sightings"] == 0


@pytest.mark.parametrize(("build", "message"), [
    (lambda: SceneScan("s1", "k", -1, ()), "n_frames = -1"),
    (lambda: _scan("s1", "k", "cat", "cat"), "one sighting per label"),
    (lambda: SceneScan("s1", "k", 1, (Sighting("s2", "cat", 0.5, 1.0, Box(0, 0, 1, 1)),)),
     r"holds sightings of \['s2'\]"),
    (lambda: Sighting("s1", "cat", 1.5, 1.0, Box(0, 0, 1, 1)), "score = 1.5"),
    (lambda: Sighting("s1", "cat", 0.5, float("nan"), Box(0, 0, 1, 1)), "t_s = nan"),
    (lambda: Sighting("s1", " ", 0.5, 1.0, Box(0, 0, 1, 1)), "empty label"),
])
def test_bad_scans_are_refused(build: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()  # type: ignore[operator]


def test_version_4_store_gets_the_scan_tables(tmp_path: Path) -> None:
    db = tmp_path / "v4.duckdb"
    store_at_version(db, 4)
    with Store(db) as store:
        assert store.schema_version == SCHEMA_VERSION >= 5
        assert store.counts()["negative_scans"] == 0
