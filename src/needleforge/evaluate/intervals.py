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

Both are SciPy's percentile intervals (:func:`scipy.stats.bootstrap`) widened around the
estimate by ``sqrt(n / (n - 1))`` (the bootstrap's plug-in spread is that much too narrow,
which matters for a task of 8 samples) and clipped to ``[0, 1]``; both are seeded, so the same
outcomes give the same interval. SciPy is imported on first use: ``scipy.stats`` costs ~2 s
to import, which only the processes that score should pay.
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
    estimate = float(num.sum() / den.sum())
    if num.size == 1:  # one cluster: every resample is the estimate (SciPy wants two)
        return (estimate, estimate)
    from scipy import stats

    def ratio(n: npt.NDArray[np.float64], d: npt.NDArray[np.float64],
              axis: int = -1) -> npt.NDArray[np.float64]:
        totals = d.sum(axis=axis)
        ratios: npt.NDArray[np.float64] = n.sum(axis=axis) / np.where(totals > 0, totals, 1.0)
        return ratios

    result = stats.bootstrap((num, den), ratio, n_resamples=resamples, paired=True,
                             vectorized=True, confidence_level=level, method="percentile",
                             rng=np.random.default_rng(seed))
    interval = result.confidence_interval
    return _widened(estimate, float(interval.low), float(interval.high), len(num))


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
    names = sorted(groups)
    values = [np.asarray(groups[name], dtype=np.float64) for name in names]
    estimate = np.asarray(statistic({g: np.asarray([np.mean(v)]) for g, v in groups.items()}))
    # A group of one outcome resamples to itself (SciPy wants two); its draws would consume
    # no random numbers, so leaving it out keeps the other groups' draws as they are.
    varied = [i for i, v in enumerate(values) if v.size > 1]
    widen_n = min(v.size for v in values)
    if not varied:
        point = float(estimate.reshape(-1)[0])
        return _widened(point, point, point, widen_n)
    from scipy import stats

    def of_means(*resampled: npt.NDArray[np.float64], axis: int = -1) -> npt.ArrayLike:
        means = {name: np.full(resampled[0].shape[:-1] or (1,), v.mean())
                 for name, v in zip(names, values, strict=True)}
        for i, sample in zip(varied, resampled, strict=True):
            means[names[i]] = sample.mean(axis=axis)
        return statistic(means)

    result = stats.bootstrap([values[i] for i in varied], of_means, n_resamples=resamples,
                             vectorized=True, confidence_level=level, method="percentile",
                             rng=np.random.default_rng(seed))
    interval = result.confidence_interval
    return _widened(float(estimate.reshape(-1)[0]), float(interval.low), float(interval.high),
                    widen_n)


def overlaps(a: Interval, b: Interval) -> bool:
    """Whether two intervals share a point (then the two scores are not told apart)."""
    return a[0] <= b[1] and b[0] <= a[1]
