"""VNBench render benchmark: touched-seconds re-encode + stream copy against a full re-encode.

For each haystack length (default 60 s and 180 s) and output frame rate (default 25 and
5 fps), one sample of each of the 9 subtasks is composed on the same haystack (a studio
episode, 640x360) and rendered two ways:

* *ours* — :func:`needleforge.vnbench.sample_render.render_sample`: the haystack is a clip of the
  scene-clip cache (encoded once per haystack, reported separately and amortized over the 9
  samples); a sample re-encodes only its edited seconds (one ffmpeg run) and its inserted
  stills (cached per image), and joins everything by copying coded frames. The piece cache
  starts empty for every length, so first-use encodes of stills are counted.
* *full re-encode* — what moviepy-style generators do: decode the whole haystack from the
  source (ffmpeg → raw RGB pipe, same normalization filters), composite every needle in
  Python (subtitle patches drawn with Pillow in the same font and size, pasted image copies,
  inserted still frames), and encode every frame again (ffmpeg ← raw RGB pipe, the same x264
  settings, one thread like ours). It runs on ``--baseline-tasks`` (default 3 of the 9;
  ``--baseline-tasks ''`` skips it).
* *no cache* — :func:`needleforge.vnbench.sample_render.render_sample_from_source`: the sample is
  spliced from the source's own GOPs (the studio episode is H.264 at 640x360, 25 fps, an IDR
  every second: the profile at 25 fps), only the GOPs holding a needle are re-encoded, and
  nothing is cached. Everything is counted: scanning the source's packets, decoding,
  drawing and encoding the needle GOPs and inserted needles (no piece cache), muxing and
  verifying. When the source cannot be spliced (at 5 fps it is not at the profile's rate)
  the sample falls back to building its own haystack clip, counted too. It is compared with
  the cached path's cost for one sample (haystack encode + sample) and amortized over the
  haystack's 9 samples (haystack encode / 9 + sample), printed as ratios.
* *stage* — :func:`needleforge.vnbench.build_vnbench` whole (needle filter with the
  embedded embedder, 9 samples on one haystack of each ``--stage-lengths``, 2 render
  threads, at the 25 fps profile) from empty caches, with ``reuse_source_gops`` off (every
  haystack cached first) and on (the filter reads the source; nothing cached unless a
  sample falls back); the built-in images and the embedder's load are outside the timing.

Figures are wall seconds per sample (the goal is stated in wall time) and CPU seconds (all
ffmpeg children, read with ``os.wait4``, plus this process's own time for the baseline's
compositing and our joins). Run: ``.venv/bin/python benchmarks/vnbench_render.py --out DIR``.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from needleforge.backends import default_registry
from needleforge.backends.embedding import ImageEmbedder
from needleforge.media import probe
from needleforge.media.cache import (
    ClipSpec,
    SceneClipCache,
    as_args,
    normalize_filter,
    video_encoder_options,
)
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.params import ProgramParams, RenderParams, StudioParams, VNBenchParams
from needleforge.records import Authorization, Video, video_id_for
from needleforge.studio import build_studio
from needleforge.vnbench import build_vnbench
from needleforge.vnbench.assets import build_builtin_images, load_image_sets
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.clips import ClipSet
from needleforge.vnbench.compose import Layout, compose_sample
from needleforge.vnbench.names import SECRET_NAMES
from needleforge.vnbench.pictures import overlay_canvas, still_frame
from needleforge.vnbench.plan import whole_seconds
from needleforge.vnbench.records import Haystack, VNBenchSample
from needleforge.vnbench.sample_render import render_sample, render_sample_from_source
from needleforge.vnbench.subtasks import SUBTASKS, Pools
from needleforge.vnbench.text import TextStyle, default_font_path, drawtext_options

GOAL_S = 0.5
GOAL_RATIO = 15.0
#: Issue 22: a sample, every cost included and no haystack cache, at 180 s haystacks.
GOAL_NOCACHE_S = 1.0


def build_source(out: Path, *, seconds: int) -> Video:
    """One studio episode of ``seconds`` (reused when already built with the same length)."""
    studio = out / "studio"
    params = StudioParams(real_clips=[], programs=[ProgramParams(
        name="bench", n_videos=1, video_duration_s=float(seconds), subtitles=False)])
    stamp = studio / "bench-params.json"
    if not stamp.is_file() or stamp.read_text() != params.model_dump_json():
        shutil.rmtree(studio, ignore_errors=True)
        build_studio(params, studio)
        stamp.write_text(params.model_dump_json())
    path = studio / "programs" / "bench" / "bench-e01.mp4"
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    auth = Authorization(rights_holder="bench", licence_id="bench", scope=("benchmark",),
                         valid_until=dt.date(2099, 12, 31))
    return Video(video_id=video_id_for(sha), sha256=sha, program="bench", source_path=str(path),
                 stored_path=str(path), size_bytes=len(data), media=probe(path),
                 authorization=auth)


def compose_all(haystack: Haystack, *, out: Path, profile: RenderParams) -> list[VNBenchSample]:
    images, _ = load_image_sets([build_builtin_images(out / "cache")])
    pools = Pools(names=SECRET_NAMES[:30], images=images, clips=ClipSet(()),
                  level_categories={1: ("fruit", "animal", "object"), 2: ("landmark",)},
                  count_min=1, count_max=5)
    layout = Layout(width=profile.width, height=profile.height, clip_s=2, count_sigma=2.0)
    return [compose_sample(spec, haystack=haystack, pools=pools, index=0, seed=0,
                           layout=layout)
            for spec in SUBTASKS.values()]


def _text_patch(text: str, *, style: TextStyle, profile: RenderParams) -> tuple[Image.Image,
                                                                                 int, int]:
    """The subtitle as an RGBA patch (Pillow, same font/size/border) and where it goes."""
    options = drawtext_options(Path("unused"), text=text, style=style, width=profile.width,
                               height=profile.height)
    font = ImageFont.truetype(str(style.font_path), int(options["fontsize"]))
    stroke = int(options["borderw"])
    left, top, right, bottom = font.getbbox(text, stroke_width=stroke)
    patch = Image.new("RGBA", (right - left, bottom - top), (0, 0, 0, 0))
    ImageDraw.Draw(patch).text((-left, -top), text, font=font, fill=style.colour,
                               stroke_width=stroke, stroke_fill=style.border_colour)
    margin = max(2, round(0.06 * profile.height))
    return patch, (profile.width - patch.width) // 2, profile.height - patch.height - margin


def _edit_layers(sample: VNBenchSample, *, style: TextStyle, profile: RenderParams
                 ) -> dict[int, Image.Image]:
    layers = {}
    for needle in sample.needles:
        if needle.method != "edit":
            continue
        if needle.text is not None:
            patch, x, y = _text_patch(needle.text, style=style, profile=profile)
            canvas = Image.new("RGBA", (profile.width, profile.height), (0, 0, 0, 0))
            canvas.alpha_composite(patch, (x, y))
        else:
            canvas = overlay_canvas(Path(str(needle.asset)), regions=needle.regions,
                                    width=profile.width, height=profile.height)
        layers[needle.haystack_s] = canvas
    return layers


def _insert_frames(sample: VNBenchSample, *, profile: RenderParams) -> dict[int, list[bytes]]:
    inserts = {}
    for needle in sample.needles:
        if needle.method == "insert":
            frame = still_frame(Path(str(needle.asset)), width=profile.width,
                                height=profile.height).tobytes()
            inserts[needle.haystack_s] = [frame] * round((needle.end_s - needle.start_s)
                                                         * profile.fps)
    return inserts


def full_reencode(sample: VNBenchSample, *, out: Path, profile: RenderParams, style: TextStyle
                  ) -> tuple[float, float]:
    """Decode, composite and re-encode every frame of ``sample``; (wall s, CPU s)."""
    started, cpu0 = time.perf_counter(), time.process_time()
    w, h, fps, hay = profile.width, profile.height, profile.fps, sample.haystack
    ff = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y"]
    reader = subprocess.Popen(
        [*ff, "-ss", str(hay.start_s), "-t", str(hay.duration_s + 1), "-i", hay.source,
         "-vf", normalize_filter(profile), "-frames:v", str(hay.duration_s * fps),
         "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], stdout=subprocess.PIPE)
    options = {**video_encoder_options(profile), "f": "mp4", "x264-params": "stitchable=1"}
    writer = subprocess.Popen(
        [*ff, "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-framerate", str(fps),
         "-i", "pipe:0", *as_args(options), str(out)], stdin=subprocess.PIPE)
    assert reader.stdout is not None and writer.stdin is not None
    layers = _edit_layers(sample, style=style, profile=profile)
    inserts = _insert_frames(sample, profile=profile)
    for k, raw in enumerate(_frames(reader.stdout, w * h * 3)):
        second = k // fps
        if k % fps == 0:
            for still in inserts.get(second, []):
                writer.stdin.write(still)
        if second in layers:
            frame = Image.frombytes("RGB", (w, h), raw).convert("RGBA")
            raw = Image.alpha_composite(frame, layers[second]).convert("RGB").tobytes()
        writer.stdin.write(raw)
    for still in inserts.get(hay.duration_s, []):
        writer.stdin.write(still)
    writer.stdin.close()
    cpu = sum(_wait_cpu(p) for p in (reader, writer))
    return time.perf_counter() - started, cpu + time.process_time() - cpu0


def _frames(stream: IO[bytes], size: int) -> Iterator[bytes]:
    while len(chunk := stream.read(size)) == size:
        yield chunk


def _wait_cpu(proc: subprocess.Popen[bytes]) -> float:
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime


@dataclasses.dataclass
class Row:
    fps: int
    length_s: int
    haystack_wall_s: float
    ours: dict[str, tuple[float, float]]
    naive: dict[str, tuple[float, float]]
    nocache: dict[str, tuple[float, float, str]] = dataclasses.field(default_factory=dict)


def run_length(video: Video, *, length: int, profile: RenderParams, out: Path, style: TextStyle,
               baseline_tasks: list[str], max_gop_s: float) -> Row:
    work = out / f"fps{profile.fps}-l{length}"
    shutil.rmtree(work, ignore_errors=True)
    start = min(10, whole_seconds(video.media.duration_s) - length)
    haystack = Haystack(haystack_id=f"bench-{length}", video_id=video.video_id,
                        source=video.stored_path, source_sha256=video.sha256, start_s=start,
                        duration_s=length)
    cache = SceneClipCache(work / "haystacks", profile=profile)
    began = time.perf_counter()
    clip = cache.ensure(ClipSpec(Path(video.stored_path), float(start), float(start + length),
                                 source_id=video.sha256)).path
    haystack_wall_s = time.perf_counter() - began
    ours, naive = {}, {}
    for sample in compose_all(haystack, out=out, profile=profile):
        began = time.perf_counter()
        done = render_sample(sample, haystack_clip=clip, out=work / sample.video, profile=profile,
                             style=style, piece_root=work / "pieces", work_root=work / "tmp")
        ours[sample.task] = (time.perf_counter() - began, done.cpu_s)
        if sample.task in baseline_tasks:
            naive[sample.task] = full_reencode(sample, out=work / f"naive-{sample.video}",
                                               profile=profile, style=style)
            assert len(decode_file(work / f"naive-{sample.video}")) == round(
                sample.duration_s * profile.fps)
    nocache = {sample.task: no_cache_sample(sample, clip_spec=ClipSpec(
        Path(video.stored_path), float(start), float(start + length), source_id=video.sha256),
        work=work, profile=profile, style=style, max_gop_s=max_gop_s)
        for sample in compose_all(haystack, out=out, profile=profile)}
    return Row(profile.fps, length, haystack_wall_s, ours, naive, nocache)


def no_cache_sample(sample: VNBenchSample, *, clip_spec: ClipSpec, work: Path,
                    profile: RenderParams, style: TextStyle, max_gop_s: float
                    ) -> tuple[float, float, str]:
    """(wall s, CPU s, route) of one sample from the source's GOPs, every cost included; a
    fallback builds its own haystack clip (in a cache of its own) and pays for it."""
    own = work / "nocache" / sample.task
    began = time.perf_counter()
    done = render_sample_from_source(
        sample, haystack_clip=lambda: SceneClipCache(own / "haystack", profile=profile).ensure(
            clip_spec).path, out=work / "nocache" / sample.video, profile=profile, style=style,
        piece_root=own / "pieces", work_root=own / "tmp", max_gop_s=max_gop_s)
    wall = time.perf_counter() - began
    return wall, done.cpu_s, done.route if done.fallback is None else f"cache ({done.fallback})"


def report(rows: list[Row]) -> None:
    print("\n| fps | haystack | ours s/sample (9 tasks) | ours max | ours CPU s | haystack "
          "encode s (/9) | full re-encode s/sample | CPU s | ratio (same samples) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        walls = [w for w, _ in r.ours.values()]
        naive_wall = _naive_ratio(r)
        print(f"| {r.fps} | {r.length_s} s | {statistics.mean(walls):.3f} | {max(walls):.3f} | "
              f"{statistics.mean(c for _, c in r.ours.values()):.3f} | "
              f"{r.haystack_wall_s:.2f} ({r.haystack_wall_s / 9:.2f}) | "
              f"{naive_wall[0]:.2f} | {naive_wall[1]:.2f} | {naive_wall[2]:.1f}x |")
    for r in rows:
        per_task = ", ".join(f"{t} {w:.2f}" for t, (w, _) in r.ours.items())
        print(f"fps {r.fps}, {r.length_s} s — ours per task (wall s): {per_task}")
    for r in rows:
        ok = max(w for w, _ in r.ours.values()) <= GOAL_S
        ratio = _naive_ratio(r)[2]
        print(f"goal fps {r.fps} {r.length_s} s: every sample <= {GOAL_S} s: "
              f"{'met' if ok else 'NOT met'}; >= {GOAL_RATIO:.0f}x full re-encode: "
              f"{'met' if ratio >= GOAL_RATIO else 'NOT met'} ({ratio:.1f}x)")
    report_no_cache(rows)


def _naive_ratio(r: Row) -> tuple[float, float, float]:
    """(full re-encode wall s, its CPU s, its ratio to ours on the same samples); NaN
    without a baseline (``--baseline-tasks ''``)."""
    if not r.naive:
        return math.nan, math.nan, math.nan
    wall = statistics.mean(w for w, _ in r.naive.values())
    return (wall, statistics.mean(c for _, c in r.naive.values()),
            wall / statistics.mean(r.ours[t][0] for t in r.naive))


def report_no_cache(rows: list[Row]) -> None:
    """Sample cost, everything included, no cache, against the cached path in the same run."""
    print("\n| fps | haystack | no cache s/sample (9 tasks) | max | CPU s | cache build + "
          "sample s | ratio (1 sample/haystack) | cache/9 + sample s | ratio (9 per haystack)"
          " | routes |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        mean = statistics.mean(w for w, _, _ in r.nocache.values())
        ours = statistics.mean(w for w, _ in r.ours.values())
        single, shared = r.haystack_wall_s + ours, r.haystack_wall_s / 9 + ours
        routes = collections.Counter(route for _, _, route in r.nocache.values())
        print(f"| {r.fps} | {r.length_s} s | {mean:.3f} | "
              f"{max(w for w, _, _ in r.nocache.values()):.3f} | "
              f"{statistics.mean(c for _, c, _ in r.nocache.values()):.3f} | {single:.2f} | "
              f"{single / mean:.1f}x | {shared:.2f} | {shared / mean:.1f}x | "
              f"{'; '.join(f'{n} {route}' for route, n in routes.items())} |")
    for r in rows:
        per_task = ", ".join(f"{t} {w:.2f}/{c:.2f}" for t, (w, c, _) in r.nocache.items())
        print(f"fps {r.fps}, {r.length_s} s — no cache per task (wall/CPU s): {per_task}")
    for r in rows:
        worst = max(w for w, _, _ in r.nocache.values())
        print(f"goal fps {r.fps} {r.length_s} s: every no-cache sample <= {GOAL_NOCACHE_S} s "
              f"everything included: {'met' if worst <= GOAL_NOCACHE_S else 'NOT met'} "
              f"(max {worst:.2f} s)")


def stage_row(video: Video, *, length: int, out: Path, reuse: bool, max_gop_s: float,
              embedder: ImageEmbedder) -> str:
    """One markdown row: the whole stage's wall time on one haystack of ``length`` s."""
    root = out / f"stage-{'source' if reuse else 'cache'}-{length}"
    shutil.rmtree(root, ignore_errors=True)
    build_builtin_images(root / "cache")  # the same in both routes: not timed
    params = VNBenchParams(samples_per_subtask=1, min_haystack_s=length, max_haystack_s=length,
                           builtin_clips=False, reuse_source_gops=reuse, max_gop_s=max_gop_s)
    began = time.perf_counter()
    result = build_vnbench(videos=[video], params=params, out_dir=root / "out",
                           cache_dir=root / "cache", render=RenderParams(), embedder=embedder)
    wall = time.perf_counter() - began
    routes = collections.Counter(json.loads(p.with_suffix(".json").read_text())["route"]
                                 for p in result.videos)
    clips = len(list((root / "cache" / "vnbench-haystacks").rglob("*.h264")))
    return (f"| {'source GOPs' if reuse else 'cache'} | {length} s | {len(result.videos)} | "
            f"{wall:.2f} | {wall / max(1, len(result.videos)):.2f} | {clips} | "
            f"{'; '.join(f'{n} {r}' for r, n in routes.items())} |")


