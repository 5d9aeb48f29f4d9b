"""The ingest flow on a real (temporary) Prefect API and a real DuckDB store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from flows.ingest import ingest_flow
from needleforge.store import Store


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_ingest_flow_is_idempotent(media_dir: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("bars.mp4", "blue.mp4", "notes.mp4"):
        shutil.copy(media_dir / name, lib / name)
    licence = {"program": "p", "rights_holder": "R", "licence_id": "CC0-1.0",
               "scope": ["benchmark"], "valid_until": "2099-01-01"}
    manifest = lib / "manifest.yaml"
    manifest.write_text(yaml.safe_dump({"sources": [
        {"path": "bars.mp4", **licence},
        {"path": "notes.mp4", **licence},
        {"path": "blue.mp4", **licence, "valid_until": "2001-01-01"},
    ]}))
    db = tmp_path / "nf.duckdb"
    first = ingest_flow(manifest, db)
    failures = first.pop("failures")
    assert first == {"videos": 1, "rejections": 2, "new_videos": 1, "new_rejections": 2}
    assert [(f["stage"], f["reason"], f["new"]) for f in failures] == [
        ("ingest", "not_video", True), ("ingest", "expired", True)]
    assert "manifest.yaml row 2 (notes.mp4)" in failures[0]["item"]
    second = ingest_flow(manifest, db)
    assert [f["new"] for f in second.pop("failures")] == [False, False]  # refused before
    assert second == {"videos": 1, "rejections": 2, "new_videos": 0, "new_rejections": 0}
    with Store(db) as store:
        counts = store.counts()
        assert (counts["videos"], counts["ingest_rejections"]) == (1, 2)
        assert sorted(r.reason for r in store.rejections()) == ["expired", "not_video"]
