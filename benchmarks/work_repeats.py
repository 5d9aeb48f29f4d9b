"""What NeMo stage 3 and the evaluate stage's CPU baselines compute more than once (issue 33).

Issue 33 asks for work that is not repeated: expand's instance checks and evaluate's seven CPU
baselines. Before sharing anything, this script measures, on today's code and in one process
run, how much of each stage's CPU repeats an earlier computation on the same inputs, so what a
perfect share could save is a figure (``ceiling``: the stage's CPU over its CPU less the
repeats) rather than a guess. Nothing is changed: the stages run as the CLI and DVC run them
(:func:`~needleforge.stages.expand.expand_store`, :func:`~needleforge.evaluate.models.
answer_models`) with counting wrappers around the functions named below (each calls the
original unchanged).

**Expand** (on a copy of a stage-2 store, ``--db``): the instance check's passes over a scene
(``InstanceMatcher._scan``: one pass searches a scene for every target asked or expected
there), which (target, scene) pairs were matched more than once, the frame pyramids built
(``FramePyramid``: keyed by the grey frame's bytes) with the CPU of those built again for a
frame an earlier pass had built (levels, halves and window masks), the scenes decoded again
(``VideoKeyframes._decoding``), and the label and instance scans answered from stage 2's
store. It also prints what keeping every frame's pyramid for the whole stage would hold in
memory: what a share of the repeated pyramids costs.

**Evaluate** (on a built release, ``--release``): each baseline's CPU seconds (this process's
user + sys, threads included), the videos it decoded and the model calls it made; the sampled
frames whose picture an earlier video already gave (montages reuse one pool of source clips)
and what decoding those cost (each video decoded once more, serially, under ``getrusage``,
its CPU shared evenly over its frames); detector and OCR calls on a picture seen before.

Run (after ``make demo``)::

    PYTHONPATH=. .venv/bin/python benchmarks/work_repeats.py --db data/db/nemo.duckdb \\
        --params params.yaml --release releases/sample --out /tmp/nf-repeats
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import json
import resource
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.demo_cost import cpu_info


def cpu_s() -> float:
    """User + system CPU seconds of this process (every thread) and its waited-for children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def digest(image: np.ndarray, *, step: int = 1) -> str:
    """A picture's identity: its shape and bytes (every ``step``-th row and column: cheap
    enough to take inside a timed run, where two different frames of one scene that agree
    on every 4th pixel are rare enough for a ceiling)."""
    sample = np.ascontiguousarray(image[::step, ::step])
    return hashlib.sha1(str(image.shape).encode() + sample.tobytes()).hexdigest()


def ceiling(total_s: float, repeated_s: float) -> float:
    """How many times cheaper the stage would be with every repeat shared for free.

    Raises:
        ValueError: a negative figure, or repeats costing more than the whole.
    """
    if total_s <= 0 or repeated_s < 0 or repeated_s >= total_s:
        raise ValueError(f"{total_s = }, {repeated_s = }: need 0 <= repeated_s < total_s")
    return total_s / (total_s - repeated_s)


@dataclasses.dataclass(frozen=True, slots=True)
class Repeats:
    """Work items keyed by their inputs: how many, how many distinct, what repeats cost."""

    items: int
    distinct: int
    repeated_s: float
    all_s: float


def repeats(work: Sequence[tuple[str, float]]) -> Repeats:
    """``work``: (key of the inputs, CPU seconds) in the order done. An item whose key an
    earlier item had is a repeat: its seconds are what sharing would have saved."""
    seen: set[str] = set()
    repeated = 0.0
    for key, seconds in work:
        if key in seen:
            repeated += seconds
        seen.add(key)
    return Repeats(len(work), len(seen), repeated, sum(s for _, s in work))


def lru_saved(work: Sequence[tuple[str, float, float]], capacity: float) -> float:
    """``work``: (key, CPU seconds, bytes kept) in the order done. The CPU seconds a cache of
    ``capacity`` bytes (least recently used dropped first) would have saved: the seconds of
    each item whose key is still kept when it comes again."""
    kept: collections.OrderedDict[str, float] = collections.OrderedDict()
    held = saved = 0.0
    for key, seconds, size in work:
        if key in kept:
            saved += seconds
            kept.move_to_end(key)
            continue
        if size > capacity:
            continue
        kept[key] = size
        held += size
        while held > capacity:
            held -= kept.popitem(last=False)[1]
    return saved


