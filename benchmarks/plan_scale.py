"""Planning a NeMoBench-Full-scale benchmark (stage 3 expand) from synthetic tables, timed.

Synthesizes representation tables of realistic size — by default 2,000 videos in 100
programs, ~100 scenes each (4–25 s), 4–8 tags per scene from a ~400-tag vocabulary with a
per-program style, 0–3 tracked objects per scene — as records, with no media. Stage 2 is
stood in for by the real target selection and short montage planner
(``select_targets``/``plan_short_montage``, negatives by the same tag-disjoint rule) and a
pass verdict per question. Then :func:`needleforge.nemo.expand.expand` plans the rest with
caps that reproduce NeMoBench-Full's shape: Table 10's QA pairs per bucket (12,932 short,
6,760 medium, 11,686 long) split single/multi × object/scene in Table 2's proportions,
2 targets per medium montage and ``--long-targets`` per long one.

Baseline (same run): ``index_tables`` over the same records — grouping tags and objects by
scene, which any stage reading these tables pays first. Figures: the expand call (seconds and
x baseline, by CPU time so that other processes on the machine do not skew it; wall time
too), the stand-in stage 2 for context, peak RSS (``getrusage``), and Table 2 of the result.
Run: ``python benchmarks/plan_scale.py [--videos 2000]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import random
import resource
import time
from collections.abc import Sequence

from needleforge.nemo.expand import ExpansionResult, expand
from needleforge.nemo.negatives import excluded_terms
from needleforge.nemo.plan import PlanSkip, plan_short_montage, question_id_for
from needleforge.nemo.pool import TermIndex
from needleforge.nemo.stats import benchmark_table
from needleforge.nemo.tables import SceneTables, index_tables
from needleforge.nemo.targets import Target, select_targets
from needleforge.params import BucketCaps, CellCaps, ExpandParams, NemoParams
from needleforge.records import (
    Authorization,
    Box,
    Bucket,
    MediaInfo,
    Montage,
    NeedleType,
    ObjectAttributes,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    TimedBox,
    Verification,
    Video,
    object_id_for,
    scene_id_for,
    video_id_for,
)

GOAL_S = 60.0
#: Table 10, NeMoBench-Full: QA pairs per bucket; Table 2 (Clean): the split of each bucket
#: into single object, single scene, multi object, multi scene.
FULL_QA = {"short": 12_932, "medium": 6_760, "long": 11_686}
CLEAN_SPLIT = {"short": (419, 431, 205, 191), "medium": (159, 175, 94, 79),
               "long": (98, 99, 53, 50)}
PAPER_MONTAGES = {"short": 6_466, "medium": 3_380, "long": 3_640}
LABELS = ("person", "car", "dog", "cat", "bicycle", "bus", "truck", "boat", "bird", "horse",
          "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
          "handbag", "suitcase", "bottle", "cup", "bowl", "banana", "apple", "orange",
          "chair", "couch", "bed", "laptop", "keyboard", "book", "clock", "vase", "kite",
          "skateboard", "surfboard", "bench", "train", "airplane", "motorcycle", "pizza",
          "teddy bear", "potted plant", "traffic light", "fire hydrant", "microwave", "oven",
          "television", "cell phone")
PLACES = ("street", "kitchen", "office", "park", "beach", "forest", "studio", "stage",
          "classroom", "market", "harbour", "stadium", "garden", "library", "airport",
          "station", "bridge", "river", "mountain", "desert", "farm", "church", "museum",
          "hospital", "restaurant", "bar", "shop", "factory", "warehouse", "parking lot")
ADJECTIVES = ("red", "old", "wooden", "small", "busy", "bright", "dark", "modern", "tabby",
              "crowded")
COLOURS = ("white", "black", "red", "blue", "green", "grey", "")


@dataclasses.dataclass(frozen=True)
class Corpus:
    """Synthetic representation tables."""

    videos: list[Video]
    scenes: list[Scene]
    tags: list[SceneTag]
    objects: list[ObjectTrack]


def vocabulary() -> list[str]:
    """~400 tags: labels, places, and 'adjective noun' compounds (``tabby cat`` holds cat)."""
    words = list(LABELS) + list(PLACES)
    return words + [f"{a} {w}" for a in ADJECTIVES for w in words[::2]]


def _video(i: int, program: str, duration_s: float) -> Video:
    sha = hashlib.sha256(f"plan-scale-{i}".encode()).hexdigest()
    return Video(video_id=video_id_for(sha), sha256=sha, program=program,
                 source_path=f"/src/{i}.mp4", stored_path=f"/m/{i}.mp4", size_bytes=1,
                 media=MediaInfo(duration_s=duration_s, fps=25.0, width=640, height=360,
                                 video_codec="h264", n_frames=int(duration_s * 25)),
                 authorization=Authorization(rights_holder="R", licence_id="L",
                                             scope=("benchmark",),
                                             valid_until=dt.date(2099, 1, 1)))


def _object(scene: Scene, index: int, label: str, rng: random.Random) -> ObjectTrack:
    start = scene.start_s + rng.uniform(0.0, 0.3) * scene.duration_s
    end = min(scene.end_s, start + rng.uniform(0.6, 1.0) * scene.duration_s)
    colour = rng.choice(COLOURS)
    return ObjectTrack(
        object_id=object_id_for(scene.scene_id, index), scene_id=scene.scene_id, index=index,
        tag=label, start_s=start, end_s=end, visible_s=(end - start) * rng.uniform(0.8, 1.0),
        mean_area_frac=rng.uniform(0.02, 0.3), mean_score=0.8,
        boxes=(TimedBox(start, Box(0.1, 0.1, 0.3, 0.3)),),
        attributes=ObjectAttributes(colour=colour, position="centre", size_rank=index + 1),
        referring_expression=" ".join(w for w in ("the", colour, label) if w),
        backend="bench", model_version="1")


def _video_tables(video: Video, style: Sequence[str], vocab: Sequence[str], *,
                  n_scenes: int, rng: random.Random, corpus: Corpus) -> None:
    clock = 0.0
    for index in range(n_scenes):
        duration = rng.uniform(4.0, 25.0)
        scene = Scene(scene_id=scene_id_for(video.video_id, index), video_id=video.video_id,
                      index=index, start_s=clock, end_s=clock + duration,
                      n_frames=int(duration * 25))
        clock += duration
        corpus.scenes.append(scene)
        names = {rng.choice(style) if rng.random() < 0.8 else rng.choice(vocab)
                 for _ in range(rng.randint(4, 8))}
        corpus.tags.extend(SceneTag(scene.scene_id, n, rng.random(), "bench", "1")
                           for n in sorted(names))
        for k in range(rng.choice((0, 1, 1, 2, 3))):
            label = rng.choice(sorted(n for n in names if n in LABELS) or list(LABELS))
            corpus.objects.append(_object(scene, k, label, rng))


def build_corpus(*, videos: int, programs: int, scenes: int, seed: int) -> Corpus:
    """Synthetic tables: ``videos`` videos spread over ``programs`` programs."""
    rng = random.Random(f"plan-scale:{seed}")
    vocab = vocabulary()
    corpus = Corpus([], [], [], [])
    styles = [rng.sample(vocab, 80) for _ in range(programs)]
    for i in range(videos):
        program = i % programs
        video = _video(i, f"program-{program:04d}", scenes * 14.5)
        corpus.videos.append(video)
        _video_tables(video, styles[program], vocab, n_scenes=scenes, rng=rng, corpus=corpus)
    return corpus


def split_counts(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainder, sums exactly)."""
    raw = [total * w / sum(weights) for w in weights]
    counts = [int(r) for r in raw]
    for i in sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _description(target: Target, tables: SceneTables) -> str:
    if target.target_object is not None:
        return target.target_object.referring_expression
    return "A scene tagged " + ", ".join(tables.view(target.scene).tag_names[:3]) + "."


