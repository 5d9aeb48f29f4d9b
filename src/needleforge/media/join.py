"""Montages joined by stream copy from cached clips, and freshly encoded edited pieces.

A montage is a list of :class:`Piece` objects: frames of a cached clip (see
:mod:`needleforge.media.cache`) from one of its keyframes, one every second. The join copies
the coded frames: each piece's frames are sliced out of its raw H.264 stream by the clip's byte
index and muxed into the mp4 with PyAV, with timestamps ``0, 1, 2, …`` frames, so the output
plays contiguously and nothing is decoded or encoded. Because clips have no B-frames, a piece
may end on any frame.

Why not ffmpeg's concat demuxer (``inpoint``/``outpoint``, ``-c copy``)? It opens and probes
every piece, which decodes several frames each (``avformat_find_stream_info``): about 7 ms of
CPU per piece here, several times the cost of the copy itself, and for NeMo-length segments
(4–12 s) the largest cost of a montage. Byte slicing by index costs about 7 µs per frame.

**Frame rounding.** :func:`plan_pieces` turns parts in seconds (``offset_s`` into a clip,
``duration_s``) into pieces: part ``i`` ends at montage frame ``frame_at(D_i)``
(:func:`~needleforge.records.span.frame_at`), where ``D_i`` is the sum of the durations of
parts ``0..i``, so boundaries are within half a frame of the plan and rounding never
accumulates. A part asking one frame more than its clip holds (rounding at a scene end) takes
what there is, and the next part makes the frame up; a part left no frame is dropped.

**Audio** (``profile.audio``): each clip has an AAC sidecar ``<clip>.m4a``; ffmpeg's concat
demuxer joins the sidecars with the same points and re-encodes them through
``aresample=async=1`` (cheap) beside the copied video, which keeps them on the video's
timeline within one AAC frame (about 21 ms) at each join. Only the video is verified.

:func:`encode_piece` encodes a short edited piece (frames with text drawn on, an inserted
still) into the cached-clip format with the same stream parameters, so it joins copied
pieces as the part ``(path, 0, d)``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import ffmpeg
import numpy as np
import numpy.typing as npt

from needleforge.errors import MediaError
from needleforge.media.cache import (
    AUD_BYTES,
    AUDIO_RATE_HZ,
    ClipIndex,
    as_args,
    audio_encoder_options,
    finish_clip,
    normalize_filter,
    normalize_steps,
    read_index,
    run_ffmpeg_measured,
    video_encoder_options,
)
from needleforge.media.outputs import scratch_path
from needleforge.params import RenderParams
from needleforge.records import FrameSpan, frame_at

RGBFrame = npt.NDArray[np.uint8]


@dataclasses.dataclass(frozen=True, slots=True)
class Piece:
    """Frames ``span`` of cached clip ``clip`` (starting on one of its keyframes), copied into
    the montage after the piece before."""

    clip: Path
    span: FrameSpan


def plan_pieces(parts: Sequence[tuple[Path, float, float]], *, profile: RenderParams,
                name: str) -> list[Piece]:
    """Parts ``(clip, offset_s, duration_s)`` played back to back, as the clip frames the join
    copies (see "Frame rounding"); ``name`` names the montage in errors.

    Raises:
        MediaError: no part lasts half a frame; an offset is negative or a duration not > 0; a
            clip is not a cached clip of ``profile``; a part starts beyond its clip or runs
            more than a frame past its end.
    """
    fps, label = profile.fps, f"montage {name}"
    indexes = _indexes([clip for clip, _, _ in parts], profile=profile, label=label)
    pieces: list[Piece] = []
    planned_s, done = 0.0, 0
    for i, ((clip, offset_s, duration_s), index) in enumerate(zip(parts, indexes, strict=True)):
        where = f"{label}: piece {i} ({clip.name})"
        if not (offset_s >= 0 and duration_s > 0 and math.isfinite(offset_s + duration_s)):
            raise MediaError(f"{where}: offset {offset_s!r} s must be >= 0 and duration "
                             f"{duration_s!r} s > 0")
        first = frame_at(offset_s, rate=fps)
        planned_s += duration_s
        wanted = frame_at(planned_s, rate=fps) - done
        available = index.n_frames - first
        if available <= 0 or wanted > available + 1:
            raise MediaError(f"{where}: wants [{first / fps:g}, {(first + wanted) / fps:.3f}) s "
                             f"but the clip holds {index.n_frames} frames "
                             f"({index.n_frames / fps:.3f} s)")
        if min(wanted, available) > 0:
            pieces.append(Piece(clip, FrameSpan(first, first + min(wanted, available), fps)))
            done += pieces[-1].span.n_frames
    if not pieces:
        raise MediaError(f"{label}: no piece lasts half a frame ({len(parts)} given)")
    return pieces


@dataclasses.dataclass(frozen=True, slots=True)
class RenderedVideo:
    """A written video: its frames and duration as read back, and the CPU seconds it took.

    ``cpu_s`` counts the ffmpeg children (encodes, audio) and, for joins, this thread's own
    CPU time spent muxing.
    """

    path: Path
    n_frames: int
    duration_s: float
    cpu_s: float


@dataclasses.dataclass(frozen=True, slots=True)
class _Cut:
    clip: Path
    index: ClipIndex
    first: int
    n_frames: int


def render_montage(
    pieces: Sequence[Piece], out: Path, *, profile: RenderParams, name: str | None = None
) -> RenderedVideo:
    """Join ``pieces`` into ``out`` (mp4) by stream copy, then verify it.

    ``name`` (default: ``out``'s stem) names the montage in errors. Raises
    :class:`MediaError` when there are no pieces; a clip is not a cached clip of this profile;
    a piece is not at the profile's rate, not within its clip or does not start on a keyframe;
    ffmpeg fails (audio); or the output's frame count differs from the pieces' by more than
    one frame, or its timestamps jump. ``out`` is replaced atomically.
    """
    label = f"montage {name or out.stem}"
    cuts = _cuts(pieces, profile=profile, label=label)
    out.parent.mkdir(parents=True, exist_ok=True)
    video, joined = scratch_path(out, ".video.mp4"), scratch_path(out, ".mp4")
    try:
        started = time.thread_time()
        _mux(cuts, video, profile=profile)
        cpu_s = time.thread_time() - started
        if profile.audio:
            cpu_s += _add_audio(cuts, video, joined, profile=profile, label=label)
        else:
            video.replace(joined)
        n_frames, duration_s = verify_video(joined, profile=profile, label=label,
                                            planned_frames=sum(c.n_frames for c in cuts))
        joined.replace(out)
    finally:
        video.unlink(missing_ok=True)
        joined.unlink(missing_ok=True)
    return RenderedVideo(path=out, n_frames=n_frames, duration_s=duration_s, cpu_s=cpu_s)


def _cuts(pieces: Sequence[Piece], *, profile: RenderParams, label: str) -> list[_Cut]:
    """Every piece with its clip's index, checked: at the profile's rate, inside its clip,
    starting on a keyframe."""
    if not pieces:
        raise MediaError(f"{label}: has no pieces")
    fps = profile.fps
    cuts: list[_Cut] = []
    indexes = _indexes([p.clip for p in pieces], profile=profile, label=label)
    for i, (piece, index) in enumerate(zip(pieces, indexes, strict=True)):
        where, span = f"{label}: piece {i} ({piece.clip.name})", piece.span
        if span.rate != fps or span.end > index.n_frames:
            raise MediaError(f"{where}: frames [{span.start}, {span.end}) at {span.rate} fps "
                             f"are not among the clip's {index.n_frames} at {fps} fps")
        if span.start not in index.keyframes:
            raise MediaError(f"{where}: frame {span.start} ({span.start_s:g} s) is not a "
                             "keyframe")
        cuts.append(_Cut(clip=piece.clip, index=index, first=span.start,
                         n_frames=span.n_frames))
    return cuts


def _indexes(clips: Sequence[Path], *, profile: RenderParams, label: str) -> list[ClipIndex]:
    """The index of each clip (read once per clip), checked against ``profile``."""
    read: dict[Path, ClipIndex] = {}
    for i, clip in enumerate(clips):
        if clip not in read:
            read[clip] = _profile_index(clip, profile=profile,
                                        where=f"{label}: piece {i} ({clip.name})")
    return [read[clip] for clip in clips]


def _profile_index(clip: Path, *, profile: RenderParams, where: str) -> ClipIndex:
    """The index of ``clip``, checked against ``profile`` (stream copy needs equal streams)."""
    if not clip.is_file():
        raise MediaError(f"{where}: clip {clip} not found")
    index = read_index(clip)
    if not index.matches(profile):
        raise MediaError(f"{where}: clip is {index.width}x{index.height}@{index.fps}, not the "
                         f"profile's {profile.width}x{profile.height}@{profile.fps}")
    if profile.audio and not clip.with_suffix(".m4a").is_file():
        raise MediaError(f"{where}: clip has no audio sidecar (.m4a)")
    return index


def _mux(cuts: Sequence[_Cut], out: Path, *, profile: RenderParams) -> None:
    """Write the cuts' coded frames into an mp4, one frame per tick of ``1 / fps``."""
    tick = Fraction(1, profile.fps)
    with av.open(str(cuts[0].clip), format="h264") as template, \
            av.open(str(out), "w", format="mp4",
                    container_options={"fflags": "+bitexact", "movflags": "+faststart"}) as dst:
        stream = dst.add_stream_from_template(template.streams.video[0])
        stream.time_base = tick
        pts = 0
        for cut in cuts:
            keys = set(cut.index.keyframes)
            for k, data in enumerate(_frames(cut)):
                packet = av.Packet(data)
                packet.stream = stream
                packet.time_base = tick
                packet.pts = packet.dts = pts
                packet.duration = 1
                packet.is_keyframe = cut.first + k in keys
                dst.mux(packet)
                pts += 1


def _frames(cut: _Cut) -> Iterator[bytes]:
    """The coded frames of ``cut``, each without its access-unit delimiter."""
    offsets = cut.index.offsets[cut.first: cut.first + cut.n_frames + 1]
    with cut.clip.open("rb") as stream:
        stream.seek(offsets[0])
        blob = stream.read(offsets[-1] - offsets[0])
    for start, end in itertools.pairwise(offsets):
        yield blob[start - offsets[0] + AUD_BYTES: end - offsets[0]]


def _add_audio(
    cuts: Sequence[_Cut], video: Path, out: Path, *, profile: RenderParams, label: str
) -> float:
    """Mux the joined audio sidecars beside the copied video (see module docstring)."""
    fps = profile.fps
    lines = ["ffconcat version 1.0"]
    for cut in cuts:
        quoted = "'" + str(cut.clip.with_suffix(".m4a").resolve()).replace("'", "'\\''") + "'"
        start = cut.first / fps
        lines += [f"file {quoted}", f"inpoint {start:.6f}",
                  f"outpoint {start + cut.n_frames / fps:.6f}",
                  f"duration {cut.n_frames / fps:.6f}"]
    listing = scratch_path(out, ".ffconcat")
    listing.write_text("\n".join(lines) + "\n", "utf-8")
    total_s = sum(c.n_frames for c in cuts) / fps
    try:
        return run_ffmpeg_measured(
            ["-i", str(video), "-f", "concat", "-safe", "0", "-i", str(listing),
             "-map", "0:v:0", "-map", "1:a:0", "-c:v", "copy",
             "-af", "aresample=async=1:first_pts=0", *as_args(audio_encoder_options()),
             "-t", f"{total_s:.6f}", "-flags:v", "+bitexact", "-movflags", "+faststart",
             "-f", "mp4", str(out)], what=label)
    finally:
        listing.unlink(missing_ok=True)


def verify_video(
    path: Path, *, profile: RenderParams, label: str, planned_frames: int
) -> tuple[int, float]:
    """Frames and duration of ``path`` (demuxed with PyAV), checked against the plan.

    Raises :class:`MediaError` naming ``label`` when the frame count is more than one frame
    away from ``planned_frames`` or the timestamps do not advance one frame at a time.
    """
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pts = [int(p.pts) for p in container.demux(stream) if p.pts is not None]
        tb = Fraction(stream.time_base or Fraction(1, 90_000))
    if not pts:
        raise MediaError(f"{label}: {path} has no video frames")
    step = Fraction(1, profile.fps) / tb
    jumps = [b - a for a, b in itertools.pairwise(pts) if abs(b - a - step) > 1]
    if pts[0] != 0 or jumps:
        raise MediaError(f"{label}: timestamps do not run contiguously (first {pts[0]}, "
                         f"irregular steps {jumps[:3]} where {float(step):g} expected)")
    n_frames = len(pts)
    duration_s = float((pts[-1] + step) * tb)
    if abs(n_frames - planned_frames) > 1:
        raise MediaError(f"{label}: rendered {n_frames} frames / {duration_s:.3f} s but the "
                         f"plan is {planned_frames} frames")
    return n_frames, duration_s


def encode_piece(
    out: Path,
    *,
    profile: RenderParams,
    frames: Sequence[RGBFrame] | None = None,
    stream: Any = None,
    duration_s: float | None = None,
) -> RenderedVideo:
    """Encode an edited piece as a cached-clip-format stream ``out`` (``.h264`` + index).

    Give either ``frames`` — RGB ``uint8`` arrays of one shape ``(h, w, 3)``, shown one per
    profile frame — or ``stream``, an ffmpeg-python video stream (e.g.
    ``ffmpeg.input(src, ss=3, t=1).drawtext(...)``, or a lavfi source) with ``duration_s``;
    its first frame becomes time 0. Either is fitted and padded like a cached clip, with the
    same encoder settings, so the piece joins cached clips by stream copy. With
    ``profile.audio`` a silent ``.m4a`` sidecar of the same length is written too. Raises
    :class:`MediaError` for a bad call (both or neither input, ``out`` not ``.h264``, mixed
    frame shapes, no duration) or a failed encode.
    """
    if (frames is None) == (stream is None):
        raise MediaError(f"encode_piece {out.name}: give exactly one of frames or stream")
    if out.suffix != ".h264":
        raise MediaError(f"encode_piece {out.name}: the piece must be a .h264 file")
    if frames is not None:
        n_frames = len(frames)
        args, chunks = _frames_args(frames, profile=profile, what=out.name), _bytes(frames)
    else:
        n_frames = frame_at(duration_s or 0.0, rate=profile.fps)
        if n_frames < 1:
            raise MediaError(f"encode_piece {out.name}: a stream needs duration_s of at least "
                             f"one frame (got {duration_s!r})")
        args, chunks = _stream_args(stream, profile=profile, n_frames=n_frames), None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = scratch_path(out, ".h264")
    try:
        cpu_s = run_ffmpeg_measured([*args, str(tmp)], what=f"piece {out}", stdin_chunks=chunks)
        finish_clip(tmp, out, profile=profile, n_frames=n_frames, what=f"piece {out}")
    finally:
        tmp.unlink(missing_ok=True)
    if profile.audio:
        cpu_s += run_ffmpeg_measured(
            ["-f", "lavfi", "-i", f"anullsrc=r={AUDIO_RATE_HZ}:cl=stereo",
             "-t", f"{n_frames / profile.fps:.6f}", *as_args(audio_encoder_options()),
             "-f", "ipod", str(out.with_suffix(".m4a"))], what=f"silence for {out}")
    return RenderedVideo(path=out, n_frames=n_frames, duration_s=n_frames / profile.fps,
                         cpu_s=cpu_s)


def _frames_args(frames: Sequence[RGBFrame], *, profile: RenderParams, what: str) -> list[str]:
    if not frames:
        raise MediaError(f"encode_piece {what}: no frames")
    shape = frames[0].shape
    if len(shape) != 3 or shape[2] != 3 or any(f.shape != shape for f in frames):
        raise MediaError(f"encode_piece {what}: frames must be RGB arrays of one shape "
                         f"(h, w, 3); the first is {shape}")
    return ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{shape[1]}x{shape[0]}",
            "-framerate", str(profile.fps), "-i", "pipe:0", "-vf", normalize_filter(profile),
            "-frames:v", str(len(frames)), *as_args(video_encoder_options(profile))]


def _bytes(frames: Sequence[RGBFrame]) -> Iterator[bytes]:
    for frame in frames:
        yield np.ascontiguousarray(frame, dtype=np.uint8).tobytes()


def _stream_args(stream: Any, *, profile: RenderParams, n_frames: int) -> list[str]:
    """ffmpeg arguments (without the output path) encoding an ffmpeg-python stream."""
    node = stream.filter("setpts", "PTS-STARTPTS")
    for name, filter_options in normalize_steps(profile):
        node = node.filter(name, **filter_options)
    options: dict[str, Any] = {**video_encoder_options(profile), "frames:v": n_frames}
    args: list[str] = ffmpeg.output(node, "OUT", **options).get_args()
    if args[-1] != "OUT":
        raise MediaError(f"unexpected ffmpeg-python arguments: {args[-3:]}")
    return args[:-1]
