"""Speed of answering a release with the CPU baselines, as ratios against baselines in this run.

Three figures, each against the slower way measured in the same run (interleaved, so load from
other processes hits both alike; absolute seconds are printed for context only):

1. **Frame sampling**, per video of each bucket: ``sample_frames`` in its default mode
   (``"auto"``: seeks unless the instants are dense) against the front-to-back decode
   ``mode="sequential"`` at ``--max-frames`` (and at 64), with a check that both give the same
   pixels.
2. **Embedded baseline per question**: the baseline with its near-duplicate memo against the
   same baseline with the memo off (``near_duplicate_diff=0``: every sampled frame detected),
   over ``--questions`` release questions whose frames are decoded beforehand (not counted);
   also the detector calls each made and the answers that differ.
3. **Random baseline**: ``run_model`` with no decoding (``needs_pixels = False``) against the
   same model made to decode its frames.
4. **Blind baselines and the bias audit** (no timing): each blind baseline's score with its
   interval beside random on the release (the audit the gate runs), then on the same
   release with a planted bias (every answer moved into the first tenth; every counting
   answer made "1"); with ``--other-release`` (the same recipe, another seed), Kendall's tau
   of the baselines' rankings (random, the blind ones, embedded unless ``--no-embedded``)
   between the two releases, on NeMo Recall@1x tIoU 0.5 and VNBench accuracy per try.

Needs a built release (default ``releases/sample``: ``dvc repro``); without one, figure 1 runs on
a synthetic 5-minute 640x360 25 fps clip with a keyframe every second and 2–3 are skipped.
Run: ``python benchmarks/evaluate.py [--release releases/sample] [--questions 24]
[--other-release DIR] [--only-bias]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.openai.client import TimedFrame
from needleforge.evaluate import (
    BLIND_NAMES,
    EmbeddedGroundingBaseline,
    Prediction,
    RandomBaseline,
    blind_baseline,
    blind_predictions,
    load_predictions,
    load_questions,
    run_model,
    score,
)
from needleforge.evaluate.blind import random_answer
from needleforge.evaluate.frame_sampling import DecodeMode, sample_frames
from needleforge.evaluate.prompts import AnswerKind
from needleforge.media.ffmpeg import ffmpeg_binary
from needleforge.quality.bias import audit_release
from needleforge.quality.planted import plant_early, plant_ones

_GROUNDING: AnswerKind = "grounding"


def _timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = func()
    return time.perf_counter() - start, value


def _same(a: Sequence[TimedFrame], b: Sequence[TimedFrame]) -> bool:
    return len(a) == len(b) and all(ta == tb and np.array_equal(ia, ib)
                                    for (ta, ia), (tb, ib) in zip(a, b, strict=True))


def _synthetic_clip(folder: Path) -> dict[str, Any]:
    path = folder / "synthetic.mp4"
    subprocess.run([ffmpeg_binary(), "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc2=size=640x360:rate=25:duration=300", "-c:v", "libx264",
                    "-pix_fmt", "yuv420p", "-x264-params", "keyint=25:min-keyint=25:scenecut=0",
                    str(path)], check=True)
    return {"video": str(path), "duration_s": 300.0, "bucket": "synthetic"}


def _sampler(path: Path, max_frames: int, duration_s: float,
             mode: DecodeMode) -> Callable[[], list[TimedFrame]]:
    return lambda: sample_frames(path, max_frames=max_frames, max_side=768,
                                 duration_s=duration_s, mode=mode)


def bench_sampling(videos: Sequence[dict[str, Any]], root: Path, max_frames: int,
                   repeat: int) -> None:
    print(f"\n1. frame sampling: default (auto: seek) vs sequential decode (median of {repeat})")
    print("| video | bucket | duration s | max_frames | sequential s | auto s | speed-up | "
          "same pixels |")
    print("|---|---|---|---|---|---|---|---|")
    for video in videos:
        path = root / video["video"]
        for frames in sorted({max_frames, 64}):
            seq_s, seek_s, same = [], [], True
            for _ in range(repeat):
                t_seq, a = _timed(_sampler(path, frames, video["duration_s"], "sequential"))
                t_seek, b = _timed(_sampler(path, frames, video["duration_s"], "auto"))
                seq_s.append(t_seq)
                seek_s.append(t_seek)
                same = same and _same(a, b)
            seq, seek = statistics.median(seq_s), statistics.median(seek_s)
            print(f"| {Path(video['video']).name} | {video['bucket']} | "
                  f"{video['duration_s']:.0f} | {frames} | {seq:.2f} | {seek:.2f} | "
                  f"{seq / seek:.1f}x | {same} |")


class _Counting:
    """Wraps a baseline's detector to count the frames it runs on."""

    def __init__(self, detector: Any) -> None:
        self.inner, self.calls = detector, 0
        self.name, self.version = detector.name, detector.version

    def detect(self, image: Any, *, t_s: float) -> Any:
        self.calls += 1
        return self.inner.detect(image, t_s=t_s)


