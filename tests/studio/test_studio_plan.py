"""Seeded plans: scenes tile the video, objects stay in frame, apart, and some are NeMo targets."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.errors import StudioError
from needleforge.studio.assets import BACKDROPS, CUTOUTS
from needleforge.studio.images import ImageBank, distinct_pairs
from needleforge.studio.plan import (
    FEATURED_AREA,
    PlanRequest,
    VideoPlan,
    pick_backdrops,
    plan_video,
    scene_lengths,
)

ALL_DISTINCT = frozenset(
    (i, j) for i in range(len(BACKDROPS)) for j in range(len(BACKDROPS)) if i != j
)


def _plan(seed: int, *, duration_s: float = 60.0, fps: float = 25.0) -> VideoPlan:
    request = PlanRequest(
        seed=seed,
        program="p",
        episode=1,
        duration_s=duration_s,
        min_scene_s=4.0,
        max_scene_s=12.0,
        fps=fps,
        width=640,
        height=360,
    )
    return plan_video(request, backdrops=BACKDROPS, cutouts=CUTOUTS, distinct=ALL_DISTINCT)


@given(
    n_frames=st.integers(1, 5000),
    min_frames=st.integers(1, 200),
    extra=st.integers(0, 300),
    seed=st.integers(0, 2**32),
)
@settings(max_examples=200, deadline=None)
def test_scene_lengths_tile_and_respect_bounds(
    n_frames: int, min_frames: int, extra: int, seed: int
) -> None:
    max_frames = min_frames + extra
    lengths = scene_lengths(
        random.Random(seed), n_frames=n_frames, min_frames=min_frames, max_frames=max_frames
    )
    assert sum(lengths) == n_frames
    assert all(length > 0 for length in lengths)
    # Every scene but the last is inside the bounds; the last fills what is left.
    assert all(min_frames <= length <= max_frames for length in lengths[:-1])


@pytest.mark.parametrize("seed", range(5))
def test_plan_scenes_tile_and_objects_stay_in_frame_and_apart(seed: int) -> None:
    plan = _plan(seed, fps=29.97)
    assert plan.scenes[0].start_frame == 0
    assert plan.scenes[-1].end_frame == plan.n_frames == round(60.0 * 29.97)
    for before, after in zip(plan.scenes, plan.scenes[1:], strict=False):
        assert before.end_frame == after.start_frame
        assert before.backdrop != after.backdrop
    for obj in plan.objects:
        scene = plan.scenes[obj.scene_index]
        assert scene.start_frame <= obj.start_frame < obj.end_frame <= scene.end_frame
        w, h = obj.size_px
        for frame in range(obj.start_frame, obj.end_frame):
            x, y = obj.position_at(frame)
            assert x >= 0 and y >= 0 and x + w <= plan.width and y + h <= plan.height
    for a in plan.objects:
        for b in plan.objects:
            if a.object_id < b.object_id and a.scene_index == b.scene_index:
                assert a.cutout.label != b.cutout.label
                for frame in range(max(a.start_frame, b.start_frame), a.end_frame):
                    if not b.visible_at(frame):
                        continue
                    (ax, ay), (bx, by) = a.position_at(frame), b.position_at(frame)
                    apart_x = ax + a.size_px[0] <= bx or bx + b.size_px[0] <= ax
                    apart_y = ay + a.size_px[1] <= by or by + b.size_px[1] <= ay
                    assert apart_x or apart_y


def test_position_follows_the_straight_path_exactly() -> None:
    plan = _plan(3)
    moving = [o for o in plan.objects if o.start_px != o.end_px]
    assert moving
    for obj in moving:
        assert obj.position_at(obj.start_frame) == obj.start_px
        assert obj.position_at(obj.end_frame) == obj.end_px  # where it would be at end_s
        mid = (obj.start_frame + obj.end_frame) // 2
        u = (mid - obj.start_frame) / (obj.end_frame - obj.start_frame)
        x = obj.start_px[0] + (obj.end_px[0] - obj.start_px[0]) * u
        assert abs(obj.position_at(mid)[0] - x) <= 0.5


def test_plans_offer_nemo_targets_and_small_or_brief_objects() -> None:
    """NeMo needs objects of 5-25 % area seen >= 4 s; others must be small or brief."""
    objects = [obj for seed in range(4) for obj in _plan(seed).objects]
    frame_area = 640 * 360
    areas = [o.size_px[0] * o.size_px[1] / frame_area for o in objects]
    seconds = [(o.end_frame - o.start_frame) / 25.0 for o in objects]
    targets = [a for a, s in zip(areas, seconds, strict=True) if 0.05 <= a <= 0.25 and s >= 4]
    others = [a for a, s in zip(areas, seconds, strict=True) if a < 0.05 or s < 4]
    assert len(targets) >= 8
    assert len(others) >= 8
    assert all(a <= FEATURED_AREA[1] + 0.01 for a in areas)
    assert {o.cutout.label for o in objects} == {c.label for c in CUTOUTS}


def test_same_request_same_plan_and_seed_changes_it() -> None:
    assert _plan(11) == _plan(11)
    assert _plan(11) != _plan(12)


def test_grey_textures_are_never_cut_together() -> None:
    """brick/grass/gravel/moon look alike to a content detector: no cut may join them."""
    bank = ImageBank(width=160, height=90)
    distinct = distinct_pairs([bank.backdrop(b) for b in BACKDROPS])
    names = [b.source.relpath.rsplit("/", 1)[-1] for b in BACKDROPS]
    grey = [names.index(n) for n in ("brick.png", "grass.png", "gravel.png", "moon.png")]
    assert not any((i, j) in distinct for i in grey for j in grey)
    picks = pick_backdrops(random.Random(0), n=300, n_choices=len(BACKDROPS), distinct=distinct)
    assert all((a, b) in distinct for a, b in itertools.pairwise(picks))


def test_pick_backdrops_refuses_a_backdrop_without_partner() -> None:
    with pytest.raises(StudioError, match="looks like every other backdrop"):
        pick_backdrops(random.Random(0), n=3, n_choices=2, distinct=frozenset())
