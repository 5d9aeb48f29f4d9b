"""Short montage plans: tiling, depth, the keyframe grid, skips with reasons, stable ids."""

from __future__ import annotations

import random
import re

import pytest
from nemo_cases import make_scene, make_track, params, tile

from needleforge.nemo import PlanSkip, Target, plan_short_montage, question_id_for
from needleforge.records import Montage


def _plan(negative_durations: list[float], *, seed: int = 0, **overrides: object
          ) -> tuple[Target, Montage | PlanSkip]:
    scenes = tile([10.0, *negative_durations], start_s=3.25)
    track = make_track(scenes[0], 0, "cat", start=scenes[0].start_s + 2.6,
                       end=scenes[0].start_s + 8.2)
    target = Target("object", scenes[0], track)
    plan = plan_short_montage(target, scenes[1:], params=params(**overrides),
                              rng=random.Random(seed))
    return target, plan


def test_plan_tiles_and_answers_where_the_target_segment_sits() -> None:
    _, plan = _plan([6.0] * 30, short_min_s=40.0, short_max_s=60.0)
    assert isinstance(plan, Montage)
    assert plan.bucket == "short" and 40.0 <= plan.duration_s <= 60.0
    clock = 0.0
    for segment in plan.segments:
        assert segment.montage_start_s == pytest.approx(clock)
        clock += segment.duration_s
    [target_segment] = [s for s in plan.segments if s.role == "target"]
    assert plan.target_spans() == [(target_segment.montage_start_s,
                                    target_segment.montage_end_s)]
    # track 5.85–11.45 s in a scene from 3.25 s: cut from 5.25 s (2 s keyframe) to 11.45 s
    assert (target_segment.src_start_s, target_segment.src_end_s) == pytest.approx((5.25, 11.45))
    assert target_segment.needle_index == 0
    for segment in plan.segments:
        if segment.role == "negative":
            assert segment.needle_index is None


def test_depth_varies_with_the_seed_and_repeats_with_it() -> None:
    depths = set()
    for seed in range(12):
        _, plan = _plan([5.0] * 12, seed=seed, short_min_s=30.0, short_max_s=60.0)
        _, again = _plan([5.0] * 12, seed=seed, short_min_s=30.0, short_max_s=60.0)
        assert isinstance(plan, Montage) and plan == again
        depths.add(next(s.position for s in plan.segments if s.role == "target"))
    assert len(depths) > 3


def test_too_few_negatives_is_a_skip_with_numbers() -> None:
    _, plan = _plan([3.0, 2.5], short_min_s=20.0)
    assert isinstance(plan, PlanSkip)
    assert plan.reason.startswith("too few negatives: 2 of 2 eligible fit, giving 11.70 s")
    assert "need >= 20.0 s" in plan.reason
    _, plan = _plan([30.0], short_min_s=20.0, min_negatives=2)
    assert isinstance(plan, PlanSkip) and ">= 2 negatives" in plan.reason


def test_negatives_that_would_overflow_the_short_bucket_are_passed_over() -> None:
    _, plan = _plan([200.0, 135.0, 8.0, 8.0, 8.0], short_min_s=20.0, short_max_s=30.0,
                    min_negatives=1)
    assert isinstance(plan, Montage) and plan.duration_s <= 30.0
    assert all(s.duration_s < 100 for s in plan.segments)


def test_a_target_longer_than_the_short_bucket_is_skipped() -> None:
    scenes = tile([145.0, 5.0, 5.0])
    plan = plan_short_montage(Target("scene", scenes[0]), scenes[1:], params=params(),
                              rng=random.Random(0))
    assert isinstance(plan, PlanSkip) and "leaves no room" in plan.reason


def test_foreign_negatives_are_refused() -> None:
    scenes = tile([8.0, 8.0])
    foreign = make_scene(1, 0.0, 8.0, video_id="vother")
    with pytest.raises(ValueError, match="another video"):
        plan_short_montage(Target("scene", scenes[0]), [foreign], params=params(),
                           rng=random.Random(0))


def test_ids_are_content_derived() -> None:
    _, plan = _plan([6.0] * 30)
    _, same = _plan([6.0] * 30)
    _, other = _plan([6.0] * 30, seed=1)
    assert isinstance(plan, Montage) and isinstance(same, Montage)
    assert isinstance(other, Montage)
    assert re.fullmatch(r"m[0-9a-f]{16}", plan.montage_id)
    assert plan.montage_id == same.montage_id != other.montage_id
    qid = question_id_for(plan.montage_id, needle_type="object", target_id="x",
                          template_id="object/spot")
    assert re.fullmatch(r"q[0-9a-f]{16}", qid)
    assert qid != question_id_for(plan.montage_id, needle_type="object", target_id="x",
                                  template_id="object/which-part")
