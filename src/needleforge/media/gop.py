"""A source's own GOPs: find them, decode a few, and join copied and fresh ones into an mp4.

A haystack that is already H.264 at the render profile (frame size and rate, 8-bit 4:2:0)
need not be re-encoded to be cut: between two IDR pictures a stream decodes on its own, so
its coded frames can be copied untouched and only the GOPs a needle touches encoded afresh.
This module holds the media half of that (:mod:`needleforge.vnbench.splice` decides what
is copied and what drawn):

- :func:`open_gop_source` reads the source's packets over the haystack once, without
  decoding (about 6 µs a packet), and either describes its GOPs (:class:`GopSource`) or says
  in a :class:`GopRefusal` why they cannot be reused: another codec, pixel format, size or
  rate; timestamps off the frame grid; no avcC (Annex B containers); open GOPs (keyframes
  that are not IDR pictures, or frames decoded after an IDR shown before it); a display
  rotation or interlacing (which the cache's decode would resolve). A damaged or truncated
  file is a :class:`~needleforge.errors.MediaError`, not a refusal.
- :class:`PieceCodec` says how a fresh piece must be encoded to join the source by stream
  copy: the source's H.264 profile and level, its colour tags, and a parameter-set id the
  source does not use, so the source's SPS/PPS and the pieces' both live in the output's
  avcC (:meth:`~needleforge.media.h264.AvcConfig.with_sets`) and no decoder has to replace
  one set by another.
- :func:`decode_runs` decodes the frames of the re-encoded runs (yuv420p, bit-exact: no
  colour conversion before the encoder).
- :func:`mux_spliced` writes copied GOPs (their packets byte for byte) and fresh pieces
  (:func:`~needleforge.media.h264.read_piece`) into one mp4, frame ``k`` at ``k / fps``;
  decode timestamps run one tick a packet, ``delay`` ticks behind, so copied B-frames keep
  their reordering and nothing goes backwards; :func:`verify_spliced` checks the result.

Why avcC and distinct ids rather than in-band headers alone: with one id, the source's
copied GOPs would follow pieces whose SPS replaced theirs, and decoders that read parameter
sets only from the sample entry (strict MP4 players, some hardware) would decode the
pieces with the source's SPS. Both ffmpeg 5.1 and 9 decode the result without a warning.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Generator, Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from needleforge.errors import MediaError
from needleforge.media.h264 import AvcConfig, EncodedRun, has_idr, param_set_id
from needleforge.records import FrameSpan

#: H.264 profile_idc → the x264 profile that encodes within it (others are refused).
X264_PROFILES = {66: "baseline", 77: "main", 100: "high"}
#: Colour matrices whose RGB → YUV conversion the pieces can match (AVColorSpace values):
#: unspecified (decoders assume BT.601), BT.709, BT.470BG and SMPTE 170M (both BT.601).
_MATRICES = {1: "bt709", 2: "bt601", 5: "bt601", 6: "bt601"}
#: How far from the frame grid a timestamp may lie, in frames (container rounding).
_GRID_TOL = 0.05
#: Largest sps id (H.264: 0..31); a piece's PPS takes the same id (x264).
_MAX_SPS_ID = 31


@dataclasses.dataclass(frozen=True, slots=True)
class GopRefusal:
    """Why a source's GOPs cannot be reused; the caller falls back to re-encoding it."""

    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class PieceCodec:
    """How fresh pieces are encoded so they join the source's GOPs by stream copy.

    ``matrix`` is the RGB → YUV matrix (``bt709`` or ``bt601``) that decoders use on the
    source's frames, so inserted pictures convert the same way; ``tags`` the source's colour
    tags as ``setparams`` options (AVColor* values), so the pieces decode alike.
    """

    profile: str
    level_idc: int
    param_id: int
    matrix: str
    tags: dict[str, int]

    def x264_options(self, *, fps: int, preset: str, crf: int) -> dict[str, str]:
        """ffmpeg output options of a piece (raw H.264, an AUD before each frame, no B)."""
        return {
            "c:v": "libx264", "preset": preset, "crf": str(crf), "pix_fmt": "yuv420p",
            "profile:v": self.profile, "g": str(fps), "keyint_min": str(fps),
            "sc_threshold": "0", "bf": "0", "threads": "1",
            "x264-params": f"stitchable=1:aud=1:sps-id={self.param_id}:level={self.level_idc}",
            "fflags": "+bitexact", "flags:v": "+bitexact", "map_metadata": "-1", "f": "h264",
        }


