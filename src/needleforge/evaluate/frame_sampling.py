"""Frames a model sees of a release video: 1 fps, thinned uniformly to ``max_frames``.

Sampling instants sit in the middle of each second (``0.5 s, 1.5 s, …`` at 1 fps): the scorer
compares integer-second sets (``{floor(s) … ceil(e)}``), so a mid-second frame stands for its
second without falling on the cut between two montage segments, which sits on whole seconds.
When the video has more instants than ``max_frames``, ``max_frames`` of them are kept, evenly
spread (first and last included). Each instant gets the last frame shown at or before it (the
frame on screen at that moment), and the returned time is the instant itself, so prompts read
``[12.5 s]`` rather than a codec timestamp.

Decoding (``mode``): ``"sequential"`` decodes the file front to back, up to the last instant.
``"seek"`` (the default) jumps to the keyframe at or before an instant whenever the instant lies
further ahead than one keyframe interval, then decodes forward to it: a 20-minute montage thinned
to 64 instants decodes about 64 GOPs instead of 30,000 frames. A seek is trusted only when it
lands on a keyframe at or before the instant; otherwise (a file without an index, a seek that
overshoots) the remaining instants are decoded sequentially from the start. Both modes give the
same frames, pixel for pixel, on closed-GOP files (what the renderer writes). ``"auto"`` (the
default) seeks when the instants are more than ``2 s`` apart on average and decodes sequentially
otherwise: with an instant in every GOP, seeking saves nothing and loses frame threading.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import av
import numpy as np

from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import MediaError

#: Frames per second sampled before thinning (NeMo Sec. 5.1 and VNBench both use 1 fps).
DEFAULT_FPS = 1.0
DecodeMode = Literal["seek", "sequential", "auto"]
DECODE_MODES: tuple[str, ...] = ("seek", "sequential", "auto")
_EPS_S = 1e-6
#: Keyframe interval assumed before a seek shows the real one (the renderer's is 1 s).
_DEFAULT_KEYINT_S = 1.0
#: ``"auto"`` decodes sequentially when instants are at most this far apart on average.
_DENSE_SPACING_S = 2.0


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
                  max_side: int | None = None, duration_s: float | None = None,
                  mode: DecodeMode = "auto") -> list[TimedFrame]:
    """``(t_s, RGB uint8 image)`` pairs of ``path`` at the instants of :func:`sample_times`.

    ``duration_s`` (a release question carries it) overrides the container's duration;
    ``max_side`` downscales frames so their longer side is at most that many pixels; ``mode``
    picks the decoding path (see the module docstring; the frames do not depend on it).

    Raises:
        MediaError: the file cannot be opened or decoded, has no video stream or duration, it
            yields no frame, or a parameter is out of range.
    """
    path = Path(path)
    if max_side is not None and max_side < 2:
        raise MediaError(f"{max_side = } must be >= 2 or None")
    if mode not in DECODE_MODES:
        raise MediaError(f"{mode = !r}; known: {', '.join(DECODE_MODES)}")
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
            spacing_s = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
            if mode == "sequential" or (mode == "auto" and spacing_s <= _DENSE_SPACING_S):
                return _Sampler(container, max_side).sequential(times)
            return _Sampler(container, max_side).seeking(times)
        except av.FFmpegError as err:
            raise MediaError(f"{path}: decoding failed ({err})") from None
        except _NoFrames:
            raise MediaError(f"{path}: no frame could be decoded") from None


class _NoFrames(Exception):
    """The stream decoded to nothing."""


class _Sampler:
    """Picks the frame on screen at each instant of one open container's first video stream."""

    def __init__(self, container: Any, max_side: int | None) -> None:
        self.container = container
        self.stream = container.streams.video[0]
        self.stream.thread_type = "AUTO"
        self.size = _output_size(self.stream.codec_context.width,
                                 self.stream.codec_context.height, max_side)

    def _rgb(self, frame: Any) -> Any:
        image = frame.to_ndarray(format="rgb24", width=self.size[0], height=self.size[1])
        return np.ascontiguousarray(image, dtype=np.uint8)

    def sequential(self, times: Sequence[float]) -> list[TimedFrame]:
        """Decode from the start; frames past the last instant are not read."""
        out: list[TimedFrame] = []
        previous: Any = None
        pending = 0
        for frame in self.container.decode(self.stream):
            t_s = _time(frame)
            while pending < len(times) and t_s > times[pending] + _EPS_S:
                # this frame comes after the instant: the one before it was on screen then
                out.append((times[pending], self._rgb(previous if previous is not None
                                                      else frame)))
                pending += 1
            if pending == len(times):
                return out
            previous = frame
        if previous is None:
            raise _NoFrames
        last = self._rgb(previous)  # the last frame stays on screen to the end
        return out + [(t, last) for t in times[pending:]]

    def seeking(self, times: Sequence[float]) -> list[TimedFrame]:
        """Seek to far instants, decode forward to near ones; sequential when a seek misleads."""
        # frame threads refill a pipeline after every seek: slice threads cost ~30 % less CPU
        self.stream.thread_type = "SLICE"
        out: list[TimedFrame] = []
        keyint_s = _DEFAULT_KEYINT_S
        frames: Iterator[Any] | None = None
        previous: Any = None  # the last decoded frame, at or before the current instant
        for index, t in enumerate(times):
            if frames is None or previous is None or t - _time(previous) > 2 * keyint_s:
                landed = self._seek(t)
                if landed is None:
                    return out + self._restart(times[index:])
                frames, previous = landed
                keyint_s = max(keyint_s, t - _time(previous))
            after = None
            for frame in frames:
                if _time(frame) > t + _EPS_S:
                    after = frame
                    break
                previous = frame
            out.append((t, self._rgb(previous)))
            if after is None:  # end of stream: the last frame stays on screen
                return out + [(rest, out[-1][1]) for rest in times[index + 1:]]
            frames = _chain(after, frames)
        return out

    def _seek(self, t: float) -> tuple[Iterator[Any], Any] | None:
        """Decoder positioned on the keyframe at or before ``t``, or None if it cannot be."""
        # frame times are absolute stream times (start offset included), like the instants
        self.container.seek(math.floor(t / self.stream.time_base), stream=self.stream,
                            backward=True, any_frame=False)
        frames = self.container.decode(self.stream)
        first = next(frames, None)
        if first is None or not first.key_frame or _time(first) > t + _EPS_S:
            return None
        return frames, first

    def _restart(self, times: Sequence[float]) -> list[TimedFrame]:
        self.container.seek(self.stream.start_time or 0, stream=self.stream, backward=True,
                            any_frame=False)
        return self.sequential(times)


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _time(frame: Any) -> float:
    return float(frame.time) if frame.time is not None else 0.0
