"""Shot detection on generated clips with cuts at known times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import av.error
import numpy as np
import pytest
from scene_clips import FPS, Clip, concat_clip

from needleforge.errors import MediaError
from needleforge.params import SceneParams, parse_params
from needleforge.scenes import SceneDetection, check_tiling, detect_scenes
from needleforge.scenes.detect import colourless_video
from needleforge.scenes.grey_cuts import colourless_frame

FRAME_S = 1 / FPS
VIDEO_ID = "v0123456789abcdef"


def detect(clip: Clip, **params: Any) -> SceneDetection:
    return detect_scenes(clip.path, video_id=VIDEO_ID, params=SceneParams(**params))


def starts(result: SceneDetection) -> list[float]:
    return [s.start_s for s in result.scenes[1:]]


def assert_cuts_near(found: list[float], expected: tuple[float, ...]) -> None:
    assert len(found) == len(expected), (found, expected)
    for got, want in zip(found, expected, strict=True):
        assert abs(got - want) <= 2 * FRAME_S + 1e-9, (got, want)


@pytest.mark.parametrize("detector", ["content", "adaptive"])
@pytest.mark.parametrize("backend", ["pyav", "opencv"])
def test_cuts_found_within_two_frames(cuts_clip: Clip, detector: str, backend: str) -> None:
    result = detect(cuts_clip, detector=detector, backend=backend)
    assert result.complete
    assert_cuts_near(starts(result), cuts_clip.cuts_s)
    assert result.detector.startswith(f"{backend} scenedetect ")


def test_scenes_tile_the_video_with_frame_counts(cuts_clip: Clip) -> None:
    result = detect(cuts_clip)
    scenes = result.scenes
    assert scenes[0].start_s == 0.0
    assert scenes[-1].end_s == pytest.approx(cuts_clip.duration_s)
    check_tiling(scenes, end_s=cuts_clip.duration_s)
    assert [s.index for s in scenes] == list(range(len(scenes)))
    assert scenes[2].scene_id == f"{VIDEO_ID}-s0002"
    assert [s.n_frames for s in scenes] == [40, 30, 25, 20, 40]
    assert sum(s.n_frames for s in scenes) == round(cuts_clip.duration_s * FPS)
    assert result.frames_read == 155


def test_given_duration_fixes_the_end(cuts_clip: Clip) -> None:
    result = detect_scenes(cuts_clip.path, video_id=VIDEO_ID, params=SceneParams(),
                           duration_s=4.2)
    assert result.scenes[-1].end_s == 4.2
    assert_cuts_near(starts(result), cuts_clip.cuts_s[:3])


def test_explicit_downscale_finds_the_same_cuts(cuts_clip: Clip) -> None:
    result = detect(cuts_clip, downscale=2)
    assert_cuts_near(starts(result), cuts_clip.cuts_s)
    assert "downscale=2" in result.detector


def test_min_scene_length_drops_short_shots(cuts_clip: Clip) -> None:
    # Shots of 1.0 s and 0.8 s are shorter than 1.1 s: some of their cuts must go.
    result = detect(cuts_clip, min_scene_len_s=1.1)
    assert result.complete
    assert 1 <= len(result.scenes) < len(cuts_clip.cuts_s) + 1
    check_tiling(result.scenes, end_s=cuts_clip.duration_s)


def test_a_high_threshold_finds_no_cut(cuts_clip: Clip) -> None:
    result = detect(cuts_clip, threshold=250.0, luma_only=False)
    assert [(s.start_s, s.end_s) for s in result.scenes] == [(0.0, cuts_clip.duration_s)]
    # black to white changes brightness by 255: the grey-shot pass ("auto") still cuts there
    assert [s.start_s for s in detect(cuts_clip, threshold=250.0).scenes] == [0.0, 4.6]


@pytest.mark.parametrize("name", ["still_clip", "black_clip"])
def test_video_without_cuts_is_one_scene(name: str, request: pytest.FixtureRequest) -> None:
    clip: Clip = request.getfixturevalue(name)
    result = detect(clip)
    assert result.complete
    assert len(result.scenes) == 1
    scene = result.scenes[0]
    assert (scene.start_s, scene.end_s) == (0.0, pytest.approx(clip.duration_s))
    assert scene.n_frames == round(clip.duration_s * FPS)


def test_one_frame_video_is_one_scene(one_frame_clip: Clip) -> None:
    result = detect(one_frame_clip)
    assert result.complete
    assert len(result.scenes) == 1
    assert result.scenes[0].n_frames == 1
    assert result.scenes[0].end_s == pytest.approx(FRAME_S)


def test_truncated_file_keeps_scenes_before_the_failure(
    truncated_clip: tuple[Clip, Clip],
) -> None:
    intact, half = truncated_clip
    full = detect(intact)
    assert full.complete
    assert_cuts_near(starts(full), intact.cuts_s)

    result = detect(half)  # must not raise
    assert not result.complete
    assert result.decode_error is not None
    assert str(half.path) in result.decode_error
    assert "decoding stopped" in result.decode_error
    assert result.expected_duration_s == pytest.approx(intact.duration_s)
    assert 0 < result.end_s < intact.duration_s
    check_tiling(result.scenes, end_s=result.end_s)
    # Every known cut before the failure is still found, at the right time.
    before = tuple(c for c in intact.cuts_s if c < result.end_s - 2 * FRAME_S)
    assert len(before) >= 2
    assert_cuts_near(starts(result), before)


def test_decode_exception_midway_is_recorded(
    cuts_clip: Clip, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decoder that raises after 3.2 s (past two cuts) keeps those scenes."""
    from scenedetect.backends.pyav import VideoStreamAv

    original = VideoStreamAv.read
    calls = {"n": 0}

    def failing_read(self: Any, decode: bool = True) -> Any:
        calls["n"] += 1
        if calls["n"] > 80:
            raise av.error.InvalidDataError(1094995529, "Invalid data found")
        return original(self, decode)

    monkeypatch.setattr(VideoStreamAv, "read", failing_read)
    result = detect(cuts_clip)
    assert result.decode_error is not None
    assert "decoding failed" in result.decode_error
    assert "Invalid data found" in result.decode_error
    assert result.end_s == pytest.approx(80 * FRAME_S)
    assert_cuts_near(starts(result), cuts_clip.cuts_s[:2])


