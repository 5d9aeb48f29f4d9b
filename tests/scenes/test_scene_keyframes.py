"""Keyframes: counts per scene, times inside scenes, the right shot's pixels, one decode pass."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from scene_clips import FPS, Clip

from needleforge.backends.base import Keyframe
from needleforge.errors import MediaError
from needleforge.records import Scene
from needleforge.scenes import (
    keyframe_times,
    sample_keyframes,
    scenes_from_bounds,
    tile_cuts,
)

VIDEO_ID = "vkeyframes000000"


def truth_scenes(clip: Clip) -> tuple[Scene, ...]:
    """The clip's scenes from its known cuts (independent of the detector)."""
    return scenes_from_bounds(
        tile_cuts(clip.cuts_s, end_s=clip.duration_s), video_id=VIDEO_ID, fps=FPS
    )


def one_scene(start_s: float, end_s: float) -> Scene:
    return scenes_from_bounds([(0.0, start_s), (start_s, end_s)], video_id="v", fps=FPS)[1]


@pytest.mark.parametrize(
    ("bounds", "fps", "max_per_scene", "expected"),
    [
        ((0.0, 1.6), 1.0, None, [0.1, 1.1]),
        ((3.8, 4.6), 1.0, None, [3.9]),
        ((0.0, 1.6), 2.0, None, [0.1, 0.6, 1.1]),
        ((0.0, 5.0), 1.0, 2, [0.1, 2.1]),
        ((1.0, 1.04), 1.0, None, [1.02]),  # shorter than the offset: still one, inside
    ],
)
def test_keyframe_times(
    bounds: tuple[float, float], fps: float, max_per_scene: int | None, expected: list[float]
) -> None:
    scene = one_scene(*bounds) if bounds[0] > 0 else scenes_from_bounds(
        [bounds], video_id="v", fps=FPS)[0]
    times = keyframe_times(scene, fps=fps, max_per_scene=max_per_scene)
    assert times == pytest.approx(expected)


def test_counts_times_and_pixels_per_scene(cuts_clip: Clip) -> None:
    scenes = truth_scenes(cuts_clip)
    sampler = sample_keyframes(cuts_clip.path, scenes, fps=1.0)
    frames = list(sampler)
    assert sampler.decode_error is None
    by_scene: dict[str, list[Keyframe]] = {s.scene_id: [] for s in scenes}
    for frame in frames:
        by_scene[frame.scene_id].append(frame)
    for scene, colour in zip(scenes, cuts_clip.colours, strict=True):
        got = by_scene[scene.scene_id]
        assert len(got) == len(keyframe_times(scene, fps=1.0)) >= 1
        for frame in got:
            assert scene.start_s + 0.1 <= frame.t_s < scene.end_s
            assert frame.image.shape == (180, 320, 3)
            assert frame.image.dtype == np.uint8
            assert_shows(frame.image, colour)
    assert [f.t_s for f in frames] == sorted(f.t_s for f in frames)


def assert_shows(image: np.ndarray, colour: str) -> None:
    """The keyframe shows its own shot, not the neighbour across a cut."""
    mean = image.reshape(-1, 3).mean(axis=0)
    if colour == "green":
        assert mean == pytest.approx([0, 128, 0], abs=6)
    elif colour == "black":
        assert mean.max() < 20
    elif colour == "white":
        assert mean.min() > 235
    else:  # testsrc2 / smptebars: busy patterns, far from any solid colour
        assert image.reshape(-1, 3).std(axis=0).mean() > 30


def test_one_sequential_decode_without_seeking(
    cuts_clip: Clip, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[Any] = []
    real_open = av.open

    class Spy:
        def __init__(self, container: Any) -> None:
            self.container = container
            self.seeks = 0

        def seek(self, *args: Any, **kwargs: Any) -> Any:
            self.seeks += 1
            return self.container.seek(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.container, name)

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: object) -> None:
            self.container.close()

    def spy_open(*args: Any, **kwargs: Any) -> Spy:
        spy = Spy(real_open(*args, **kwargs))
        opened.append(spy)
        return spy

    monkeypatch.setattr(av, "open", spy_open)
    sampler = sample_keyframes(cuts_clip.path, truth_scenes(cuts_clip), fps=2.0)
    frames = list(sampler)
    assert len(opened) == 1
    assert opened[0].seeks == 0
    # Each frame decoded once, in order, stopping right after the last keyframe.
    assert sampler.frames_decoded == round(frames[-1].t_s * FPS) + 1


def test_max_per_scene_and_image_size(cuts_clip: Clip) -> None:
    scenes = truth_scenes(cuts_clip)
    frames = list(sample_keyframes(cuts_clip.path, scenes, fps=10.0, max_per_scene=3,
                                   max_side_px=160))
    counts = Counter(f.scene_id for f in frames)
    assert set(counts.values()) == {3}
    assert {f.image.shape for f in frames} == {(90, 160, 3)}


