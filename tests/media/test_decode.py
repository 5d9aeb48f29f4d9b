"""The one frame reader: stream facts, every frame, the frame at a time, seeking, bad inputs.

The main clip shows its own frame number: luma ``16 + 2 * N`` on frame ``N``, encoded
losslessly, so which frame a call returned is read back from its pixels, whatever the seek.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from needleforge.errors import MediaError
from needleforge.media.decode import DecodedFrame, Pick, Seek, StreamFacts, VideoReader
from tests.conftest import ffmpeg

FPS = 10
FRAMES = 40


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 s at 10 fps, 64x36, frame N has luma 16 + 2N; a keyframe every second, B-frames.

    Why: seeking must land on a keyframe and decode forward through B-frames, and each
    frame's number can be read back from its pixels (lossless ``-qp 0``). Command::

        ffmpeg -f lavfi -i "nullsrc=s=64x36:r=10:d=4,geq=lum='16+2*N':cb=128:cr=128" \
          -c:v libx264 -qp 0 -pix_fmt yuv420p -bf 2 \
          -x264-params keyint=10:min-keyint=10:scenecut=0 numbered.mp4
    """
    path = tmp_path_factory.mktemp("decode") / "numbered.mp4"
    ffmpeg("-f", "lavfi", "-i", f"nullsrc=s=64x36:r={FPS}:d=4,geq=lum='16+2*N':cb=128:cr=128",
           "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-bf", "2",
           "-x264-params", "keyint=10:min-keyint=10:scenecut=0", str(path))
    return path


@pytest.fixture(scope="module")
def late_start(numbered: Path) -> Path:
    """The numbered clip in Matroska with its first frame at 0.7 s
    (``ffmpeg -i numbered.mp4 -c copy -output_ts_offset 0.7 late.mkv``).

    Why: frame times count from the stream start, and seeks must add it back."""
    path = numbered.with_name("late.mkv")
    ffmpeg("-i", str(numbered), "-c", "copy", "-output_ts_offset", "0.7", str(path))
    return path


@pytest.fixture(scope="module")
def program_stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s of ``testsrc2`` as MPEG-2 in an MPEG program stream (no index), measured to make a
    seek for 0.5 s land on the keyframe at 0.96 s. Command::

        ffmpeg -f lavfi -i testsrc2=size=352x288:rate=25:duration=3 -c:v mpeg2video -q:v 4 \
          -f mpeg stream.mpg

    Why: a ``"checked"`` seek must notice the overshoot and decode from the start instead.
    """
    path = tmp_path_factory.mktemp("decode") / "stream.mpg"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=352x288:rate=25:duration=3",
           "-c:v", "mpeg2video", "-q:v", "4", "-f", "mpeg", str(path))
    return path


def number(frame: DecodedFrame | None) -> int:
    """The frame number the numbered clip's frame shows (full-range grey back to luma)."""
    assert frame is not None
    return round(float(frame.rgb().mean()) * 219 / 255 / 2)


def test_stream_facts_and_every_frame_in_order(numbered: Path) -> None:
    with VideoReader(numbered) as reader:
        assert reader.facts == StreamFacts(width=64, height=36, fps=10.0, duration_s=4.0,
                                           start_s=0.0)
        frames = list(reader.frames())
        assert [f.t_s for f in frames] == [round(n / FPS, 6) for n in range(FRAMES)]
        assert [number(f) for f in frames] == list(range(FRAMES))
        assert [n for n, f in enumerate(frames) if f.key] == [0, 10, 20, 30]
        assert reader.frames_decoded == FRAMES and reader.decode_error is None
        again = [number(f) for f in reader.frames()]  # frames() starts over
        assert again == list(range(FRAMES))


@pytest.mark.parametrize("seek", ["never", "keyframe", "checked"])
@pytest.mark.parametrize(("pick", "expected"), [
    ("at_or_after", [21, 0, 39, 10, 6, 6, 35]),
    ("on_screen", [20, 0, 39, 10, 5, 6, 34]),
])
def test_frame_at_picks_by_time_whatever_the_seek(numbered: Path, seek: Seek, pick: Pick,
                                                  expected: list[int]) -> None:
    times = [2.05, 0.0, 3.95, 1.0, 0.55, 0.6, 3.45]  # backwards and forwards, far and near
    with VideoReader(numbered) as reader:
        got = [reader.frame_at(t, pick=pick, seek=seek) for t in times]
    assert [number(f) for f in got] == expected
    assert all(f is not None and f.t_s == n / FPS for f, n in zip(got, expected, strict=True))


def test_until_refuses_the_frame_after_a_cut(numbered: Path) -> None:
    with VideoReader(numbered) as reader:
        # the first frame at or after 1.95 s is frame 20, at the cut: frame 19 stands in
        assert number(reader.frame_at(1.95, pick="at_or_after", until_s=2.0)) == 19
        assert number(reader.frame_at(1.85, pick="at_or_after", until_s=2.0)) == 19
        assert number(reader.frame_at(1.75, pick="at_or_after", until_s=2.0)) == 18


