"""Render a VNBench sample from its haystack's own GOPs: no haystack cache, no full re-encode.

When the haystack source is H.264 already at the render profile (see
:func:`~needleforge.media.gop.open_gop_source` for every condition), a sample is:

- the source's GOPs that no needle touches, copied packet for packet (bit-identical to
  the source, so no generation loss, and the source's own bitrate);
- one fresh piece per run of **dirty** GOPs: a GOP holding an edited second, a GOP an
  inserted needle splits, and the partial GOPs at the haystack's ends when its start or
  end is not on an IDR picture. The run is decoded from its IDR (yuv420p, no colour
  conversion), the subtitles and images of its edited seconds drawn (the same ``drawtext``
  and overlay canvases as :mod:`~needleforge.vnbench.sample_render`), and re-encoded with the
  profile's crf/preset under the source's H.264 profile, level and colour tags
  (:class:`~needleforge.media.gop.PieceCodec`); a run an insertion falls inside is cut there;
- one fresh piece per inserted needle (the still fitted on black, or the clip fitted and
  padded, converted with the source's colour matrix).

All fresh pieces come from one ffmpeg run. Its raw input (the *feed*) is PyAV's decode of
the dirty runs with each inserted still's frame (converted to YUV once) in between, in
output order, so adjacent fresh pieces form one range of the feed and one encoder (which
starts on an IDR); clips are inputs of their own. The pieces and copied GOPs are muxed by
:func:`~needleforge.media.gop.mux_spliced`. The cost is two packet passes over the
haystack (a scan, then the copy: about 6 µs a packet), the dirty GOPs and the inserted
seconds: nearly flat in haystack length. Nothing is cached.

**Times.** Output frame ``k`` is at ``k / fps``; copied and re-encoded haystack frames keep
their order and inserted needles add ``frame_at(end_s - start_s)`` frames where
:func:`~needleforge.vnbench.plan.place` put them, so every needle starts on frame
``frame_at(start_s)`` of the video (:func:`~needleforge.records.span.frame_at`), as the
question's metadata says. :func:`splice_plan` checks this while building the plan and refuses
to render otherwise.

**Why a GOP limit** (``max_gop_s``: ``vnbench.max_gop_s``, 4 s by default): a needle costs
the whole GOP around it, decoded and re-encoded at about 3 ms a frame (640x360, x264
veryfast, one thread), so 0.3 s a needle for a 4 s GOP at 25 fps. The worst sample (5
counting needles in 5 GOPs, plus partial GOPs at both ends) then re-encodes 28 s, about 2 s:
still a fraction of one haystack encode (60–180 s of video), but about what the cache costs
a sample once shared by a haystack's 9 samples. Longer GOPs (ffmpeg's default of 250 frames
is 10 s at 25 fps) make the cache, built once and shared, the better deal. Common delivery
encodes (1–2 s GOPs for streaming, the studio's 1 s) are far inside the limit.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import av
import ffmpeg
from av.video.reformatter import ColorRange, Colorspace

from needleforge.errors import MediaError
from needleforge.media.cache import normalize_steps, run_ffmpeg_measured
from needleforge.media.gop import (
    CopyRun,
    GopRefusal,
    GopSource,
    Item,
    PieceCodec,
    decode_runs,
    mux_spliced,
    open_gop_source,
    verify_spliced,
)
from needleforge.media.h264 import EncodedRun, read_piece
from needleforge.media.join import RenderedVideo
from needleforge.media.outputs import scratch_path
from needleforge.params import RenderParams
from needleforge.records import FrameSpan, frame_at
from needleforge.vnbench.pictures import overlay_canvas, still_frame
from needleforge.vnbench.records import Needle, VNBenchSample
from needleforge.vnbench.text import TextStyle, drawtext_options, write_textfile

#: Bump when how spliced samples are cut, drawn or encoded changes (invalidates sidecars).
SPLICE_VERSION = 1


@dataclasses.dataclass(frozen=True, slots=True)
class HayPiece:
    """Haystack frames ``span``, re-encoded; frames ``feed, feed + 1, …`` of the feed (the raw
    frames piped to ffmpeg: every re-encoded haystack frame and inserted still, in output
    order)."""

    span: FrameSpan
    feed: int


@dataclasses.dataclass(frozen=True, slots=True)
class InsertPiece:
    """An inserted needle, shown on the output's frames ``span``; a still is ``feed``… of the
    feed, a clip (``feed`` None) its own ffmpeg input."""

    needle: Needle
    span: FrameSpan
    feed: int | None


Fresh = HayPiece | InsertPiece


@dataclasses.dataclass(frozen=True, slots=True)
class SplicePlan:
    """A sample as copied GOP runs and fresh pieces, in output order.

    ``runs`` are the dirty runs of haystack frames, decoded in order into the feed;
    ``edits`` maps each edited needle to its first frame in the feed.
    """

    items: tuple[CopyRun | Fresh, ...]
    runs: tuple[tuple[int, int], ...]
    edits: tuple[tuple[Needle, int], ...]
    n_frames: int


def _gops(sample: VNBenchSample, source: GopSource) -> list[tuple[int, int, bool]]:
    """Every GOP overlapping the haystack, clipped to it, and whether it is re-encoded: it
    holds part of an edited second, an insertion falls strictly inside it, or it crosses
    the haystack's start or end."""
    fps, n = source.fps, source.n_frames
    edits = [x.haystack_s * fps for x in sample.needles if x.method == "edit"]
    cuts = [x.haystack_s * fps for x in sample.needles if x.method == "insert"]
    gops = []
    for a, b in itertools.pairwise(source.bounds):
        if b <= 0 or a >= n:
            continue
        dirty = (a < 0 or b > n or any(a - fps < e < b for e in edits)
                 or any(a < c < b for c in cuts))
        gops.append((max(a, 0), min(b, n), dirty))
    return gops


