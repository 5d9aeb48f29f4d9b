"""moment_detr (QVHighlights) submissions, scored in that benchmark's own conventions too.

A moment_detr submission is JSONL, one query per line: ``qid``, ``pred_relevant_windows``
(``[start_s, end_s, score]`` items) and keys we ignore (``query``, ``vid``, and
``pred_saliency_scores``, which moment_detr's inference always writes: saliency is not
annotated in a needleforge release). :func:`prediction_from_submission` turns a line into a
:class:`~needleforge.evaluate.records.Prediction`, so ``needleforge score`` reads the file as
it is and scores it with our metrics; :func:`qvhighlights_scores` adds the moment-retrieval
metrics as ``standalone_eval/eval.py`` of ``jayleicn/moment_detr`` (commit b7e553a) defines
them, which differ from ours (``docs/metrics.md``):

- tIoU on continuous seconds (no whole-second sets, no clipping to the video);
- R1@m: the **first** predicted window (submission order), against the ground-truth window
  it overlaps most; a hit when tIoU >= m; averaged over queries;
- mAP: per query, the first 10 predicted windows sorted by score, matched greedily to unused
  ground-truth windows (highest tIoU first), interpolated average precision (VOC 2011) at
  tIoU 0.5, 0.55, ..., 0.95, averaged over queries, then over thresholds;
- length ranges: ground-truth windows of (0, 10], (10, 30] and (30, 150] seconds (short,
  middle, long) give the range mAPs; a range holding no window is reported as None (the
  official script crashes there; the release README shows its one-line guard).

Where the official script would crash (a query without any predicted window) we count a
miss for R1 and an AP of 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from needleforge.errors import EvaluationError
from needleforge.evaluate.records import GroundingQuestion, Prediction, Span
from needleforge.evaluate.report import QVHighlightsScores

#: moment_detr's tIoU thresholds, 0.5 to 0.95 by 0.05 (R1 is reported at 0.5 and 0.7).
THRESHOLDS: tuple[float, ...] = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
#: Ground-truth window lengths (lo, hi] in seconds of the range mAPs.
LENGTH_RANGES: Mapping[str, tuple[float, float]] = {
    "short": (0.0, 10.0), "middle": (10.0, 30.0), "long": (30.0, 150.0)}
MAX_PRED_WINDOWS = 10
WINDOWS_KEY = "pred_relevant_windows"


def is_submission(data: Any) -> bool:
    """Whether a decoded predictions line is a moment_detr submission line."""
    return isinstance(data, Mapping) and WINDOWS_KEY in data


def prediction_from_submission(data: Any, *, line: int | None = None) -> Prediction:
    """One moment_detr submission line as a scored :class:`Prediction` (extra keys ignored).

    Raises:
        EvaluationError: no ``qid``, or windows that are not ``[start_s, end_s(, score)]``
            lists; the message names the line and the qid.
    """
    where = f"line {line}: " if line is not None else ""
    if not isinstance(data, Mapping) or "qid" not in data:
        raise EvaluationError(f"{where}a moment_detr submission line needs qid and "
                              f"{WINDOWS_KEY}")
    qid = data["qid"]
    if isinstance(qid, bool) or not isinstance(qid, str | int):
        raise EvaluationError(f"{where}qid = {qid!r:.60} must be a string or an integer")
    windows = data[WINDOWS_KEY]
    if not isinstance(windows, list) or not all(
            isinstance(w, list) and len(w) in (2, 3) for w in windows):
        raise EvaluationError(f"{where}qid {qid!r}: {WINDOWS_KEY} = {windows!r:.80} must be "
                              "a list of [start_s, end_s, score] lists")
    scored = bool(windows) and all(len(w) == 3 for w in windows)
    try:
        return Prediction(
            question_id=str(qid), spans=tuple((w[0], w[1]) for w in windows),
            scores=tuple(w[2] for w in windows) if scored else None, line=line)
    except EvaluationError as exc:
        raise EvaluationError(f"{where}qid {qid!r}: {exc}") from exc


def _iou(a: Span, b: Span) -> float:
    """tIoU of two windows on continuous seconds (0 when both are empty)."""
    inter = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - inter
    return inter / union if union > 0 else 0.0


def _ranked(prediction: Prediction | None) -> list[Span]:
    """The first 10 windows, by score (stable); unscored windows keep their order."""
    if prediction is None or not prediction.spans:
        return []
    kept = list(prediction.spans[:MAX_PRED_WINDOWS])
    if prediction.scores is None:
        return kept
    scores = prediction.scores[:MAX_PRED_WINDOWS]
    order = sorted(range(len(kept)), key=lambda i: -scores[i])
    return [kept[i] for i in order]


def _interpolated_ap(tp: list[bool], n_gt: int) -> float:
    """VOC 2011 interpolated average precision of a ranked list of hits."""
    hits = np.cumsum(np.asarray(tp, dtype=float))
    precision = hits / np.arange(1, len(tp) + 1)
    recall = hits / n_gt
    envelope = np.maximum.accumulate(precision[::-1])[::-1]
    previous = np.concatenate([[0.0], recall[:-1]])
    return float(np.sum((recall - previous) * envelope))


def average_precisions(gt: Sequence[Span], ranked: Sequence[Span]) -> list[float]:
    """AP of one query at every threshold of :data:`THRESHOLDS` (greedy, highest tIoU)."""
    if not ranked or not gt:
        return [0.0] * len(THRESHOLDS)
    ious = [[_iou(p, g) for g in gt] for p in ranked]
    # Ties keep the later ground-truth window first, as moment_detr's argsort()[::-1] does.
    orders = [sorted(range(len(gt)), key=lambda j: (row[j], j), reverse=True)
              for row in ious]
    out = []
    for threshold in THRESHOLDS:
        used: set[int] = set()
        tp = []
        for row, order in zip(ious, orders, strict=True):
            # The best unused window at or above the threshold (order is by tIoU, highest
            # first, so every window before it is above the threshold too).
            match = next((j for j in order if row[j] >= threshold and j not in used), None)
            if match is not None:
                used.add(match)
            tp.append(match is not None)
        out.append(_interpolated_ap(tp, len(gt)))
    return out


def _first_window_iou(gt: Sequence[Span], prediction: Prediction | None) -> float:
    if prediction is None or not prediction.spans:
        return -1.0  # below every threshold: a miss
    first = prediction.spans[0]
    return max(_iou(first, g) for g in gt)


def _range_map(questions: Sequence[GroundingQuestion],
               preds: Mapping[str, Prediction], lo: float, hi: float) -> float | None:
    aps = []
    for q in questions:
        kept = [s for s in q.answer_spans if lo < s[1] - s[0] <= hi]
        if kept:
            aps.append(np.mean(average_precisions(kept, _ranked(preds.get(q.question_id)))))
    return float(np.mean(aps)) if aps else None


def qvhighlights_scores(questions: Sequence[GroundingQuestion],
                        predictions: Sequence[Prediction]) -> QVHighlightsScores:
    """Moment-retrieval metrics in moment_detr's conventions (see the module docstring).

    Raises:
        EvaluationError: no grounding question to score.
    """
    if not questions:
        raise EvaluationError("no grounding questions: a moment_detr submission scores "
                              "moment retrieval only")
    preds = {p.question_id: p for p in predictions}
    first = np.array([_first_window_iou(q.answer_spans, preds.get(q.question_id))
                      for q in questions])
    aps = np.array([average_precisions(q.answer_spans, _ranked(preds.get(q.question_id)))
                    for q in questions])
    per_threshold = aps.mean(axis=0)
    return QVHighlightsScores(
        n_queries=len(questions),
        r1={t: float(np.mean(first >= t)) for t in THRESHOLDS},
        map={t: float(v) for t, v in zip(THRESHOLDS, per_threshold, strict=True)},
        average_map=float(per_threshold.mean()),
        range_map={name: _range_map(questions, preds, lo, hi)
                   for name, (lo, hi) in LENGTH_RANGES.items()})