def test_fps_above_the_video_rate_never_repeats_a_frame(one_frame_clip: Clip) -> None:
    scenes = truth_scenes(one_frame_clip)
    frames = list(sample_keyframes(one_frame_clip.path, scenes, fps=100.0))
    assert [(f.scene_id, f.t_s) for f in frames] == [(scenes[0].scene_id, 0.0)]


def test_truncated_file_stops_cleanly_and_records_why(truncated_clip: tuple[Clip, Clip]) -> None:
    intact, half = truncated_clip
    scenes = truth_scenes(intact)
    sampler = sample_keyframes(half.path, scenes, fps=1.0)
    frames = list(sampler)  # must not raise
    assert sampler.decode_error is not None
    assert str(half.path) in sampler.decode_error
    counts = Counter(f.scene_id for f in frames)
    wanted = {s.scene_id: len(keyframe_times(s, fps=1.0)) for s in scenes}
    # The cheap first shots decode fully; the busy last shot is cut off part way.
    assert all(counts[s.scene_id] == wanted[s.scene_id] for s in scenes[:3])
    assert counts[scenes[-1].scene_id] < wanted[scenes[-1].scene_id]
    assert sampler.frames_decoded < round(intact.duration_s * FPS)
    for frame, scene in ((f, s) for f in frames for s in scenes if s.scene_id == f.scene_id):
        assert scene.start_s <= frame.t_s < scene.end_s


def test_close_stops_early(cuts_clip: Clip) -> None:
    sampler = sample_keyframes(cuts_clip.path, truth_scenes(cuts_clip), fps=1.0)
    first = next(sampler)
    sampler.close()
    assert first.t_s == pytest.approx(0.12)
    with pytest.raises(StopIteration):
        next(sampler)


def test_unopenable_file_raises_media_error(headless_clip: Path) -> None:
    scenes = scenes_from_bounds([(0.0, 1.0)], video_id="v", fps=FPS)
    with pytest.raises(MediaError, match=r"headless\.mp4"):
        sample_keyframes(headless_clip, scenes, fps=1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fps": 0.0}, "fps = 0.0 must be finite and > 0"),
        ({"fps": 1.0, "max_per_scene": 0}, "max_per_scene = 0 must be >= 1"),
        ({"fps": 1.0, "offset_s": -0.1}, "offset_s = -0.1"),
        ({"fps": 1.0, "max_side_px": 1}, "max_side_px = 1"),
    ],
)
def test_bad_arguments_are_refused(cuts_clip: Clip, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sample_keyframes(cuts_clip.path, truth_scenes(cuts_clip), **kwargs)


def test_overlapping_scenes_are_refused(cuts_clip: Clip) -> None:
    a = scenes_from_bounds([(0.0, 2.0)], video_id="v", fps=FPS)[0]
    b = scenes_from_bounds([(0.0, 1.0), (1.0, 3.0)], video_id="v", fps=FPS)[1]
    with pytest.raises(ValueError, match="v-s0001 starts before v-s0000 ends"):
        sample_keyframes(cuts_clip.path, [a, b], fps=1.0)


def test_keyframe_checks_its_image() -> None:
    with pytest.raises(ValueError, match="uint8 HxWx3"):
        Keyframe(0.0, np.zeros((4, 4), dtype=np.uint8), scene_id="v-s0000")


def test_scenes_past_the_end_of_the_file_are_reported(cuts_clip: Clip) -> None:
    """The clip ends at 6.2 s (last frame 6.16 s); the scenes claim 9 s."""
    bounds = tile_cuts([1.6, 6.1, 7.0], end_s=9.0)
    scenes = scenes_from_bounds(bounds, video_id="v", fps=FPS)
    sampler = sample_keyframes(cuts_clip.path, scenes, fps=1.0)
    frames = list(sampler)
    assert {f.scene_id for f in frames} == {"v-s0000", "v-s0001", "v-s0002"}
    # Scene 2's target (6.2 s) lies past the last frame, which still lies inside it.
    assert (frames[-1].scene_id, frames[-1].t_s) == ("v-s0002", pytest.approx(6.16))
    assert sampler.decode_error is not None
    assert "1 scene(s) got no keyframe, first v-s0003" in sampler.decode_error


def test_scenes_of_two_videos_are_refused(cuts_clip: Clip) -> None:
    a = scenes_from_bounds([(0.0, 1.0)], video_id="va", fps=FPS)[0]
    b = scenes_from_bounds([(0.0, 1.0), (1.0, 2.0)], video_id="vb", fps=FPS)[1]
    with pytest.raises(ValueError, match=r"video ids \['va', 'vb'\]"):
        sample_keyframes(cuts_clip.path, [a, b], fps=1.0)


def test_close_before_iterating_releases_the_file(cuts_clip: Clip) -> None:
    sampler = sample_keyframes(cuts_clip.path, truth_scenes(cuts_clip), fps=1.0)
    sampler.close()
    assert list(sampler) == []
