"""Render a VNBench sample: re-encode only the touched seconds, stream-copy the rest.

The haystack is one clip of the scene-clip cache (keyframe every second). A sample's video
is a montage (:func:`~needleforge.media.join.render_montage`) of:

- untouched runs of the haystack clip, copied frame for frame (bit-identical);
- for **edited** needles, one freshly encoded piece holding all the edited seconds of the
  sample: the haystack's bytes of those seconds are cut out by index, decoded by one ffmpeg
  run that draws each subtitle (``drawtext``, see :mod:`~needleforge.vnbench.text`) or
  overlays each image canvas during its own second only (``enable`` on frame numbers), and
  re-encoded with the cache's parameters, so each second of the piece starts on a keyframe;
- for **inserted** needles, a still (the image fitted into the frame on black) or a clip
  (fitted and padded like any cached clip) encoded once per asset, profile and length into
  ``<cache>/vnbench-pieces`` and reused by every sample that inserts it; the stills a sample
  needs that are not cached yet are encoded in one ffmpeg run, one encoder per still, so a
  cached piece's bytes never depend on which other stills were missing with it.

So a sample costs at most two small encodes (its edited seconds, its new stills) plus a
byte-copy join, whatever the haystack's length — once the haystack clip is cached, which
costs a full encode of the haystack (:func:`render_sample`).

:func:`render_sample_from_source` skips that cache when it can: a haystack source already
at the profile (H.264 8-bit 4:2:0, the profile's size and rate, IDR pictures at most
``max_gop_s`` apart around the needles) is cut by its own GOPs
(:mod:`~needleforge.vnbench.splice`), and only the GOPs holding a needle are encoded.
Other sources fall back to the cached clip, built only then, with the reason returned and
recorded. Spliced samples keep the profile's size and rate, so a release's videos stay
uniform; their untouched GOPs keep the source's bitrate instead of the profile's crf.

A rendered sample has a ``.json`` sidecar with the hash of everything that made it, the
route (``cache`` or ``source-gops``) and the fallback's reason; a sample whose video and
sidecar match is not rendered again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import ffmpeg
import numpy as np

from needleforge.backends.base import RGBImage
from needleforge.media.cache import (
    CACHE_VERSION,
    as_args,
    finish_clip,
    normalize_filter,
    run_ffmpeg_measured,
    video_encoder_options,
)
from needleforge.media.gop import GopRefusal
from needleforge.media.join import Piece, RenderedVideo, encode_piece, plan_pieces, render_montage
from needleforge.media.outputs import write_text_atomic
from needleforge.params import RenderParams
from needleforge.records import frame_at
from needleforge.vnbench.clip_seconds import second_bytes
from needleforge.vnbench.pictures import overlay_canvas, still_frame
from needleforge.vnbench.records import Needle, VNBenchSample
from needleforge.vnbench.splice import SPLICE_VERSION, render_spliced
from needleforge.vnbench.text import TextStyle, drawtext_options, write_textfile

#: Bump when how samples are drawn or joined changes (invalidates sidecars and pieces).
RENDER_VERSION = 2  # 2: each still piece has its own encoder


Route = Literal["cache", "source-gops"]


@dataclasses.dataclass(frozen=True, slots=True)
class SampleRender:
    """A sample's video: ``skipped`` when an up-to-date render was already there.

    ``route`` says how it was made: ``cache`` (a montage of the cached haystack clip) or
    ``source-gops`` (spliced from the source's own GOPs, :mod:`~needleforge.vnbench.splice`);
    ``fallback`` why the source's GOPs were not used when they were asked for.
    """

    sample_id: str
    path: Path
    skipped: bool
    cpu_s: float
    route: Route = "cache"
    fallback: str | None = None


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (assets are small: images and short clips)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _piece_path(root: Path, *, kind: str, asset: Path, profile: RenderParams, seconds: int
                ) -> Path:
    payload = {"v": RENDER_VERSION, "cache": CACHE_VERSION, "kind": kind,
               "asset": file_sha256(asset), "seconds": seconds,
               "profile": profile.model_dump(mode="json", exclude={"workers"})}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return root / key[:2] / f"{key}.h264"


def insert_pieces(needles: Sequence[Needle], *, profile: RenderParams, root: Path, work: Path
                  ) -> tuple[dict[int, Path], float]:
    """The cached piece of every inserted needle (by index in ``needles``), encoding the
    missing ones now; and the CPU seconds spent.

    Missing stills are encoded together in one ffmpeg run (one second-aligned piece holding
    each still in turn), then cut at their keyframes into one cached piece per image: a
    sample inserting four new images costs one encode, not four. Clips are encoded one by one.

    Raises:
        MediaError: when ffmpeg fails; VNBenchError when an image cannot be read.
    """
    paths: dict[int, Path] = {}
    missing: dict[Path, Needle] = {}
    for i, needle in enumerate(needles):
        if needle.method != "insert":
            continue
        seconds = round(needle.end_s - needle.start_s)
        paths[i] = _piece_path(root, kind=needle.kind, asset=Path(str(needle.asset)),
                               profile=profile, seconds=seconds)
        if not paths[i].is_file():
            missing.setdefault(paths[i], needle)
    cpu_s = 0.0
    stills = [(path, n) for path, n in missing.items() if n.kind == "image"]
    if stills:
        cpu_s += _encode_stills(stills, profile=profile, work=work)
    for path, needle in missing.items():
        if needle.kind == "clip":
            cpu_s += encode_piece(path, profile=profile, stream=ffmpeg.input(str(needle.asset)),
                                  duration_s=needle.end_s - needle.start_s).cpu_s
    return paths, cpu_s


def _encode_stills(stills: Sequence[tuple[Path, Needle]], *, profile: RenderParams, work: Path
                   ) -> float:
    """Encode still pieces in one ffmpeg run with one x264 encoder (and output) each.

    Why not one stream cut apart at its keyframes: x264's rate control carries state from
    frame to frame, so a still encoded after another gets other bytes than the same still
    encoded first. The cache would then hold bytes that depend on which stills happened to be
    missing together, and a render from an empty cache would differ from a warm one.
    """
    frames: list[RGBImage] = []
    counts: list[int] = []
    for _, needle in stills:
        frame = still_frame(Path(str(needle.asset)), width=profile.width, height=profile.height)
        counts.append(frame_at(needle.end_s - needle.start_s, rate=profile.fps))
        frames += [frame] * counts[-1]
    tmps = [path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.h264")
            for path, _ in stills]
    branches, outputs, first = [], [], 0
    for j, count in enumerate(counts):
        branches.append(f"[s{j}]trim=start_frame={first}:end_frame={first + count},"
                        f"setpts=PTS-STARTPTS,{normalize_filter(profile)}[o{j}]")
        outputs += ["-map", f"[o{j}]", "-frames:v", str(count),
                    *as_args(video_encoder_options(profile)), str(tmps[j])]
        first += count
    split = f"[0:v]split={len(stills)}" + "".join(f"[s{j}]" for j in range(len(stills)))
    args = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{profile.width}x{profile.height}",
            "-framerate", str(profile.fps), "-i", "pipe:0",
            "-filter_complex", ";".join([split, *branches]), *outputs]
    try:
        for tmp in tmps:
            tmp.parent.mkdir(parents=True, exist_ok=True)
        cpu_s = run_ffmpeg_measured(args, what=f"{len(stills)} still piece(s) for {work}",
                                    stdin_chunks=(np.ascontiguousarray(f).tobytes()
                                                  for f in frames))
        for (path, _), count, tmp in zip(stills, counts, tmps, strict=True):
            finish_clip(tmp, path, profile=profile, n_frames=count, what=f"still piece {path}")
    finally:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
            tmp.with_suffix(".json").unlink(missing_ok=True)
    return cpu_s


def edit_piece(
    haystack_clip: Path, *, edits: Sequence[Needle], out: Path, profile: RenderParams,
    style: TextStyle, work: Path,
) -> RenderedVideo:
    """Encode the edited seconds of a sample, in time order, as one piece (see module doc).

    Raises:
        MediaError: when a second lies outside the clip or ffmpeg fails.
    """
    ordered = sorted(edits, key=lambda n: n.haystack_s)
    source = work / "seconds.h264"
    source.write_bytes(second_bytes(haystack_clip, seconds=[n.haystack_s for n in ordered]))
    fps, w, h = profile.fps, profile.width, profile.height
    stream: Any = ffmpeg.input(str(source), format="h264", framerate=fps)
    for j, needle in enumerate(ordered):
        enable = f"between(n,{j * fps},{(j + 1) * fps - 1})"
        if needle.text is not None:
            textfile = write_textfile(needle.text, path=work / f"subtitle{j}.txt")
            options = drawtext_options(textfile, text=needle.text, style=style, width=w,
                                       height=h)
            stream = stream.drawtext(enable=enable, **options)
        else:
            canvas = work / f"overlay{j}.png"
            overlay_canvas(Path(str(needle.asset)), regions=needle.regions, width=w,
                           height=h).save(canvas, compress_level=1)
            stream = ffmpeg.overlay(stream, ffmpeg.input(str(canvas)), x=0, y=0,
                                    enable=enable)
    return encode_piece(out, profile=profile, stream=stream, duration_s=float(len(ordered)))


def montage_pieces(sample: VNBenchSample, *, haystack_clip: Path, edit_clip: Path | None,
                   insert_clips: dict[int, Path], profile: RenderParams) -> list[Piece]:
    """The sample as pieces of ``profile``'s clips: haystack runs, edited seconds and inserted
    needles, in order.

    ``insert_clips`` maps the index of each inserted needle in ``sample.needles`` to its
    piece; the ``j``-th edited second (in time order) is second ``j`` of ``edit_clip``.
    Raises :class:`MediaError` as :func:`~needleforge.media.join.plan_pieces` does.
    """
    parts: list[tuple[Path, float, float]] = []
    cursor, edited = 0, 0
    order = sorted(range(len(sample.needles)),
                   key=lambda i: (sample.needles[i].haystack_s,
                                  sample.needles[i].method == "edit"))
    for i in order:
        needle = sample.needles[i]
        if needle.haystack_s > cursor:
            parts.append((haystack_clip, float(cursor), float(needle.haystack_s - cursor)))
            cursor = needle.haystack_s
        if needle.method == "insert":
            parts.append((insert_clips[i], 0.0, needle.end_s - needle.start_s))
        else:
            parts.append((Path(str(edit_clip)), float(edited), 1.0))
            edited, cursor = edited + 1, needle.haystack_s + 1
    if cursor < sample.haystack.duration_s:
        parts.append((haystack_clip, float(cursor),
                      float(sample.haystack.duration_s - cursor)))
    return plan_pieces(parts, profile=profile, name=sample.sample_id)


def render_hash(sample: VNBenchSample, *, profile: RenderParams, style: TextStyle,
                max_gop_s: float | None = None) -> str:
    """Hash of everything that decides a sample's pixels (plan, assets, profile, font), and,
    for a sample that may be spliced from its source's GOPs (``max_gop_s`` given), the splice
    rules, which decide whether they are used: a rerun that switches route re-renders."""
    assets = sorted({n.asset for n in sample.needles if n.asset is not None})
    payload: dict[str, Any] = {
        "v": RENDER_VERSION, "cache": CACHE_VERSION, "sample": sample.to_dict(),
        "assets": [file_sha256(Path(a)) for a in assets],
        "profile": profile.model_dump(mode="json", exclude={"workers"}),
        "style": [file_sha256(style.font_path), style.size_frac, style.colour,
                  style.border_colour]}
    if max_gop_s is not None:
        payload["splice"] = {"v": SPLICE_VERSION, "max_gop_s": max_gop_s}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()
                          ).hexdigest()


def render_sample(
    sample: VNBenchSample, *, haystack_clip: Path, out: Path, profile: RenderParams,
    style: TextStyle, piece_root: Path, work_root: Path,
) -> SampleRender:
    """Write ``sample``'s video to ``out`` (mp4) from the cached haystack clip, unless an
    up-to-date one is there.

    Raises:
        MediaError: when ffmpeg fails or the joined video does not match the plan;
        VNBenchError: when an image asset cannot be read.
    """
    digest = render_hash(sample, profile=profile, style=style)
    if _up_to_date(out, digest):
        return SampleRender(sample.sample_id, out, skipped=True, cpu_s=0.0)
    work_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{sample.sample_id}.", dir=work_root) as tmp:
        cpu_s = _render_cached(sample, haystack_clip=haystack_clip, out=out, profile=profile,
                               style=style, piece_root=piece_root, work=Path(tmp))
    _write_sidecar(out, digest, sample_id=sample.sample_id, route="cache", fallback=None)
    return SampleRender(sample.sample_id, out, skipped=False, cpu_s=cpu_s)


def render_sample_from_source(
    sample: VNBenchSample, *, haystack_clip: Callable[[], Path], out: Path,
    profile: RenderParams, style: TextStyle, piece_root: Path, work_root: Path,
    max_gop_s: float,
) -> SampleRender:
    """Write ``sample``'s video to ``out`` from its haystack source's own GOPs (no haystack
    cache, see :mod:`~needleforge.vnbench.splice`), or, when they cannot be used (one
    reason: a needle in a GOP longer than ``max_gop_s`` seconds), from the cached haystack
    clip that ``haystack_clip()`` returns (building it only then).

    The reason for a fallback is returned (``fallback``) and kept in the sidecar.

    Raises:
        MediaError: naming the haystack source when it cannot be read (a truncated or
            damaged file is an error, not a fallback), or when ffmpeg fails;
        VNBenchError: when an image asset cannot be read.
    """
    digest = render_hash(sample, profile=profile, style=style, max_gop_s=max_gop_s)
    if _up_to_date(out, digest):
        return SampleRender(sample.sample_id, out, skipped=True, cpu_s=0.0,
                            route=_sidecar(out).get("route", "cache"),
                            fallback=_sidecar(out).get("fallback"))
    work_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{sample.sample_id}.", dir=work_root) as tmp:
        done = render_spliced(sample, out=out, profile=profile, style=style, work=Path(tmp),
                              max_gop_s=max_gop_s)
        if isinstance(done, GopRefusal):
            route: Route = "cache"
            cpu_s = _render_cached(sample, haystack_clip=haystack_clip(), out=out,
                                   profile=profile, style=style, piece_root=piece_root,
                                   work=Path(tmp))
        else:
            route, cpu_s = "source-gops", done.cpu_s
    fallback = done.reason if isinstance(done, GopRefusal) else None
    _write_sidecar(out, digest, sample_id=sample.sample_id, route=route, fallback=fallback)
    return SampleRender(sample.sample_id, out, skipped=False, cpu_s=cpu_s, route=route,
                        fallback=fallback)


def _render_cached(sample: VNBenchSample, *, haystack_clip: Path, out: Path,
                   profile: RenderParams, style: TextStyle, piece_root: Path, work: Path
                   ) -> float:
    """The montage of the cached haystack clip (see module doc); the CPU seconds spent."""
    edits = [n for n in sample.needles if n.method == "edit"]
    cpu_s, edit_clip = 0.0, None
    if edits:
        edit_clip = work / "edits.h264"
        cpu_s += edit_piece(haystack_clip, edits=edits, out=edit_clip, profile=profile,
                            style=style, work=work).cpu_s
    inserts, piece_cpu_s = insert_pieces(sample.needles, profile=profile, root=piece_root,
                                         work=work)
    cpu_s += piece_cpu_s
    pieces = montage_pieces(sample, haystack_clip=haystack_clip, edit_clip=edit_clip,
                            insert_clips=inserts, profile=profile)
    return cpu_s + render_montage(pieces, out, profile=profile, name=sample.sample_id).cpu_s


def _write_sidecar(out: Path, digest: str, *, sample_id: str, route: Route,
                   fallback: str | None) -> None:
    record = {"render_hash": digest, "sample_id": sample_id, "route": route}
    if fallback is not None:
        record["fallback"] = fallback
    write_text_atomic(out.with_suffix(".json"), json.dumps(record),
                      what=f"VNBench sample {sample_id}")


def _up_to_date(out: Path, digest: str) -> bool:
    return out.is_file() and _sidecar(out).get("render_hash") == digest


def _sidecar(out: Path) -> dict[str, Any]:
    try:
        value = json.loads(out.with_suffix(".json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
