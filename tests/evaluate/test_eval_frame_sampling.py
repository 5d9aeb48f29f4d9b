"""Frame sampling: seeking to keyframes gives exactly the frames of a front-to-back decode.

The clips show their own frame number: luma ``16 + 2 * N`` on frame ``N``, encoded losslessly,
so the frame on screen at any instant can be read back from the pixels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import MediaError
from needleforge.evaluate import sample_frames, sample_times
from tests.conftest import ffmpeg

FPS = 10
DURATION_S = 10


@pytest.fixture(scope="module")
def numbered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 s at 10 fps, 64x36, frame N has luma 16 + 2N; a keyframe every second, B-frames.

    Why: like a release montage (fixed 1 s GOP, B-frames), but each frame's number can be read
    back from its pixels (lossless ``-qp 0``). Command::

        ffmpeg -f lavfi -i "nullsrc=s=64x36:r=10:d=10,geq=lum='16+2*N':cb=128:cr=128" \
          -c:v libx264 -qp 0 -pix_fmt yuv420p -bf 2 \
          -x264-params keyint=10:min-keyint=10:scenecut=0 numbered.mp4
    """
    path = tmp_path_factory.mktemp("numbered") / "numbered.mp4"
    ffmpeg("-f", "lavfi", "-i",
           f"nullsrc=s=64x36:r={FPS}:d={DURATION_S},geq=lum='16+2*N':cb=128:cr=128",
           "-c:v", "libx264", "-qp", "0", "-pix_fmt", "yuv420p", "-bf", "2",
           "-x264-params", "keyint=10:min-keyint=10:scenecut=0", str(path))
    return path


@pytest.fixture(scope="module")
def late_start(numbered: Path) -> Path:
    """The numbered clip in Matroska with its first frame at 0.7 s (``-output_ts_offset 0.7``).

    Why: instants count from the container's zero, frames from the stream start; the instant
    0.5 s comes before the first frame.
    """
    path = numbered.with_name("late.mkv")
    ffmpeg("-i", str(numbered), "-c", "copy", "-output_ts_offset", "0.7", str(path))
    return path


def _frame_numbers(frames: list[TimedFrame]) -> list[int]:
    """The frame number each image shows (full-range gray back to luma, then N)."""
    return [round((float(image.mean()) * 219 / 255) / 2) for _, image in frames]


def _same(a: list[TimedFrame], b: list[TimedFrame]) -> bool:
    return len(a) == len(b) and all(
        ta == tb and ia.shape == ib.shape and np.array_equal(ia, ib)
        for (ta, ia), (tb, ib) in zip(a, b, strict=True))


@pytest.mark.parametrize("max_frames", [None, 4, 7])
@pytest.mark.parametrize("max_side", [None, 32])
def test_seek_gives_the_sequential_frames(numbered: Path, max_frames: int | None,
                                          max_side: int | None) -> None:
    sequential = sample_frames(numbered, max_frames=max_frames, max_side=max_side,
                               mode="sequential")
    seeking = sample_frames(numbered, max_frames=max_frames, max_side=max_side, mode="seek")
    assert _same(sequential, seeking)
    assert [t for t, _ in seeking] == sample_times(DURATION_S, max_frames=max_frames)
    if max_side is None:  # the frame on screen at t is frame floor(t * fps)
        assert _frame_numbers(seeking) == [int(t * FPS) for t, _ in seeking]


def test_seek_past_the_end_repeats_the_last_frame(numbered: Path) -> None:
    seeking = sample_frames(numbered, max_frames=5, duration_s=14.0, mode="seek")
    assert _same(seeking, sample_frames(numbered, max_frames=5, duration_s=14.0,
                                        mode="sequential"))
    assert _frame_numbers(seeking)[-2:] == [FPS * DURATION_S - 1] * 2


def test_instants_count_from_the_container_zero(late_start: Path) -> None:
    seeking = sample_frames(late_start, max_frames=4, duration_s=10.0, mode="seek")
    assert _same(seeking, sample_frames(late_start, max_frames=4, duration_s=10.0,
                                        mode="sequential"))
    # 0.5 s precedes the first frame: it gets frame 0; later instants the frame then on screen
    assert _frame_numbers(seeking) == [0] + [int((t - 0.7) * FPS + 1e-6) for t, _ in
                                             seeking[1:]]


def test_default_mode_matches_sequential_and_bad_mode_is_refused(numbered: Path) -> None:
    for frames in (3, None):  # 4.5 s apart: it seeks; 1 s apart: it decodes front to back
        assert _same(sample_frames(numbered, max_frames=frames),
                     sample_frames(numbered, max_frames=frames, mode="sequential"))
    with pytest.raises(MediaError, match="mode = 'fast'"):
        sample_frames(numbered, mode="fast")  # type: ignore[arg-type]

