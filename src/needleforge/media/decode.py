"""The one frame reader every keyframe and sample reader decodes video through.

Shaped like PySceneDetect's ``VideoStream``: :class:`VideoReader` opens a file once, states its
first video stream's :class:`StreamFacts`, walks every frame (``frames``) or picks the frame for
a time (``frame_at``). A :class:`DecodedFrame` converts to RGB only when asked. Frame times
(``t_s``) count seconds from the stream start, rounded to microseconds, never negative: the
clock of scenes, keyframes and object boxes.

``pick``: ``"at_or_after"`` takes the first frame at or after ``t`` (keyframe samplers: after a
cut at ``t`` the new shot); ``"on_screen"`` the last one at or before ``t`` (what a viewer sees
then). ``seek``: ``"never"`` decodes from the file's start; ``"keyframe"`` seeks to the keyframe
at or before ``t`` and decodes forward; ``"checked"`` too, but when a seek lands anywhere else
(a file without an index) it decodes from the start from then on. A time at most
:data:`DECODE_ON_S` (or twice the longest seek-to-target distance seen) ahead of the decoder
is reached by decoding on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias

import av
import numpy as np
import numpy.typing as npt

from needleforge.errors import MediaError

#: An RGB frame: ``uint8`` array of shape ``(height, width, 3)`` (the one definition; the
#: backends re-export it).
RGBImage: TypeAlias = npt.NDArray[np.uint8]
Pick: TypeAlias = Literal["at_or_after", "on_screen"]
Seek: TypeAlias = Literal["never", "keyframe", "checked"]
#: FFmpeg decoder threading (PyAV's default ``SLICE``; ``AUTO`` adds frame threads).
Threads: TypeAlias = Literal["NONE", "SLICE", "FRAME", "AUTO"]
_EPS_S = 1e-6
#: A time at most this far ahead of the decoder is reached by decoding on, not seeking.
DECODE_ON_S = 2.0


@dataclasses.dataclass(frozen=True, slots=True)
class StreamFacts:
    """A video stream's header: size, frame rate (0.0 unstated), length (None unstated),
    first timestamp and pixel aspect ratio."""

    width: int
    height: int
    fps: float
    duration_s: float | None
    start_s: float
    pixel_aspect: float = 1.0

    def fitted(self, *, max_side: int | None) -> tuple[int, int] | None:
        """(width, height) with the longer side at most ``max_side``, aspect kept and both
        sides even (every pixel format's chroma planes stay whole); None when no shrink is
        needed."""
        if max_side is None or max(self.width, self.height) <= max_side:
            return None
        scale = max_side / max(self.width, self.height)
        return (max(2, round(self.width * scale / 2) * 2),
                max(2, round(self.height * scale / 2) * 2))


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DecodedFrame:
    """One decoded picture shown ``t_s`` seconds after the stream start (``key``: a keyframe)."""

    t_s: float
    key: bool
    picture: Any  # av.VideoFrame

    def rgb(self, *, size: tuple[int, int] | None = None) -> RGBImage:
        """The picture as a contiguous RGB ``uint8`` array (height x width x 3), scaled to
        ``size`` = (width, height) during the colour conversion (cheaper than resizing after;
        FFmpeg's swscale with PyAV's default interpolation)."""
        scale = {} if size is None else {"width": size[0], "height": size[1]}
        return np.ascontiguousarray(self.picture.to_ndarray(format="rgb24", **scale),
                                    dtype=np.uint8)


class VideoReader:
    # the cursor frame_at moves: frames since the last seek, the last frame consumed, the
    # first one decoded but not consumed, and the earliest time that position serves
    _frames: Iterator[DecodedFrame] | None
    _before: DecodedFrame | None
    _ahead: DecodedFrame | None
    _from_s: float
    """The first video stream of one open file: its facts and its frames. Not thread-safe.

    Args:
        path: the video file.
        threads: the decoder's threading (see :data:`Threads`); :meth:`use_threads` changes
            it until the first frame is decoded.
        max_bad_packets: with 0, the first packet that fails to decode raises
            :class:`MediaError`; with ``n``, isolated bad packets are skipped and decoding
            stops after ``n`` in a row. Either way the first failure is kept in
            ``decode_error``; ``frames_decoded`` counts frames, and ``ended`` says whether
            :meth:`frame_at` has decoded to the end of the file.

    Raises:
        MediaError: the file is missing, is not a media file PyAV can open, or has no video
            stream; the message names the file.
    """

    def __init__(self, path: Path, *, threads: Threads = "SLICE",
                 max_bad_packets: int = 0) -> None:
        self.path, self._threads = path, threads
        self._container, self._stream = self._open()
        self.facts = stream_facts(self._container, self._stream)
        self._max_bad_packets = max_bad_packets
        self.decode_error: str | None = None
        self.frames_decoded = 0
        self._time_base = Fraction(self._stream.time_base) if self._stream.time_base else None
        self._start_pts = int(self._stream.start_time or 0)
        self._moved = False  # whether the demuxer may have left the start of the file
        self._seekable = True  # False once a checked seek misled
        self._landing_s = 0.0  # the longest distance a seek landed before its target
        self.forget_position()

    def _open(self) -> tuple[Any, Any]:
        if not self.path.is_file():
            raise MediaError(f"{self.path}: video file not found")
        try:
            container = av.open(str(self.path), metadata_errors="ignore")
        except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError) as err:
            raise MediaError(f"{self.path}: cannot open as a video ({err})") from None
        if not container.streams.video:
            kinds = sorted({str(s.type) for s in container.streams}) or ["none"]
            container.close()
            raise MediaError(f"{self.path}: no video stream (streams: {', '.join(kinds)})")
        stream = container.streams.video[0]
        stream.thread_type = self._threads
        return container, stream

    def use_threads(self, kind: Threads) -> None:
        """Decode with ``kind`` threading (PyAV raises RuntimeError once decoding started)."""
        self._stream.thread_type = self._threads = kind

    def frames(self) -> Iterator[DecodedFrame]:
        """Every frame from the start of the file, in presentation order.

        Raises:
            MediaError: a packet fails to decode (unless ``max_bad_packets`` skips it).
        """
        if self._moved:
            # reopened, not sought: without an index a seek to the start can land later
            self._container.close()
            self._container, self._stream = self._open()
            self._moved = False
        self.forget_position()
        return self._decode()

    def frame_at(self, t_s: float, *, pick: Pick, seek: Seek = "keyframe",
                 until_s: float = math.inf, hold_last: bool = False) -> DecodedFrame | None:
        """The frame ``pick`` chooses for ``t_s`` seconds, reached as ``seek`` says. With
        ``until_s`` (``"at_or_after"``), a frame at or after it is refused and the last one
        before ``t_s`` stands in (a sampler keeps to its scene); with ``hold_last``, a time past
        the end gets the last frame. None when nothing fits.

        Raises:
            MediaError: ``t_s`` is negative, not a number or (unless ``hold_last``) past the
                last frame's display interval; a seek or a packet fails.
        """
        self._check_time(t_s)
        if self._must_reposition(t_s, pick, seek):
            self._reposition(t_s, pick, seek)
        frames = self._frames or iter(())
        while True:
            if self._ahead is None:
                self._ahead = next(frames, None)
                if self._ahead is None:
                    self.ended = True
                    break
            if _past(self._ahead.t_s, t_s, pick):
                break
            self._before, self._ahead = self._ahead, None
        if not hold_last:
            self._check_end(t_s)
        after, before = self._ahead, self._before
        if pick == "on_screen":
            return before if before is not None else after
        return after if after is not None and after.t_s < until_s - _EPS_S else before

    def keyframe_at_or_before(self, t_s: float) -> DecodedFrame | None:
        """The first frame after a seek to the keyframe at or before ``t_s``, without decoding
        on: a cheap look at a video. None when nothing decodes there.

        Raises:
            MediaError: ``t_s`` is negative or not a number; the seek fails.
        """
        self._check_time(t_s)
        return self._land(t_s)

    def forget_position(self) -> None:
        """Make the next :meth:`frame_at` seek (or rewind) instead of decoding on, so what it
        returns depends on that time alone, not on the times asked for before."""
        self._frames, self._before, self._ahead = None, None, None
        self.ended, self._from_s = False, 0.0

    def close(self) -> None:
        """Release the file (again is harmless)."""
        self._container.close()

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _check_time(self, t_s: float) -> None:
        if not (math.isfinite(t_s) and t_s >= 0):
            raise MediaError(f"{self.path}: t_s = {t_s!r} lies outside the video (it must be "
                             f"a number of seconds >= 0)")

    def _check_end(self, t_s: float) -> None:
        # the end is known once decoded: an MPEG program stream's header can be seconds short
        last = self._before
        step_s = 1 / self.facts.fps if self.facts.fps else 0.0
        if self.ended and last is not None and t_s > last.t_s + step_s + _EPS_S:
            raise MediaError(f"{self.path}: t_s = {t_s!r} lies past the end of the video (its "
                             f"last frame is shown from {last.t_s:.3f} s for {step_s:.3f} s)")

    def _must_reposition(self, t_s: float, pick: Pick, seek: Seek) -> bool:
        if self._frames is None:
            return True
        if t_s < self._from_s or (self._before is not None and _past(self._before.t_s, t_s, pick)):
            return True  # the decoder stands past t_s
        last = self._ahead or self._before
        if seek == "never" or not self._seekable or self.ended or last is None:
            return False
        return t_s - last.t_s > max(DECODE_ON_S, 2 * self._landing_s)

    def _reposition(self, t_s: float, pick: Pick, seek: Seek) -> None:
        if seek == "never" or not self._seekable:
            self._frames = self.frames()
            return
        first = self._land(t_s)
        if seek == "checked" and (first is None or not first.key or _past(first.t_s, t_s, pick)):
            self._seekable = False  # the index misleads: decode from the start from now on
            self._frames = self.frames()

    def _land(self, t_s: float) -> DecodedFrame | None:
        """Seek to the keyframe at or before ``t_s``; the first frame there is held ahead."""
        self.forget_position()
        pts = math.floor(Fraction(t_s) / (self._time_base or Fraction(1, av.time_base)))
        try:
            self._container.seek(max(pts + self._start_pts, 0), stream=self._stream,
                                 backward=True, any_frame=False)
        except (av.FFmpegError, OSError) as err:
            raise MediaError(f"{self.path}: seeking to {t_s:.3f} s failed ({err})") from None
        self._frames = self._decode()
        first = next(self._frames, None)
        self._ahead, self.ended, self._from_s = first, first is None, t_s
        if first is not None:
            self._landing_s = max(self._landing_s, t_s - first.t_s)
        return first

    def _decode(self) -> Iterator[DecodedFrame]:
        """Frames from where the demuxer stands, skipping bad packets as configured."""
        self._moved = True
        packets = self._container.demux(self._stream)
        failures, t_s = 0, None
        while True:
            try:
                pictures = next(packets).decode()
            except StopIteration:
                return
            except (av.FFmpegError, OSError) as err:
                failures += 1
                message = f"{self.path}: decoding failed after {self.frames_decoded} frames: {err}"
                truncated = isinstance(err, av.error.EOFError)  # the frames so far stand
                if not (self._max_bad_packets or truncated):
                    raise MediaError(message) from None
                self.decode_error = self.decode_error or message
                if truncated or failures >= self._max_bad_packets:
                    return
                continue
            failures = 0
            for picture in pictures:
                if picture.pts is not None and self._time_base is not None:
                    t_s = float((picture.pts - self._start_pts) * self._time_base)
                else:  # no timestamp: one frame interval after the frame before
                    t_s = 0.0 if t_s is None else t_s + 1 / (self.facts.fps or 25.0)
                t_s = round(max(t_s, 0.0), 6)
                self.frames_decoded += 1
                yield DecodedFrame(t_s, bool(picture.key_frame), picture)


def _past(frame_s: float, t_s: float, pick: Pick) -> bool:
    """Whether a frame at ``frame_s`` lies beyond what ``pick`` may choose for ``t_s``."""
    return frame_s >= t_s - _EPS_S if pick == "at_or_after" else frame_s > t_s + _EPS_S


def stream_facts(container: Any, stream: Any) -> StreamFacts:
    """What the header of ``stream`` (a PyAV video stream of open ``container``) states; the
    length is the stream's, else the container's."""
    time_base = stream.time_base
    if stream.duration is not None and time_base is not None:
        duration_s: float | None = float(stream.duration * time_base)
    elif container.duration is not None:
        duration_s = float(container.duration) / float(av.time_base)
    else:
        duration_s = None
    rate = stream.average_rate or stream.guessed_rate
    ctx = stream.codec_context
    return StreamFacts(
        width=int(ctx.width), height=int(ctx.height), fps=float(rate) if rate else 0.0,
        duration_s=duration_s,
        start_s=float(stream.start_time * time_base) if stream.start_time and time_base else 0.0,
        pixel_aspect=float(ctx.sample_aspect_ratio) if ctx.sample_aspect_ratio else 1.0)
