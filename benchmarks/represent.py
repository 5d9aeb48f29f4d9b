"""Represent-stage benchmark: accuracy against the studio truth, speed per part, peak memory.

Builds a studio corpus (synthetic programs, optionally the real clips), ingests it into a
scratch store, represents every video with the embedded backends and prints:

* cut precision / recall / F1 at ±2 frames and object presence recall (all, featured, small)
  with track precision (:mod:`needleforge.studio.accuracy`);
* throughput as a multiple of realtime for the whole stage and for each part (scene
  detection, keyframe decode, detector, tagger, tracking), all measured in the same run, and
  every figure also as a ratio to a plain PyAV decode of the same videos, timed in the same
  run (the project's convention: ratios against a same-run baseline, never timed asserts);
* peak RSS, and whether the goal (>= 10x realtime on 2 cores) is met and what dominates;
* alternatives measured in the same run, interleaved per video: smaller keyframes (the
  detector sees 300x300, the tagger 280x280), fewer keyframes, a cheaper shot-detection decode.

How parts are timed: scene detection is run here (exactly as ``represent_video`` would) and
its scenes passed in; the detector and tagger are wrapped in timing proxies handed over as
``Models``; keyframe decoding and tracking are timed by patching the two names
``needleforge.stages.represent_video`` looks up (``sample_keyframes``, ``build_objects``) for
the duration of the call. "other" is what is left of ``represent_video`` (tag merging, records).

Run: ``.venv/bin/python benchmarks/represent.py --out /tmp/nf-bench`` (see README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import multiprocessing
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock

import av

import needleforge.stages.represent_video as represent_module
from needleforge.backends import default_registry
from needleforge.errors import StudioError
from needleforge.ingest import ingest
from needleforge.objects import build_objects
from needleforge.params import IngestParams, Params, ProgramParams, StudioParams, load_params
from needleforge.records import Detection, Representation, Scene, TagScore, Video
from needleforge.scenes import attach_subtitles, detect_scenes, read_subtitles, sample_keyframes
from needleforge.stages.represent_video import Models, load_models, represent_video
from needleforge.store import Store
from needleforge.studio import StudioReport, build_studio
from needleforge.studio.accuracy import (
    CutScore,
    PresenceScore,
    StudioTruth,
    load_truth,
    score_representation,
)

GOAL_X_REALTIME = 10.0
PARTS = ("scene detection", "keyframe decode", "detector", "tagger", "tracking", "other")


class Clock:
    """Wall seconds, CPU seconds (all threads of this process) and calls per named part."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        start, start_cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start
            self.cpu[name] += time.process_time() - start_cpu
            self.calls[name] += 1


