"""Property tests of the grounding metrics: invariants, and agreement with a slow reference.

Spans are drawn on a half-second grid inside and around a short video so that overlaps,
exact-threshold ties, equal scores and clipping happen often.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.evaluate import evaluate_grounding, tiou
from tests.evaluate.eval_helpers import ref_ap, ref_recall, ref_set_tiou

KINDS = ("continuous", "second_set")

_times = st.integers(min_value=-4, max_value=140).map(lambda t: t / 2)


@st.composite
def spans(draw: st.DrawFn) -> tuple[float, float]:
    a, b = draw(_times), draw(_times)
    return (min(a, b), max(a, b))


@st.composite
def questions(draw: st.DrawFn) -> tuple[list[tuple[float, float]], list[tuple[float, float]],
                                        list[float] | None, float]:
    duration = draw(st.sampled_from([30.0, 45.5, 60.0, math.inf]))
    targets = draw(st.lists(spans(), min_size=1, max_size=4))
    targets = [(max(s, 0.0), max(e, 0.0)) for s, e in targets]  # ground truth is never negative
    preds = draw(st.lists(spans(), min_size=0, max_size=7))
    scores = draw(st.none() | st.lists(st.integers(0, 3).map(float), min_size=len(preds),
                                       max_size=len(preds)))
    return targets, preds, scores, duration


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None)
@given(batch=st.lists(questions(), min_size=1, max_size=6))
def test_batch_agrees_with_the_reference(batch: list[tuple], kind: str) -> None:  # type: ignore[type-arg]
    targets, preds, scores, durations = (list(x) for x in zip(*batch, strict=True))
    result = evaluate_grounding(targets, preds, scores=scores, durations_s=durations, k=1,
                                kind=kind)  # type: ignore[arg-type]
    for i, (t, p, s, d) in enumerate(batch):
        for m in (0.5, 0.7):
            assert result.recalled[m][i] == ref_recall(t, p, threshold=m, scores=s, duration_s=d,
                                                       kind=kind)
        for thr in (0.1, 0.2, 0.3, 0.4, 0.5):
            expected = ref_ap(t, p, threshold=thr, scores=s, duration_s=d, kind=kind)
            assert result.average_precision[thr][i] == pytest.approx(expected, abs=1e-12)
        expected_tiou = ref_set_tiou(t, p, duration_s=d, kind=kind)
        assert result.set_tiou[i] == pytest.approx(expected_tiou, abs=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=100, deadline=None)
@given(a=st.lists(spans(), min_size=1, max_size=4), b=st.lists(spans(), max_size=4))
def test_tiou_is_symmetric_and_bounded(a: list[tuple[float, float]],
                                       b: list[tuple[float, float]], kind: str) -> None:
    forward = tiou(a, b, kind=kind)  # type: ignore[arg-type]
    assert 0.0 <= forward <= 1.0
    if b:  # tIoU needs targets; with both non-empty it is symmetric
        assert forward == tiou(b, a, kind=kind)  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(st.lists(questions(), min_size=1, max_size=6))
def test_exact_seconds_never_overlap_more_than_whole_seconds(
        batch: list[tuple]) -> None:  # type: ignore[type-arg]
    """Whole seconds round every span outwards, so spans that share exact time share whole
    seconds too: exact seconds give 0 wherever whole seconds do."""
    targets, preds, _, durations = (list(x) for x in zip(*batch, strict=True))
    exact, whole = (evaluate_grounding(targets, preds, durations_s=durations, kind=k)
                    for k in ("continuous", "second_set"))
    assert ((whole.set_tiou > 0) | (exact.set_tiou == 0)).all()


@settings(max_examples=100, deadline=None)
@given(st.lists(questions(), min_size=1, max_size=5))
def test_perfect_predictions_score_one(batch: list[tuple]) -> None:  # type: ignore[type-arg]
    # ground truth of a release has length (a point covers no exact second)
    targets = [[(s, e + 0.5) for s, e in t] for t, *_ in batch]
    durations = [math.inf] * len(batch)  # inside an unbounded video nothing is clipped away
    result = evaluate_grounding(targets, targets, durations_s=durations)
    assert result.recall(0.7) == 1.0
    assert result.recall(0.5) == 1.0
    assert result.average_map() == pytest.approx(1.0)
    assert result.mean_set_tiou() == 1.0


@settings(max_examples=100, deadline=None)
@given(st.lists(questions(), min_size=1, max_size=5))
def test_recall_never_rises_with_the_threshold(batch: list[tuple]) -> None:  # type: ignore[type-arg]
    targets, preds, scores, durations = (list(x) for x in zip(*batch, strict=True))
    thresholds = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)
    result = evaluate_grounding(targets, preds, scores=scores, durations_s=durations,
                                recall_thresholds=thresholds)
    values = [result.recall(m) for m in thresholds]
    assert values == sorted(values, reverse=True)
    # (AP is not asserted monotone: greedy matching at a lower threshold may let an early,
    # weak prediction take a target that a later, better one would have matched.)