def splice_plan(sample: VNBenchSample, source: GopSource, *, max_gop_s: float
                ) -> SplicePlan | GopRefusal:
    """What of ``sample`` is copied from ``source`` and what is encoded (see module doc), or
    a :class:`GopRefusal` when a GOP to re-encode is longer than ``max_gop_s`` seconds.

    Raises:
        MediaError: when the spliced frames would not put a needle where its metadata says
            (an internal inconsistency, never expected).
    """
    fps = source.fps
    spans: list[tuple[int, int, bool]] = []
    for a, b, dirty in _gops(sample, source):
        decoded_from = source.gop(a)[0]
        if dirty and b - decoded_from > max_gop_s * fps:
            return GopRefusal(f"a needle or haystack end falls in a {(b - decoded_from) / fps:g} s"
                              f" GOP (source frames [{decoded_from + source.first_frame}, "
                              f"{b + source.first_frame})), longer than max_gop_s = "
                              f"{max_gop_s:g} s")
        if spans and spans[-1][2] == dirty:
            spans[-1] = (spans[-1][0], b, dirty)
        else:
            spans.append((a, b, dirty))
    return _items(sample, spans=spans, fps=fps)


def _items(sample: VNBenchSample, *, spans: Sequence[tuple[int, int, bool]], fps: int
           ) -> SplicePlan:
    """The output in order (spans cut at insertions), checked against the needles' times."""
    inserts = [n for n in sample.needles if n.method == "insert"]
    points = {n.haystack_s * fps for n in inserts}
    items: list[CopyRun | Fresh] = []
    edits: list[tuple[Needle, int]] = []
    shown = fed = 0

    def insert_at(frame: int) -> None:
        nonlocal shown, fed
        for needle in (n for n in inserts if n.haystack_s * fps == frame):
            _check_start(sample, needle, shown, fps=fps)
            span = FrameSpan(shown, shown + frame_at(needle.end_s - needle.start_s, rate=fps), fps)
            items.append(InsertPiece(needle, span, None if needle.kind == "clip" else fed))
            shown, fed = span.end, fed + (0 if needle.kind == "clip" else span.n_frames)

    for a, b, dirty in spans:
        cuts = [a, *sorted(p for p in points if a < p < b), b]
        for s, e in itertools.pairwise(cuts):
            insert_at(s)
            for needle in (n for n in sample.needles
                           if n.method == "edit" and s <= n.haystack_s * fps < e):
                _check_start(sample, needle, shown + needle.haystack_s * fps - s, fps=fps)
                edits.append((needle, fed + needle.haystack_s * fps - s))
            span = FrameSpan(s, e, fps)
            items.append(HayPiece(span, fed) if dirty else CopyRun(span))
            shown, fed = shown + e - s, fed + (e - s if dirty else 0)
    insert_at(spans[-1][1])
    if shown != frame_at(sample.duration_s, rate=fps):
        raise _inconsistent(sample, f"{shown} frames for {sample.duration_s} s")
    runs = tuple((a, b) for a, b, dirty in spans if dirty)
    return SplicePlan(items=tuple(items), runs=runs, edits=tuple(edits), n_frames=shown)


def _check_start(sample: VNBenchSample, needle: Needle, frame: int, *, fps: int) -> None:
    if frame != frame_at(needle.start_s, rate=fps):
        raise _inconsistent(sample, f"needle {needle.label!r} lands on frame {frame}, its "
                                    f"metadata says {needle.start_s} s")


def _inconsistent(sample: VNBenchSample, what: str) -> MediaError:
    return MediaError(f"sample {sample.sample_id}: spliced video disagrees with the plan: "
                      f"{what}")