def cross_video(frames: Sequence[Sequence[str]]) -> tuple[int, int]:
    """Per video (in the order decoded) its frames' picture keys: (frames whose picture the
    same video gave at an earlier instant, frames whose picture an earlier video gave)."""
    earlier: set[str] = set()
    within = across = 0
    for video in frames:
        here: set[str] = set()
        for key in video:
            if key in here:
                within += 1
            elif key in earlier:
                across += 1
            here.add(key)
        earlier |= here
    return within, across


@dataclasses.dataclass
class Log:
    """What the wrappers saw, from every thread."""

    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    rows: dict[str, list[tuple[str, float]]] = dataclasses.field(
        default_factory=lambda: collections.defaultdict(list))

    def add(self, kind: str, key: str, seconds: float) -> None:
        with self.lock:
            self.rows[kind].append((key, seconds))


@contextlib.contextmanager
def patched(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    """``owner.name`` replaced by ``make(original)`` inside the block."""
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def timed_as(log: Log, kind: str, key_of: Callable[..., str]) -> Callable[[Any], Any]:
    """A wrapper factory: each call logged under ``kind`` with ``key_of(*args)`` and its
    thread CPU seconds."""
    def make(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            value = original(*args, **kwargs)
            log.add(kind, key_of(*args, **kwargs), time.thread_time() - started)
            return value
        return wrapper
    return make


# --- expand -------------------------------------------------------------------------------


def _pyramid_class(log: Log) -> Any:
    """``FramePyramid`` that logs its build and lazy parts under the frame's key."""
    from needleforge.nemo.checks.template_search import FramePyramid

    class Counted(FramePyramid):
        __slots__ = ("frame_key",)

        def __init__(self, grey: np.ndarray, *args: Any, **kwargs: Any) -> None:
            started = time.thread_time()
            super().__init__(grey, *args, **kwargs)
            self.frame_key = digest(grey, step=4)
            log.add("pyramid", self.frame_key, time.thread_time() - started)
            log.add("pyramid bytes", self.frame_key, float(sum(x.nbytes for x in self.levels)))

        def half(self, level: int) -> np.ndarray:
            made = level not in self._halves  # else kept by this pyramid: not work
            started = time.thread_time()
            value = super().half(level)
            if made:
                log.add("pyramid parts", f"{self.frame_key} half {level}",
                        time.thread_time() - started)
            return value

        def half_part(self, level: int, cols: int, rows: int) -> Any:
            made = (level, cols, rows) not in self._parts
            self.half(level)  # logged on its own, not twice
            started = time.thread_time()
            value = super().half_part(level, cols, rows)
            if made:
                log.add("pyramid parts", f"{self.frame_key} part {level} {cols}x{rows}",
                        time.thread_time() - started)
            return value

    return Counted


def _decode_counter(log: Log) -> Callable[[Any], Any]:
    """``VideoKeyframes._decoding`` (a generator) logging each scene decode's thread CPU."""
    def make(original: Any) -> Any:
        def wrapper(self: Any, video: Any, scene: Any) -> Iterator[Any]:
            spent = 0.0
            started = time.thread_time()
            for item in original(self, video, scene):
                spent += time.thread_time() - started
                yield item
                started = time.thread_time()
            spent += time.thread_time() - started
            log.add("decode", f"{self.spec} {scene.scene_id}", spent)
        return wrapper
    return make


def run_expand(db: Path, params: Any, log: Log) -> tuple[float, float, Any]:
    """Expand on ``db`` with the counting wrappers; (CPU s, wall s, its result)."""
    from needleforge.nemo.checks import instance
    from needleforge.nemo.video_keyframes import VideoKeyframes
    from needleforge.stages.expand import expand_store

    def pass_key(self: Any, scene: Any, jobs: Any) -> str:
        for key, _, _ in jobs:
            log.add("pair", f"{key} | {scene.scene_id}", 0.0)
        return str(scene.scene_id)

    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(instance, "FramePyramid", lambda _: _pyramid_class(log)))
        stack.enter_context(patched(instance.InstanceMatcher, "_scan",
                                    timed_as(log, "pass", pass_key)))
        stack.enter_context(patched(VideoKeyframes, "_decoding", _decode_counter(log)))
        cpu, wall = cpu_s(), time.perf_counter()
        result = expand_store(db=db, params=params)
        return cpu_s() - cpu, time.perf_counter() - wall, result


def report_expand(cpu: float, wall: float, result: Any, log: Log) -> float:
    """Print expand's table; returns the CPU seconds of its repeats."""
    pyramids = repeats(log.rows["pyramid"])
    parts = repeats(log.rows["pyramid parts"])
    decodes = repeats(log.rows["decode"])
    pairs = repeats(log.rows["pair"])
    passes = repeats(log.rows["pass"])
    cost = result.probe_cost
    print(f"\nexpand: {cpu:.1f} CPU s, {wall:.1f} s wall; {len(result.montages)} montages, "
          f"{len(result.questions)} questions")
    if cost is not None:
        print(f"  negative check: {cost.describe()}")
    print("| work | done | distinct inputs | repeats | CPU s of all | CPU s of the repeats |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r, timed in (("instance passes over a scene", passes, False),
                           ("(target, scene) pairs matched", pairs, False),
                           ("frame pyramids built", pyramids, True),
                           ("their halves and window masks", parts, True),
                           ("scenes decoded", decodes, True)):
        seconds = f"{r.all_s:.1f} | {r.repeated_s:.1f}" if timed else "- | -"
        print(f"| {name} | {r.items} | {r.distinct} | {r.items - r.distinct} | {seconds} |")
    repeated = pyramids.repeated_s + parts.repeated_s + decodes.repeated_s
    size = {key: b for key, b in log.rows["pyramid bytes"]}
    built = [(key, seconds, size[key]) for key, seconds in log.rows["pyramid"]]
    for mib in (512, 1024, 2048):
        print(f"  pyramids kept in {mib} MiB (least recently used dropped): "
              f"{lru_saved(built, mib * 2**20):.1f} of the {pyramids.repeated_s:.1f} CPU s "
              f"of rebuilt pyramids saved")
    print(f"repeated work: {repeated:.1f} of {cpu:.1f} CPU s ({repeated / cpu:.1%}); "
          f"ceiling {ceiling(cpu, repeated):.2f}x; keeping every frame's pyramid levels for "
          f"the stage would hold {sum(size.values()) / 2**30:.1f} GiB "
          f"({len(size)} frames, {np.mean(list(size.values()) or [0]) / 2**20:.1f} MiB each)")
    return repeated


# --- evaluate -----------------------------------------------------------------------------


def first_videos(questions: Path, out: Path, videos: int | None) -> Path:
    """``questions`` (a release's ``questions.jsonl``) cut to the questions of its first
    ``videos`` videos, written to ``out``; ``questions`` itself when ``videos`` is None."""
    if videos is None:
        return questions
    kept: list[str] = []
    seen: set[str] = set()
    for line in questions.read_text("utf-8").splitlines():
        if line.strip():
            video = json.loads(line)["video"]
            if video in seen or len(seen) < videos:
                seen.add(video)
                kept.append(line)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(kept) + "\n", "utf-8")
    return out