class TimedModel:
    """A detector or tagger proxy (same name and version) adding each call's time to ``clock``."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self.inner, self.clock = inner, clock
        self.name: str = inner.name
        self.version: str = inner.version

    def detect(self, image: Any, *, t_s: float) -> list[Detection]:
        with self.clock.part("detector"):
            return self.inner.detect(image, t_s=t_s)  # type: ignore[no-any-return]

    def tag(self, image: Any) -> list[TagScore]:
        with self.clock.part("tagger"):
            return self.inner.tag(image)  # type: ignore[no-any-return]


class TimedSampler:
    """Wraps a ``KeyframeSampler``: time spent producing keyframes counts as decode time."""

    def __init__(self, inner: Any, clock: Clock) -> None:
        self.inner, self.clock = inner, clock

    def __iter__(self) -> TimedSampler:
        return self

    def __next__(self) -> Any:
        with self.clock.part("keyframe decode"):
            return next(self.inner)

    def close(self) -> None:
        with self.clock.part("keyframe decode"):
            self.inner.close()

    @property
    def decode_error(self) -> str | None:
        return self.inner.decode_error  # type: ignore[no-any-return]


@contextlib.contextmanager
def instrumented(clock: Clock) -> Iterator[None]:
    """Time keyframe decoding and tracking inside ``represent_video`` (see module docstring)."""

    def sampler(*args: Any, **kwargs: Any) -> TimedSampler:
        with clock.part("keyframe decode"):
            return TimedSampler(sample_keyframes(*args, **kwargs), clock)

    def build(*args: Any, **kwargs: Any) -> Any:
        with clock.part("tracking"):
            return build_objects(*args, **kwargs)

    with (mock.patch.object(represent_module, "sample_keyframes", sampler),
          mock.patch.object(represent_module, "build_objects", build)):
        yield


@dataclasses.dataclass
class Variant:
    """One configuration of the stage: its params, timings and representations."""

    label: str
    params: Params
    clock: Clock = dataclasses.field(default_factory=Clock)
    reps: list[Representation] = dataclasses.field(default_factory=list)

    def part_s(self, name: str, *, cpu: bool = False) -> float:
        """Seconds (wall, or CPU) of one part; "other" = objects step minus its timed parts."""
        table = self.clock.cpu if cpu else self.clock.seconds
        if name == "other":
            return max(0.0, table["objects"] - sum(table[p] for p in PARTS[1:5]))
        return table[name]

    @property
    def stage_s(self) -> float:
        return self.clock.seconds["scene detection"] + self.clock.seconds["objects"]


def variant(label: str, params: Params, **scenes: Any) -> Variant:
    """``params`` with some ``scenes`` keys changed (validated again)."""
    data = params.model_dump(mode="json")
    data["scenes"].update(scenes)
    return Variant(label, Params.model_validate(data))


def detect(video: Video, params: Params, clock: Clock) -> list[Scene]:
    """Scenes of ``video`` exactly as ``represent_video`` makes them, timed."""
    with clock.part("scene detection"):
        detection = detect_scenes(Path(video.stored_path), video_id=video.video_id,
                                  params=params.scenes, duration_s=video.media.duration_s)
        scenes = list(detection.scenes)
        if video.subtitle_path:
            scenes = attach_subtitles(scenes, read_subtitles(Path(video.subtitle_path)))
    return scenes


def objects_step(video: Video, scenes: list[Scene], *, run: Variant, models: Models) -> None:
    """The rest of ``represent_video`` (keyframes, models, tracking) with every part timed."""
    timed = Models(detector=TimedModel(models.detector, run.clock),
                   tagger=TimedModel(models.tagger, run.clock))
    with run.clock.part("objects"), instrumented(run.clock):
        run.reps.append(represent_video(video, scene_params=run.params.scenes,
                                        object_params=run.params.objects, models=timed,
                                        scenes=scenes))


def run_all(
    videos: Sequence[Video], *, runs: Sequence[Variant], scene_runs: Sequence[Variant],
    models: Models, baseline: Clock,
) -> None:
    """Per video, interleaved so that load from other processes hits every figure alike:
    the plain decode, scene detection once (shared by the object variants), every object
    variant on those scenes, then every scene-detection variant."""
    for video in videos:
        decode_baseline(Path(video.stored_path), clock=baseline)
        scenes = detect(video, runs[0].params, runs[0].clock)
        for run in runs:
            objects_step(video, scenes, run=run, models=models)
        for run in scene_runs:
            found = detect(video, run.params, run.clock)
            run.reps.append(dataclasses.replace(runs[0].reps[-1], scenes=tuple(found), tags=(),
                                                objects=()))
    shared = runs[0].clock
    for run in runs[1:]:  # the object variants reused the base scenes: charge their cost
        run.clock.seconds["scene detection"] = shared.seconds["scene detection"]
        run.clock.cpu["scene detection"] = shared.cpu["scene detection"]


def decode_baseline(path: Path, *, clock: Clock) -> None:
    """Decode every frame of ``path`` with PyAV, converting nothing: the same-run baseline."""
    with clock.part("decode"), av.open(str(path)) as container:
        stream = container.streams.video[0]
        clock.calls["frames"] += sum(1 for _ in container.decode(stream))


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def studio_params(args: argparse.Namespace) -> StudioParams:
    """``--minutes`` of synthetic video in episodes of about ``--video-s`` at ``--size``."""
    n_videos = max(1, math.ceil(args.minutes * 60 / args.video_s))
    program = ProgramParams(name="bench", n_videos=n_videos,
                            video_duration_s=round(args.minutes * 60 / n_videos, 2))
    width, height = (int(v) for v in args.size.lower().split("x"))
    return StudioParams(programs=[program], width=width, height=height,
                        real_clips=list(StudioParams().real_clips) if args.real_clips else [])


def prepare(args: argparse.Namespace) -> tuple[StudioReport, list[Video]]:
    """Build the corpus in a child process (so its memory is not ours) and ingest it."""
    params = studio_params(args)
    start = time.perf_counter()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        report = pool.submit(build_studio, params, args.out / "studio").result()
    print(f"studio: {len(report.video_paths)} synthetic video(s), {report.synthetic_s:.0f} s "
          f"+ {report.real_clip_s:.0f} s real, {params.width}x{params.height} "
          f"@ {params.fps:g} fps, built in {time.perf_counter() - start:.1f} s (child process)")
    db = args.out / "bench.duckdb"
    db.unlink(missing_ok=True)
    result = ingest(report.manifest_path, media_dir=args.out / "media", params=IngestParams())
    with Store(db) as store:
        store.record_ingest(result.videos, result.rejections)
    print(f"ingest: {len(result.videos)} accepted, {len(result.rejections)} refused "
          f"(by design) into {db}")
    return report, list(result.videos)


def scores(
    run: Variant, videos: Sequence[Video], truth: StudioTruth
) -> tuple[CutScore, PresenceScore]:
    """Cut and object scores of ``run``, pooled over the synthetic videos (real clips skipped)."""
    cuts: list[CutScore] = []
    presence: list[PresenceScore] = []
    for video, rep in zip(videos, run.reps, strict=True):
        try:
            expected = truth.video_for(video.source_path)
        except StudioError:
            continue  # a real clip: no ground truth
        cut, objects = score_representation(rep, expected)
        cuts.append(cut)
        presence.append(objects)
    return CutScore.combine(cuts), PresenceScore.combine(presence)


def print_accuracy(run: Variant, videos: Sequence[Video], truth: StudioTruth) -> None:
    cut, objects = scores(run, videos, truth)
    print(f"[{run.label}] accuracy against the ground truth:")
    print(f"  cuts ±2 frames: precision {cut.precision:.3f} recall {cut.recall:.3f} "
          f"F1 {cut.f1:.3f} (tp {cut.tp}, fp {cut.fp}, fn {cut.fn})")
    for name, group in (("all", objects.group()), ("featured", objects.group(featured=True)),
                        ("small/brief", objects.group(featured=False))):
        print(f"  objects {name:<12} found {group.recall:.3f} ({group.found}/{group.n}), "
              f"localized IoU>=0.3 {group.localized_recall:.3f} ({group.localized}/{group.n})")
    labels = ", ".join(f"{k} {g.recall:.2f} ({g.found}/{g.n})"
                       for k, g in objects.by_label.items())
    print(f"  per label: {labels}")
    print(f"  tracks: precision {objects.track_precision:.3f} "
          f"({objects.correct_tracks}/{objects.n_tracks} match a true object)")


def print_speed(run: Variant, *, media_s: float, decode_s: float) -> None:
    """Each part as seconds, share, x realtime and x plain decode; then the verdict."""
    print(f"[{run.label}] throughput over {media_s:.0f} s of video (x realtime = media s / "
          "part s; x decode = part s / plain-decode s; cores = CPU s / wall s):")
    print(f"  {'part':<16}{'wall s':>8}{'share':>7}{'x realtime':>11}{'x decode':>9}"
          f"{'cores':>6}{'calls':>6}{'ms/call':>8}")
    rows = [(p, run.part_s(p), run.part_s(p, cpu=True)) for p in PARTS]
    rows.append(("whole stage", run.stage_s, sum(r[2] for r in rows)))
    for name, wall, cpu in rows:
        calls = run.clock.calls.get(name, 0) if name in ("detector", "tagger") else 0
        per = f"{1000 * wall / calls:8.1f}" if calls else ""
        print(f"  {name:<16}{wall:8.2f}{wall / run.stage_s:7.1%}{_ratio(media_s, wall)}"
              f"{wall / decode_s:8.1f}x{cpu / wall if wall else 0:6.2f}{calls or '':>6}{per}")
    x = media_s / run.stage_s
    top = max(PARTS, key=run.part_s)
    print(f"  goal >= {GOAL_X_REALTIME:g}x realtime on 2 cores: {x:.1f}x -> "
          f"{'MET' if x >= GOAL_X_REALTIME else 'NOT met'}; dominated by {top} "
          f"({run.part_s(top) / run.stage_s:.0%} of stage time); representation costs "
          f"{run.stage_s / decode_s:.1f}x a plain decode of the same videos")
    cpu_s = rows[-1][2]
    print(f"  CPU: {cpu_s:.2f} CPU-s ({cpu_s / media_s:.3f} per second of video; barely moved "
          f"by other load): at most {2 * media_s / cpu_s:.1f}x realtime with both cores busy")


def _ratio(media_s: float, seconds: float) -> str:
    return f"{media_s / seconds:10.1f}x" if seconds > 0 else f"{'inf':>10}x"


def print_variants(
    base: Variant, runs: Sequence[Variant], scene_runs: Sequence[Variant], *,
    videos: Sequence[Video], truth: StudioTruth, media_s: float, decode_s: float,
) -> None:
    """Alternatives measured in the same run: what they save and what they cost in accuracy.

    An object variant reuses the base scenes (and their cost); a scene variant is paired with
    the base objects step (its own cut accuracy, the base object scores).
    """
    print("alternatives (same videos, interleaved with the base run):")
    print(f"  {'variant':<36}{'part s':>7}{'stage':>11}{'x decode':>9}{'cut F1':>7}"
          f"{'found':>7}{'featured':>9}{'track P':>8}")
    base_objects = scores(base, videos, truth)[1]
    rows = [(run, run.clock.seconds["objects"], run.stage_s, *scores(run, videos, truth))
            for run in (base, *runs)]
    rows += [(run, run.clock.seconds["scene detection"],
              run.clock.seconds["scene detection"] + base.clock.seconds["objects"],
              scores(run, videos, truth)[0], base_objects) for run in scene_runs]
    for run, part_s, stage_s, cut, objects in rows:
        print(f"  {run.label:<36}{part_s:7.2f}{media_s / stage_s:10.1f}x{stage_s / decode_s:8.1f}x"
              f"{cut.f1:7.3f}{objects.group().recall:7.3f}"
              f"{objects.group(featured=True).recall:9.3f}{objects.track_precision:8.3f}")
    print(f"  (part s: the objects step, or scene detection for a scene variant; base scene "
          f"detection {base.clock.seconds['scene detection']:.2f} s)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="scratch folder (reused)")
    parser.add_argument("--minutes", type=float, default=2.0,
                        help="minutes of synthetic video (default 2: about 1-1.5 min on 2 cores)")
    parser.add_argument("--video-s", type=float, default=60.0, help="length of one episode")
    parser.add_argument("--size", default="640x360", help="synthetic frame size WxH (even)")
    parser.add_argument("--real-clips", action="store_true",
                        help="also represent the package-shipped real clips (speed only)")
    parser.add_argument("--params", type=Path, default=None,
                        help="params.yaml for the scenes/objects sections (default: defaults)")
    parser.add_argument("--no-variants", action="store_true",
                        help="skip the alternative settings (about halves the run time)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    args.out = args.out.resolve()
    params = load_params(args.params)
    print(f"machine: {len(os.sched_getaffinity(0))} core(s) usable, load average "
          f"{os.getloadavg()[0]:.2f}; PyAV {av.__version__}")
    report, videos = prepare(args)
    truth = load_truth(report.ground_truth_path)
    media_s = sum(v.media.duration_s for v in videos)
    start = time.perf_counter()
    models = load_models(params.objects, registry=default_registry())
    print(f"models loaded in {time.perf_counter() - start:.2f} s (once per worker, not counted)")
    base = Variant("as configured", params)
    runs, scene_runs = [base], []
    if not args.no_variants:
        runs += [variant(f"keyframe_max_side_px={n}", params, keyframe_max_side_px=n)
                 for n in (320, 160)]
        runs.append(variant("keyframe_fps=0.5", params, keyframe_fps=0.5))
        scene_runs = [variant("scenes backend=opencv", params, backend="opencv"),
                      variant("scenes backend=opencv downscale=4", params, backend="opencv",
                              downscale=4)]
    baseline = Clock()
    run_all(videos, runs=runs, scene_runs=scene_runs, models=models, baseline=baseline)
    decode_s = baseline.seconds["decode"]
    print(f"baseline: plain PyAV decode of {baseline.calls['frames']} frames: {decode_s:.2f} s "
          f"({media_s / decode_s:.0f}x realtime)")
    print_accuracy(base, videos, truth)
    print_speed(base, media_s=media_s, decode_s=decode_s)
    if len(runs) > 1 or scene_runs:
        print_variants(base, runs[1:], scene_runs, videos=videos, truth=truth, media_s=media_s,
                       decode_s=decode_s)
    print(f"peak RSS: {peak_rss_mib():.0f} MiB (models, one video's keyframes, records; "
          f"load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