def test_unopenable_file_raises_media_error(headless_clip: Path) -> None:
    with pytest.raises(MediaError, match=r"headless\.mp4"):
        detect_scenes(headless_clip, video_id=VIDEO_ID, params=SceneParams())


def test_missing_file_raises_media_error(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="not found"):
        detect_scenes(tmp_path / "nope.mp4", video_id=VIDEO_ID, params=SceneParams())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"video_id": " "}, "video_id"),
        ({"video_id": VIDEO_ID, "duration_s": 0.0}, "duration_s = 0.0"),
        ({"video_id": VIDEO_ID, "duration_s": float("nan")}, "duration_s = nan"),
    ],
)
def test_bad_arguments_are_refused_up_front(
    cuts_clip: Clip, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        detect_scenes(cuts_clip.path, params=SceneParams(), **kwargs)


def test_scene_params_in_params_yaml() -> None:
    params = parse_params({"scenes": {"detector": "adaptive", "min_scene_len_s": 1.0}})
    assert params.scenes.detector == "adaptive"
    assert params.scenes.effective_threshold() == 3.0
    assert SceneParams().effective_threshold() == 27.0
    assert SceneParams(threshold=30).effective_threshold() == 30.0
    with pytest.raises(Exception, match=r"unknown key 'scenes\.treshold'"):
        parse_params({"scenes": {"treshold": 20}})
    with pytest.raises(Exception, match=r"scenes\.detector"):
        parse_params({"scenes": {"detector": "histogram"}})


def test_black_and_white_video_is_cut_on_brightness(scene_media: Path) -> None:
    """Grey 90 -> 150 -> 90: HSV scores the cut 60 / 3 = 20 (< 27), brightness alone 60.
    "auto" sees a colourless video and scores brightness; colour video keeps HSV."""
    grey = concat_clip(scene_media / "greys.mp4",
                       [("0x5a5a5a", 1.2), ("0x969696", 1.0), ("0x5a5a5a", 1.0)],
                       faststart=True)
    assert colourless_video(grey.path, duration_s=grey.duration_s)
    hsv = detect_scenes(grey.path, video_id="vgrey", params=SceneParams(luma_only=False))
    auto = detect_scenes(grey.path, video_id="vgrey", params=SceneParams())
    assert len(hsv.scenes) == 1 and "luma_only=False" in hsv.detector
    assert [s.start_s for s in auto.scenes[1:]] == pytest.approx(grey.cuts_s, abs=2 / FPS)
    assert "luma_only=True" in auto.detector


def test_colour_video_and_unreadable_files_are_not_black_and_white(
        cuts_clip: Clip, tmp_path: Path) -> None:
    assert not colourless_video(cuts_clip.path, duration_s=cuts_clip.duration_s)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video")
    assert not colourless_video(junk, duration_s=3.0)


def test_grey_shots_inside_a_colour_video_are_cut_on_brightness(
        scene_media: Path, cuts_clip: Clip) -> None:
    """Colour, then grey 90 -> 150 (HSV scores that cut 20 of 27), then colour again: the
    video is in colour, and the grey-to-grey cut is still found, by brightness; a colour-only
    video gets no cut from it."""
    mixed = concat_clip(scene_media / "mixed_greys.mp4",
                        [("red", 1.2), ("smptebars", 1.2), ("0x5a5a5a", 1.0),
                         ("0x969696", 1.0), ("testsrc2", 1.2)], faststart=True)
    assert not colourless_video(mixed.path, duration_s=mixed.duration_s)
    hsv = detect_scenes(mixed.path, video_id="vmix", params=SceneParams(luma_only=False))
    auto = detect_scenes(mixed.path, video_id="vmix", params=SceneParams())
    assert len(hsv.scenes) == len(mixed.cuts_s)  # one cut (grey to grey) missed
    assert [s.start_s for s in auto.scenes[1:]] == pytest.approx(mixed.cuts_s, abs=2 / FPS)
    assert "luma_only=False" in auto.detector and "grey-cuts=luma" in auto.detector
    colour = detect_scenes(cuts_clip.path, video_id="vcol", params=SceneParams())
    plain = detect_scenes(cuts_clip.path, video_id="vcol", params=SceneParams(luma_only=False))
    assert [s.start_s for s in colour.scenes] == [s.start_s for s in plain.scenes]


def test_a_frame_is_colourless_below_one_percent_coloured_pixels() -> None:
    frame = np.full((100, 100, 3), 120, np.uint8)
    assert colourless_frame(frame)
    frame[:, :, 2] += 10  # a chroma of 10 / 255, under 0.05: still colourless
    assert colourless_frame(frame)
    frame[0, :50] = (200, 30, 30)  # 50 coloured pixels: 0.5 %
    assert colourless_frame(frame)
    frame[1, :] = (30, 200, 30)  # 150 coloured pixels: 1.5 %
    assert not colourless_frame(frame)