def run_evaluate(release: Path, questions: Path, out: Path, names: Sequence[str],
                 max_frames: int, log: Log) -> list[tuple[str, float, float, dict[str, int]]]:
    """Answer ``questions`` of ``release`` with each baseline of ``names`` (the demo's
    evaluate stage, one model at a time); per baseline (name, CPU s, wall s, counts of the
    wrapped calls it made)."""
    from needleforge.backends.embedded.detector import EmbeddedDetector
    from needleforge.backends.embedded.ocr import EmbeddedTextReader
    from needleforge.evaluate import run as evaluate_run
    from needleforge.evaluate.models import answer_release

    def frames_key(path: Any, **_: Any) -> str:
        return str(path)

    def picture(_: Any, image: np.ndarray, **__: Any) -> str:
        return digest(image, step=4)

    rows = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(evaluate_run, "sample_frames",
                                    timed_as(log, "sample", frames_key)))
        stack.enter_context(patched(EmbeddedDetector, "detect",
                                    timed_as(log, "detector", picture)))
        stack.enter_context(patched(EmbeddedTextReader, "read", timed_as(log, "ocr", picture)))
        for name in names:
            before = {k: len(v) for k, v in log.rows.items()}
            cpu, wall = cpu_s(), time.perf_counter()
            answer_release(name, {}, questions=questions, release_dir=release,
                           out=out / f"{name}.jsonl", max_frames=max_frames)
            calls = {k: len(v) - before.get(k, 0) for k, v in log.rows.items()}
            rows.append((name, cpu_s() - cpu, time.perf_counter() - wall, calls))
    return rows