def test_the_end_of_the_video(numbered: Path) -> None:
    with VideoReader(numbered) as reader:
        assert number(reader.frame_at(3.99, pick="at_or_after")) == 39  # inside its interval
        assert number(reader.frame_at(6.0, pick="on_screen", hold_last=True)) == 39
        with pytest.raises(MediaError, match=r"numbered\.mp4: t_s = 4\.5 lies past the end "
                                             r"of the video \(its last frame is shown from "
                                             r"3\.900 s for 0\.100 s\)"):
            reader.frame_at(4.5, pick="on_screen")


def test_images_are_rgb_and_shrink_to_an_even_size(numbered: Path) -> None:
    with VideoReader(numbered) as reader:
        assert reader.facts.fitted(max_side=64) is None
        size = reader.facts.fitted(max_side=33)
        assert size == (32, 18)  # 33 / 64 of 64x36 is 33x18.6, rounded to even sides
        frame = reader.frame_at(1.0, pick="on_screen")
        assert frame is not None
        image = frame.rgb(size=size)
        assert image.shape == (18, 32, 3) and image.dtype == np.uint8
        assert image.flags.c_contiguous
        assert frame.rgb().shape == (36, 64, 3)


def test_frame_threads_decode_the_same_frames(numbered: Path) -> None:
    with VideoReader(numbered, threads="AUTO") as threaded, VideoReader(numbered) as plain:
        for a, b in zip(threaded.frames(), plain.frames(), strict=True):
            assert a.t_s == b.t_s and np.array_equal(a.rgb(), b.rgb())


def test_times_count_from_the_stream_start(late_start: Path) -> None:
    with VideoReader(late_start) as reader:
        assert reader.facts.start_s == pytest.approx(0.7)
        first = reader.frame_at(0.0, pick="at_or_after")
        assert first is not None and first.t_s == 0.0 and number(first) == 0
        landed = reader.keyframe_at_or_before(2.8)  # keyframes at 0, 1, 2, 3 s of the stream
        assert landed is not None and landed.key and landed.t_s == 2.0 and number(landed) == 20


def test_a_misleading_seek_falls_back_to_decoding_from_the_start(program_stream: Path) -> None:
    with VideoReader(program_stream) as reader:
        truth = list(reader.frames())
    with VideoReader(program_stream) as reader:
        overshoot = reader.keyframe_at_or_before(0.5)
        assert overshoot is not None and overshoot.t_s > 0.5  # what the index gives
    with VideoReader(program_stream) as reader:
        for t in (0.5, 1.5, 2.9, 0.1):
            frame = reader.frame_at(t, pick="on_screen", seek="checked")
            shown = [f for f in truth if f.t_s <= t + 1e-6][-1]
            assert frame is not None and frame.t_s == shown.t_s
            assert np.array_equal(frame.rgb(), shown.rgb())


@pytest.mark.parametrize(("name", "words"), [
    ("absent.mp4", "video file not found"),
    ("notes.mp4", "cannot open as a video"),  # a text file named .mp4
    ("truncated.mp4", "cannot open as a video"),  # an mp4 whose header is cut off
    ("tone.m4a", "no video stream (streams: audio)"),
    ("empty.mp4", "cannot open as a video"),
])
def test_files_that_are_not_videos(media_dir: Path, name: str, words: str) -> None:
    with pytest.raises(MediaError) as caught:
        VideoReader(media_dir / name)
    assert str(caught.value).startswith(f"{media_dir / name}: ") and words in str(caught.value)


@pytest.mark.parametrize("t_s", [-0.1, float("nan"), float("inf")])
def test_times_that_are_not_in_any_video(numbered: Path, t_s: float) -> None:
    with VideoReader(numbered) as reader:
        with pytest.raises(MediaError, match=r"numbered\.mp4: t_s = .* lies outside the video "
                                             r"\(it must be a number of seconds >= 0\)"):
            reader.frame_at(t_s, pick="on_screen")
        with pytest.raises(MediaError, match="lies outside the video"):
            reader.keyframe_at_or_before(t_s)


def test_a_file_cut_short_raises_or_is_recorded(numbered: Path, tmp_path: Path) -> None:
    """The first half of a faststart mp4: the header is whole, the data stops midway."""
    whole = tmp_path / "whole.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=4", "-c:v", "libx264",
           "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(whole))
    half = tmp_path / "half.mp4"
    half.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with VideoReader(half) as reader, pytest.raises(MediaError, match=r"half\.mp4: decoding "
                                                                      r"failed after \d+ frames"):
        list(reader.frames())
    with VideoReader(half, max_bad_packets=5) as reader:
        count = sum(1 for _ in reader.frames())
        assert 0 < count < 100 and reader.decode_error is not None
        assert reader.decode_error.startswith(f"{half}: decoding failed after")
