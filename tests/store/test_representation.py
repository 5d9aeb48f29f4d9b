"""Storing a video's representation: round trip, replacement as one unit, migration v1 → v2."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from needleforge.errors import StoreError
from needleforge.records import (
    Box,
    ObjectAttributes,
    ObjectTrack,
    Representation,
    Scene,
    SceneTag,
    TimedBox,
    object_id_for,
    scene_id_for,
)
from needleforge.store import SCHEMA_VERSION, Store
from tests.store.test_store import make_video, store_at_version


def make_representation(
    video_id: str, n_scenes: int = 2, config_hash: str = "h1"
) -> Representation:
    scenes = tuple(
        Scene(scene_id=scene_id_for(video_id, i), video_id=video_id, index=i, start_s=i * 5.0,
              end_s=(i + 1) * 5.0, n_frames=125, subtitle_text=f"line {i}")
        for i in range(n_scenes)
    )
    first = scenes[0].scene_id
    obj = ObjectTrack(
        object_id=object_id_for(first, 0), scene_id=first, index=0, tag="cat", start_s=0.5,
        end_s=4.5, visible_s=4.0, mean_area_frac=0.1, mean_score=0.8,
        boxes=tuple(TimedBox(t_s=0.5 + k, box=Box(0.1, 0.2, 0.3, 0.3)) for k in range(5)),
        attributes=ObjectAttributes(colour="grey", position="left", size_rank=1),
        referring_expression="the cat", backend="embedded", model_version="m1",
    )
    tags = (SceneTag(first, "cat", 0.9, "embedded", "m1"),
            SceneTag(first, "tabby cat", 0.4, "embedded", "m1"))
    return Representation(video_id=video_id, scenes=scenes, tags=tags, objects=(obj,),
                          scene_detector="content", config_hash=config_hash)


def test_roundtrip_and_replace(tmp_path: Path) -> None:
    video = make_video()
    with Store(tmp_path / "nf.duckdb") as store:
        store.upsert_videos([video])
        rep = make_representation(video.video_id)
        store.record_representation(rep)
        store.record_representation(rep)  # a rerun replaces, never duplicates
        assert store.scenes() == list(rep.scenes)
        assert store.objects() == list(rep.objects)
        assert store.scene_tags() == list(rep.tags)
        assert store.representation_hashes() == {video.video_id: "h1"}
        smaller = dataclasses.replace(make_representation(video.video_id, n_scenes=1,
                                                          config_hash="h2"), objects=())
        store.record_representation(smaller)
        counts = store.counts()
        assert (counts["scenes"], counts["objects"], counts["object_boxes"]) == (1, 0, 0)
        assert store.representation_hashes() == {video.video_id: "h2"}


def test_unknown_video_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "nf.duckdb") as store:
        with pytest.raises(StoreError, match="video vdeadbeef is not ingested"):
            store.record_representation(make_representation("vdeadbeef"))
        assert store.counts()["scenes"] == 0


def test_representation_checks_scene_links() -> None:
    rep = make_representation("vabc")
    with pytest.raises(ValueError, match="unknown scenes"):
        dataclasses.replace(rep, scenes=rep.scenes[1:])


def test_version_1_store_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    store_at_version(db, 1)
    with pytest.raises(StoreError, match="needs migrating"):
        Store(db, read_only=True)
    with Store(db) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.counts()["scenes"] == 0


def test_version_3_store_without_target_ids_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "v3.duckdb"
    store_at_version(db, 3, edit=lambda sql: sql.replace("target_id       VARCHAR,", ""))
    with Store(db) as store:
        assert store.schema_version == SCHEMA_VERSION
        columns = [r[0] for r in store.query(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'montage_segments'")]
    assert "target_id" in columns