def input_keys(path: Path, times: Sequence[float], *, from_start: bool) -> list[str]:
    """Per instant, a key of the decoder input that gives the frame on screen then: the
    bytes of every packet from the keyframe at or before it (``from_start``: from the first
    packet, as a front-to-back decode reads them) through that frame's, after the decoder's
    configuration (codec, size, pixel format, extradata). Two frames with one
    key are one decoder input, so one picture; a share of decoded frames keyed by what it
    decodes can find no other. Read without decoding; assumes no B-frames (the renderer
    writes none), and a seek for every instant (the sampler sometimes decodes on from the
    instant before, a longer input): an upper bound on what such a share finds."""
    import av

    keys: list[str] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.time_base is None:
            raise ValueError(f"{path}: its video stream has no time base")
        context = stream.codec_context  # the decoder's configuration is input too
        config = (f"{context.name} {context.width}x{context.height} {context.format}"
                  ).encode() + bytes(context.extradata or b"")
        running, fed = hashlib.sha1(config), 0
        for packet in container.demux(stream):
            if packet.size == 0 or packet.pts is None:
                continue
            t_s = float(packet.pts * stream.time_base)
            while fed and len(keys) < len(times) and times[len(keys)] + 1e-6 < t_s:
                keys.append(running.hexdigest())  # the last packet read is on screen then
            if packet.is_keyframe and not from_start:
                running = hashlib.sha1(config)
            running.update(bytes(packet))
            fed += 1
    return keys + [running.hexdigest()] * (len(times) - len(keys))


@dataclasses.dataclass(frozen=True, slots=True)
class Decoded:
    """The release decoded again serially: CPU s, frames, and the frames that repeat a
    picture (of their own video, of an earlier one) or an earlier video's decoder input."""

    cpu_s: float
    frames: int
    within: int
    across: int
    across_s: float
    same_input: int
    same_input_s: float


def decode_cost(release: Path, questions: Path, max_frames: int) -> Decoded:
    """Every video of ``questions`` decoded again as the embedded baseline decodes it,
    serially, each video's CPU shared evenly over its frames (see :class:`Decoded`)."""
    from needleforge.evaluate.frame_sampling import sample_frames, sample_times
    from needleforge.evaluate.load import load_questions

    durations: dict[str, float] = {}
    for question in load_questions(questions):
        durations.setdefault(question.video, question.duration_s)
    pictures: list[list[str]] = []
    inputs: set[str] = set()
    earlier: set[str] = set()
    total = across_s = same = same_s = 0.0
    for video, duration in durations.items():
        started = cpu_s()
        frames = sample_frames(release / video, max_frames=max_frames, max_side=768,
                               duration_s=duration)
        spent = cpu_s() - started
        pictures.append([digest(image) for _, image in frames])
        times = sample_times(duration, max_frames=max_frames)
        dense = len(times) > 1 and (times[-1] - times[0]) / (len(times) - 1) <= 2.0
        keys = input_keys(release / video, times, from_start=dense)
        total += spent
        across_s += spent * sum(k in earlier for k in pictures[-1]) / len(frames)
        repeated = sum(k in inputs for k in keys)
        same += repeated
        same_s += spent * repeated / len(frames)
        earlier |= set(pictures[-1])
        inputs |= set(keys)
    within, across = cross_video(pictures)
    return Decoded(total, sum(map(len, pictures)), within, across, across_s, int(same), same_s)


