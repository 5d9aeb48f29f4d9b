"""Bad sources through the real ingest entry point (``ingest`` + ``Store.record_ingest``).

One case per corpus input (see ``corpus.INGEST_CASES``): each manifest holds a good row, the
bad row and a row already in the store. The bad row must be refused with its reason and a
detail naming the row's file and the problem (and that refusal stored), the good rows must
still go in, and every row stored before must still be there, unchanged. Odd but valid
inputs (variable frame rate, 1x1 and 7681x4321 frames, rotation metadata) must go in.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from needleforge.ingest import ingest
from needleforge.params import IngestParams
from needleforge.store import Store
from tests.badinputs.corpus import GOOD, GOOD2, INGEST_CASES, IngestCase, licence
from tests.badinputs.store_snapshot import assert_kept, snapshot

PARAMS = IngestParams(as_of=dt.date(2026, 6, 1), required_scopes=["benchmark"])


def _manifest(folder: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"version": 1, "sources": rows}, sort_keys=False))
    return path


def _run(manifest: Path, db: Path) -> None:
    result = ingest(manifest, media_dir=db.parent / "media", params=PARAMS)
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)


@pytest.fixture()
def seeded(corpus: Path, tmp_path: Path) -> Path:
    """A store that already holds GOOD2 (the "nothing stored is lost" baseline)."""
    db = tmp_path / "nf.duckdb"
    _run(_manifest(corpus, f"seed-{tmp_path.name}.yaml", [{"path": GOOD2, **licence()}]), db)
    return db


@pytest.mark.parametrize("case", INGEST_CASES, ids=[c.id for c in INGEST_CASES])
def test_bad_source_is_refused_by_name_and_the_rest_go_in(
    case: IngestCase, corpus: Path, seeded: Path
) -> None:
    before = snapshot(seeded)
    rows = [{"path": GOOD, **licence()}, {**licence(), **case.row},
            {"path": GOOD2, **licence()}]
    rows[1] = {k: v for k, v in rows[1].items() if v is not None}
    manifest = _manifest(corpus, f"manifest-{case.id}.yaml", rows)
    _run(manifest, seeded)
    after = snapshot(seeded)
    assert_kept(before, after)
    with Store(seeded, read_only=True) as store:
        names = {Path(v.source_path).name: v for v in store.videos()}
        refused = [r for r in store.rejections() if r.manifest_path == str(manifest.resolve())]
    assert {GOOD, GOOD2} <= set(names)
    if case.reason is None:
        assert not refused, refused
        assert Path(case.row["path"]).name in names
        return
    assert [(r.row, r.reason) for r in refused] == [(2, case.reason)]
    for text in case.says:
        assert text in refused[0].detail, (text, refused[0].detail)
    assert len(names) == 2  # nothing of the bad row was stored as a video


def test_odd_media_facts_are_recorded_exactly(corpus: Path, tmp_path: Path) -> None:
    rows = [{"path": p, **licence()} for p in
            ("vfr.mp4", "one_px.mp4", "huge_px.mp4", "rotated.mp4")]
    db = tmp_path / "nf.duckdb"
    _run(_manifest(corpus, f"odd-{tmp_path.name}.yaml", rows), db)
    with Store(db, read_only=True) as store:
        media = {Path(v.source_path).name: v.media for v in store.videos()}
    assert (media["one_px.mp4"].width, media["one_px.mp4"].height) == (1, 1)
    assert (media["huge_px.mp4"].width, media["huge_px.mp4"].height) == (7681, 4321)
    assert media["rotated.mp4"].rotation_deg in (90, -90, 270)
    vfr = media["vfr.mp4"]
    # 10 frames 0.1 s apart then 10 frames 0.25 s apart: the mean rate, not the first one.
    assert vfr.n_frames == 20 and 2.9 <= vfr.duration_s <= 3.6 and vfr.fps < 8
