"""NeMo plan records and their storage: tiling checks, answers from the plan, round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.records import Montage, Question, Segment, Verification, bucket_for
from needleforge.store import Store


def plan(durations: list[float], target_at: int = 1, mid: str = "m1") -> Montage:
    clock, segments = 0.0, []
    for i, d in enumerate(durations):
        target = i == target_at
        segments.append(Segment(position=i, video_id="v1", scene_id=f"v1-s{i:04d}",
                                src_start_s=10.0, src_end_s=10.0 + d, montage_start_s=clock,
                                role="target" if target else "negative",
                                needle_index=0 if target else None))
        clock += d
    return Montage(montage_id=mid, bucket=bucket_for(clock), segments=tuple(segments), seed=7)


def test_buckets_and_answers() -> None:
    assert [bucket_for(d) for d in (149.99, 150.0, 900.0, 900.01)] == [
        "short", "medium", "medium", "long"]
    montage = plan([5.0, 4.5, 6.0])
    assert montage.duration_s == 15.5 and montage.target_spans() == [(5.0, 9.5)]


def test_tiling_and_bucket_are_checked() -> None:
    good = plan([5.0, 4.5])
    gap = Segment(position=1, video_id="v1", scene_id="x", src_start_s=0, src_end_s=1,
                  montage_start_s=5.5, role="negative")
    with pytest.raises(ValueError, match="must tile the montage"):
        Montage(montage_id="m", bucket="short", segments=(good.segments[0], gap), seed=0)
    with pytest.raises(ValueError, match="not in bucket 'long'"):
        Montage(montage_id="m", bucket="long", segments=good.segments, seed=0)
    with pytest.raises(ValueError, match="targets carry one"):
        Segment(position=0, video_id="v", scene_id="s", src_start_s=0, src_end_s=1,
                montage_start_s=0, role="target")


def test_store_roundtrip_is_idempotent(tmp_path: Path) -> None:
    montage = plan([5.0, 4.5, 6.0])
    question = Question(question_id="q1", montage_id="m1", needle_type="object",
                        target_scene_id="v1-s0001", target_object_id="v1-s0001-o000",
                        description="the white cat", text="When does the white cat appear?",
                        template_id="object/when-appear", backend="embedded", model_version="1")
    verdict = Verification("q1", "embedded", "1", True, "unique among 2 negatives")
    with Store(tmp_path / "nf.duckdb") as store:
        for _ in range(2):
            store.record_generation([montage], [question], [verdict])
        assert store.montages() == [montage]
        assert store.questions() == [question]
        assert store.verifications() == [verdict]
        counts = store.counts()
        assert (counts["montages"], counts["montage_segments"], counts["questions"]) == (1, 3, 1)


def test_replacing_a_bucket_drops_stale_plans(tmp_path: Path) -> None:
    old, new = plan([5.0, 4.5, 6.0], mid="m-old"), plan([5.0, 7.0], mid="m-new")
    question = Question(question_id="q-old", montage_id="m-old", needle_type="scene",
                        target_scene_id="v1-s0001", target_object_id=None,
                        description="a red room", text="When is the red room shown?",
                        template_id="scene/x", backend="embedded", model_version="1")
    with Store(tmp_path / "nf.duckdb") as store:
        store.record_generation([old], [question],
                                [Verification("q-old", "embedded", "1", True, "unique")])
        store.record_generation([new], [], replace_buckets=["short"])
        assert [m.montage_id for m in store.montages()] == ["m-new"]
        counts = store.counts()
        assert (counts["questions"], counts["verifications"]) == (0, 0)
        assert counts["montage_segments"] == 2
        store.record_generation([], [], replace_buckets=["medium"])
        assert [m.montage_id for m in store.montages()] == ["m-new"]