def encoder_groups(plan: SplicePlan) -> list[tuple[Fresh, ...]]:
    """The fresh pieces as encoder outputs: each maximal run of adjacent fed pieces (the
    feed holds them back to back) is one, each clip is one. Fewer encoders, fewer IDRs."""
    groups: list[list[Fresh]] = []
    joinable = False
    for item in plan.items:
        fed = isinstance(item, HayPiece) or (isinstance(item, InsertPiece)
                                             and item.feed is not None)
        if isinstance(item, CopyRun):
            joinable = False
            continue
        if fed and joinable:
            groups[-1].append(item)
        else:
            groups.append([item])
        joinable = fed
    return [tuple(g) for g in groups]


def _frames_in(group: Sequence[Fresh]) -> int:
    return sum(i.span.n_frames for i in group)


def _feed_start(group: Sequence[Fresh]) -> int | None:
    return group[0].feed


def _source_key(group: Sequence[Fresh]) -> tuple[str, ...]:
    """What a group is cut from: the feed, or one clip at one length."""
    first = group[0]
    if isinstance(first, InsertPiece) and first.feed is None:
        return ("clip", str(first.needle.asset), str(first.span.n_frames))
    return ("feed",)


def _draw_edits(stream: Any, plan: SplicePlan, *, codec: PieceCodec, profile: RenderParams,
                style: TextStyle, work: Path) -> Any:
    """The feed with every edited second's subtitle or image canvas drawn on."""
    fps, w, h = profile.fps, profile.width, profile.height
    for j, (needle, feed) in enumerate(plan.edits):
        enable = f"between(n,{feed},{feed + fps - 1})"
        if needle.text is not None:
            textfile = write_textfile(needle.text, path=work / f"subtitle{j}.txt")
            stream = stream.drawtext(enable=enable, **drawtext_options(
                textfile, text=needle.text, style=style, width=w, height=h))
        else:
            canvas = work / f"overlay{j}.png"
            overlay_canvas(Path(str(needle.asset)), regions=needle.regions, width=w,
                           height=h).save(canvas, compress_level=1)
            layer = (ffmpeg.input(str(canvas))
                     .filter("scale", out_color_matrix=codec.matrix, out_range="tv")
                     .filter("format", "yuva420p"))
            stream = ffmpeg.overlay(stream, layer, x=0, y=0, enable=enable)
    return stream


def _clip_stream(piece: InsertPiece, *, codec: PieceCodec, profile: RenderParams) -> Any:
    """An inserted clip fitted to the frame like a cached clip, converted to YUV with the
    source's matrix."""
    stream = ffmpeg.input(str(piece.needle.asset)).filter("setpts", "PTS-STARTPTS")
    for name, options in normalize_steps(profile):
        if "out_color_matrix" in options:
            options = {**options, "out_color_matrix": codec.matrix}
        stream = stream.filter(name, **options)
    return stream.trim(start_frame=0, end_frame=piece.span.n_frames)


def _group_streams(plan: SplicePlan, groups: Sequence[tuple[Fresh, ...]], *,
                   codec: PieceCodec, profile: RenderParams, style: TextStyle, work: Path
                   ) -> list[Any]:
    """Each group's filtered stream: a range of the (drawn-on) feed, or a clip. One input
    per distinct source, split among its users: ffmpeg-python merges identical nodes, and
    decoding a clip inserted twice once is cheaper anyway."""
    keys = [_source_key(g) for g in groups]
    bases: dict[tuple[str, ...], Any] = {}
    for group, key in zip(groups, keys, strict=True):
        first = group[0]
        if key in bases:
            continue
        if isinstance(first, InsertPiece) and first.feed is None:
            bases[key] = _clip_stream(first, codec=codec, profile=profile)
        else:
            bases[key] = _draw_edits(
                ffmpeg.input("pipe:0", format="rawvideo", pix_fmt="yuv420p",
                             s=f"{profile.width}x{profile.height}", framerate=profile.fps),
                plan, codec=codec, profile=profile, style=style, work=work)
    branches = {key: iter([base] if keys.count(key) == 1 else
                          [base.split()[i] for i in range(keys.count(key))])
                for key, base in bases.items()}
    streams = []
    for group, key in zip(groups, keys, strict=True):
        stream, start = next(branches[key]), _feed_start(group)
        if start is not None:
            stream = stream.trim(start_frame=start, end_frame=start + _frames_in(group))
            stream = stream.setpts("PTS-STARTPTS").filter("setsar", sar="1")
        streams.append(stream.filter("setparams", **codec.tags))
    return streams


def still_yuv(needle: Needle, *, profile: RenderParams, matrix: str) -> bytes:
    """An inserted still's frame (the image fitted on black) as raw yuv420p, converted once
    with the source's matrix, limited range: the feed repeats it instead of ffmpeg
    decoding and scaling a looped picture every frame."""
    rgb = still_frame(Path(str(needle.asset)), width=profile.width, height=profile.height)
    space = Colorspace.ITU709 if matrix == "bt709" else Colorspace.ITU601
    frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_colorspace=space, dst_color_range=ColorRange.MPEG)
    return bytes(frame.to_ndarray().tobytes())