def report_evaluate(rows: Sequence[tuple[str, float, float, dict[str, int]]], log: Log,
                    decoded: Decoded) -> float:
    """Print evaluate's tables; returns the CPU seconds of its repeats."""
    print("\nevaluate: the CPU baselines, one after another in this process")
    print("| baseline | CPU s | wall s | videos decoded | detector calls | OCR calls |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, cpu, wall, calls in rows:
        print(f"| {name} | {cpu:.2f} | {wall:.1f} | {calls.get('sample', 0)} | "
              f"{calls.get('detector', 0)} | {calls.get('ocr', 0)} |")
    total = sum(cpu for _, cpu, _, _ in rows)
    readers = [name for name, _, _, calls in rows if calls.get("sample")]
    print(f"baselines that decoded a video: {', '.join(readers) or 'none'}")
    d = decoded
    print(f"decoding the release once more, serially: {d.cpu_s:.1f} CPU s, {d.frames} frames; "
          f"{d.within} repeat a picture of their own video, {d.across} a picture an earlier "
          f"video gave ({d.across_s:.1f} CPU s of decoding); {d.same_input} had the decoder "
          f"input of an earlier video's frame ({d.same_input_s:.1f} CPU s: what a share of "
          f"decoded frames could skip at most)")
    models = [repeats(log.rows[kind]) for kind in ("detector", "ocr")]
    model_s = sum(r.repeated_s for r in models)
    for kind, r in zip(("detector", "OCR"), models, strict=True):
        print(f"{kind}: {r.items} calls on {r.distinct} distinct pictures, {r.all_s:.1f} CPU s; "
              f"repeats {r.repeated_s:.1f} CPU s")
    repeated = d.same_input_s + model_s
    print(f"repeated work: {repeated:.1f} of {total:.1f} CPU s ({repeated / total:.1%}); "
          f"ceiling {ceiling(total, repeated):.2f}x")
    return repeated


def main(argv: Sequence[str] | None = None) -> int:
    """Run expand and the CPU baselines with the counting wrappers and print their repeats."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, default=Path("data/db/nemo.duckdb"),
                        help="a store after NeMo stage 2 (copied, never written)")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--release", type=Path, default=Path("releases/sample"))
    parser.add_argument("--max-frames", type=int, default=16,
                        help="frames a video for the baselines (the demo's evaluate.max_frames)")
    parser.add_argument("--videos", type=int, default=None,
                        help="only the questions of the release's first N videos (default all)")
    parser.add_argument("--out", type=Path, required=True, help="scratch folder")
    parser.add_argument("--skip", choices=("expand", "evaluate"), action="append", default=[])
    args = parser.parse_args(argv)
    for flag, path, kind in (("--db", args.db, "expand"), ("--release", args.release,
                                                           "evaluate")):
        if kind not in args.skip and not (path.is_file() if kind == "expand"
                                           else (path / "questions.jsonl").is_file()):
            parser.error(f"{flag} {path}: not there (make demo leaves one; or --skip {kind})")
    for flag, value in (("--max-frames", args.max_frames), ("--videos", args.videos)):
        if value is not None and value < 1:
            parser.error(f"{flag} {value} must be >= 1")
    cpu = cpu_info(Path("/proc/cpuinfo").read_text("utf-8"))
    print(f"machine: {cpu['model']}, {cpu['cores']} logical cores, instruction set "
          f"{cpu['level']} ({' '.join(cpu['flags'])})")
    args.out.mkdir(parents=True, exist_ok=True)
    if "expand" not in args.skip:
        from needleforge.params import load_params

        db = args.out / "expand.duckdb"
        shutil.copyfile(args.db, db)
        params = load_params(args.params if args.params.is_file() else None)
        log = Log()
        report_expand(*run_expand(db, params, log), log)
    if "evaluate" not in args.skip:
        from needleforge.evaluate.models import BASELINE_NAMES

        predictions = args.out / "predictions"
        shutil.rmtree(predictions, ignore_errors=True)
        log = Log()
        questions = first_videos(args.release / "questions.jsonl",
                                 args.out / "questions.jsonl", args.videos)
        rows = run_evaluate(args.release, questions, predictions, BASELINE_NAMES,
                            args.max_frames, log)
        report_evaluate(rows, log, decode_cost(args.release, questions, args.max_frames))
        print(json.dumps({"predictions": str(predictions)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
