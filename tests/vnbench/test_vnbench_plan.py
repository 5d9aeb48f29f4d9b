"""Haystacks and needle positions: whole seconds, inside the video, never overlapping."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.params import VNBenchParams
from needleforge.records import Authorization, MediaInfo, Video, video_id_for
from needleforge.vnbench.assets import ImageSet
from needleforge.vnbench.clips import ClipSet
from needleforge.vnbench.compose import Layout, compose_sample
from needleforge.vnbench.plan import edit_seconds, insert_points, pick_haystacks, place
from needleforge.vnbench.records import VNBenchError
from needleforge.vnbench.stage import usable_names
from needleforge.vnbench.subtasks import SUBTASKS, Pools
from needleforge.vnbench.text import default_font_path


@given(length=st.integers(1, 400), n=st.integers(1, 12), seed=st.integers(0, 10**6))
@settings(max_examples=300, deadline=None)
def test_edit_seconds_leave_a_free_second_between_needles(length: int, n: int,
                                                          seed: int) -> None:
    if 2 * n - 1 > length:
        with pytest.raises(VNBenchError, match="cannot hold"):
            edit_seconds(length, n=n, rng=random.Random(seed))
        return
    seconds = edit_seconds(length, n=n, rng=random.Random(seed))
    assert len(seconds) == n and seconds[0] >= 0 and seconds[-1] < length
    assert all(b - a >= 2 for a, b in itertools.pairwise(seconds))


@given(length=st.integers(1, 400), n=st.integers(1, 12), needle_s=st.integers(1, 3),
       seed=st.integers(0, 10**6))
@settings(max_examples=300, deadline=None)
def test_inserted_needles_never_touch_and_fit_the_video(length: int, n: int, needle_s: int,
                                                        seed: int) -> None:
    if n > length + 1:
        with pytest.raises(VNBenchError):
            insert_points(length, n=n, rng=random.Random(seed))
        return
    points = insert_points(length, n=n, rng=random.Random(seed))
    placed = place("insert", positions=points, needle_s=needle_s)
    total = length + n * needle_s
    for j, (point, start, end) in enumerate(placed):
        assert end - start == needle_s and start >= 0 and end <= total
        assert start == point + j * needle_s  # haystack seconds before it, plus earlier needles
    for (_, _, end), (_, start, _) in itertools.pairwise(placed):
        assert start >= end + 1  # at least one haystack second between two inserts


def test_edits_stay_on_their_haystack_second() -> None:
    assert place("edit", positions=[5, 1], needle_s=1) == [(1, 1.0, 2.0), (5, 5.0, 6.0)]


def video(name: str, duration_s: float) -> Video:
    """A video record that is never opened (plans only read ids and durations)."""
    sha = hashlib.sha256(name.encode()).hexdigest()
    return Video(video_id=video_id_for(sha), sha256=sha, program="p", source_path="s",
                 stored_path=f"/data/{name}.mp4", size_bytes=1,
                 media=MediaInfo(duration_s=duration_s, fps=25.0, width=64, height=36,
                                 video_codec="h264", n_frames=1),
                 authorization=Authorization("r", "l", ("benchmark",), dt.date(2099, 1, 1)))


def test_haystacks_are_whole_seconds_inside_long_enough_videos() -> None:
    videos = [video("a", 30.6), video("b", 9.0), video("c", 200.0)]
    haystacks, skips = pick_haystacks(videos, n=50, min_s=10, max_s=180, seed=3, tag="main")
    assert skips == [] and len(haystacks) == 50
    by_id = {v.video_id: v for v in videos}
    for h in haystacks:
        total = by_id[h.video_id].media.duration_s
        assert 10 <= h.duration_s <= 180 and h.start_s + h.duration_s <= total
        assert h.video_id != video("b", 9.0).video_id
    again, _ = pick_haystacks(list(reversed(videos)), n=60, min_s=10, max_s=180, seed=3,
                              tag="main")
    assert again[:50] == haystacks  # order of videos and more samples change nothing
    other, _ = pick_haystacks(videos, n=50, min_s=10, max_s=180, seed=4, tag="main")
    assert other != haystacks


def test_no_video_long_enough_is_a_skip() -> None:
    haystacks, skips = pick_haystacks([video("a", 8.0)], n=3, min_s=10, max_s=20, seed=0,
                                      tag="long")
    assert haystacks == [] and "no ingested video lasts 10 s" in skips[0].reason


def test_compose_is_deterministic_and_ids_derive_from_content() -> None:
    names, _ = usable_names(default_font_path())
    pools = Pools(names=names, images=ImageSet(()), clips=ClipSet(()), level_categories={},
                  count_min=1, count_max=5)
    (haystack,), _ = pick_haystacks([video("a", 60.0)], n=1, min_s=20, max_s=40, seed=0,
                                    tag="main")
    layout = Layout(width=320, height=180, clip_s=2, count_sigma=2.0)
    first = compose_sample(SUBTASKS["cnt_edit1"], haystack=haystack, pools=pools, index=0, seed=1,
                           layout=layout)
    assert compose_sample(SUBTASKS["cnt_edit1"], haystack=haystack, pools=pools, index=0, seed=1,
                          layout=layout) == first
    other = compose_sample(SUBTASKS["cnt_edit1"], haystack=haystack, pools=pools, index=0, seed=2,
                           layout=layout)
    assert other.sample_id != first.sample_id and first.sample_id.startswith("vnb-cnt_edit1-")
    assert first.video == f"{first.sample_id}.mp4"
    assert 1 <= len(first.needles) <= 5
    moved = dataclasses.replace(haystack, start_s=haystack.start_s + 1)
    assert compose_sample(SUBTASKS["cnt_edit1"], haystack=moved, pools=pools, index=0, seed=1,
                          layout=layout).sample_id != first.sample_id


def test_params_reject_unknown_keys_and_bad_ranges() -> None:
    assert VNBenchParams().similarity_threshold == 0.7
    with pytest.raises(ValueError, match="extra"):
        VNBenchParams.model_validate({"sed": 1})
    with pytest.raises(ValueError, match="max_haystack_s"):
        VNBenchParams(min_haystack_s=30, max_haystack_s=20)
    with pytest.raises(ValueError, match="more than once"):
        VNBenchParams(tasks=["ret_edit1", "ret_edit1"])
    with pytest.raises(ValueError):
        VNBenchParams(tasks=["ret_everything"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        VNBenchParams(text_colour="white:fontsize=99")
    assert VNBenchParams(text_colour="#FFcc00@0.5").text_colour == "#FFcc00@0.5"