def _question(target: Target, plan: Montage, tables: SceneTables) -> Question:
    description = _description(target, tables)
    qid = question_id_for(plan.montage_id, needle_type=target.needle_type,
                          target_id=target.target_id, template_id="bench-1")
    return Question(qid, plan.montage_id, target.needle_type, target.scene.scene_id,
                    target.target_object.object_id if target.target_object else None,
                    description, f"When does {description.rstrip('.')} appear?", "bench-1",
                    "bench", "1")


def stage2(corpus: Corpus, tables: SceneTables, *, counts: dict[NeedleType, int],
           nemo: NemoParams) -> tuple[list[Montage], list[Question], list[Verification]]:
    """Stand-in for stage 2: short montages for ``counts`` targets, every verdict a pass."""
    rng = random.Random("plan-scale-stage2")
    targets = select_targets(tables, params=nemo)
    chosen: list[Target] = []
    for needle_type, n in counts.items():
        pool = [t for t in targets if t.needle_type == needle_type]
        chosen += rng.sample(pool, min(len(pool), int(n * 1.05) + 50))
    excluded = {t.target_id: excluded_terms(t, tables, text=_description(t, tables))
                for t in chosen}
    index = TermIndex(tables, watched=set().union(*excluded.values()))
    made: dict[NeedleType, int] = dict.fromkeys(counts, 0)
    montages, questions, verdicts = [], [], []
    for target in chosen:
        if made[target.needle_type] >= counts[target.needle_type]:
            continue
        negatives = [s for s in tables.scenes_by_video[target.video_id]
                     if s.scene_id != target.scene.scene_id
                     and s.duration_s >= nemo.min_negative_s
                     and not index.clashes(s.scene_id, excluded[target.target_id])]
        plan_rng = random.Random(f"short:{target.target_id}")
        plan_rng.shuffle(negatives)
        plan = plan_short_montage(target, negatives, params=nemo, rng=plan_rng)
        if isinstance(plan, PlanSkip):
            continue
        question = _question(target, plan, tables)
        montages.append(plan)
        questions.append(question)
        verdicts.append(Verification(question.question_id, "bench", "1", True, "stand-in"))
        made[target.needle_type] += 1
    return montages, questions, verdicts


