"""Frames a model sees of a release video: 1 fps, thinned uniformly to ``max_frames``.

Sampling instants sit in the middle of each second (``0.5 s, 1.5 s, …`` at 1 fps): the scorer
compares integer-second sets (``{floor(s) … ceil(e)}``), so a mid-second frame stands for its
second without falling on the cut between two montage segments, which sits on whole seconds.
When the video has more instants than ``max_frames``, ``max_frames`` of them are kept, evenly
spread (first and last included). The file is decoded once, sequentially; each instant gets the
last decoded frame shown at or before it (the frame on screen at that moment), and the returned
time is the instant itself, so prompts read ``[12.5 s]`` rather than a codec timestamp.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import av
import numpy as np

from needleforge.backends.openai_http import TimedFrame
from needleforge.errors import MediaError

#: Frames per second sampled before thinning (NeMo Sec. 5.1 and VNBench both use 1 fps).
DEFAULT_FPS = 1.0
_EPS_S = 1e-6


def sample_times(duration_s: float, *, fps: float = DEFAULT_FPS,
                 max_frames: int | None = None) -> list[float]:
    """The instants sampled from a ``duration_s`` video: mid-interval at ``fps``, then thinned.

    Raises:
        MediaError: ``duration_s`` not finite and > 0, ``fps`` not > 0, ``max_frames`` < 1.
    """
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise MediaError(f"{duration_s = } must be finite and > 0")
    if not (math.isfinite(fps) and fps > 0):
        raise MediaError(f"{fps = } must be finite and > 0")
    if max_frames is not None and max_frames < 1:
        raise MediaError(f"{max_frames = } must be >= 1 or None")
    count = max(1, math.ceil(duration_s * fps - _EPS_S))
    times = [min((k + 0.5) / fps, duration_s - _EPS_S) for k in range(count)]
    if max_frames is not None and count > max_frames:
        picks = np.linspace(0, count - 1, max_frames).round().astype(int)
        times = [times[int(i)] for i in picks]
    return times


def _duration_s(container: Any, path: Path) -> float:
    stream = container.streams.video[0]
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / float(av.time_base)
    raise MediaError(f"{path}: the container states no duration; pass duration_s")


def _output_size(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    if max_side is None or max(width, height) <= max_side:
        return width, height
    scale = max_side / max(width, height)
    # even sides keep every pixel format's chroma planes whole
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def sample_frames(path: str | Path, *, fps: float = DEFAULT_FPS, max_frames: int | None = None,
                  max_side: int | None = None,
                  duration_s: float | None = None) -> list[TimedFrame]:
    """``(t_s, RGB uint8 image)`` pairs of ``path`` at the instants of :func:`sample_times`.

    ``duration_s`` (a release question carries it) overrides the container's duration;
    ``max_side`` downscales frames so their longer side is at most that many pixels.

    Raises:
        MediaError: the file cannot be opened or decoded, has no video stream or duration, it
            yields no frame, or a parameter is out of range.
    """
    path = Path(path)
    if max_side is not None and max_side < 2:
        raise MediaError(f"{max_side = } must be >= 2 or None")
    try:
        container = av.open(str(path), metadata_errors="ignore")
    except (av.FFmpegError, OSError, UnicodeDecodeError) as err:
        raise MediaError(f"{path}: cannot open video for frame sampling ({err})") from None
    with container:
        if not container.streams.video:
            raise MediaError(f"{path}: no video stream to sample frames from")
        times = sample_times(duration_s if duration_s is not None else
                             _duration_s(container, path), fps=fps, max_frames=max_frames)
        try:
            return _decode_at(container, times, max_side)
        except av.FFmpegError as err:
            raise MediaError(f"{path}: decoding failed ({err})") from None
        except _NoFrames:
            raise MediaError(f"{path}: no frame could be decoded") from None


class _NoFrames(Exception):
    """The stream decoded to nothing."""


def _decode_at(container: Any, times: Sequence[float], max_side: int | None) -> list[TimedFrame]:
    """Walk decoded frames and instants together; frames past the last instant are not read."""
    stream = container.streams.video[0]
    stream.thread_type = "AUTO"
    width, height = _output_size(stream.codec_context.width, stream.codec_context.height,
                                 max_side)
    out: list[TimedFrame] = []
    previous: Any = None
    pending = 0
    for frame in container.decode(stream):
        t_s = float(frame.time) if frame.time is not None else 0.0
        while pending < len(times) and t_s > times[pending] + _EPS_S:
            # this frame comes after the instant: the one before it was on screen then
            out.append((times[pending], _rgb(previous if previous is not None else frame,
                                            width, height)))
            pending += 1
        if pending == len(times):
            return out
        previous = frame
    if previous is None:
        raise _NoFrames
    last = _rgb(previous, width, height)  # the last frame stays on screen to the end
    out += [(t, last) for t in times[pending:]]
    return out


def _rgb(frame: Any, width: int, height: int) -> Any:
    image = frame.to_ndarray(format="rgb24", width=width, height=height)
    return np.ascontiguousarray(image, dtype=np.uint8)
