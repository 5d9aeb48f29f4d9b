"""Keyframes for the model-backed writers: seeking PyAV decode, scene-local times, cache, errors.

The clip is 8 s of ffmpeg's ``testsrc2`` (every frame differs) at 10 fps, H.264 with a
keyframe every 2 s and B-frames, so seeking lands before most wanted times and has to decode
forward. Frames are checked against a plain sequential decode of the same file.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest
from nemo_cases import make_scene, make_video

from needleforge.errors import MediaError, NemoError
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.nemo import VideoKeyframes, scene_times
from needleforge.nemo.video_keyframes import VERIFY_PER_SCENE, companion_frames
from needleforge.records import Video
from needleforge.scenes.walking import MOTION_GAP_S


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ffmpeg -f lavfi -i testsrc2=size=160x90:rate=10:duration=8 -c:v libx264 -g 20
    -bf 2 -pix_fmt yuv420p clip.mp4``: 80 distinct frames, keyframes at 0, 2, 4, 6 s."""
    path = tmp_path_factory.mktemp("frames") / "clip.mp4"
    subprocess.run([ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc2=size=160x90:rate=10:duration=8", "-c:v", "libx264",
                    "-g", "20", "-bf", "2", "-pix_fmt", "yuv420p", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def sequential(clip: Path) -> dict[float, np.ndarray]:
    """Every frame of the clip by time (seconds from the stream start), decoded in one pass."""
    frames = {}
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        for frame in container.decode(stream):
            t_s = round(float((frame.pts - (stream.start_time or 0)) * stream.time_base), 6)
            frames[t_s] = frame.to_ndarray(format="rgb24")
    return frames


def video_at(path: Path) -> Video:
    return dataclasses.replace(make_video(), stored_path=str(path))


SCENES = [make_scene(0, 0.0, 3.0), make_scene(1, 3.0, 6.5), make_scene(2, 6.5, 8.0)]


def test_frames_are_spread_inside_each_scene_and_match_a_sequential_decode(
    clip: Path, sequential: dict[float, np.ndarray]
) -> None:
    video = video_at(clip)
    with VideoKeyframes({video.video_id: video}, per_scene=4) as source:
        for scene in reversed(SCENES):  # backwards: every scene needs a fresh seek
            frames = source(scene)
            assert len(frames) == 4
            wanted = scene_times(scene, count=4)
            for frame, t in zip(frames, wanted, strict=True):
                assert scene.start_s <= frame.t_s < scene.end_s
                assert t <= frame.t_s < t + 0.1 + 1e-6  # the first frame at or after t
                assert frame.image.dtype == np.uint8 and frame.image.shape == (90, 160, 3)
                assert np.array_equal(frame.image, sequential[frame.t_s])
            assert [f.t_s for f in frames] == sorted({f.t_s for f in frames})


def test_each_scene_is_decoded_once(clip: Path) -> None:
    video = video_at(clip)
    source = VideoKeyframes({video.video_id: video}, per_scene=2)
    first = source(SCENES[1])
    assert source(SCENES[1]) is first and source.decoded_scenes == 1
    source(SCENES[0])
    assert source.decoded_scenes == 2 and len(source._open) == 1  # one open per video
    source.close()
    assert source(SCENES[1]) is first  # the cache outlives the open files


def test_short_scenes_give_fewer_distinct_frames_and_big_ones_shrink(clip: Path) -> None:
    video = video_at(clip)
    source = VideoKeyframes({video.video_id: video}, per_scene=8, max_side=64)
    frames = source(make_scene(3, 1.0, 1.25))
    assert 1 <= len(frames) <= 3  # 10 fps: frames at 1.0, 1.1 and 1.2 s only
    assert len({f.t_s for f in frames}) == len(frames)
    assert frames[0].image.shape == (36, 64, 3)
    source.close()


def test_a_vanished_file_names_the_video_and_the_path(clip: Path, tmp_path: Path) -> None:
    moved = tmp_path / "gone.mp4"
    shutil.copy(clip, moved)
    video = video_at(moved)
    source = VideoKeyframes({video.video_id: video})
    moved.unlink()
    with pytest.raises(MediaError, match=rf"video {video.video_id}: file .*gone\.mp4 has "
                                         rf"vanished"):
        source(SCENES[0])
    not_video = tmp_path / "notes.mp4"
    not_video.write_text("meeting notes\n")
    with pytest.raises(MediaError, match=rf"video {video.video_id}: .*notes\.mp4: cannot open"):
        VideoKeyframes({video.video_id: video_at(not_video)})(SCENES[0])


def test_unknown_videos_and_bad_options_are_refused(clip: Path) -> None:
    with pytest.raises(NemoError, match="not among the 0 given"):
        VideoKeyframes({})(SCENES[0])
    with pytest.raises(ValueError, match="per_scene = 0 must be >= 1"):
        VideoKeyframes({}, per_scene=0)
    with pytest.raises(ValueError, match="count = 0 must be >= 1"):
        scene_times(SCENES[0], count=0)
    assert scene_times(SCENES[0], count=3) == [0.5, 1.5, 2.5]


def test_every_s_samples_long_scenes_densely(clip: Path) -> None:
    """The negative probe's sampling: at most ``every_s`` apart, at least ``per_scene``."""
    video = video_at(clip)
    with VideoKeyframes({video.video_id: video}, per_scene=1, every_s=1.0) as source:
        assert [source.count_for(s) for s in SCENES] == [3, 4, 2]  # 3 s, 3.5 s, 1.5 s
        frames = source(SCENES[1])
        assert len(frames) == 4
        assert all(SCENES[1].start_s <= f.t_s < SCENES[1].end_s for f in frames)
        gaps = [b.t_s - a.t_s for a, b in itertools.pairwise(frames)]
        assert max(gaps) <= 1.0 + 0.1  # one frame period of slack
    assert VideoKeyframes({}, per_scene=2, every_s=10.0).count_for(SCENES[0]) == 2
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="every_s"):
            VideoKeyframes({}, every_s=bad)


def test_the_probe_sampling_holds_every_frame_the_verifier_is_shown(clip: Path) -> None:
    """``also_per_scene`` merges in a ``per_scene`` source's times, decoded in the same
    pass: every frame the writer and verifier see of a negative (VERIFY_PER_SCENE a scene)
    is among the probe's frames, and ``extra_times`` names those only they asked for."""
    video = {video_at(clip).video_id: video_at(clip)}
    with (VideoKeyframes(video, per_scene=1, every_s=1.0, also_per_scene=VERIFY_PER_SCENE)
          as probe, VideoKeyframes(video, per_scene=VERIFY_PER_SCENE) as shown):
        for scene in SCENES:
            dense = VideoKeyframes(video, per_scene=1, every_s=1.0).count_for(scene)
            seen = {f.t_s for f in probe(scene)}
            assert {f.t_s for f in shown(scene)} <= seen
            assert len(seen) <= dense + VERIFY_PER_SCENE
            extra = probe.extra_times(scene)
            assert extra <= seen and len(seen - extra) == dense  # the dense frames stay
            assert {f.t_s for f in probe.without_extra(scene)} == seen - extra
        assert "middles of 4" in probe.spec and "middles" not in shown.spec
        assert "middles" not in probe.spec_without_extra
        assert shown.extra_times(SCENES[0]) == frozenset()
    with pytest.raises(ValueError, match="also_per_scene"):
        VideoKeyframes({}, also_per_scene=-1)


@pytest.mark.parametrize(("every_s", "also"), [(1.0, VERIFY_PER_SCENE), (0.05, 7), (0.5, 0),
                                              (2.0, 3)])
def test_the_stream_gives_the_frames_without_extras_as_decoded(clip: Path, every_s: float,
                                                               also: int) -> None:
    """``stream_without_extra`` yields what ``without_extra`` returns (times and pixels),
    also when wanted times snap onto one frame (0.05 s apart at 10 fps) and an extra frame
    turns out to be a wanted one; read to its end, the scene is cached like a call's."""
    video = {video_at(clip).video_id: video_at(clip)}
    with (VideoKeyframes(video, per_scene=1, every_s=every_s, also_per_scene=also) as called,
          VideoKeyframes(video, per_scene=1, every_s=every_s, also_per_scene=also) as streamed):
        for scene in SCENES:
            expected = called.without_extra(scene)
            got = list(streamed.stream_without_extra(scene))
            assert [f.t_s for f in got] == [f.t_s for f in expected], scene.index
            for a, b in zip(got, expected, strict=True):
                np.testing.assert_array_equal(a.image, b.image)
            assert streamed.extra_times(scene) == called.extra_times(scene)
        decoded = streamed.decoded_scenes
        assert decoded == len(SCENES)
        assert [f.t_s for f in streamed.stream_without_extra(SCENES[2])] == \
            [f.t_s for f in called.without_extra(SCENES[2])]
        assert streamed.decoded_scenes == decoded  # from the cache


def test_frame_at_gives_the_exact_frame_shown_at_a_time(
    clip: Path, sequential: dict[float, np.ndarray]
) -> None:
    """The instance check's template frame: the first frame at or after ``t`` inside the
    scene, after a seek backwards as well as forwards; the last one when ``t`` is past it."""
    video = video_at(clip)
    with VideoKeyframes({video.video_id: video}, max_side=160) as source:
        for scene, t in ((SCENES[1], 5.05), (SCENES[0], 1.3), (SCENES[1], 3.0)):
            frame = source.frame_at(scene, t)
            assert frame is not None
            assert t <= frame.t_s < t + 0.1 + 1e-6
            assert np.array_equal(frame.image, sequential[frame.t_s])
        last = source.frame_at(SCENES[2], 9.0)  # past the end of the file and the scene
        assert last is not None and last.t_s == pytest.approx(7.9)
        assert source.decoded_scenes == 0  # exact frames are not the scene cache's


def test_companion_frames_are_the_frames_half_a_second_after_each_keyframe(
    clip: Path, sequential: dict[float, np.ndarray]
) -> None:
    """What a "someone walking" target carries besides its keyframes: the frame shown
    MOTION_GAP_S after each one, exact; a source that cannot seek to a time gives none."""
    video = video_at(clip)
    with VideoKeyframes({video.video_id: video}, max_side=160) as source:
        keyframes = source(SCENES[1])  # 3.5, 4.4, 5.2, 6.1 s in a scene ending at 6.5 s
        companions = companion_frames(source, SCENES[1], keyframes, gap_s=MOTION_GAP_S)
        assert len(companions) == len(keyframes) - 1  # 6.6 s is past the scene: none
        for key, companion in zip(keyframes, companions, strict=False):
            assert companion.t_s == pytest.approx(key.t_s + MOTION_GAP_S, abs=0.1)
            assert np.array_equal(companion.image, sequential[companion.t_s])
        tail = companion_frames(source, SCENES[2], source(SCENES[2]),
                                gap_s=MOTION_GAP_S)  # 1.5 s in four parts
        assert tail and all(SCENES[2].start_s <= f.t_s < SCENES[2].end_s for f in tail)
    assert companion_frames(lambda scene: keyframes, SCENES[1], keyframes,
                            gap_s=MOTION_GAP_S) == ()