@dataclasses.dataclass(frozen=True, slots=True)
class GopSource:
    """The GOPs of ``n_frames`` frames of ``path`` from source frame ``first_frame``.

    Frame numbers are the haystack's (0 = its first frame). ``bounds`` lists the IDR
    pictures from the one at or before frame 0 to the first at or after ``n_frames``, and
    ends with where the last GOP ends (the next IDR, or the source's end): GOP ``i`` is
    frames ``[bounds[i], bounds[i + 1])``, in decode and display order alike. ``delay`` is
    the largest reordering of any packet (B-frames), in frames.
    """

    path: Path
    fps: int
    n_frames: int
    first_frame: int
    start_pts: int
    time_base: Fraction
    bounds: tuple[int, ...]
    delay: int
    avcc: AvcConfig
    codec: PieceCodec

    def gop(self, frame: int) -> tuple[int, int]:
        """``[start, end)`` of the GOP holding haystack frame ``frame``.

        Raises:
            MediaError: when the frame lies outside the scanned GOPs.
        """
        at = bisect.bisect_right(self.bounds, frame) - 1
        if not 0 <= at < len(self.bounds) - 1:
            raise MediaError(f"{self.path}: haystack frame {frame} lies outside its GOPs")
        return self.bounds[at], self.bounds[at + 1]

    def pts_of(self, frame: int) -> int:
        """The stream timestamp of haystack frame ``frame`` (integers only: this runs for
        every packet, and Fraction arithmetic costs microseconds a call)."""
        num, den = self.tb_ratio
        return self.start_pts + _round_div((self.first_frame + frame) * den, self.fps * num)

    def frame_of(self, pts: int) -> int:
        """The haystack frame at stream timestamp ``pts`` (nearest)."""
        num, den = self.tb_ratio
        return _round_div((pts - self.start_pts) * num * self.fps, den) - self.first_frame

    @property
    def tb_ratio(self) -> tuple[int, int]:
        """The time base as (numerator, denominator)."""
        return self.time_base.numerator, self.time_base.denominator


def _round_div(a: int, b: int) -> int:
    """``a / b`` rounded half up, in integers."""
    return (2 * a + b) // (2 * b)


def _open(path: Path) -> Any:
    try:
        return av.open(str(path))
    except (av.FFmpegError, OSError, UnicodeDecodeError, ValueError) as err:
        raise MediaError(f"{path}: cannot open the haystack source ({err})") from None


def _stream_refusal(stream: Any, *, fps: int, width: int, height: int) -> str | None:
    ctx = stream.codec_context
    fmt = ctx.format.name if ctx.format is not None else None
    sar = stream.sample_aspect_ratio
    checks = [
        (ctx.name == "h264", f"codec {ctx.name}, not H.264"),
        (fmt == "yuv420p", f"pixel format {fmt}, not yuv420p (8-bit 4:2:0, limited range)"),
        ((ctx.width, ctx.height) == (width, height),
         f"{ctx.width}x{ctx.height}, not the profile's {width}x{height}"),
        (stream.average_rate is not None and stream.average_rate == fps,
         f"{stream.average_rate} fps, not the profile's {fps}"),
        (sar is None or sar in (0, 1), f"sample aspect ratio {sar}, not square"),
        (ctx.colorspace in _MATRICES and int(ctx.color_range) in (0, 1),
         f"colour matrix {int(ctx.colorspace)} / range {int(ctx.color_range)} not matched"),
    ]
    return next((why for ok, why in checks if not ok), None)


def _stream_setup(stream: Any, *, fps: int, width: int, height: int
                  ) -> tuple[AvcConfig, PieceCodec] | GopRefusal:
    """The stream's avcC and how pieces joining it are encoded, or why it cannot be cut."""
    refusal = _stream_refusal(stream, fps=fps, width=width, height=height)
    if refusal is not None:
        return GopRefusal(refusal)
    avcc = AvcConfig.parse(bytes(stream.codec_context.extradata or b""))
    if avcc is None:
        return GopRefusal("no avcC record (an Annex B container): parameter sets not mergeable")
    codec = _piece_codec(stream.codec_context, avcc)
    return GopRefusal(codec) if isinstance(codec, str) else (avcc, codec)


