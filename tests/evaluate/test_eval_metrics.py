"""Hand-worked cases of the grounding metrics (definitions: docs/metrics.md).

Every expected value is worked out in the comment beside it from the integer-second sets, so a
failure can be checked by hand. Spans are in seconds; ``[a, b]`` covers ``floor(a)..ceil(b)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from needleforge.errors import EvaluationError
from needleforge.evaluate import (
    average_precision,
    evaluate_grounding,
    recall_at_kx,
    second_set,
    tiou,
)


@pytest.mark.parametrize(("spans", "duration", "expected"), [
    ([(2.5, 4.2)], math.inf, {2, 3, 4, 5}),            # floor 2 .. ceil 5
    ([(3, 3)], math.inf, {3}),                          # a point is one second
    ([(0, 2), (1, 4)], math.inf, {0, 1, 2, 3, 4}),      # union of overlapping ranges
    ([(-5, 2)], math.inf, {0, 1, 2}),                   # clipped at 0
    ([(110, 130)], 120.0, set(range(110, 121))),        # clipped at the duration
    ([(120, 130)], 120.0, {120}),                       # touching the end keeps one second
    ([(125, 130)], 120.0, set()),                       # wholly outside: empty
])
def test_second_sets(spans: list[tuple[float, float]], duration: float,
                     expected: set[int]) -> None:
    assert second_set(spans, duration_s=duration) == expected


def test_tiou_exactly_at_threshold_counts_and_just_below_does_not() -> None:
    # target {0..9} (10 s); prediction {0..6} (7 s): 7/10 = 0.7 exactly
    assert tiou([(0, 9)], [(0, 6)]) == 0.7
    assert recall_at_kx([(0, 9)], [(0, 6)], threshold=0.7) == 1.0
    assert recall_at_kx([(0, 9)], [(0, 5.5)], threshold=0.7) == 1.0  # ceil(5.5) = 6: same set
    assert recall_at_kx([(0, 9)], [(0, 5)], threshold=0.7) == 0.0    # 6/10
    # 6999/10000 = 0.6999 misses; 7000/10000 = 0.7 counts
    assert recall_at_kx([(0, 9999)], [(0, 6998)], threshold=0.7) == 0.0
    assert recall_at_kx([(0, 9999)], [(0, 6999)], threshold=0.7) == 1.0
    # 5/10 = 0.5 counts at 0.5, not at 0.7
    assert recall_at_kx([(0, 9)], [(0, 4)], threshold=0.5) == 1.0
    assert recall_at_kx([(0, 9)], [(0, 4)], threshold=0.7) == 0.0


def test_recall_multi_target_keeps_only_top_x() -> None:
    targets = [(0, 9), (20, 29), (40, 49)]
    preds = [(0, 9),       # target 1: 10/10
             (22, 29),     # target 2: 8/10 = 0.8
             (40, 44),     # target 3: 5/10 = 0.5
             (40, 49)]     # perfect for target 3, but rank 4 > x = 3: not kept at k = 1
    assert recall_at_kx(targets, preds, threshold=0.7) == pytest.approx(2 / 3)
    assert recall_at_kx(targets, preds, threshold=0.5) == 1.0
    assert recall_at_kx(targets, preds, threshold=0.7, k=2) == 1.0  # top 6 keeps all four


def test_scores_reorder_predictions_and_ties_keep_given_order() -> None:
    targets = [(0, 9)]
    preds = [(0, 9), (50, 59)]
    assert recall_at_kx(targets, preds, threshold=0.7) == 1.0                    # given order
    assert recall_at_kx(targets, preds, threshold=0.7, scores=[0.1, 0.9]) == 0.0  # miss first
    assert recall_at_kx(targets, preds, threshold=0.7, scores=[0.5, 0.5]) == 1.0  # tie: earlier
    assert recall_at_kx(targets, preds[::-1], threshold=0.7, scores=[0.5, 0.5]) == 0.0
    # AP: by score the miss comes first → precision 1/2 at full recall
    assert average_precision(targets, preds, threshold=0.5, scores=[0.1, 0.9]) == 0.5
    assert average_precision(targets, preds, threshold=0.5) == 1.0


def test_recall_is_micro_over_targets() -> None:
    result = evaluate_grounding(
        [[(0, 9)], [(0, 9), (20, 29), (40, 49)]],
        [[(0, 9)], []])
    # 1 recalled target out of 4 (a per-question mean would give 0.5)
    assert result.recall(0.7) == 0.25
    assert result.recalled[0.7].tolist() == [1, 0]


@pytest.mark.parametrize(("preds", "expected"), [
    # ranked FP, TP, TP: precision 0, 1/2, 2/3; interpolated 2/3 at both recall steps
    ([(50, 59), (0, 9), (20, 29)], 2 / 3),
    # TP, FP, TP: precision 1, 1/2, 2/3 → 0.5·1 + 0.5·(2/3)
    ([(0, 9), (50, 59), (20, 29)], 5 / 6),
    # a duplicate cannot match twice: TP, FP (same target), TP → 5/6
    ([(0, 9), (0, 9), (20, 29)], 5 / 6),
    # one-to-one: the second prediction's best target is taken → FP; recall stops at 1/2
    ([(0, 9), (0, 8)], 0.5),
    ([], 0.0),
])
def test_average_precision_hand_worked(preds: list[tuple[float, float]],
                                       expected: float) -> None:
    assert average_precision([(0, 9), (20, 29)], preds, threshold=0.5) == pytest.approx(expected)


def test_greedy_matching_picks_the_best_unmatched_target() -> None:
    targets = [(0, 9), (4, 13)]  # A = {0..9}, B = {4..13}
    # pred 1 = {4..12}: B 9/10, A 6/13 (both ≥ 0.4) → takes B; pred 2 = {0..7}: A 8/10 → TP.
    # Taking A first would leave pred 2 only B (4/14 < 0.4) and halve the AP.
    assert average_precision(targets, [(4, 12), (0, 7)], threshold=0.4) == 1.0
    # pred 1 = {2..11}: A 8/12 and B 8/12, a tie → the earlier target A; pred 2 = {0..9} then
    # finds A taken and B at 6/14 < 0.5 → FP: AP = 0.5
    assert average_precision(targets, [(2, 11), (0, 9)], threshold=0.5) == 0.5


def test_average_map_counts_exact_threshold_ties() -> None:
    # tIoU = 3/10 = 0.3: a hit at t = 0.1, 0.2, 0.3 (≥), a miss at 0.4 and 0.5 → 3/5
    result = evaluate_grounding([[(0, 9)]], [[(0, 2)]])
    assert [result.mean_ap(t) for t in (0.1, 0.2, 0.3, 0.4, 0.5)] == [1, 1, 1, 0, 0]
    assert result.average_map() == pytest.approx(0.6)


def test_set_level_tiou() -> None:
    # G = {0..9} ∪ {20..29} (20 s), P = {5..25} (21 s), G ∩ P = {5..9} ∪ {20..25} = 11 s
    assert tiou([(0, 9), (20, 29)], [(5, 25)]) == pytest.approx(11 / 30)
    assert tiou([(0, 9), (20, 29)], [(20, 29), (0, 9)]) == 1.0
    assert tiou([(0, 9)], []) == 0.0


def test_empty_predictions_score_zero_everywhere() -> None:
    result = evaluate_grounding([[(0, 9)], [(3, 4)]], [[], []])
    assert result.recall(0.5) == 0.0
    assert result.average_map() == 0.0
    assert result.mean_set_tiou() == 0.0


def test_clipping_to_the_video() -> None:
    # [110, 500] → [110, 120] = 11 s against the 10 s target: 10/11
    assert tiou([(110, 119)], [(110, 500)], duration_s=120) == pytest.approx(10 / 11)
    assert tiou([(0, 9)], [(-5, 9)], duration_s=120) == 1.0
    # wholly outside: an empty prediction that still takes rank 1 and is a false positive
    assert recall_at_kx([(0, 9)], [(200, 210), (0, 9)], threshold=0.5, duration_s=120) == 0.0
    assert average_precision([(0, 9)], [(200, 210), (0, 9)], threshold=0.5,
                             duration_s=120) == 0.5


@pytest.mark.parametrize("bad", [(5.0, 1.0), (math.nan, 3.0), (0.0, math.inf)])
def test_reversed_and_non_finite_spans_are_rejected(bad: tuple[float, float]) -> None:
    with pytest.raises(EvaluationError, match=r"reversed|NaN"):
        tiou([(0, 9)], [bad])
    with pytest.raises(EvaluationError, match=r"reversed|NaN"):
        tiou([bad], [(0, 9)])


def test_bad_batch_arguments_are_rejected() -> None:
    with pytest.raises(EvaluationError, match="no target"):
        evaluate_grounding([[]], [[(0, 1)]])
    with pytest.raises(EvaluationError, match="prediction lists"):
        evaluate_grounding([[(0, 1)]], [])
    with pytest.raises(EvaluationError, match="threshold"):
        evaluate_grounding([[(0, 1)]], [[]], recall_thresholds=(0.0,))
    with pytest.raises(EvaluationError, match="scores must be finite"):
        evaluate_grounding([[(0, 1)]], [[(0, 1)]], scores=[[math.nan]])
    with pytest.raises(EvaluationError, match="pair"):
        evaluate_grounding([[(0, 1)]], [[(0, 1, 2)]])  # type: ignore[list-item]
    with pytest.raises(EvaluationError, match="must be numbers"):
        evaluate_grounding([[(0, 1)]], [[("a", 1)]])  # type: ignore[list-item]
    with pytest.raises(EvaluationError, match="k = 0"):
        evaluate_grounding([[(0, 1)]], [[(0, 1)]], k=0)


def test_masks_select_questions_and_empty_selection_is_refused() -> None:
    result = evaluate_grounding([[(0, 9)], [(0, 9)]], [[(0, 9)], [(50, 60)]])
    assert result.recall(0.7, mask=np.array([True, False])) == 1.0
    assert result.recall(0.7, mask=np.array([False, True])) == 0.0
    with pytest.raises(ValueError, match="no question selected"):
        result.recall(0.7, mask=np.array([False, False]))
