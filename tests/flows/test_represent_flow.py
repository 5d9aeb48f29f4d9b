"""The represent flow: per-video tasks on threads, the flow alone writes DuckDB."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.represent import represent_flow
from needleforge.store import Store
from tests.stages.test_represent_stage import clips, ingest_clips

__all__ = ["clips"]  # the module-scoped clip fixture, shared with the stage tests


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_represent_flow_resumes(clips: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    shutil.copytree(clips, lib)
    db = tmp_path / "nf.duckdb"
    ingest_clips(lib, [{"path": "cat.mp4"}, {"path": "black.mp4"}], db)
    assert represent_flow(db) == {"represented": 2, "skipped": 0, "failed": 0, "failures": [],
                                  "failed_videos": []}
    with Store(db) as store:
        counts = store.counts()
    assert counts["scenes"] == 3 and counts["objects"] >= 2
    assert represent_flow(db) == {"represented": 0, "skipped": 2, "failed": 0, "failures": [],
                                  "failed_videos": []}