def _piece_codec(ctx: Any, avcc: AvcConfig) -> PieceCodec | str:
    profile = X264_PROFILES.get(avcc.profile_idc)
    if profile is None:
        return f"H.264 profile_idc {avcc.profile_idc} (only baseline, main, high)"
    used = {param_set_id(n) for n in (*avcc.sps, *avcc.pps)}
    free = next((i for i in range(_MAX_SPS_ID + 1) if i not in used), None)
    if free is None:
        return "no free parameter-set id"
    tags = {"colorspace": int(ctx.colorspace), "color_primaries": int(ctx.color_primaries),
            "color_trc": int(ctx.color_trc), "range": int(ctx.color_range)}
    return PieceCodec(profile=profile, level_idc=avcc.level_idc, param_id=free,
                      matrix=_MATRICES[int(ctx.colorspace)], tags=tags)


@dataclasses.dataclass
class _Scan:
    """What the packet scan found (see :func:`_scan`)."""

    bounds: list[int] = dataclasses.field(default_factory=list)
    frames: list[int] = dataclasses.field(default_factory=list)
    delay: int = 0
    end: int | None = None


def open_gop_source(path: Path, *, fps: int, width: int, height: int, start_s: int,
                    n_frames: int) -> GopSource | GopRefusal:
    """The GOPs of ``n_frames`` frames of ``path`` from second ``start_s`` (of the file's
    start time, as the scene-clip cache counts), or why they cannot be reused.

    Raises:
        MediaError: naming ``path`` when it cannot be opened or its packets are damaged or
            cut short (a truncated file): bad input, not a reason to re-encode.
    """
    with _open(path) as container:
        if not container.streams.video:
            raise MediaError(f"{path}: no video stream")
        stream = container.streams.video[0]
        setup = _stream_setup(stream, fps=fps, width=width, height=height)
        if isinstance(setup, GopRefusal):
            return setup
        avcc, codec = setup
        tb = Fraction(stream.time_base)
        start_pts = _start_pts(container, stream, tb)
        if isinstance(start_pts, GopRefusal):
            return start_pts
        first = start_s * fps
        scan = _scan(container, stream, path=path, avcc=avcc, fps=fps, tb=tb,
                     start_pts=start_pts, first=first, n_frames=n_frames)
        if isinstance(scan, GopRefusal):
            return scan
    return GopSource(path=path, fps=fps, n_frames=n_frames, first_frame=first,
                     start_pts=start_pts, time_base=tb, bounds=tuple(scan.bounds),
                     delay=scan.delay, avcc=avcc, codec=codec)


def _start_pts(container: Any, stream: Any, tb: Fraction) -> int | GopRefusal:
    """The stream timestamp of the file's start (what ``ffmpeg -ss`` counts from)."""
    if stream.start_time is None:
        return GopRefusal("video stream has no start time")
    if container.start_time is not None:
        lead = float(stream.start_time * tb) - container.start_time / av.time_base
        if abs(lead) > 1e-3:
            return GopRefusal(f"video starts {lead:.3f} s after the file's start")
    return int(stream.start_time)


def _scan(container: Any, stream: Any, *, path: Path, avcc: AvcConfig, fps: int,
          tb: Fraction, start_pts: int, first: int, n_frames: int) -> _Scan | GopRefusal:
    """Read packets from the IDR at or before ``first`` to the first IDR at or after
    ``first + n_frames`` (or the end): GOP bounds, frames present, reordering delay."""
    try:
        container.seek(start_pts + math.floor((first + 0.5) / (fps * tb)), stream=stream,
                       backward=True, any_frame=False)
    except av.FFmpegError as err:
        raise MediaError(f"{path}: cannot seek to second {first // fps} ({err})") from None
    scan, decoded = _Scan(), 0
    for packet in _packets(container, stream, path=path):
        exact = (float(packet.pts - start_pts) * float(tb)) * fps - first
        frame = round(exact)
        if abs(exact - frame) > _GRID_TOL:
            return GopRefusal(f"timestamp {float(packet.pts * tb):.4f} s is off the {fps} fps grid")
        idr = packet.is_keyframe and has_idr(bytes(packet), length_size=avcc.nal_length_size)
        if idr and frame >= n_frames and scan.bounds:
            scan.end = frame
            break
        if idr and not scan.bounds and (why := _picture_refusal(stream, packet)):
            return GopRefusal(why)
        if idr:
            scan.bounds.append(frame)
            decoded = 0
        elif not scan.bounds:
            return GopRefusal("the keyframe before the haystack is not an IDR picture (open GOP)")
        if frame < scan.bounds[-1]:
            return GopRefusal("a frame decoded after an IDR picture is shown before it (open GOP)")
        scan.delay = max(scan.delay, decoded - (frame - scan.bounds[-1]))
        scan.frames.append(frame)
        decoded += 1
    return _check_scan(scan, stream=stream, path=path, n_frames=n_frames, first=first)