def bench_embedded(questions: Sequence[dict[str, Any]], root: Path, max_frames: int) -> None:
    print(f"\n2. embedded baseline per question ({len(questions)} questions, "
          f"{max_frames} frames each, decoding not counted)")
    frames = {q["video"]: sample_frames(root / q["video"], max_frames=max_frames, max_side=768,
                                        duration_s=q["duration_s"]) for q in questions}
    runs: dict[str, tuple[float, int, list[str]]] = {}
    for label, diff in (("memo off", 0.0), ("memo on", 2.0)):
        counter = _Counting(EmbeddedDetector(num_threads=1))
        baseline = EmbeddedGroundingBaseline(detector=counter,  # type: ignore[arg-type]
                                             near_duplicate_diff=diff)
        seconds, answers = _timed(lambda b=baseline: [
            b.answer(frames[q["video"]], q["question"], kind=_GROUNDING) for q in questions])
        runs[label] = (seconds, counter.calls, answers)
    (off_s, off_calls, off_answers), (on_s, on_calls, on_answers) = runs["memo off"], \
        runs["memo on"]
    n = len(questions)
    print("| variant | s per question | detector calls | speed-up |")
    print("|---|---|---|---|")
    print(f"| memo off (baseline) | {off_s / n:.3f} | {off_calls} | 1.0x |")
    print(f"| memo on | {on_s / n:.3f} | {on_calls} | {off_s / on_s:.1f}x |")
    changed = sum(a != b for a, b in zip(off_answers, on_answers, strict=True))
    print(f"answers that differ with the memo on: {changed} of {n}")


class _DecodingRandom(RandomBaseline):
    needs_pixels = True


def bench_random(release: Path, questions: Sequence[dict[str, Any]], max_frames: int) -> None:
    print(f"\n3. random baseline over {len(questions)} questions: no decoding vs decoding")
    with tempfile.TemporaryDirectory() as scratch:
        qfile = Path(scratch) / "questions.jsonl"
        qfile.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
        times = {}
        for label, model in (("decoding (baseline)", _DecodingRandom(seed=0)),
                             ("no decoding", RandomBaseline(seed=0))):
            out = Path(scratch) / f"{label.split()[0]}.jsonl"
            times[label], _ = _timed(lambda m=model, o=out: run_model(
                qfile, model=m, release_dir=release, out=o, max_frames=max_frames))
        same = (sorted((Path(scratch) / "decoding.jsonl").read_text().splitlines())
                == sorted((Path(scratch) / "no.jsonl").read_text().splitlines()))
    base = times["decoding (baseline)"]
    for label, seconds in times.items():
        print(f"- {label}: {seconds:.2f} s ({base / seconds:.1f}x)")
    print(f"same answers: {same}")


def print_audit(label: str, records: Sequence[dict[str, Any]]) -> None:
    audit = audit_release(records)
    positions = audit.to_dict()["positions"]
    print(f"\n{label}: {audit.n_grounding} grounding questions, {audit.n_spans} answer spans: "
          f"first tenth {positions['first_tenth']}, at 0 s {positions['at_zero']}, span bins "
          f"{positions['bins']} (multi-needle {positions['multi_needle_bins']}), "
          f"single-needle depth flatness p {positions['single_needle_depth_flat_p']}")
    print("| baseline | metric | n | score [CI] vs random | excess (points) | gate |")
    print("|---|---|---|---|---|---|")
    for s in audit.scores:
        verdict = "-" if s.baseline == "random" else "FAIL" if s.exceeds(audit.margin) \
            else "pass"
        print(f"| {s.baseline} | {s.metric} | {s.n} | {s.summary()} | {100 * s.excess:+.1f} | "
              f"{verdict} |")


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists over the same items (ties counted as ties); NaN
    when either list is all ties (no ranking to compare)."""
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_a) * (concordant + discordant + ties_b)) ** 0.5
    return (concordant - discordant) / denominator if denominator else float("nan")


Scores = dict[str, tuple[float, float]]


def baseline_scores(release: Path, *, embedded: bool, max_frames: int
                    ) -> tuple[Scores, tuple[int, int]]:
    """(NeMo Recall@1x tIoU 0.5, VNBench accuracy per try) of every baseline on ``release``,
    each scored by the scorer from its answers as ``needleforge evaluate`` writes them; and
    (grounding questions, VNBench samples), the sizes their sampling error depends on."""
    questions = load_questions(release / "questions.jsonl")
    answers: dict[str, list[Prediction]] = {"random": [random_answer(q) for q in questions]}
    for name in BLIND_NAMES:
        answers[name] = blind_predictions(questions, blind_baseline(name))
    if embedded:
        with tempfile.TemporaryDirectory() as scratch:
            out = run_model(release / "questions.jsonl", model=EmbeddedGroundingBaseline(),
                            release_dir=release, out=Path(scratch) / "embedded.jsonl",
                            max_frames=max_frames)
            answers["embedded"] = load_predictions(out)
    scores = {}
    for name, predictions in answers.items():
        report = score(questions, predictions)
        grounding = report.grounding.get("all", {}).get("all")
        choice = report.choice.get("all", {}).get("all")
        scores[name] = (grounding.recall[0.5] if grounding else float("nan"),
                        choice.accuracy if choice else float("nan"))
    n_grounding = sum(1 for q in questions if not hasattr(q, "options"))
    n_samples = len({q.question_id for q in questions if hasattr(q, "options")})
    return scores, (n_grounding, n_samples)


def tiers(values: Sequence[float], n: int) -> list[int]:
    """Tier of each score: sorted scores closer than their sampling error (1.96 standard
    errors of the difference, binomial over ``n`` units) share a tier."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    tier, out = 0, [0] * len(values)
    for prev, cur in itertools.pairwise(order):
        se = sum(values[i] * (1 - values[i]) / max(n, 1) for i in (prev, cur)) ** 0.5
        if values[cur] - values[prev] > 1.96 * se:
            tier += 1
        out[cur] = tier
    return out


