"""Time spans as the metrics see them: clipped to the video, as intervals on a time line.

Two definitions of the time a span covers (``docs/metrics.md``), one representation for both:
a half-open interval ``[start, stop)`` per span, so sizes, intersections and unions are
computed in closed form, batch-wise with numpy.

- ``continuous`` (the primary figure): the exact seconds ``[s, e)``, as moment_detr's
  ``standalone_eval`` and ActivityNet measure them; a point ``[3, 3]`` covers no time.
- ``second_set`` (NeMo, seed 001, eq. 6): the inclusive integer set ``{floor(s), …, ceil(e)}``,
  one contiguous run of integers, stored as ``[floor(s), ceil(e) + 1)``; ``[3, 3]`` is one
  second and ``[2.5, 4.2]`` is ``{2, 3, 4, 5}``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

from needleforge.errors import EvaluationError
from needleforge.evaluate.records import Span

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
#: How a span is turned into time: exact seconds, or the paper's whole-second set.
TIoUKind: TypeAlias = Literal["continuous", "second_set"]
TIOU_KINDS: tuple[TIoUKind, ...] = get_args(TIoUKind)


@dataclasses.dataclass(frozen=True, slots=True)
class Intervals:
    """Half-open intervals ``[start, stop)`` of many questions; ``stop <= start`` is empty."""

    question: IntArray
    start: FloatArray
    stop: FloatArray

    @property
    def sizes(self) -> FloatArray:
        """Seconds in each interval (0 for an empty one)."""
        return np.asarray(np.maximum(self.stop - self.start, 0.0), dtype=np.float64)


def check_kind(kind: str) -> TIoUKind:
    """``kind`` if it names a tIoU definition.

    Raises:
        EvaluationError: it does not (the message lists the definitions).
    """
    if kind not in TIOU_KINDS:
        raise EvaluationError(f"tIoU definition {kind!r} is not one of {list(TIOU_KINDS)}")
    return kind


def to_intervals(spans: npt.ArrayLike, *, question: npt.ArrayLike,
                 duration_s: npt.ArrayLike = math.inf,
                 kind: TIoUKind = "continuous") -> Intervals:
    """Clip ``(n, 2)`` spans to ``[0, duration_s]`` and turn them into intervals of ``kind``.

    A span wholly outside the video becomes an empty interval (it still occupies a rank).

    Raises:
        EvaluationError: a span is NaN/inf or reversed (``start_s > end_s``), or ``kind`` is
            not a tIoU definition.
    """
    check_kind(kind)
    arr = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    q = np.asarray(question, dtype=np.int64)
    dur = np.broadcast_to(np.asarray(duration_s, dtype=np.float64), q.shape)
    bad = ~np.isfinite(arr).all(axis=1) | (arr[:, 0] > arr[:, 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EvaluationError(f"span {arr[i].tolist()} of question #{int(q[i])} is NaN/inf or "
                              "reversed (start_s > end_s)")
    outside = (arr[:, 0] > dur) | (arr[:, 1] < 0)
    start = np.maximum(arr[:, 0], 0.0)
    stop = np.minimum(arr[:, 1], dur)
    if kind == "second_set":
        start, stop = np.floor(start), np.ceil(stop) + 1.0
    return Intervals(q, np.where(outside, 0.0, start), np.where(outside, 0.0, stop))


def union_sizes(iv: Intervals, *, n_questions: int) -> FloatArray:
    """``|S_1 ∪ S_2 ∪ …|`` per question: seconds covered by the union of its intervals (eq. 8).

    Why ranks: sort by (question, start) and count each interval's time not already covered
    by the earlier ones of its question, with one running maximum of the stops. The maximum
    must not leak across questions, so it runs over the stops' *ranks* offset per question
    (integers, exact), never over shifted float times, which would round.
    """
    keep = iv.stop > iv.start
    q, start, stop = iv.question[keep], iv.start[keep], iv.stop[keep]
    if q.size == 0:
        return np.zeros(n_questions, dtype=np.float64)
    order = np.lexsort((start, q))
    q, start, stop = q[order], start[order], stop[order]
    values, rank = np.unique(stop, return_inverse=True)
    offset = q * values.size
    running = np.maximum.accumulate(rank.reshape(-1) + offset)
    before = np.concatenate(([-1], running[:-1]))
    same_question = before >= offset
    covered = np.where(same_question, values[np.where(same_question, before - offset, 0)],
                       -np.inf)
    new = np.maximum(stop - np.maximum(start, covered), 0.0)
    return np.asarray(np.bincount(q, weights=new, minlength=n_questions), dtype=np.float64)


def pair_tiou(a: Intervals, b: Intervals) -> FloatArray:
    """Element-wise tIoU of two equally long interval arrays (0 when both are empty).

    For two overlapping intervals the union is their hull, so this equals moment_detr's
    ``compute_temporal_iou_batch_paired`` (which divides by the hull) wherever either is
    not 0.
    """
    inter = np.maximum(np.minimum(a.stop, b.stop) - np.maximum(a.start, b.start), 0.0)
    union = a.sizes + b.sizes - inter
    return np.asarray(np.divide(inter, union, out=np.zeros(inter.shape), where=union > 0),
                      dtype=np.float64)


def take(iv: Intervals, idx: IntArray) -> Intervals:
    """The intervals at positions ``idx``."""
    return Intervals(iv.question[idx], iv.start[idx], iv.stop[idx])


def flatten(spans: Sequence[Sequence[Span]]) -> tuple[IntArray, FloatArray]:
    """Per-question span lists → (question index of each span, ``(n, 2)`` float array).

    Raises:
        EvaluationError: an item is not a (start_s, end_s) pair.
    """
    counts = np.fromiter(map(len, spans), dtype=np.int64, count=len(spans))
    n_spans = int(counts.sum())
    chain = itertools.chain.from_iterable
    sizes = np.fromiter(map(len, chain(spans)), dtype=np.int64, count=n_spans)
    if (sizes != 2).any():
        raise EvaluationError("every span must be a (start_s, end_s) pair")
    try:
        flat = np.fromiter(chain(chain(spans)), dtype=np.float64, count=2 * n_spans)
    except (TypeError, ValueError) as exc:
        raise EvaluationError(f"span times must be numbers: {exc}") from exc
    return np.repeat(np.arange(len(spans), dtype=np.int64), counts), flat.reshape(-1, 2)


def second_set(spans: Sequence[Span], *, duration_s: float = math.inf) -> frozenset[int]:
    """The integer seconds covered by ``spans`` after clipping (eq. 6–8), for inspection.

    Raises:
        EvaluationError: a span is NaN/inf or reversed.
    """
    q, flat = flatten([spans])
    iv = to_intervals(flat, question=q, duration_s=duration_s, kind="second_set")
    return frozenset(itertools.chain.from_iterable(
        range(int(a), int(b)) for a, b in zip(iv.start, iv.stop, strict=True)))