def _picture_refusal(stream: Any, packet: Any) -> str | None:
    """Decode the first IDR picture: a copied GOP cannot be rotated or deinterlaced the way
    the cache's decode (which applies display rotation) would, so such sources are refused.

    The stream's own decoder is used (and left drained: the scan only demuxes after this),
    because only it carries the container's display matrix onto frames."""
    decoder = stream.codec_context
    try:
        frames = [*decoder.decode(packet), *decoder.decode(None)]
    except av.FFmpegError as err:
        return f"the first IDR picture does not decode ({err})"
    if not frames:
        return "the first IDR picture does not decode"
    if round(float(frames[0].rotation or 0)) % 360:
        return f"display rotation {frames[0].rotation:g}° (the cache turns the picture upright)"
    if frames[0].interlaced_frame:
        return "interlaced pictures"
    return None


def _packets(container: Any, stream: Any, *, path: Path) -> Iterator[Any]:
    """The stream's packets with data, raising on damage (a truncated file ends corrupt)."""
    try:
        for packet in container.demux(stream):
            if packet.size == 0 and packet.pts is None:
                continue
            if packet.is_corrupt or packet.pts is None:
                at = (f"{float(packet.pts * packet.time_base):.3f} s"
                      if packet.pts is not None else "a packet without a timestamp")
                raise MediaError(f"{path}: damaged or truncated video packet at {at} (file "
                                 "cut short?)")
            yield packet
    except av.FFmpegError as err:
        raise MediaError(f"{path}: cannot read video packets ({err})") from None


def _check_scan(scan: _Scan, *, stream: Any, path: Path, n_frames: int, first: int
                ) -> _Scan | GopRefusal:
    if not scan.bounds:
        raise MediaError(f"{path}: no video packets from frame {first}")
    top = max(scan.frames) + 1
    end = scan.end if scan.end is not None else top
    declared = int(stream.frames or 0)
    if scan.end is None and declared and first + top < declared:
        raise MediaError(f"{path}: video packets end at frame {first + top} but the file "
                         f"declares {declared} (truncated?)")
    if sorted(scan.frames) != list(range(scan.bounds[0], end)):
        return GopRefusal("frames missing or repeated (variable frame rate?)")
    if end < n_frames:
        return GopRefusal(f"the source ends {n_frames - end} frame(s) before the haystack does")
    scan.bounds.append(end)
    return scan


def decode_runs(source: GopSource, runs: Sequence[tuple[int, int]]
                ) -> Generator[bytes, None, None]:
    """The frames of each ``[start, end)`` run of haystack frames, as raw yuv420p, in order.

    Each run is decoded from the IDR at or before its start (one seek a run).

    Raises:
        MediaError: when the source does not decode or a run comes out short.
    """
    with _open(source.path) as container:
        stream = container.streams.video[0]
        for start, end in runs:
            got = 0
            for frame in _decode_run(container, stream, source, start=start, end=end):
                got += 1
                yield frame
            if got != end - start:
                raise MediaError(f"{source.path}: decoded {got} frames of haystack frames "
                                 f"[{start}, {end}), expected {end - start}")


def _decode_run(container: Any, stream: Any, source: GopSource, *, start: int, end: int
                ) -> Iterator[bytes]:
    key, _ = source.gop(start)
    _, stop = source.gop(end - 1)
    decoder = av.CodecContext.create("h264", "r")
    decoder.extradata = bytes(stream.codec_context.extradata)
    container.seek(source.pts_of(key), stream=stream, backward=True, any_frame=False)
    try:
        for packet in itertools.chain(_packets(container, stream, path=source.path), [None]):
            if packet is not None and source.frame_of(packet.pts) >= stop:
                packet = None  # the GOP after the run: drain the decoder instead
            for frame in decoder.decode(packet):
                if frame.pts is None:
                    raise MediaError(f"{source.path}: a decoded frame has no timestamp")
                if start <= source.frame_of(frame.pts) < end:
                    yield frame.to_ndarray(format="yuv420p").tobytes()
            if packet is None:
                return
    except av.FFmpegError as err:
        raise MediaError(f"{source.path}: cannot decode frames [{start}, {end}) ({err})"
                         ) from None


@dataclasses.dataclass(frozen=True, slots=True)
class CopyRun:
    """Haystack frames ``span``, whole GOPs of the source, copied packet for packet."""

    span: FrameSpan


Item = CopyRun | EncodedRun