def expand_params(*, seed: int, long_targets: int) -> ExpandParams:
    """Caps reproducing NeMoBench-Full's rows (Table 10 totals, Table 2 proportions)."""
    cells = {b: split_counts(FULL_QA[b], CLEAN_SPLIT[b]) for b in FULL_QA}

    def caps(bucket: str) -> BucketCaps:
        so, ss, mo, ms = cells[bucket]
        return BucketCaps(single=CellCaps(object=so, scene=ss), multi=CellCaps(object=mo, scene=ms))

    return ExpandParams(seed=seed, medium_targets=2, long_targets=long_targets,
                        short_multi=CellCaps(object=cells["short"][2], scene=cells["short"][3]),
                        medium=caps("medium"), long=caps("long"))


def peak_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(result: ExpansionResult, short: tuple[list[Montage], list[Question]]) -> None:
    """Counts per row against the caps, shortfalls, and Table 2 of the whole build."""
    print("\nrow               type    wanted  eligible  made  passed  short by")
    for c in result.cells:
        print(f"{c.bucket:>6}/{c.needles:<6}    {c.needle_type:<6} {c.wanted:>7} "
              f"{c.eligible:>9} {c.made:>5} {c.passed:>7} {c.short_by:>9}")
    print(f"shortfalls (montages skipped): {len(result.shortfalls)}")
    for s in result.shortfalls[:3]:
        print(f"  {s.bucket}/{s.needles} {len(s.question_ids)} q: {s.reason}")
    montages = [*short[0], *result.montages]
    table = benchmark_table(montages, [*short[1], *result.releasable()])
    print("\nTable 2 of this build:\n")
    print(table.to_markdown())
    buckets: tuple[Bucket, ...] = ("short", "medium", "long")
    for bucket in buckets:
        n = table.bucket(bucket).montages
        print(f"{bucket:>6}: {n:,} montages (paper {PAPER_MONTAGES[bucket]:,})")


def main(argv: Sequence[str] | None = None) -> None:
    """Build, plan, print; ``argv`` as on the command line (None = ``sys.argv``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--videos", type=int, default=2000)
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--scenes", type=int, default=100, help="scenes per video")
    parser.add_argument("--long-targets", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    nemo = NemoParams()
    params = expand_params(seed=args.seed, long_targets=args.long_targets)
    t0 = time.perf_counter()
    corpus = build_corpus(videos=args.videos, programs=args.programs, scenes=args.scenes,
                          seed=args.seed)
    t_build = time.perf_counter() - t0
    print(f"corpus: {len(corpus.videos):,} videos, {len(corpus.scenes):,} scenes, "
          f"{len(corpus.tags):,} tags, {len(corpus.objects):,} objects "
          f"(built in {t_build:.1f} s)")
    t0, c0 = time.perf_counter(), time.process_time()
    tables = index_tables(corpus.scenes, tags=corpus.tags, objects=corpus.objects)
    baseline, baseline_cpu = time.perf_counter() - t0, time.process_time() - c0
    single = split_counts(FULL_QA["short"], CLEAN_SPLIT["short"])
    t0 = time.perf_counter()
    short = stage2(corpus, tables, counts={"object": single[0], "scene": single[1]}, nemo=nemo)
    t_stage2 = time.perf_counter() - t0
    print(f"stand-in stage 2: {len(short[1]):,} verified short questions in {t_stage2:.1f} s")
    del tables
    mem_before = peak_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    result = expand(videos=corpus.videos, scenes=corpus.scenes, tags=corpus.tags,
                    objects=corpus.objects, montages=short[0], questions=short[1],
                    verifications=short[2], params=params, nemo=nemo)
    t_expand, cpu_expand = time.perf_counter() - t0, time.process_time() - c0
    report(result, (short[0], short[1]))
    print(f"\nbaseline index_tables: {baseline:.2f} s wall, {baseline_cpu:.2f} s CPU")
    print(f"expand: {t_expand:.2f} s wall, {cpu_expand:.2f} s CPU = "
          f"{cpu_expand / baseline_cpu:.1f}x baseline (CPU; wall {t_expand / baseline:.1f}x) "
          f"({len(result.montages):,} montages, {len(result.questions):,} questions; "
          f"goal < {GOAL_S:.0f} s: {'met' if t_expand < GOAL_S else 'NOT met'})")
    print(f"peak RSS: {mem_before:,.0f} MiB before expand, {peak_mib():,.0f} MiB after")


if __name__ == "__main__":
    main()