def _feed(plan: SplicePlan, source: GopSource, *, profile: RenderParams) -> Iterator[bytes]:
    """The raw frames piped to ffmpeg: re-encoded haystack frames (decoded, untouched) and
    inserted stills, in output order."""
    hay = decode_runs(source, plan.runs)
    try:
        for item in plan.items:
            if isinstance(item, HayPiece):
                yield from itertools.islice(hay, item.span.n_frames)
            elif isinstance(item, InsertPiece) and item.feed is not None:
                yield from itertools.repeat(still_yuv(item.needle, profile=profile,
                                                      matrix=source.codec.matrix),
                                            item.span.n_frames)
    finally:
        hay.close()


def encode_fresh(plan: SplicePlan, source: GopSource, *, sample_id: str, profile: RenderParams,
                 style: TextStyle, work: Path) -> tuple[list[EncodedRun], float]:
    """Encode every group of fresh pieces (:func:`encoder_groups`) in one ffmpeg run, one
    encoder per group; return them in order and the CPU seconds spent (ffmpeg, and this
    thread decoding and converting the feed).

    Raises:
        MediaError: when the source does not decode or ffmpeg fails.
    """
    groups = encoder_groups(plan)
    streams = _group_streams(plan, groups, codec=source.codec, profile=profile, style=style,
                             work=work)
    options = source.codec.x264_options(fps=profile.fps, preset=profile.preset,
                                        crf=profile.crf)
    outputs = [ffmpeg.output(stream, str(work / f"piece{j}.h264"),
                             **{**options, "frames:v": _frames_in(group)})
               for j, (stream, group) in enumerate(zip(streams, groups, strict=True))]
    fed = any(_feed_start(g) is not None for g in groups)
    started = time.thread_time()
    cpu_s = run_ffmpeg_measured(ffmpeg.merge_outputs(*outputs).get_args(),
                                what=f"spliced pieces of sample {sample_id}",
                                stdin_chunks=_feed(plan, source, profile=profile) if fed else None)
    pieces = [read_piece(work / f"piece{j}.h264", length_size=source.avcc.nal_length_size,
                         n_frames=_frames_in(group)) for j, group in enumerate(groups)]
    return pieces, cpu_s + time.thread_time() - started


def _with_pieces(plan: SplicePlan, groups: Sequence[tuple[Fresh, ...]],
                 pieces: Sequence[EncodedRun]) -> list[Item]:
    """The plan's items with each group of fresh pieces replaced by its encoded piece."""
    encoded = iter(zip(groups, pieces, strict=True))
    items: list[Item] = []
    left = 0
    for item in plan.items:
        if isinstance(item, CopyRun):
            items.append(item)
            continue
        if left == 0:
            group, piece = next(encoded)
            items.append(piece)
            left = len(group)
        left -= 1
    return items


def render_spliced(sample: VNBenchSample, *, out: Path, profile: RenderParams,
                   style: TextStyle, work: Path, max_gop_s: float) -> RenderedVideo | GopRefusal:
    """Write ``sample``'s video to ``out`` from its haystack's own GOPs, or say why not
    (a needle in a GOP longer than ``max_gop_s`` seconds is one reason).

    ``out`` is written under a scratch name and renamed into place once verified.

    Raises:
        MediaError: naming the haystack source when it cannot be read (truncated, damaged),
            or the output when ffmpeg fails or the video does not match the plan.
    """
    if profile.audio:
        return GopRefusal("the profile keeps audio; spliced samples carry video only")
    started = time.thread_time()
    hay = sample.haystack
    source = open_gop_source(Path(hay.source), fps=profile.fps, width=profile.width,
                             height=profile.height, start_s=hay.start_s,
                             n_frames=hay.duration_s * profile.fps)
    if isinstance(source, GopRefusal):
        return source
    plan = splice_plan(sample, source, max_gop_s=max_gop_s)
    if isinstance(plan, GopRefusal):
        return plan
    pieces, cpu_s = encode_fresh(plan, source, sample_id=sample.sample_id, profile=profile,
                                 style=style, work=work)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = scratch_path(out, ".mp4")
    try:
        n_frames = mux_spliced(source, _with_pieces(plan, encoder_groups(plan), pieces), tmp)
        verify_spliced(tmp, fps=profile.fps, n_frames=plan.n_frames,
                       label=f"sample {sample.sample_id}")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return RenderedVideo(path=out, n_frames=n_frames, duration_s=n_frames / profile.fps,
                         cpu_s=cpu_s + time.thread_time() - started)
