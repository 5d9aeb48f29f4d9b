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
from pathlib import Path
from typing import Literal

import numpy as np

from needleforge.backends.openai.client import TimedFrame
from needleforge.errors import MediaError
from needleforge.media.decode import DecodedFrame, VideoReader

#: Frames per second sampled before thinning (NeMo Sec. 5.1 and VNBench both use 1 fps).
DEFAULT_FPS = 1.0
DecodeMode = Literal["seek", "sequential", "auto"]
DECODE_MODES: tuple[str, ...] = ("seek", "sequential", "auto")
_EPS_S = 1e-6
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
    with VideoReader(path) as reader:
        length_s = duration_s if duration_s is not None else reader.facts.duration_s
        if length_s is None:
            raise MediaError(f"{path}: the container states no duration; pass duration_s")
        times = sample_times(length_s, fps=fps, max_frames=max_frames)
        spacing_s = (times[-1] - times[0]) / (len(times) - 1) if len(times) > 1 else 0.0
        sequential = mode == "sequential" or (mode == "auto" and spacing_s <= _DENSE_SPACING_S)
        # frame threads speed a straight decode but refill their pipeline after every seek:
        # slice threads alone cost ~30 % less CPU when seeking
        reader.use_threads("AUTO" if sequential else "SLICE")
        size = reader.facts.fitted(max_side=max_side)
        out: list[TimedFrame] = []
        shown: DecodedFrame | None = None
        for t in times:
            # instants count from the container's zero, frames from the stream start
            frame = reader.frame_at(max(t - reader.facts.start_s, 0.0), pick="on_screen",
                                    seek="never" if sequential else "checked", hold_last=True)
            if frame is None:
                raise MediaError(f"{path}: no frame could be decoded")
            if frame is not shown:
                shown, image = frame, frame.rgb(size=size)
            out.append((t, image))
        return out
