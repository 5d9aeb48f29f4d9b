"""Hand-worked cases of the grounding metrics (definitions: docs/metrics.md).

Every expected value is worked out in the comment beside it, so a failure can be checked by
hand. The cases of the matching, ranking and AP rules are worked on the paper's integer-second
sets (``SECONDS``: ``[a, b]`` covers ``floor(a)..ceil(b)``); the last ones on exact seconds,
the primary definition (``[a, b]`` covers ``b - a`` seconds).
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

SECONDS = "second_set"


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
    assert tiou([(0, 9)], [(0, 6)], kind=SECONDS) == 0.7
    assert recall_at_kx([(0, 9)], [(0, 6)], threshold=0.7, kind=SECONDS) == 1.0
    # ceil(5.5) = 6: same set
    assert recall_at_kx([(0, 9)], [(0, 5.5)], threshold=0.7, kind=SECONDS) == 1.0
    assert recall_at_kx([(0, 9)], [(0, 5)], threshold=0.7, kind=SECONDS) == 0.0    # 6/10
    # 6999/10000 = 0.6999 misses; 7000/10000 = 0.7 counts
    assert recall_at_kx([(0, 9999)], [(0, 6998)], threshold=0.7, kind=SECONDS) == 0.0
    assert recall_at_kx([(0, 9999)], [(0, 6999)], threshold=0.7, kind=SECONDS) == 1.0
    # 5/10 = 0.5 counts at 0.5, not at 0.7
    assert recall_at_kx([(0, 9)], [(0, 4)], threshold=0.5, kind=SECONDS) == 1.0
    assert recall_at_kx([(0, 9)], [(0, 4)], threshold=0.7, kind=SECONDS) == 0.0


def test_recall_multi_target_keeps_only_top_x() -> None:
    targets = [(0, 9), (20, 29), (40, 49)]
    preds = [(0, 9),       # target 1: 10/10
             (22, 29),     # target 2: 8/10 = 0.8
             (40, 44),     # target 3: 5/10 = 0.5
             (40, 49)]     # perfect for target 3, but rank 4 > x = 3: not kept at k = 1
    assert recall_at_kx(targets, preds, threshold=0.7, kind=SECONDS) == pytest.approx(2 / 3)
    assert recall_at_kx(targets, preds, threshold=0.5, kind=SECONDS) == 1.0
    # top 6 keeps all four
    assert recall_at_kx(targets, preds, threshold=0.7, k=2, kind=SECONDS) == 1.0


def test_scores_reorder_predictions_and_ties_keep_given_order() -> None:
    targets = [(0, 9)]
    preds = [(0, 9), (50, 59)]

    def recall(preds: list[tuple[float, float]], scores: list[float] | None = None) -> float:
        return recall_at_kx(targets, preds, threshold=0.7, scores=scores, kind=SECONDS)

    assert recall(preds) == 1.0                    # given order
    assert recall(preds, [0.1, 0.9]) == 0.0        # by score the miss comes first
    assert recall(preds, [0.5, 0.5]) == 1.0        # tie: the earlier
    assert recall(preds[::-1], [0.5, 0.5]) == 0.0
    # AP: by score the miss comes first → precision 1/2 at full recall
    assert average_precision(targets, preds, threshold=0.5, scores=[0.1, 0.9], kind=SECONDS) == 0.5
    assert average_precision(targets, preds, threshold=0.5, kind=SECONDS) == 1.0


def test_recall_is_micro_over_targets() -> None:
    result = evaluate_grounding(
        [[(0, 9)], [(0, 9), (20, 29), (40, 49)]],
        [[(0, 9)], []], kind=SECONDS)
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
    ap = average_precision([(0, 9), (20, 29)], preds, threshold=0.5, kind=SECONDS)
    assert ap == pytest.approx(expected)


def test_greedy_matching_picks_the_best_unmatched_target() -> None:
    targets = [(0, 9), (4, 13)]  # A = {0..9}, B = {4..13}
    # pred 1 = {4..12}: B 9/10, A 6/13 (both ≥ 0.4) → takes B; pred 2 = {0..7}: A 8/10 → TP.
    # Taking A first would leave pred 2 only B (4/14 < 0.4) and halve the AP.
    assert average_precision(targets, [(4, 12), (0, 7)], threshold=0.4, kind=SECONDS) == 1.0
    # pred 1 = {2..11}: A 8/12 and B 8/12, a tie → the earlier target A; pred 2 = {0..9} then
    # finds A taken and B at 6/14 < 0.5 → FP: AP = 0.5
    assert average_precision(targets, [(2, 11), (0, 9)], threshold=0.5, kind=SECONDS) == 0.5


def test_average_map_counts_exact_threshold_ties() -> None:
    # tIoU = 3/10 = 0.3: a hit at t = 0.1, 0.2, 0.3 (≥), a miss at 0.4 and 0.5 → 3/5
    result = evaluate_grounding([[(0, 9)]], [[(0, 2)]], kind=SECONDS)
    assert [result.mean_ap(t) for t in (0.1, 0.2, 0.3, 0.4, 0.5)] == [1, 1, 1, 0, 0]
    assert result.average_map() == pytest.approx(0.6)


def test_set_level_tiou() -> None:
    # G = {0..9} ∪ {20..29} (20 s), P = {5..25} (21 s), G ∩ P = {5..9} ∪ {20..25} = 11 s
    assert tiou([(0, 9), (20, 29)], [(5, 25)], kind=SECONDS) == pytest.approx(11 / 30)
    assert tiou([(0, 9), (20, 29)], [(20, 29), (0, 9)], kind=SECONDS) == 1.0
    assert tiou([(0, 9)], [], kind=SECONDS) == 0.0


def test_empty_predictions_score_zero_everywhere() -> None:
    result = evaluate_grounding([[(0, 9)], [(3, 4)]], [[], []], kind=SECONDS)
    assert result.recall(0.5) == 0.0
    assert result.average_map() == 0.0
    assert result.mean_set_tiou() == 0.0


def test_clipping_to_the_video() -> None:
    # [110, 500] → [110, 120] = 11 s against the 10 s target: 10/11
    assert tiou([(110, 119)], [(110, 500)], duration_s=120, kind=SECONDS) == pytest.approx(10 / 11)
    assert tiou([(0, 9)], [(-5, 9)], duration_s=120, kind=SECONDS) == 1.0
    # wholly outside: an empty prediction that still takes rank 1 and is a false positive
    assert recall_at_kx([(0, 9)], [(200, 210), (0, 9)], threshold=0.5, duration_s=120,
                        kind=SECONDS) == 0.0
    assert average_precision([(0, 9)], [(200, 210), (0, 9)], threshold=0.5,
                             duration_s=120, kind=SECONDS) == 0.5


@pytest.mark.parametrize("bad", [(5.0, 1.0), (math.nan, 3.0), (0.0, math.inf)])
def test_reversed_and_non_finite_spans_are_rejected(bad: tuple[float, float]) -> None:
    with pytest.raises(EvaluationError, match=r"reversed|NaN"):
        tiou([(0, 9)], [bad], kind=SECONDS)
    with pytest.raises(EvaluationError, match=r"reversed|NaN"):
        tiou([bad], [(0, 9)], kind=SECONDS)


def test_bad_batch_arguments_are_rejected() -> None:
    with pytest.raises(EvaluationError, match="no target"):
        evaluate_grounding([[]], [[(0, 1)]], kind=SECONDS)
    with pytest.raises(EvaluationError, match="prediction lists"):
        evaluate_grounding([[(0, 1)]], [], kind=SECONDS)
    with pytest.raises(EvaluationError, match="threshold"):
        evaluate_grounding([[(0, 1)]], [[]], recall_thresholds=(0.0,), kind=SECONDS)
    with pytest.raises(EvaluationError, match="scores must be finite"):
        evaluate_grounding([[(0, 1)]], [[(0, 1)]], scores=[[math.nan]], kind=SECONDS)
    with pytest.raises(EvaluationError, match="pair"):
        evaluate_grounding([[(0, 1)]], [[(0, 1, 2)]], kind=SECONDS)  # type: ignore[list-item]
    with pytest.raises(EvaluationError, match="must be numbers"):
        evaluate_grounding([[(0, 1)]], [[("a", 1)]], kind=SECONDS)  # type: ignore[list-item]
    with pytest.raises(EvaluationError, match="k = 0"):
        evaluate_grounding([[(0, 1)]], [[(0, 1)]], k=0, kind=SECONDS)


def test_masks_select_questions_and_empty_selection_is_refused() -> None:
    result = evaluate_grounding([[(0, 9)], [(0, 9)]], [[(0, 9)], [(50, 60)]], kind=SECONDS)
    assert result.recall(0.7, mask=np.array([True, False])) == 1.0
    assert result.recall(0.7, mask=np.array([False, True])) == 0.0
    with pytest.raises(ValueError, match="no question selected"):
        result.recall(0.7, mask=np.array([False, False]))


# --- exact seconds (the primary definition): [a, b] covers b - a seconds --------------------

def test_exact_seconds_by_hand() -> None:
    assert tiou([(0, 10)], [(0, 7)]) == 0.7                      # 7 / 10
    assert tiou([(0, 9)], [(0, 6)]) == pytest.approx(2 / 3)      # 6 / 9 (whole seconds: 7/10)
    assert tiou([(3, 3)], [(3, 3)]) == 0.0                       # a point covers no time
    assert tiou([(3, 3)], [(3, 3)], kind=SECONDS) == 1.0          # ... but one whole second
    # G = [0, 10] ∪ [20, 30] (20 s), P = [5, 25] (20 s), G ∩ P = 5 + 5 s, G ∪ P = 30 s
    assert tiou([(0, 10), (20, 30)], [(5, 25)]) == pytest.approx(1 / 3)
    assert tiou([(110, 120)], [(110, 500)], duration_s=120) == 1.0  # clipped to the video
    assert recall_at_kx([(0, 10)], [(200, 210), (0, 10)], threshold=0.5, duration_s=120) == 0.0


def test_a_window_shifted_by_half_its_length() -> None:
    # The case: a 2 s answer [10, 12] and [11, 13] share 1 s of 3 s (1/3), but their
    # whole-second sets {10, 11, 12} and {11, 12, 13} share 2 of 4 (1/2): a hit at 0.5.
    assert tiou([(10, 12)], [(11, 13)]) == pytest.approx(1 / 3)
    assert recall_at_kx([(10, 12)], [(11, 13)], threshold=0.5) == 0.0
    assert recall_at_kx([(10, 12)], [(11, 13)], threshold=0.5, kind=SECONDS) == 1.0
    # longer windows suffer less: 10 s shifted by 5 s is 5/15 exact, 6/16 in whole seconds
    assert tiou([(0, 10)], [(5, 15)], kind=SECONDS) == pytest.approx(6 / 16)


def test_exact_unions_do_not_round_across_questions() -> None:
    # many questions with fractional stops: the union of each is computed on its own
    targets = [[(0.1 * i, 0.1 * i + 2.3), (0.1 * i + 1.0, 0.1 * i + 4.7)] for i in range(200)]
    preds = [[(0.1 * i + 0.4, 0.1 * i + 3.0)] for i in range(200)]
    result = evaluate_grounding(targets, preds)
    # per question: G = [a, a + 4.7] (4.7 s), P = [a + 0.4, a + 3] (2.6 s) inside it
    assert result.set_tiou == pytest.approx(np.full(200, 2.6 / 4.7), abs=1e-9)


def test_an_unknown_definition_is_refused() -> None:
    with pytest.raises(EvaluationError, match="tIoU definition 'frames'"):
        evaluate_grounding([[(0, 1)]], [[(0, 1)]], kind="frames")  # type: ignore[arg-type]
