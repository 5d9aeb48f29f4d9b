"""Render benchmark: scene-clip cache + stream-copy concat against a full re-encode per montage.

Builds a studio corpus (synthetic episodes with hard cuts at known times, 640x360 25 fps),
takes its true scenes as the stored scenes, plans NeMoBench-style montages that keep drawing
on the same scenes (short 60–149 s, medium 150–600 s, long 900–1200 s; a target scene, split
into two needles at a whole second when it is long enough, among negative scenes), and renders
them with the real render stage (:func:`needleforge.stages.render.render_montages`).

The figure is **encode work**: CPU seconds of the ffmpeg children, each read with
``os.wait4`` (so parallel children are counted exactly), on both sides:

* *ours* — one run over all montages in plan order with an empty cache. A scene clip is
  charged to the first montage that uses it, so the cost of "the first L montages" is the sum
  of their rows: exactly what a fresh run over only those montages would encode.
* *naive* — each montage decoded from its sources and encoded in full: one ffmpeg per
  montage, one input per segment (accurate ``-ss``/``-t``), the same normalization filters,
  ffmpeg's ``concat`` filter and the same x264 settings. Running that for every montage takes
  hours, so it runs on a sample spread over the plan and its CPU per montage-second is
  extrapolated linearly to each level (``--naive-full`` measures every montage instead).

Run: ``.venv/bin/python benchmarks/render.py --out /tmp/nf-render`` (see README.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import json
import math
import random
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from needleforge.media import probe
from needleforge.media.cache import (
    as_args,
    clip_frames,
    normalize_steps,
    run_ffmpeg_measured,
    video_encoder_options,
)
from needleforge.params import ProgramParams, RenderParams, StudioParams
from needleforge.records import (
    Authorization,
    Bucket,
    Montage,
    Scene,
    Segment,
    Video,
    bucket_for,
    scene_id_for,
    video_id_for,
)
from needleforge.stages.render import RenderReport, render_montages
from needleforge.studio import build_studio

GOAL_RATIO = 50.0
#: (bucket, probability, shortest s, longest s) of the montage mix.
MIX: tuple[tuple[Bucket, float, float, float], ...] = (
    ("short", 0.6, 60.0, 149.0), ("medium", 0.3, 150.0, 600.0), ("long", 0.1, 900.0, 1200.0))


@dataclasses.dataclass(frozen=True)
class Corpus:
    videos: dict[str, Video]
    scenes: dict[str, Scene]

    @property
    def source_s(self) -> float:
        return sum(v.media.duration_s for v in self.videos.values())


def build_corpus(out: Path, *, minutes: float, video_s: float, fresh: bool) -> Corpus:
    """Studio episodes totalling ``minutes`` (reused when already built with the same shape)."""
    n_videos = max(1, round(minutes * 60 / video_s))
    params = StudioParams(real_clips=[], programs=[ProgramParams(
        name="bench", n_videos=n_videos, video_duration_s=video_s, min_scene_s=4.0,
        max_scene_s=12.0, subtitles=False)])
    studio = out / "studio"
    stamp = studio / "bench-params.json"
    wanted = params.model_dump_json()
    if fresh or not stamp.is_file() or stamp.read_text() != wanted:
        shutil.rmtree(studio, ignore_errors=True)
        started = time.perf_counter()
        build_studio(params, studio)
        stamp.write_text(wanted)
        print(f"built {n_videos} x {video_s:.0f} s studio episodes in "
              f"{time.perf_counter() - started:.0f} s")
    truth = json.loads((studio / "ground_truth.json").read_text())
    videos: dict[str, Video] = {}
    scenes: dict[str, Scene] = {}
    for entry in truth["videos"]:
        if entry["program"] != "bench":
            continue
        video = make_video(studio / entry["path"])
        videos[video.video_id] = video
        for s in entry["scenes"]:
            scene = Scene(scene_id=scene_id_for(video.video_id, s["index"]),
                          video_id=video.video_id, index=s["index"], start_s=s["start_s"],
                          end_s=s["end_s"], n_frames=s["end_frame"] - s["start_frame"])
            scenes[scene.scene_id] = scene
    return Corpus(videos=videos, scenes=scenes)


def make_video(path: Path) -> Video:
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    auth = Authorization(rights_holder="bench", licence_id="bench", scope=("benchmark",),
                         valid_until=dt.date(2099, 12, 31))
    return Video(video_id=video_id_for(sha), sha256=sha, program="bench", source_path=str(path),
                 stored_path=str(path), size_bytes=len(data), media=probe(path),
                 authorization=auth)


Part = tuple[Scene, float, float, int | None]  # scene, offset_s, duration_s, needle index


def plan_montages(corpus: Corpus, *, count: int, seed: int) -> list[Montage]:
    """``count`` montages drawn from the same scenes, NeMoBench-style (see module docstring)."""
    rng = random.Random(seed)
    scenes = sorted(corpus.scenes.values(), key=lambda s: s.scene_id)
    targets = [s for s in scenes if s.duration_s > 5.0]
    montages = []
    for i in range(count):
        bucket, lo, hi = _draw_bucket(rng)
        goal_s = round(rng.uniform(lo, hi), 2)
        target = rng.choice(targets)
        same_video = [s for s in scenes if s.video_id == target.video_id and s != target]
        pool = same_video if bucket == "short" else [s for s in scenes if s != target]
        parts = _target_parts(target, rng)
        filler = goal_s - sum(p[2] for p in parts)
        while filler > 0.04:
            scene = rng.choice(pool)
            take = min(scene.duration_s, round(filler, 2))
            parts.insert(rng.randrange(len(parts) + 1), (scene, 0.0, take, None))
            filler -= take
        montages.append(_montage(f"bench-{i:04d}", parts, seed=seed))
    return montages


def plan_per_source_hour(
    corpus: Corpus, *, ratios: list[float], seed: int
) -> tuple[list[Montage], list[int]]:
    """The plan whose first ``counts[i]`` montages last ``ratios[i]`` x the source (at least).

    Plans are prefix-stable (the same seed draws the same first montages), so the plan for
    the largest ratio serves every level; a montage lasts at least 60 s, which bounds the
    count to draw.
    """
    most = max(ratios) * corpus.source_s
    plan = plan_montages(corpus, count=max(1, math.ceil(most / MIX[0][2])) + 1, seed=seed)
    counts, total_s = [], 0.0
    for index, montage in enumerate(plan, start=1):
        total_s += montage.duration_s
        while len(counts) < len(ratios) and total_s >= ratios[len(counts)] * corpus.source_s:
            counts.append(index)
    return plan[:counts[-1]], counts


def _draw_bucket(rng: random.Random) -> tuple[Bucket, float, float]:
    roll, acc = rng.random(), 0.0
    for bucket, share, lo, hi in MIX:
        acc += share
        if roll < acc:
            return bucket, lo, hi
    return MIX[-1][0], MIX[-1][2], MIX[-1][3]


def _target_parts(target: Scene, rng: random.Random) -> list[Part]:
    """The target scene whole, or split at a whole second into two needles of >= 2 s."""
    if target.duration_s <= 6.0:
        return [(target, 0.0, target.duration_s, 0)]
    cut = rng.randint(2, math.floor(target.duration_s - 2.0))
    return [(target, 0.0, float(cut), 0), (target, float(cut), target.duration_s - cut, 1)]


def _montage(montage_id: str, parts: list[Part], *, seed: int) -> Montage:
    segments, clock = [], 0.0
    for position, (scene, offset_s, duration_s, needle) in enumerate(parts):
        start = scene.start_s + offset_s
        segments.append(Segment(
            position=position, video_id=scene.video_id, scene_id=scene.scene_id,
            src_start_s=round(start, 6), src_end_s=round(start + duration_s, 6),
            montage_start_s=round(clock, 6), role="negative" if needle is None else "target",
            needle_index=needle))
        clock = round(clock + duration_s, 6)
    return Montage(montage_id=montage_id, bucket=bucket_for(clock), segments=tuple(segments),
                   seed=seed)


def naive_args(montage: Montage, corpus: Corpus, profile: RenderParams, out: Path) -> list[str]:
    """ffmpeg arguments decoding every segment of ``montage`` and encoding it all afresh."""
    args: list[str] = []
    steps = [s for s in normalize_steps(profile) if s[0] != "tpad"]
    chain = ",".join(["setpts=PTS-STARTPTS", *(
        f"{name}=" + ":".join(f"{k}={v}" for k, v in opts.items()) for name, opts in steps)])
    graph = []
    for i, seg in enumerate(montage.segments):
        source = corpus.videos[seg.video_id].stored_path
        args += ["-ss", f"{seg.src_start_s:.6f}", "-t", f"{seg.duration_s:.6f}", "-i", source]
        graph.append(f"[{i}:v:0]{chain}[v{i}]")
    n = len(montage.segments)
    joined = "".join(f"[v{i}]" for i in range(n)) + f"concat=n={n}:v=1:a=0[out]"
    return [*args, "-filter_complex", ";".join([*graph, joined]), "-map", "[out]",
            *as_args(video_encoder_options(profile)), "-f", "mp4", str(out)]


def naive_sample(montages: list[Montage], *, budget_s: float) -> list[Montage]:
    """Montages spread evenly over the plan, as few as reach ``budget_s`` montage seconds."""
    for m in range(1, len(montages) + 1):
        chosen = [montages[round(j * len(montages) / m)] for j in range(m)]
        if sum(c.duration_s for c in chosen) >= budget_s:
            return chosen
    return list(montages)


def measure_naive(
    montages: list[Montage], corpus: Corpus, *, profile: RenderParams, work: Path
) -> tuple[dict[str, float], float]:
    """CPU seconds of the naive render of each montage (outputs deleted), and the wall time."""
    work.mkdir(parents=True, exist_ok=True)

    def one(montage: Montage) -> float:
        out = work / f"{montage.montage_id}.mp4"
        cpu_s = run_ffmpeg_measured(naive_args(montage, corpus, profile, out),
                                    what=f"naive {montage.montage_id}")
        got = probe(out).n_frames
        if abs(got - clip_frames(montage.duration_s, fps=profile.fps)) > len(montage.segments):
            raise SystemExit(f"naive {montage.montage_id}: {got} frames, plan "
                             f"{montage.duration_s:.2f} s")
        out.unlink()
        return cpu_s

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=profile.workers) as pool:
        costs = dict(zip((m.montage_id for m in montages), pool.map(one, montages), strict=True))
    return costs, time.perf_counter() - started


@dataclasses.dataclass(frozen=True)
class Level:
    montages: int
    montage_s: float
    scenes_encoded: int
    ours_cpu_s: float
    naive_cpu_s: float


def levels(
    plan: list[Montage], report: RenderReport, naive_rate: float, naive: dict[str, float],
    counts: list[int], *, full: bool,
) -> list[Level]:
    """Cost of the first L montages for each L (see module docstring for the accounting)."""
    rows = {r.montage_id: r for r in report.montages}
    out = []
    for count in counts:
        first = plan[:count]
        montage_s = sum(m.duration_s for m in first)
        ours = sum(rows[m.montage_id].encode_cpu_s + rows[m.montage_id].join_cpu_s
                   for m in first)
        encoded = sum(rows[m.montage_id].cache_misses for m in first)
        naive_cpu = (sum(naive[m.montage_id] for m in first) if full
                     else naive_rate * montage_s)
        out.append(Level(count, montage_s, encoded, ours, naive_cpu))
    return out


def print_levels(table: list[Level], corpus: Corpus, *, full: bool) -> None:
    hours = corpus.source_s / 3600
    print(f"\n{'montages':>9} {'montage h':>10} {'per src h':>10} {'clips':>6} "
          f"{'ours CPU s':>11} {'naive CPU s':>12} {'ratio':>7}")
    for row in table:
        mark = "" if full else "*"
        print(f"{row.montages:>9} {row.montage_s / 3600:>10.2f} "
              f"{row.montage_s / 3600 / hours:>10.1f} {row.scenes_encoded:>6} "
              f"{row.ours_cpu_s:>11.1f} {row.naive_cpu_s:>11.1f}{mark:1} "
              f"{row.naive_cpu_s / row.ours_cpu_s:>6.1f}x")
    if not full:
        print("  * naive extrapolated linearly in montage seconds from the sample above")
    print("  per src h = montage hours per source hour; clips = scene clips encoded "
          "(cache misses)")


def run_ours(plan: list[Montage], corpus: Corpus, *, profile: RenderParams, out: Path
             ) -> RenderReport:
    """The render stage over the whole plan with an empty cache and no earlier outputs."""
    for folder in (out / "cache", out / "montages"):
        shutil.rmtree(folder, ignore_errors=True)
    report = render_montages(plan, scenes_by_id=corpus.scenes, videos_by_id=corpus.videos,
                             out_dir=out / "montages", cache_dir=out / "cache", params=profile)
    print(f"ours: {len(plan)} montages in {report.wall_s:.1f} s wall; {report.cache_misses} "
          f"scene clips encoded ({report.encode_cpu_s:.1f} CPU s), joins "
          f"{report.join_cpu_s:.1f} CPU s ({report.join_cpu_s / len(plan):.2f} per montage)")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="scratch folder")
    parser.add_argument("--minutes", type=float, default=10.0, help="minutes of source video")
    parser.add_argument("--video-s", type=float, default=300.0, help="length of one episode")
    parser.add_argument("--levels", default="10,50,200", help="montage counts to report")
    parser.add_argument("--per-source-hour", default=None, metavar="R,...",
                        help="report levels by montage hours per source hour instead (e.g. "
                             "1,10,100): the first montages reaching R x the source length")
    parser.add_argument("--naive-budget-s", type=float, default=900.0,
                        help="montage seconds the naive sample covers")
    parser.add_argument("--naive-full", action="store_true", help="naive-render every montage")
    parser.add_argument("--workers", type=int, default=2, help="parallel ffmpeg children")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fresh", action="store_true", help="rebuild the studio corpus")
    args = parser.parse_args()
    profile = RenderParams(workers=args.workers)
    corpus = build_corpus(args.out, minutes=args.minutes, video_s=args.video_s, fresh=args.fresh)
    if args.per_source_hour:
        ratios = sorted({float(r) for r in args.per_source_hour.split(",")})
        plan, counts = plan_per_source_hour(corpus, ratios=ratios, seed=args.seed)
    else:
        counts = sorted({int(c) for c in args.levels.split(",")})
        plan = plan_montages(corpus, count=counts[-1], seed=args.seed)
    print(f"source: {len(corpus.videos)} videos, {corpus.source_s / 60:.1f} min, "
          f"{len(corpus.scenes)} scenes; profile {profile.width}x{profile.height}@{profile.fps}"
          f" {profile.preset} crf {profile.crf}; {args.workers} workers; plan of {len(plan)} "
          f"montages, {sum(m.duration_s for m in plan) / 3600:.2f} h "
          f"({', '.join(f'{b} {sum(m.bucket == b for m in plan)}' for b, *_ in MIX)})")
    report = run_ours(plan, corpus, profile=profile, out=args.out)
    sample = plan if args.naive_full else naive_sample(plan, budget_s=args.naive_budget_s)
    naive, naive_wall = measure_naive(sample, corpus, profile=profile, work=args.out / "naive")
    sample_s = sum(m.duration_s for m in sample)
    rate = sum(naive.values()) / sample_s
    print(f"naive: {len(sample)} montages ({sample_s:.0f} s of montage) re-encoded in "
          f"{naive_wall:.1f} s wall, {sum(naive.values()):.1f} CPU s = {rate:.3f} CPU s per "
          f"montage-second (ours, all {len(plan)} montages: "
          f"{report.cpu_s / sum(m.duration_s for m in plan):.4f})")
    table = levels(plan, report, rate, naive, counts, full=args.naive_full)
    print_levels(table, corpus, full=args.naive_full)
    top = table[-1]
    ratio = top.naive_cpu_s / top.ours_cpu_s
    verdict = "met" if ratio >= GOAL_RATIO else "NOT met"
    print(f"\ngoal >= {GOAL_RATIO:.0f}x less encode work at NeMoBench-like reuse "
          f"({top.montages} montages, {top.montage_s / corpus.source_s:.0f} montage hours per "
          f"source hour): {ratio:.1f}x, {verdict}")


if __name__ == "__main__":
    main()
