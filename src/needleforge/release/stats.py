"""Statistics of a release for its card, in the shapes of the NeMo paper (seed 001).

Table 2 (per bucket: questions by single/multi needle × object/scene, montage durations,
needles per question, needle duration) is computed by :mod:`needleforge.nemo.stats` and only
laid out here. The rest is computed from the released question records (``questions.jsonl``
rows), so the card describes exactly what ships: Table 10 (questions / montages per bucket),
target labels and programs (Figs. 10 and 11), verification pass rates, source licences.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from needleforge.nemo.stats import benchmark_table
from needleforge.records import (
    Montage,
    ObjectTrack,
    Question,
    Scene,
    SceneTag,
    Verification,
    Video,
)
from needleforge.records.questions import BUCKET_LABELS as _BUCKET_LABEL
from needleforge.records.questions import BUCKETS as BUCKETS
from needleforge.release.file_io import Record
from needleforge.release.markup import Table

_NEEDLE_TYPES = ("object", "scene")


def _duration(value: float | None, *, minutes: bool) -> str:
    if value is None:
        return "-"
    return f"{value / 60.0:.2f} min" if minutes else f"{value:.2f} s"


def table2(montages: Iterable[Montage], questions: Iterable[Question]) -> Table:
    """NeMo Table 2 of the released questions, as a card table.

    The numbers come from :func:`needleforge.nemo.stats.benchmark_table` (one implementation
    of the paper's conventions); this only lays them out, bucket columns on each bucket's
    first row as in the paper.
    """
    t = benchmark_table(montages, questions)
    headers = ("Montage type", "#Needles", "Object QA", "Scene QA", "All QA", "Max duration",
               "Avg duration", "Min duration", "Avg #needles / question", "Avg needle duration")
    rows: list[tuple[str, ...]] = []
    for b in t.buckets:
        minutes = b.bucket != "short"
        summary = (f"{b.questions:,}", _duration(b.max_s, minutes=minutes),
                   _duration(b.avg_s, minutes=minutes), _duration(b.min_s, minutes=minutes),
                   "-" if b.avg_needles is None else f"{b.avg_needles:.2f}",
                   _duration(b.avg_needle_s, minutes=False))
        for needles in ("single", "multi"):
            row, first = t.row(b.bucket, needles), needles == "single"
            rows.append((_BUCKET_LABEL[b.bucket] if first else "", f"{needles.capitalize()}-needle",
                         f"{row.object:,}", f"{row.scene:,}",
                         *(summary if first else ("",) * len(summary))))
    obj, scene, total = t.totals()
    rows.append(("All", "All", f"{obj:,}", f"{scene:,}", f"{total:,}", *("-",) * 5))
    return Table(headers, tuple(rows),
                 caption="Needle grounding QA statistics (shape of NeMo Table 2)")


def summary_table(records: Iterable[Record], *, name: str) -> Table:
    """Table 10's shape: ``#questions / #montages`` per bucket and in all, per family."""
    qa: Counter[tuple[str, str]] = Counter()
    videos: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in records:
        for bucket in (r["bucket"], "all"):
            qa[r["family"], bucket] += 1
            videos[r["family"], bucket].add(r["video"])
    rows = tuple(
        (f"{name} ({family})",
         *(f"{qa[family, b]:,} / {len(videos[family, b]):,}" for b in (*BUCKETS, "all")))
        for family in sorted({f for f, _ in qa})
    )
    return Table(("Benchmark", "Short", "Medium", "Long", "All"), rows,
                 caption="#QA / #Montage (shape of NeMo Table 10)")


def count_table(counts: Mapping[str, int], *, key: str, caption: str = "") -> Table:
    """A two-column table of counts, largest first (ties by key)."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return Table((key, "Count"), tuple((k, str(v)) for k, v in items), caption=caption)


@dataclasses.dataclass(frozen=True, slots=True)
class PassRate:
    """Verdicts of one verifier (and version) on one needle type."""

    verifier: str
    needle_type: str
    n: int
    passed: int

    @property
    def rate(self) -> float:
        return self.passed / self.n


def pass_rates(
    questions: Iterable[Question], verifications: Iterable[Verification]
) -> list[PassRate]:
    """Pass rate of every verifier per needle type, over every verdict in the store.

    Why the whole store: the pass rate is a property of generation (how often written
    questions survive verification), and the released questions all passed by construction.
    """
    kind = {q.question_id: q.needle_type for q in questions}
    n: Counter[tuple[str, str]] = Counter()
    ok: Counter[tuple[str, str]] = Counter()
    for v in verifications:
        key = (f"{v.verifier}/{v.model_version}", kind.get(v.question_id, "unknown"))
        n[key] += 1
        ok[key] += int(v.passed)
    return [PassRate(k[0], k[1], n[k], ok[k]) for k in sorted(n)]


def pass_rate_table(rates: Sequence[PassRate]) -> Table:
    rows = tuple((r.verifier, r.needle_type, str(r.n), str(r.passed), f"{100 * r.rate:.1f} %")
                 for r in rates)
    return Table(("Verifier", "Needle type", "Verdicts", "Passed", "Pass rate"), rows,
                 caption="Verification pass rates (every verdict in the store)")


def authorship_table(records: Sequence[Record]) -> Table:
    """Released NeMo questions per writer and verifier (each record names both)."""
    counts: Counter[tuple[str, str]] = Counter(
        (f"{r.get('backend', '')}/{r.get('model_version', '')}",
         ", ".join(r.get("verified_by", ())))
        for r in records if r.get("family") != "vnbench")
    rows = tuple((writer, checkers or "(none)", str(n))
                 for (writer, checkers), n in sorted(counts.items()))
    return Table(("Written by", "Checked by", "Questions"), rows,
                 caption="Who wrote and who checked the released questions (per question: "
                         "backend and verified_by in questions.jsonl)")


def failure_kind(reason: str) -> str:
    """What kind of refusal a failed verdict's reason records: ``unconfirmed`` (no second
    signal confirmed a claim), ``refused by <rule>`` (a rule contradicted it), or ``other``
    (the table rules: ambiguous, a name the target lacks, no negatives...)."""
    text = reason.strip()
    if text.startswith("unconfirmed"):
        return "unconfirmed"
    if text.startswith("refused by "):
        return " ".join(text.split(":", 1)[0].split()[:3])
    return "other"


def failure_table(verifications: Iterable[Verification]) -> Table:
    """Failed verdicts per verifier and kind: how many were unconfirmed, which rule refused."""
    counts: Counter[tuple[str, str]] = Counter(
        (f"{v.verifier}/{v.model_version}", failure_kind(v.reason))
        for v in verifications if not v.passed)
    rows = tuple((verifier, kind, str(n)) for (verifier, kind), n in sorted(counts.items()))
    return Table(("Verifier", "Why it failed", "Verdicts"), rows,
                 caption="Failed verdicts by kind: unconfirmed claims are not released")


def licence_table(videos: Iterable[Video]) -> Table:
    """Source videos of the release per rights holder and licence, with their hours."""
    n: Counter[tuple[str, str]] = Counter()
    hours: dict[tuple[str, str], float] = defaultdict(float)
    for v in videos:
        key = (v.authorization.rights_holder, v.authorization.licence_id)
        n[key] += 1
        hours[key] += v.media.duration_s / 3600.0
    rows = tuple((holder, licence, str(n[holder, licence]), f"{hours[holder, licence]:.3f}")
                 for holder, licence in sorted(n))
    return Table(("Rights holder", "Licence", "Videos", "Hours"), rows,
                 caption="Licences of the source videos used by the release")


def target_labels(
    records: Iterable[Record], *, objects: Iterable[ObjectTrack], tags: Iterable[SceneTag]
) -> dict[str, Counter[str]]:
    """What the targets are, per needle type (the paper's Fig. 11 for objects).

    An object needle counts its track's tag; a scene needle its scene's highest-scoring tag
    (ties by name). A target the store no longer describes counts as ``(unknown)``.
    """
    object_tag = {o.object_id: o.tag for o in objects}
    best: dict[str, tuple[float, str]] = {}
    for t in tags:
        if t.scene_id not in best or (-t.score, t.tag) < (-best[t.scene_id][0],
                                                         best[t.scene_id][1]):
            best[t.scene_id] = (t.score, t.tag)
    out: dict[str, Counter[str]] = {t: Counter() for t in _NEEDLE_TYPES}
    for r in records:
        if r["family"] != "nemo":
            continue
        if r["needle_type"] == "object":
            label = object_tag.get(r["target_object_id"], "(unknown)")
        else:
            label = best[r["target_scene_id"]][1] if r["target_scene_id"] in best \
                else "(unknown)"
        out[r["needle_type"]][label] += 1
    return out


def target_programs(
    records: Iterable[Record], *, scenes: Iterable[Scene], videos: Iterable[Video]
) -> Counter[str]:
    """Questions per program of their target's source video (the paper's Fig. 10)."""
    video_of = {s.scene_id: s.video_id for s in scenes}
    program = {v.video_id: v.program for v in videos}
    out: Counter[str] = Counter()
    for r in records:
        if r["family"] == "nemo":
            out[program.get(video_of.get(r["target_scene_id"], ""), "(unknown)")] += 1
    return out


def vnbench_table(records: Iterable[Record]) -> Table:
    """VNBench per task: samples, tries, needle type, mean video length and needles per sample.

    A sample is a ``question_id``; its tries are the option rotations (4 when complete).
    """
    tries: Counter[str] = Counter()
    samples: dict[str, dict[str, Record]] = defaultdict(dict)
    for r in records:
        if r["family"] == "vnbench":
            tries[r["task"]] += 1
            samples[r["task"]].setdefault(r["question_id"], r)
    rows = []
    for task in sorted(samples):
        first = list(samples[task].values())
        kinds = ", ".join(sorted({str(r["needle_type"]) for r in first}))
        mean_s = sum(float(r["duration_s"]) for r in first) / len(first)
        mean_n = sum(int(r["n_needles"]) for r in first) / len(first)
        rows.append((task, str(len(first)), str(tries[task]), kinds, f"{mean_s:.1f} s",
                     f"{mean_n:.2f}"))
    n_samples = sum(len(s) for s in samples.values())
    rows.append(("All", str(n_samples), str(sum(tries.values())), "", "", ""))
    return Table(("Task", "Samples", "Tries", "Needle type", "Avg length", "Avg #needles"),
                 tuple(rows), caption="VNBench samples (each answered in 4 option rotations)")


def source_table(rows: Iterable[Mapping[str, Any]]) -> Table:
    """Every shipped source with its licence terms and the families that use it."""
    out = tuple((str(r["video_id"]), str(r["program"]), str(r["rights_holder"]),
                 str(r["licence_id"]), ", ".join(r["scope"]), str(r["valid_until"]),
                 ", ".join(r["families"])) for r in rows)
    return Table(("Video", "Program", "Rights holder", "Licence", "Scope", "Valid until",
                  "Used by"), out, caption="Licence of every source video in the release")


def excluded_table(rows: Iterable[Mapping[str, Any]]) -> Table:
    """Sources left out of the release, why, and how many questions went with them."""
    out = tuple((str(r["video_id"]), str(r["reason"]), str(len(r["questions_dropped"])))
                for r in rows)
    return Table(("Video", "Reason", "Questions dropped"), out,
                 caption="Sources left out (licence or contamination)")
