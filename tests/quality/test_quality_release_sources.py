"""Release-side facts the GX suites check: source licences, videos, sources listed, needles.

Frame-level (pandas only, fast); the end-to-end test runs the suites themselves and checks
the failing expectations by name.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from needleforge.quality.release_frame import ReleaseContext, release_frame, sources_frame

DAY = dt.date(2030, 6, 1)
GOOD = {"video_id": "v1", "sha256": "a" * 64, "rights_holder": "Studio", "licence_id": "L-1",
        "scope": ["benchmark", "research"], "valid_until": "2030-06-01"}


def test_sources_frame_days_left_and_missing_scopes() -> None:
    rows = [GOOD, {**GOOD, "video_id": "v2", "valid_until": "2030-05-31"},
            {**GOOD, "video_id": "v3", "scope": ["research"]},
            {**GOOD, "video_id": "v4", "valid_until": "someday"}, "not an object"]
    frame = sources_frame(rows, day=DAY, scopes=["benchmark"])
    days = frame["licence_days_left"].tolist()
    assert days[:3] == [0, -1, 0]  # valid on its last day; expired the day before
    assert frame["missing_scopes"].tolist()[:3] == ["", "", "benchmark"]
    assert frame["licence_days_left"].isna().tolist()[3:] == [True, True]


def _choice(i: int, **extra: object) -> dict[str, object]:
    options = ["a", "b", "c", "d"]
    return {"question_id": "s1", "family": "vnbench", "task": "ret_edit1", "bucket": "short",
            "needle_type": "subtitle_edit", "n_needles": 1, "question": "?",
            "video": "videos/s1.mp4", "duration_s": 10.0,
            "options": options[-i:] + options[:-i] if i else options,
            "answer_index": i, "try": i, "needle_spans": [[2.0, 3.0]],
            "source_video_ids": ["v1"], **extra}


def test_release_frame_checks_videos_sources_and_needles(tmp_path: Path) -> None:
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "s1.mp4").write_bytes(b"x")
    ok = [_choice(i) for i in range(4)]
    ctx = ReleaseContext(root=tmp_path, video_families=frozenset({"vnbench"}),
                         licensed=frozenset({"v1"}))
    frame = release_frame(ok, context=ctx)
    assert frame["sample_letters"].tolist() == ["ABCD"] * 4
    assert frame["video_ok"].tolist() == [True] * 4
    assert frame["n_unlicensed_sources"].tolist() == [0] * 4
    assert frame["needle_count_gap"].tolist() == [0] * 4
    assert frame["needle_overrun_s"].tolist() == [-7.0] * 4
    bad = [_choice(0, video="videos/gone.mp4"), _choice(1, source_video_ids=["v9"]),
           _choice(2, n_needles=2), _choice(3, needle_spans=[[9.5, 12.0]]),
           _choice(0, video="../../etc/passwd")]
    frame = release_frame(bad, context=ctx)
    assert frame["video_ok"].tolist() == [False, True, True, True, False]
    assert frame["n_unlicensed_sources"].tolist() == [0, 1, 0, 0, 0]
    assert frame["needle_count_gap"].tolist() == [0, 0, 1, 0, 0]
    assert frame["needle_overrun_s"].tolist()[3] == 2.0
    # Without a context the columns stay null: nothing is checked, nothing fails.
    assert release_frame(ok)["video_ok"].isna().all()
