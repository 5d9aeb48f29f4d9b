"""Scenes built from any cut list tile the video (property tests) and carry frame counts."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.scenes import check_tiling, frames_between, scenes_from_bounds, tile_cuts

ends = st.floats(min_value=1e-3, max_value=36_000, allow_nan=False, allow_infinity=False)
cut_values = st.floats(min_value=-100, max_value=40_000, allow_nan=False, allow_infinity=False)


@given(cuts=st.lists(cut_values, max_size=60), end_s=ends)
def test_any_cut_list_tiles_zero_to_end(cuts: list[float], end_s: float) -> None:
    bounds = tile_cuts(cuts, end_s=end_s)
    assert bounds[0][0] == 0.0
    assert bounds[-1][1] == round(end_s, 6)
    for (_, end), (start, _) in itertools.pairwise(bounds):
        assert end == start  # contiguous: no gap, no overlap
    assert all(start < end for start, end in bounds)
    inside = {round(c, 6) for c in cuts if 0 < round(c, 6) < round(end_s, 6)}
    assert {start for start, _ in bounds[1:]} == inside
    scenes = scenes_from_bounds(bounds, video_id="vfeed", fps=25.0)
    check_tiling(scenes, end_s=end_s)
    assert all(s.n_frames >= 1 for s in scenes)


@given(cuts=st.lists(st.integers(min_value=1, max_value=2999), max_size=40, unique=True))
def test_frame_counts_add_up_when_cuts_sit_on_frames(cuts: list[int]) -> None:
    fps, n_frames = 30.0, 3000
    bounds = tile_cuts([c / fps for c in cuts], end_s=n_frames / fps)
    scenes = scenes_from_bounds(bounds, video_id="vfeed", fps=fps)
    assert sum(s.n_frames for s in scenes) == n_frames


def test_no_cuts_gives_one_scene() -> None:
    assert tile_cuts([], end_s=12.5) == [(0.0, 12.5)]


def test_cuts_are_sorted_deduplicated_and_clipped() -> None:
    assert tile_cuts([3.0, -1.0, 0.0, 1.0, 3.0, 5.0, 9.0], end_s=5.0) == [
        (0.0, 1.0), (1.0, 3.0), (3.0, 5.0)
    ]


@pytest.mark.parametrize("end_s", [0.0, -1.0, math.inf, math.nan])
def test_bad_end_is_refused(end_s: float) -> None:
    with pytest.raises(ValueError, match="end_s"):
        tile_cuts([1.0], end_s=end_s)


def test_nan_cut_is_refused() -> None:
    with pytest.raises(ValueError, match="not a number"):
        tile_cuts([math.nan], end_s=2.0)


def test_gaps_are_refused_by_scenes_from_bounds() -> None:
    with pytest.raises(ValueError, match="must tile"):
        scenes_from_bounds([(0.0, 1.0), (1.5, 2.0)], video_id="vfeed", fps=25.0)


def test_check_tiling_names_the_bad_scene() -> None:
    scenes = scenes_from_bounds([(0.0, 1.0), (1.0, 2.0)], video_id="vfeed", fps=25.0)
    check_tiling(scenes, end_s=2.0)
    with pytest.raises(ValueError, match=r"vfeed-s0001: ends at 2\.0, the video at 3\.0"):
        check_tiling(scenes, end_s=3.0)
    with pytest.raises(ValueError, match="no scenes"):
        check_tiling([], end_s=3.0)


def test_frames_between_counts_a_sliver_as_one() -> None:
    assert frames_between(0.0, 1.0, fps=25.0) == 25
    assert frames_between(1.0, 1.001, fps=25.0) == 1
    with pytest.raises(ValueError, match="fps = 0"):
        frames_between(0.0, 1.0, fps=0)