def mux_spliced(source: GopSource, items: Sequence[Item], out: Path) -> int:
    """Write ``items`` in order into the mp4 ``out``; return its frame count.

    Raises:
        MediaError: when a copy run is not whole GOPs or the source's packets run out.
    """
    fresh = [i for i in items if isinstance(i, EncodedRun)]
    if len({(p.sps, p.pps) for p in fresh}) > 1:
        raise MediaError(f"{out.name}: fresh pieces with different parameter sets")
    extradata = source.avcc.with_sets([fresh[0].sps], [fresh[0].pps]) if fresh else None
    tick = Fraction(1, source.fps)
    with _open(source.path) as src, \
            av.open(str(out), "w", format="mp4",
                    container_options={"fflags": "+bitexact", "movflags": "+faststart"}) as dst:
        template = src.streams.video[0]
        stream = dst.add_stream_from_template(template)
        stream.time_base = tick
        if extradata is not None:
            stream.codec_context.extradata = extradata
        gops = _copied_gops(src, template, source, [i for i in items if isinstance(i, CopyRun)])
        shown = decoded = 0
        for item in items:  # frame k at k / fps, DTS one tick a packet, delay ticks behind
            if isinstance(item, CopyRun):
                packets = [p for _ in _gops_in(source, item) for p in next(gops)]
                offsets = [source.frame_of(p.pts) - item.span.start for p in packets]
            else:
                packets = [_fresh_packet(u, k) for u, k in zip(item.units, item.keyframes,
                                                              strict=True)]
                offsets = list(range(len(packets)))
            if sorted(offsets) != list(range(len(packets))):
                raise MediaError(f"{out.name}: {item} does not show each of its frames once")
            for packet, offset in zip(packets, offsets, strict=True):
                packet.stream, packet.time_base = stream, tick
                packet.pts, packet.dts, packet.duration = shown + offset, decoded - source.delay, 1
                dst.mux(packet)
                decoded += 1
            shown += len(packets)
    return shown


def _gops_in(source: GopSource, run: CopyRun) -> list[tuple[int, int]]:
    start, end = run.span.start, run.span.end
    gops = [(a, b) for a, b in itertools.pairwise(source.bounds) if start <= a < end]
    if not gops or gops[0][0] != start or gops[-1][1] != end:
        raise MediaError(f"{source.path}: frames [{start}, {end}) are not whole GOPs")
    return gops


def _fresh_packet(unit: bytes, keyframe: bool) -> Any:
    packet = av.Packet(unit)
    packet.is_keyframe = keyframe
    return packet


def _copied_gops(container: Any, stream: Any, source: GopSource, runs: Iterable[CopyRun]
                 ) -> Iterator[list[Any]]:
    """The packets of every GOP inside ``runs``, GOP by GOP, in one forward pass."""
    wanted = [g for run in runs for g in _gops_in(source, run)]
    if not wanted:
        return
    container.seek(source.pts_of(wanted[0][0]), stream=stream, backward=True, any_frame=False)
    packets = _packets(container, stream, path=source.path)
    pending: Any = None
    for start, end in wanted:
        gop: list[Any] = []
        for packet in itertools.chain([pending] if pending is not None else [], packets):
            pending = None
            frame = source.frame_of(packet.pts)
            if frame >= end:  # the next GOP's IDR: GOPs are closed (see open_gop_source)
                pending = packet
                break
            if frame >= start:
                gop.append(packet)
        if len(gop) != end - start:
            raise MediaError(f"{source.path}: read {len(gop)} packets of GOP [{start}, {end}),"
                             f" expected {end - start}")
        yield gop


def verify_spliced(path: Path, *, fps: int, n_frames: int, label: str) -> None:
    """Check the written ``path`` holds ``n_frames`` frames lasting ``n_frames / fps``.

    Only the mp4 index is read (no packet pass): the muxer itself refuses decode timestamps
    that do not rise or pass a frame's, and :func:`mux_spliced` checks that frame ``k`` is
    at ``k / fps``.

    Raises:
        MediaError: naming ``label`` when the frame count or duration differ.
    """
    with _open(path) as container:
        stream = container.streams.video[0]
        frames, duration = int(stream.frames or 0), stream.duration
        tb = Fraction(stream.time_base)
    if frames != n_frames or duration is None or duration * tb * fps != n_frames:
        raise MediaError(f"{label}: {path.name} holds {frames} frames over "
                         f"{float((duration or 0) * tb):.3f} s, expected {n_frames} frames "
                         f"over {n_frames / fps:.3f} s")
