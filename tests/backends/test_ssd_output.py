"""The SSD's DetectionOutput rows on hand-made boxes: which boxes greedy NMS keeps.

The photo tests (``test_ssd_runtime.py``) compare whole outputs with OpenCV's; these pin the
rules on boxes whose overlaps are known: a box is suppressed only by a better box of its own
class overlapping it by more than ``nms_threshold``; of two equal scores the earlier prior
comes first; at most ``top_k`` candidates a class and ``keep_top_k`` rows in all.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from needleforge.backends.embedded.ssd_output import (
    BOX_CHANNELS,
    CLASS_CHANNELS,
    OutputSpec,
    detection_rows,
)

SPEC = OutputSpec(confidence_threshold=0.01, nms_threshold=0.6, top_k=100, keep_top_k=100,
                  num_classes=CLASS_CHANNELS, background_label_id=0)
#: A score under the confidence threshold: no candidate.
LOW = 0.005
#: Priors (normalized corners) that zero encodings decode to as they are. IoU with the first:
#: 0.8 (same height, 0.8 of its width), 0.5 (shifted by a third), 1.0 (the same box), 0.
BOXES = np.array([[0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.4, 0.5], [0.5 / 3, 0.0, 0.5 + 0.5 / 3, 0.5],
                  [0.0, 0.0, 0.5, 0.5], [0.6, 0.6, 0.9, 0.9]], dtype=np.float32)


def _rows(scores: dict[int, list[float]], spec: OutputSpec = SPEC,
          min_score: float = 0.0) -> list[tuple[int, float, tuple[float, ...]]]:
    """(class, score, box) of each output row, for class scores given per prior."""
    conf = np.full((len(BOXES), CLASS_CHANNELS), -20.0, dtype=np.float32)
    for label, per_prior in scores.items():
        probability = np.asarray(per_prior, dtype=np.float64)
        conf[:, label] = np.log(probability / (1 - probability))
    loc = np.zeros((len(BOXES), BOX_CHANNELS), dtype=np.float32)
    variances = np.full((len(BOXES), 4), 0.1, dtype=np.float32)
    rows = detection_rows(loc, conf, BOXES, variances, spec, min_score=min_score)
    return [(int(row[1]), round(float(row[2]), 3), tuple(np.round(row[3:], 4).tolist()))
            for row in rows]


def test_a_box_is_suppressed_only_by_a_better_one_overlapping_more_than_the_threshold() -> None:
    kept = _rows({1: [0.9, 0.8, 0.7, LOW, 0.6]})
    # prior 1 overlaps prior 0 by 0.8: gone; prior 2 by 0.5: kept; prior 4 not at all: kept
    assert [(label, score) for label, score, _ in kept] == [(1, 0.9), (1, 0.7), (1, 0.6)]
    boxes = np.round(BOXES.astype(np.float64), 4)
    assert [box for _, _, box in kept] == [tuple(boxes[k].tolist()) for k in (0, 2, 4)]
    assert _rows({1: [0.5, 0.9, LOW, LOW, LOW]})[0][1] == 0.9  # the better box survives


def test_other_classes_are_not_suppressed() -> None:
    rows = _rows({1: [0.9, LOW, LOW, LOW, LOW], 2: [LOW, 0.8, LOW, LOW, LOW]})
    assert [(label, score) for label, score, _ in rows] == [(1, 0.9), (2, 0.8)]


def test_of_two_equal_scores_the_earlier_prior_is_kept() -> None:
    assert len(_rows({1: [0.9, LOW, LOW, 0.9, LOW]})) == 1  # priors 0 and 3 are one box
    rows = _rows({1: [LOW, LOW, LOW, 0.9, LOW], 3: [0.9, LOW, LOW, LOW, LOW]})
    assert [label for label, _, _ in rows] == [1, 3]


def test_top_k_and_keep_top_k_cap_the_rows() -> None:
    scores = {1: [0.9, LOW, 0.7, LOW, 0.6], 2: [LOW, LOW, LOW, LOW, 0.95]}
    assert len(_rows(scores)) == 4
    few = dataclasses.replace(SPEC, top_k=1)
    assert [(label, score) for label, score, _ in _rows(scores, few)] == [(1, 0.9), (2, 0.95)]
    best = dataclasses.replace(SPEC, keep_top_k=2)
    assert [(label, score) for label, score, _ in _rows(scores, best)] == [(1, 0.9), (2, 0.95)]


def test_rows_under_min_score_are_left_out_and_the_rest_unchanged() -> None:
    scores = {1: [0.9, 0.8, 0.7, LOW, 0.2]}
    assert _rows(scores, min_score=0.5) == [row for row in _rows(scores) if row[1] >= 0.5]
    assert _rows({1: [LOW] * 5}) == []  # nothing above the confidence floor