def report_stage(video: Video, *, lengths: list[int], out: Path, max_gop_s: float) -> None:
    embedder = default_registry().create("image_embedder", "embedded")
    embedder.embed([np.zeros((64, 64, 3), dtype=np.uint8)])  # loads the model: not timed
    print("\n| stage route | haystack | samples | wall s | s/sample | haystack clips cached "
          "| routes |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for length in lengths:
        for reuse in (False, True):
            print(stage_row(video, length=length, out=out, reuse=reuse, max_gop_s=max_gop_s,
                            embedder=embedder), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lengths", default="60,180")
    parser.add_argument("--fps", default="25,5")
    parser.add_argument("--baseline-tasks", default="ret_edit1,ord_insert1,cnt_edit2")
    parser.add_argument("--max-gop-s", type=float, default=VNBenchParams().max_gop_s,
                        help="the no-cache route's GOP limit (vnbench.max_gop_s; default "
                             "%(default)s)")
    parser.add_argument("--stage-lengths", default="180",
                        help="haystack lengths of the whole-stage comparison ('' skips it)")
    args = parser.parse_args()
    lengths = [int(v) for v in args.lengths.split(",")]
    stage_lengths = [int(v) for v in args.stage_lengths.split(",") if v]
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    video = build_source(args.out, seconds=max(lengths + stage_lengths) + 20)
    print(f"source: {video.stored_path} ({video.media.duration_s:.0f} s), "
          f"built/reused in {time.perf_counter() - began:.1f} s; load {os.getloadavg()[0]:.2f}")
    style = TextStyle(font_path=default_font_path())
    baseline = [t for t in args.baseline_tasks.split(",") if t]
    rows = [run_length(video, length=length, profile=RenderParams(fps=int(fps)), out=args.out,
                       style=style, baseline_tasks=baseline, max_gop_s=args.max_gop_s)
            for fps in args.fps.split(",") for length in lengths]
    report(rows)
    if stage_lengths:
        report_stage(video, lengths=stage_lengths, out=args.out, max_gop_s=args.max_gop_s)
    print(f"total {time.perf_counter() - began:.0f} s; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
