"""The shape of a built benchmark: the paper's Table 2 for any set of montages and questions.

Seed 001, Table 2 gives per montage bucket (short < 2.5 min ≤ medium ≤ 15 min < long) and
per needle count (single, multi) the number of QA pairs by needle type (object, scene), and
per bucket the montage duration (max / avg / min), the average number of needles per
question and the average needle duration. Conventions here:

* A question's **needles** are its answer spans (:func:`answer_spans`): the target segments
  of its montage carrying its target id. Stage-2 montages, whose segments carry no target
  id, answer with all their target segments. A question is multi-needle when it has two or
  more.
* **Montage durations** are over the montages that carry at least one of the given
  questions, so passing only releasable questions describes the release.
* **Average needle duration** is over every needle of the bucket's questions (a question
  with five needles weighs five times).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

from needleforge.records import Bucket, Montage, NeedleType, Question
from needleforge.records.questions import BUCKET_LABELS as _LABELS
from needleforge.records.questions import BUCKETS as _BUCKETS

Needles: TypeAlias = Literal["single", "multi"]
_NEEDLES: tuple[Needles, ...] = ("single", "multi")


def answer_spans(montage: Montage, question: Question) -> list[tuple[float, float]]:
    """``(start_s, end_s)`` in the montage of the question's needles, in needle order."""
    target_id = question.target_object_id or question.target_scene_id
    spans = montage.target_spans(target_id)
    if not spans and all(s.target_id is None for s in montage.segments if s.role == "target"):
        spans = montage.target_spans()
    return spans


@dataclasses.dataclass(frozen=True, slots=True)
class Table2Row:
    """QA pairs of one bucket and needle count, by needle type."""

    bucket: Bucket
    needles: Needles
    object: int
    scene: int

    @property
    def total(self) -> int:
        """Object + scene QA pairs."""
        return self.object + self.scene


@dataclasses.dataclass(frozen=True, slots=True)
class BucketStats:
    """Per-bucket columns of Table 2 (None where the bucket is empty)."""

    bucket: Bucket
    questions: int
    montages: int
    max_s: float | None
    avg_s: float | None
    min_s: float | None
    avg_needles: float | None
    avg_needle_s: float | None


@dataclasses.dataclass(frozen=True, slots=True)
class Table2:
    """Table 2 of seed 001 for one build: six count rows and three bucket summaries."""

    rows: tuple[Table2Row, ...]
    buckets: tuple[BucketStats, ...]

    def row(self, bucket: Bucket, needles: Needles) -> Table2Row:
        """The count row of ``bucket`` × ``needles``."""
        return next(r for r in self.rows if r.bucket == bucket and r.needles == needles)

    def bucket(self, bucket: Bucket) -> BucketStats:
        """The summary of ``bucket``."""
        return next(b for b in self.buckets if b.bucket == bucket)

    def totals(self) -> tuple[int, int, int]:
        """(object, scene, all) QA pairs over every row."""
        obj = sum(r.object for r in self.rows)
        scene = sum(r.scene for r in self.rows)
        return obj, scene, obj + scene

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"rows": [...], "buckets": [...], "totals": {...}}``."""
        obj, scene, total = self.totals()
        return {"rows": [dataclasses.asdict(r) | {"total": r.total} for r in self.rows],
                "buckets": [dataclasses.asdict(b) for b in self.buckets],
                "totals": {"object": obj, "scene": scene, "all": total}}

    def to_markdown(self) -> str:
        """The table laid out as in the paper (bucket columns on each bucket's first row)."""
        lines = ["| Montage | #Needles | Object | Scene | All | Max | Avg | Min "
                 "| Avg #Needles / Question | Avg Needle Duration |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for bucket in _BUCKETS:
            stats = self.bucket(bucket)
            for needles in _NEEDLES:
                row = self.row(bucket, needles)
                first = needles == "single"
                summary = ([f"{stats.questions:,}", *(_duration(v, bucket) for v in
                            (stats.max_s, stats.avg_s, stats.min_s)),
                            _number(stats.avg_needles), _duration(stats.avg_needle_s, "short")]
                           if first else [""] * 6)
                cells = [_LABELS[bucket] if first else "", f"{needles.title()}-Needle",
                         f"{row.object:,}", f"{row.scene:,}", *summary]
                lines.append("| " + " | ".join(cells) + " |")
        obj, scene, total = self.totals()
        lines.append(f"| All | All | {obj:,} | {scene:,} | {total:,} | - | - | - | - | - |")
        return "\n".join(lines) + "\n"


def _duration(value: float | None, bucket: Bucket) -> str:
    if value is None:
        return "-"
    return f"{value:.2f} s" if bucket == "short" else f"{value / 60.0:.2f} min"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def benchmark_table(montages: Iterable[Montage], questions: Iterable[Question]) -> Table2:
    """Table 2 of the given build (conventions in the module docstring).

    Raises:
        ValueError: a question whose montage is not among ``montages``, or whose montage
            has no segment answering it.
    """
    by_id = {m.montage_id: m for m in montages}
    counts: dict[tuple[Bucket, Needles, NeedleType], int] = {}
    used: dict[Bucket, dict[str, float]] = {b: {} for b in _BUCKETS}
    needles: dict[Bucket, list[int]] = {b: [] for b in _BUCKETS}
    spans_s: dict[Bucket, list[float]] = {b: [] for b in _BUCKETS}
    for q in questions:
        montage = by_id.get(q.montage_id)
        if montage is None:
            raise ValueError(f"question {q.question_id}: montage {q.montage_id} not given")
        spans = answer_spans(montage, q)
        if not spans:
            raise ValueError(f"question {q.question_id}: montage {q.montage_id} has no "
                             f"target segment for it")
        kind: Needles = "multi" if len(spans) > 1 else "single"
        key = (montage.bucket, kind, q.needle_type)
        counts[key] = counts.get(key, 0) + 1
        used[montage.bucket][montage.montage_id] = montage.duration_s
        needles[montage.bucket].append(len(spans))
        spans_s[montage.bucket].extend(end - start for start, end in spans)
    rows = tuple(Table2Row(b, n, counts.get((b, n, "object"), 0), counts.get((b, n, "scene"), 0))
                 for b in _BUCKETS for n in _NEEDLES)
    buckets = tuple(_summary(b, list(used[b].values()), needles[b], spans_s[b])
                    for b in _BUCKETS)
    return Table2(rows, buckets)


def _summary(
    bucket: Bucket, durations: list[float], needles: list[int], spans_s: list[float]
) -> BucketStats:
    return BucketStats(
        bucket=bucket, questions=len(needles), montages=len(durations),
        max_s=max(durations) if durations else None, avg_s=_mean(durations),
        min_s=min(durations) if durations else None,
        avg_needles=_mean([float(n) for n in needles]), avg_needle_s=_mean(spans_s),
    )
