"""Grounding metrics of NeMo (seed 001, App. C.3): tIoU, Recall@kx and Average mAP.

Definitions (also in ``docs/metrics.md``):

- **Time.** Every metric is computed under one of two tIoU definitions
  (:data:`~needleforge.evaluate.spans.TIoUKind`): ``continuous``, the exact seconds ``[s, e]``
  (the primary figure, as moment_detr and ActivityNet measure it), or ``second_set``, the
  inclusive integer set ``{floor(s), …, ceil(e)}`` of the NeMo paper (eq. 6), so ``[3, 3]``
  is one second and ``[2.5, 4.2]`` is ``{2, 3, 4, 5}``. Why both: whole seconds round every
  span outwards, which inflates the overlap of short windows (a 2 s answer shifted by half its
  length overlaps it by 1/3 in exact seconds and 1/2 in second sets); the paper's figure is
  kept beside, named as such, so numbers stay comparable with it.
  Spans are first clipped to ``[0, duration_s]``; a span lying wholly outside the video is
  kept as an *empty* interval (it still occupies a rank and counts as a false positive).
  Reversed spans and NaN/inf are rejected (:class:`~needleforge.errors.EvaluationError`),
  never swapped or dropped.
- **tIoU** of two intervals ``|A ∩ B| / |A ∪ B|`` (0 when both are empty); of two span lists,
  of the unions of their intervals (eq. 7–9: the *set-level tIoU*, one number per question, 0
  when nothing is predicted).
- **Ranking.** Predictions are ranked by descending score when scores are given, otherwise in the
  given order; ties keep the given order (stable sort: the earlier prediction ranks first).
- **Recall@kx, tIoU=m.** A question with ``x`` targets keeps its top ``k·x`` predictions; a
  target is recalled when some kept prediction has span-to-span tIoU ``≥ m`` with it (``≥``: a
  tIoU of exactly ``m`` counts). The score is **micro over targets**: recalled targets of all
  questions / all targets (a 3-target question weighs three times a 1-target one).
- **AP at tIoU t** (per question, ActivityNet style): walk the ranked predictions; each is a true
  positive when the unmatched target with the highest tIoU to it reaches ``t`` (ties: the earlier
  target), and then that target is matched (one-to-one, greedy). AP is the all-point
  interpolated area: ``(1/x) Σ_{true positives i} max_{j ≥ i} precision_j``.
  **Average mAP** = mean over t ∈ {0.1, …, 0.5} of the mean AP over questions.

Comparisons against thresholds use float division. On second sets both sides are integer
counts and IEEE division is correctly rounded, so a ratio that equals a decimal threshold
exactly (7/10 vs 0.7) compares equal; on exact seconds the ratio is of float lengths, compared
as moment_detr compares it. All functions work on whole batches with numpy; the one-question
helpers call the batch code.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.errors import EvaluationError
from needleforge.evaluate.records import Span
from needleforge.evaluate.spans import (
    FloatArray,
    IntArray,
    Intervals,
    TIoUKind,
    check_kind,
    flatten,
    pair_tiou,
    take,
    to_intervals,
    union_sizes,
)

DEFAULT_RECALL_THRESHOLDS: tuple[float, ...] = (0.7, 0.5)
DEFAULT_MAP_THRESHOLDS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5)


@dataclasses.dataclass(frozen=True, slots=True)
class GroundingResult:
    """Per-question metric arrays of one batch; index ``i`` is the ``i``-th question given.

    ``recalled[m]`` counts the recalled targets of each question at tIoU ``m``;
    ``average_precision[t]`` is each question's AP at tIoU ``t``; ``kind`` is the tIoU
    definition they were measured with.
    """

    n_targets: IntArray
    recalled: Mapping[float, IntArray]
    average_precision: Mapping[float, FloatArray]
    set_tiou: FloatArray
    kind: TIoUKind = "continuous"

    def _pick(self, mask: npt.ArrayLike | None) -> npt.NDArray[np.bool_]:
        sel = np.ones(self.n_targets.shape, bool) if mask is None else np.asarray(mask, bool)
        if not sel.any():
            raise ValueError("no question selected: a metric of nothing is undefined")
        return sel

    def recall(self, threshold: float, *, mask: npt.ArrayLike | None = None) -> float:
        """Recall@kx at ``threshold``, micro over the targets of the selected questions."""
        sel = self._pick(mask)
        return float(self.recalled[threshold][sel].sum() / self.n_targets[sel].sum())

    def mean_ap(self, threshold: float, *, mask: npt.ArrayLike | None = None) -> float:
        """mAP at ``threshold``: mean AP over the selected questions."""
        return float(self.average_precision[threshold][self._pick(mask)].mean())

    def average_map(self, *, mask: npt.ArrayLike | None = None) -> float:
        """Average mAP: the mean over all AP thresholds of :meth:`mean_ap`."""
        sel = self._pick(mask)
        return float(np.mean([ap[sel].mean() for ap in self.average_precision.values()]))

    def mean_set_tiou(self, *, mask: npt.ArrayLike | None = None) -> float:
        """Mean over the selected questions of the set-level tIoU (eq. 9)."""
        return float(self.set_tiou[self._pick(mask)].mean())


def _check_thresholds(thresholds: Sequence[float]) -> None:
    for t in thresholds:
        if not (isinstance(t, int | float) and 0 < t <= 1):
            raise EvaluationError(f"tIoU threshold {t!r} must be in (0, 1]")


def _rank(q: IntArray, scores: Sequence[Sequence[float] | None] | None,
          n_questions: int) -> tuple[IntArray, IntArray]:
    """Order predictions by (question, descending score, given order); return order and rank."""
    if scores is None:
        key = np.zeros(q.size)
    else:
        if len(scores) != n_questions:
            raise EvaluationError("scores must hold one entry (or None) per question")
        key = -np.array([x for s, n in zip(scores, np.bincount(q, minlength=n_questions),
                                           strict=True)
                         for x in (s if s is not None else [0.0] * int(n))], dtype=np.float64)
        if key.size != q.size or not np.isfinite(key).all():
            raise EvaluationError("scores must be finite, one per predicted span")
    order = np.lexsort((key, q))  # lexsort is stable: equal scores keep the given order
    starts = np.searchsorted(q[order], np.arange(n_questions))
    rank = np.arange(q.size) - starts[q[order]]
    return order, rank.astype(np.int64)


def _pairs(gq: IntArray, pq: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """Every (target, prediction) pair of the same question, grouped by target, then rank."""
    n_pred = np.bincount(pq, minlength=n)
    counts = n_pred[gq]
    pair_gt = np.repeat(np.arange(gq.size, dtype=np.int64), counts)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts)
    pred_start = (np.cumsum(n_pred) - n_pred)[gq]
    return pair_gt, pred_start[pair_gt] + within


def _recalled(tiou: FloatArray, pair_gt: IntArray, pair_pred: IntArray, *, kept: npt.NDArray[
        np.bool_], gq: IntArray, n: int, thresholds: Sequence[float]) -> dict[float, IntArray]:
    """Per question, how many targets have a kept prediction with tIoU ≥ each threshold."""
    best = np.full(gq.size, -1.0)
    counts = np.bincount(pair_gt, minlength=gq.size)
    nonzero = counts > 0
    if nonzero.any():
        starts = (np.cumsum(counts) - counts)[nonzero]
        best[nonzero] = np.maximum.reduceat(np.where(kept, tiou, -1.0), starts)
    return {m: np.bincount(gq, weights=best >= m, minlength=n).astype(np.int64)
            for m in thresholds}


def _true_positives(tiou: FloatArray, pair_gt: IntArray, pair_pred: IntArray, *,
                    rank: IntArray, n_gt_total: int, thresholds: FloatArray) -> npt.NDArray[
                        np.bool_]:
    """Greedy one-to-one matching, rank by rank; ``(n_pred, n_thresholds)`` true-positive flags.

    Why rank by rank: matching is sequential inside a question, but questions are independent,
    so step r handles the r-th prediction of every question at once. Within a step the pairs of
    one prediction are ordered by descending tIoU, then target index, so the first eligible pair
    is the best unmatched target (ties: the earlier target).
    """
    n_thr = thresholds.size
    tp = np.zeros((rank.size, n_thr), dtype=bool)
    if tiou.size == 0:
        return tp
    order = np.lexsort((pair_gt, -tiou, pair_pred, rank[pair_pred]))
    pg, pp, tv = pair_gt[order], pair_pred[order], tiou[order]
    bounds = np.searchsorted(rank[pp], np.arange(int(rank.max()) + 2))
    matched = np.zeros((n_gt_total, n_thr), dtype=bool)
    for r in range(bounds.size - 1):
        sl = slice(bounds[r], bounds[r + 1])
        eligible = (tv[sl, None] >= thresholds[None, :]) & ~matched[pg[sl]]
        t_idx, i_idx = np.nonzero(eligible.T)  # sorted by threshold, then pair
        if t_idx.size == 0:
            continue
        key = t_idx * rank.size + pp[sl][i_idx]
        first = np.concatenate(([True], key[1:] != key[:-1]))
        matched[pg[sl][i_idx[first]], t_idx[first]] = True
        tp[pp[sl][i_idx[first]], t_idx[first]] = True
    return tp


def _interpolated_ap(tp: npt.NDArray[np.bool_], *, pq: IntArray, rank: IntArray,
                     n_gt: IntArray) -> FloatArray:
    """All-point interpolated AP per question and threshold, ``(n_questions, n_thresholds)``.

    Recall rises by ``1/x`` at each true positive, so the area is ``(1/x)`` times the sum, over
    true positives, of the best precision at that rank or later (the suffix maximum).
    """
    n = n_gt.size
    if tp.shape[0] == 0 or tp.shape[1] == 0:
        return np.zeros((n, tp.shape[1]))
    n_pred = np.bincount(pq, minlength=n)
    first_of_q = (np.cumsum(n_pred) - n_pred)[pq]
    cum = np.cumsum(tp, axis=0)
    hits = cum - (cum[first_of_q] - tp[first_of_q])
    best = hits / (rank + 1)[:, None]
    by_rank = np.lexsort((pq, rank))
    bounds = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    for r in range(bounds.size - 3, -1, -1):  # the last rank is its own suffix maximum
        idx = by_rank[bounds[r]:bounds[r + 1]]
        idx = idx[n_pred[pq[idx]] > r + 1]
        best[idx] = np.maximum(best[idx], best[idx + 1])
    gains = np.where(tp, best, 0.0)
    ap = np.stack([np.bincount(pq, weights=gains[:, t], minlength=n)
                   for t in range(tp.shape[1])], axis=1)
    return np.asarray(ap / n_gt[:, None], dtype=np.float64)


def _set_tiou(gt: Intervals, pr: Intervals, n: int) -> FloatArray:
    """Eq. 9 per question: |G ∩ P| / |G ∪ P| with |G ∩ P| = |G| + |P| − |G ∪ P|."""
    g = union_sizes(gt, n_questions=n)
    p = union_sizes(pr, n_questions=n)
    both = union_sizes(Intervals(np.concatenate((gt.question, pr.question)),
                                 np.concatenate((gt.start, pr.start)),
                                 np.concatenate((gt.stop, pr.stop))), n_questions=n)
    inter = np.maximum(g + p - both, 0.0)
    return np.divide(inter, both, out=np.zeros(n), where=both > 0)


def _durations(durations_s: Sequence[float] | None, n: int) -> FloatArray:
    if durations_s is None:
        return np.full(n, math.inf)
    dur = np.asarray(durations_s, dtype=np.float64)
    if dur.shape != (n,) or not (dur > 0).all() or np.isnan(dur).any():
        raise EvaluationError("durations_s must hold one positive duration per question")
    return dur


def evaluate_grounding(
    targets: Sequence[Sequence[Span]],
    predictions: Sequence[Sequence[Span]],
    *,
    durations_s: Sequence[float] | None = None,
    scores: Sequence[Sequence[float] | None] | None = None,
    k: int = 1,
    recall_thresholds: Sequence[float] = DEFAULT_RECALL_THRESHOLDS,
    map_thresholds: Sequence[float] = DEFAULT_MAP_THRESHOLDS,
    kind: TIoUKind = "continuous",
) -> GroundingResult:
    """Score a batch of grounding questions at once (see the module docstring for definitions).

    ``targets[i]`` and ``predictions[i]`` are the answer and predicted spans of question ``i``;
    ``scores[i]`` (optional, None for an unscored question) ranks its predictions. An empty
    prediction list scores 0 on every metric. Without ``durations_s`` spans are only clipped
    at 0. ``kind`` picks the tIoU definition: exact seconds (``continuous``, the primary
    figure) or the paper's whole-second sets (``second_set``).

    Raises:
        EvaluationError: mismatched lengths, a question without targets, NaN/inf or reversed
            spans, non-finite scores, a threshold outside (0, 1], ``k < 1`` or an unknown
            ``kind``.
    """
    n = len(targets)
    if len(predictions) != n:
        raise EvaluationError(f"{len(predictions)} prediction lists for {n} questions")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise EvaluationError(f"{k = } must be an integer >= 1")
    _check_thresholds([*recall_thresholds, *map_thresholds])
    check_kind(kind)
    dur = _durations(durations_s, n)
    gq, g_spans = flatten(targets)
    n_gt = np.bincount(gq, minlength=n)
    if n and not n_gt.all():
        raise EvaluationError(f"question #{int(np.argmin(n_gt))} has no target span")
    pq, p_spans = flatten(predictions)
    order, rank = _rank(pq, scores, n)
    pq, p_spans = pq[order], p_spans[order]
    gt = to_intervals(g_spans, question=gq, duration_s=dur[gq], kind=kind)
    pr = to_intervals(p_spans, question=pq, duration_s=dur[pq], kind=kind)
    pair_gt, pair_pred = _pairs(gq, pq, n)
    tiou = pair_tiou(take(gt, pair_gt), take(pr, pair_pred))
    kept = rank[pair_pred] < k * n_gt[pq[pair_pred]]
    recalled = _recalled(tiou, pair_gt, pair_pred, kept=kept, gq=gq, n=n,
                         thresholds=recall_thresholds)
    thr = np.asarray(map_thresholds, dtype=np.float64)
    tp = _true_positives(tiou, pair_gt, pair_pred, rank=rank, n_gt_total=gq.size, thresholds=thr)
    ap = _interpolated_ap(tp, pq=pq, rank=rank, n_gt=np.maximum(n_gt, 1))
    return GroundingResult(
        n_targets=n_gt.astype(np.int64), recalled=recalled,
        average_precision={t: ap[:, i] for i, t in enumerate(map_thresholds)},
        set_tiou=_set_tiou(gt, pr, n), kind=kind)


def tiou(targets: Sequence[Span], predictions: Sequence[Span], *,
         duration_s: float = math.inf, kind: TIoUKind = "continuous") -> float:
    """Set-level tIoU (eq. 9) of one question: all predicted time vs all target time.

    Raises:
        EvaluationError: as :func:`evaluate_grounding`.
    """
    result = evaluate_grounding([targets], [predictions], durations_s=[duration_s],
                                recall_thresholds=(), map_thresholds=(), kind=kind)
    return float(result.set_tiou[0])


def recall_at_kx(targets: Sequence[Span], predictions: Sequence[Span], *, threshold: float,
                 k: int = 1, scores: Sequence[float] | None = None,
                 duration_s: float = math.inf, kind: TIoUKind = "continuous") -> float:
    """The share of one question's targets recalled by its top ``k·x`` predictions.

    Raises:
        EvaluationError: as :func:`evaluate_grounding`.
    """
    result = evaluate_grounding([targets], [predictions], durations_s=[duration_s],
                                scores=[scores], k=k, recall_thresholds=(threshold,),
                                map_thresholds=(), kind=kind)
    return result.recall(threshold)


def average_precision(targets: Sequence[Span], predictions: Sequence[Span], *,
                      threshold: float, scores: Sequence[float] | None = None,
                      duration_s: float = math.inf, kind: TIoUKind = "continuous") -> float:
    """AP of one question at tIoU ``threshold`` (greedy one-to-one matching, interpolated).

    Raises:
        EvaluationError: as :func:`evaluate_grounding`.
    """
    result = evaluate_grounding([targets], [predictions], durations_s=[duration_s],
                                scores=[scores], recall_thresholds=(),
                                map_thresholds=(threshold,), kind=kind)
    return result.mean_ap(threshold)
