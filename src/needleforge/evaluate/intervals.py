"""95 % intervals of a score from the questions it was measured on (cluster bootstrap).

Why intervals: a benchmark ranks two models only when their scores differ by more than the
sampling error of its questions. A sample release has a few dozen VNBench samples, so a
VNBench score moves by whole points with one sample; the scorer therefore reports an interval
beside each headline figure, the leaderboard shows them, and says which models' intervals
overlap (those it does not rank). The bias audit (:mod:`needleforge.quality.bias`) uses the
same :func:`bootstrap_ci`.

- :func:`bootstrap_ci`: a ratio ``sum(num) / sum(den)`` over clusters (a question and its
  targets for Recall@1x, a question for mAP), clusters resampled with replacement.
- :func:`stratified_ci`: a statistic of groups of equal design size (VNBench's tasks, each
  with its samples), resampled within each group, so every resample has the release's shape.

Both are percentile intervals widened around the estimate by ``sqrt(n / (n - 1))`` (the
bootstrap's plug-in spread is that much too narrow, which matters for a task of 8 samples)
and clipped to ``[0, 1]``; both are seeded, so the same outcomes give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

#: Resamples per interval: the percentile ends move by < 0.5 points between seeds at 4000.
BOOTSTRAP = 4000
#: Confidence of one interval.
CONFIDENCE = 0.95
Outcomes: TypeAlias = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]
Interval: TypeAlias = tuple[float, float]


def _widened(estimate: float, low: float, high: float, n: int) -> Interval:
    widen = math.sqrt(n / (n - 1)) if n > 1 else 1.0
    return (max(0.0, estimate - widen * (estimate - low)),
            min(1.0, estimate + widen * (high - estimate)))


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"confidence {level = } must lie in (0, 1)")


def bootstrap_ci(outcomes: Outcomes, *, seed: int = 0, resamples: int = BOOTSTRAP,
                 level: float = CONFIDENCE) -> Interval:
    """Percentile interval (confidence ``level``) of ``sum(num) / sum(den)`` with clusters
    resampled with replacement, widened (see the module docstring). ``(0, 0)`` when there is
    no denominator.

    Raises:
        ValueError: ``level`` is not in (0, 1), or ``num`` and ``den`` differ in length.
    """
    _check_level(level)
    num, den = (np.asarray(x, dtype=np.float64) for x in outcomes)
    if num.shape != den.shape:
        raise ValueError(f"{num.size} numerators for {den.size} denominators")
    if den.sum() == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(num), size=(resamples, len(num)))
    totals = den[picks].sum(axis=1)
    ratios = num[picks].sum(axis=1) / np.where(totals > 0, totals, 1.0)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return _widened(float(num.sum() / den.sum()), float(low), float(high), len(num))


def stratified_ci(groups: Mapping[str, Sequence[float]],
                  statistic: Callable[[Mapping[str, npt.NDArray[np.float64]]], npt.ArrayLike],
                  *,
                  seed: int = 0, resamples: int = BOOTSTRAP,
                  level: float = CONFIDENCE) -> Interval:
    """Percentile interval of ``statistic(means)``, where ``means[g]`` is the mean outcome of
    group ``g`` (an array over resamples), each group resampled within itself; widened by the
    smallest group's size.

    Raises:
        ValueError: ``level`` is not in (0, 1), no group, or an empty group (named).
    """
    _check_level(level)
    if not groups:
        raise ValueError("no group to resample: an interval of nothing is undefined")
    empty = sorted(g for g, v in groups.items() if len(v) == 0)
    if empty:
        raise ValueError(f"groups without outcomes: {empty}")
    rng = np.random.default_rng(seed)
    means: dict[str, npt.NDArray[np.float64]] = {}
    for name in sorted(groups):
        values = np.asarray(groups[name], dtype=np.float64)
        picks = rng.integers(0, values.size, size=(resamples, values.size))
        means[name] = values[picks].mean(axis=1)
    estimate = np.asarray(statistic({g: np.asarray([np.mean(v)]) for g, v in groups.items()}))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(np.asarray(statistic(means)), [tail, 100 - tail])
    return _widened(float(estimate.reshape(-1)[0]), float(low), float(high),
                    min(len(v) for v in groups.values()))


def overlaps(a: Interval, b: Interval) -> bool:
    """Whether two intervals share a point (then the two scores are not told apart)."""
    return a[0] <= b[1] and b[0] <= a[1]
