"""Time spans as the metrics see them: clipped to the video, as integer-second intervals.

A span ``[s, e]`` stands for the inclusive integer set ``{floor(s), …, ceil(e)}`` (NeMo, seed 001,
eq. 6). Every such set is one contiguous run of integers, so it is stored as ``[first, last]``
and set sizes, intersections and unions are computed in closed form, batch-wise with numpy.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from needleforge.errors import EvaluationError
from needleforge.evaluate.records import Span

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]


@dataclasses.dataclass(frozen=True, slots=True)
class Intervals:
    """Integer-second intervals ``[first, last]`` of many questions; ``first > last`` is empty."""

    question: IntArray
    first: IntArray
    last: IntArray

    @property
    def sizes(self) -> IntArray:
        """Seconds in each interval (0 for an empty one)."""
        return np.asarray(np.maximum(self.last - self.first + 1, 0), dtype=np.int64)


def to_intervals(spans: npt.ArrayLike, *, question: npt.ArrayLike,
                 duration_s: npt.ArrayLike = math.inf) -> Intervals:
    """Clip ``(n, 2)`` spans to ``[0, duration_s]`` and turn them into integer-second intervals.

    Raises:
        EvaluationError: a span is NaN/inf or reversed (``start_s > end_s``).
    """
    arr = np.asarray(spans, dtype=np.float64).reshape(-1, 2)
    q = np.asarray(question, dtype=np.int64)
    dur = np.broadcast_to(np.asarray(duration_s, dtype=np.float64), q.shape)
    bad = ~np.isfinite(arr).all(axis=1) | (arr[:, 0] > arr[:, 1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EvaluationError(f"span {arr[i].tolist()} of question #{int(q[i])} is NaN/inf or "
                              "reversed (start_s > end_s)")
    outside = (arr[:, 0] > dur) | (arr[:, 1] < 0)
    first = np.floor(np.maximum(arr[:, 0], 0.0))
    last = np.ceil(np.minimum(arr[:, 1], dur))
    first = np.where(outside, 1, first).astype(np.int64)
    last = np.where(outside, 0, last).astype(np.int64)
    return Intervals(q, first, last)


def union_sizes(iv: Intervals, *, n_questions: int) -> IntArray:
    """``|S_1 ∪ S_2 ∪ …|`` per question: seconds covered by the union of its intervals (eq. 8).

    Why vectorised: sort by (question, first), offset each question's coordinates past the
    previous one's so one running maximum never leaks across questions, and count each interval's
    seconds not already covered by the earlier ones.
    """
    keep = iv.first <= iv.last
    q, first, last = iv.question[keep], iv.first[keep], iv.last[keep]
    if q.size == 0:
        return np.zeros(n_questions, dtype=np.int64)
    order = np.lexsort((first, q))
    width = int(last.max()) + 2
    offset = q[order] * width
    first_o, last_o = first[order] + offset, last[order] + offset
    covered_before = np.concatenate(([np.iinfo(np.int64).min // 2],
                                     np.maximum.accumulate(last_o)[:-1]))
    new = np.maximum(last_o - np.maximum(first_o, covered_before + 1) + 1, 0)
    return np.bincount(q[order], weights=new, minlength=n_questions).astype(np.int64)


def pair_tiou(a: Intervals, b: Intervals) -> FloatArray:
    """Element-wise tIoU of two equally long interval arrays (0 when both are empty)."""
    inter = np.maximum(np.minimum(a.last, b.last) - np.maximum(a.first, b.first) + 1, 0)
    union = a.sizes + b.sizes - inter
    return np.asarray(np.divide(inter, union, out=np.zeros(inter.shape), where=union > 0),
                      dtype=np.float64)


def take(iv: Intervals, idx: IntArray) -> Intervals:
    """The intervals at positions ``idx``."""
    return Intervals(iv.question[idx], iv.first[idx], iv.last[idx])


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
    iv = to_intervals(flat, question=q, duration_s=duration_s)
    return frozenset(itertools.chain.from_iterable(
        range(int(a), int(b) + 1) for a, b in zip(iv.first, iv.last, strict=True)))