def bench_bias(release: Path, other: Path | None, *, embedded: bool, max_frames: int) -> None:
    print("\n4. blind baselines and the bias audit (scores, not timings)")
    records = [json.loads(line) for line in
               (release / "questions.jsonl").read_text().splitlines() if line]
    print_audit(f"{release} as built", records)
    print_audit("planted: every answer in the first tenth", plant_early(records))
    print_audit('planted: every counting answer "1"', plant_ones(records))
    if other is None:
        print("\nKendall tau: pass --other-release (the same recipe built with another seed)")
        return
    first, sizes = baseline_scores(release, embedded=embedded, max_frames=max_frames)
    second, other_sizes = baseline_scores(other, embedded=embedded, max_frames=max_frames)
    names = sorted(first)
    print(f"\nA = {release}, B = {other}")
    print("| baseline | R@1x 0.5 A | R@1x 0.5 B | acc/try A | acc/try B |")
    print("|---|---|---|---|---|")
    for name in names:
        print(f"| {name} | {100 * first[name][0]:.1f} | {100 * second[name][0]:.1f} | "
              f"{100 * first[name][1]:.1f} | {100 * second[name][1]:.1f} |")
    for k, metric in enumerate(("NeMo R@1x tIoU 0.5", "VNBench accuracy per try")):
        a, b = [first[n][k] for n in names], [second[n][k] for n in names]
        tiered = kendall_tau(tiers(a, sizes[k]), tiers(b, other_sizes[k]))
        print(f"Kendall tau-b of the {len(names)} baselines' ranking, {metric}: "
              f"{kendall_tau(a, b):.2f} on the scores, {tiered:.2f} on tiers of scores within "
              "sampling error of each other (goal >= 0.9)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, default=Path("releases/sample"))
    parser.add_argument("--questions", type=int, default=24,
                        help="release questions for figures 2 and 3 (short ones first)")
    parser.add_argument("--max-frames", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--other-release", type=Path, default=None,
                        help="the same recipe built with another seed (figure 4's tau)")
    parser.add_argument("--no-embedded", action="store_true",
                        help="leave the embedded baseline out of figure 4's ranking")
    parser.add_argument("--only-bias", action="store_true", help="figure 4 only")
    args = parser.parse_args()
    qfile = args.release / "questions.jsonl"
    with tempfile.TemporaryDirectory() as scratch:
        if not qfile.is_file():
            print(f"no release at {args.release}: figure 1 on a synthetic clip, 2-4 skipped")
            bench_sampling([_synthetic_clip(Path(scratch))], Path("/"), args.max_frames,
                           args.repeat)
            return
        if not args.only_bias:
            records = [json.loads(line) for line in qfile.read_text().splitlines() if line]
            by_bucket: dict[str, dict[str, Any]] = {}
            for record in records:
                by_bucket.setdefault(record["bucket"], record)
            bench_sampling(list(by_bucket.values()), args.release, args.max_frames,
                           args.repeat)
            grounding = [r for r in records if "answer_spans" in r]
            grounding.sort(key=lambda r: r["duration_s"])
            subset = grounding[:args.questions]
            bench_embedded(subset, args.release, args.max_frames)
            bench_random(args.release, subset, args.max_frames)
        bench_bias(args.release, args.other_release, embedded=not args.no_embedded,
                   max_frames=args.max_frames)


if __name__ == "__main__":
    main()
