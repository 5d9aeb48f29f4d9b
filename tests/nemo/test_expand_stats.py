"""Table 2 of a hand-built set: counts, durations and needle figures worked out by hand.

Montages (durations in seconds):

* A short, stage-2 style (no target ids): 10 neg + 5 target + 15 neg = 30 → object, single.
* B short multi: 20 + 2 (t) + 10 + 3 (t) + 5 + 3 (t) = 43 → scene, 3 needles of 2, 3, 3 s.
* C medium with two targets: 200 + 4 (oX) + 300 + 6 (sY) + 100 = 610 → one object and one
  scene question, single-needle.
* D long: 1000 + 3 (oZ) + 100 + 3 (oZ) = 1106 → object, 2 needles.
"""

from __future__ import annotations

import pytest

from needleforge.nemo.stats import answer_spans, benchmark_table
from needleforge.records import Montage, Question, Segment


def _montage(mid: str, bucket: str, pieces: list[tuple[float, str | None, bool]]) -> Montage:
    """``pieces``: (duration, target id, is_target) in montage order."""
    segments: list[Segment] = []
    clock = 0.0
    counters: dict[str | None, int] = {}
    for i, (duration, tid, target) in enumerate(pieces):
        index = None
        if target:
            index = counters.get(tid, 0)
            counters[tid] = index + 1
        segments.append(Segment(i, "v", f"s{mid}{i}", 100.0, 100.0 + duration, clock,
                                "target" if target else "negative", index, tid))
        clock += duration
    return Montage(mid, bucket, tuple(segments), 0)  # type: ignore[arg-type]


def _question(qid: str, mid: str, *, scene: str, obj: str | None) -> Question:
    return Question(qid, mid, "object" if obj else "scene", scene, obj, "a thing",
                    "When is it?", "t", "test", "1")


NEG = (None, False)
MONTAGES = [
    _montage("A", "short", [(10, *NEG), (5, None, True), (15, *NEG)]),
    _montage("B", "short", [(20, *NEG), (2, "sB", True), (10, *NEG), (3, "sB", True),
                            (5, *NEG), (3, "sB", True)]),
    _montage("C", "medium", [(200, *NEG), (4, "oX", True), (300, *NEG), (6, "sY", True),
                             (100, *NEG)]),
    _montage("D", "long", [(1000, *NEG), (3, "oZ", True), (100, *NEG), (3, "oZ", True)]),
]
QUESTIONS = [
    _question("qa", "A", scene="sA", obj="oA"),
    _question("qb", "B", scene="sB", obj=None),
    _question("qc1", "C", scene="sX", obj="oX"),
    _question("qc2", "C", scene="sY", obj=None),
    _question("qd", "D", scene="sZ", obj="oZ"),
]


def test_counts_per_bucket_needles_and_type() -> None:
    table = benchmark_table(MONTAGES, QUESTIONS)
    got = {(r.bucket, r.needles): (r.object, r.scene) for r in table.rows}
    assert got == {("short", "single"): (1, 0), ("short", "multi"): (0, 1),
                   ("medium", "single"): (1, 1), ("medium", "multi"): (0, 0),
                   ("long", "single"): (0, 0), ("long", "multi"): (1, 0)}
    assert table.totals() == (3, 2, 5)


def test_bucket_durations_and_needle_figures() -> None:
    table = benchmark_table(MONTAGES, QUESTIONS)
    short = table.bucket("short")
    assert (short.questions, short.montages) == (2, 2)
    assert (short.max_s, short.avg_s, short.min_s) == (43.0, 36.5, 30.0)
    assert short.avg_needles == 2.0 and short.avg_needle_s == pytest.approx(13 / 4)
    medium = table.bucket("medium")
    assert (medium.questions, medium.montages, medium.avg_s) == (2, 1, 610.0)
    assert medium.avg_needles == 1.0 and medium.avg_needle_s == 5.0
    long_ = table.bucket("long")
    assert (long_.avg_s, long_.avg_needles, long_.avg_needle_s) == (1106.0, 2.0, 3.0)


def test_markdown_and_dict_have_the_paper_layout() -> None:
    table = benchmark_table(MONTAGES, QUESTIONS)
    text = table.to_markdown()
    assert "| Short (< 2.5 min) | Single-Needle | 1 | 0 | 2 | 43.00 s | 36.50 s | 30.00 s " \
           "| 2.00 | 3.25 s |" in text
    assert "|  | Multi-Needle | 0 | 1 |  |  |  |  |  |  |" in text
    assert "| Medium (2.5–15 min) | Single-Needle | 1 | 1 | 2 | 10.17 min | 10.17 min |" in text
    assert "| Long (> 15 min) | Single-Needle | 0 | 0 | 1 | 18.43 min |" in text
    assert text.rstrip().endswith("| All | All | 3 | 2 | 5 | - | - | - | - | - |")
    data = table.to_dict()
    assert data["totals"] == {"object": 3, "scene": 2, "all": 5}
    assert data["rows"][1] == {"bucket": "short", "needles": "multi", "object": 0, "scene": 1,
                               "total": 1}
    assert data["buckets"][2]["montages"] == 1


def test_empty_buckets_print_dashes() -> None:
    table = benchmark_table(MONTAGES[:1], QUESTIONS[:1])
    assert table.bucket("long").avg_s is None
    assert "| Long (> 15 min) | Single-Needle | 0 | 0 | 0 | - | - | - | - | - |" in \
        table.to_markdown()


def test_answer_spans_fall_back_to_all_targets_only_without_target_ids() -> None:
    assert answer_spans(MONTAGES[0], QUESTIONS[0]) == [(10.0, 15.0)]
    assert answer_spans(MONTAGES[1], QUESTIONS[1]) == [(20.0, 22.0), (32.0, 35.0),
                                                        (40.0, 43.0)]
    assert answer_spans(MONTAGES[2], QUESTIONS[3]) == [(504.0, 510.0)]
    stray = _question("qs", "C", scene="sQ", obj=None)
    assert answer_spans(MONTAGES[2], stray) == []


def test_unknown_montage_or_unanswered_question_is_an_error() -> None:
    with pytest.raises(ValueError, match="montage Z not given"):
        benchmark_table(MONTAGES, [_question("qz", "Z", scene="s", obj=None)])
    with pytest.raises(ValueError, match="no target segment"):
        benchmark_table(MONTAGES, [_question("qs", "C", scene="sQ", obj=None)])
