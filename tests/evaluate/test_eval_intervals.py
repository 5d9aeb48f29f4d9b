"""The scorer's 95 % intervals: cluster and stratified bootstrap, and what the report holds."""

from __future__ import annotations

import numpy as np
import pytest

from needleforge.evaluate import Prediction, load_questions, score
from needleforge.evaluate.intervals import bootstrap_ci, overlaps, stratified_ci
from tests.evaluate.eval_helpers import choice_tries, letter_for, write_jsonl


def _mean(means: dict[str, np.ndarray]) -> np.ndarray:  # type: ignore[type-arg]
    return np.mean(list(means.values()), axis=0)


def test_cluster_interval_holds_the_estimate_and_shrinks_with_more_questions() -> None:
    rng = np.random.default_rng(1)
    widths = []
    for n in (20, 80, 320):
        hits = (rng.random(n) < 0.3).astype(float)
        low, high = bootstrap_ci((hits, np.ones(n)))
        assert low <= hits.mean() <= high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    # the normal approximation's half-width at n = 320, p ~ 0.3 is ~5 points
    assert 0.07 < widths[2] < 0.13
    assert bootstrap_ci((np.zeros(3), np.zeros(3))) == (0.0, 0.0)  # nothing to divide


#: Fixed outcomes and the intervals the hand-written bootstrap gave before SciPy's (13d845a).
_RNG = np.random.default_rng(7)
_HITS = (_RNG.random(40) < 0.3).astype(float)
_DEN = _RNG.integers(1, 4, 40).astype(float)
_NUM = np.minimum(_DEN, _RNG.integers(0, 4, 40)).astype(float)
_GROUPS = {"b": [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0],
           "a": [0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0], "c": [1.0, 1.0, 0.0, 1.0]}


def test_cluster_intervals_are_the_old_ones() -> None:
    assert bootstrap_ci((_HITS, np.ones(40))) == pytest.approx(
        (0.19808909493745003, 0.50191090506255), rel=1e-12)
    assert bootstrap_ci((_NUM, _DEN), seed=3, level=0.9) == pytest.approx(
        (0.4509092971005641, 0.6843921825431981), rel=1e-12)
    assert bootstrap_ci((_NUM, _DEN), resamples=500) == pytest.approx(
        (0.4156271100874841, 0.6969912790096635), rel=1e-12)
    assert bootstrap_ci((np.array([2.0]), np.array([3.0]))) == pytest.approx((2 / 3, 2 / 3))


def test_stratified_intervals_are_the_old_ones() -> None:
    assert stratified_ci(_GROUPS, _mean) == pytest.approx(
        (0.288903207711508, 0.7796509365226898), rel=1e-12)
    assert stratified_ci(_GROUPS, lambda m: m["b"] - m["a"], seed=5, level=0.8) == (
        pytest.approx((0.0, 0.6425426480542942), rel=1e-12))
    # a group of one outcome resamples to itself and leaves the others' draws alone
    lone = {"z": [0.0, 1.0, 0.0], "a": [1.0], "m": [1.0, 1.0, 0.0, 0.0]}
    assert stratified_ci(lone, _mean) == pytest.approx(
        (0.4166666666666667, 0.8333333333333334), rel=1e-12)
    assert stratified_ci({"a": [1.0], "b": [0.0]}, _mean) == (0.5, 0.5)


def test_stratified_interval_resamples_within_each_group() -> None:
    groups = {"a": [1.0] * 10, "b": [0.0] * 10}  # no spread inside a group: no spread at all
    assert stratified_ci(groups, _mean) == (0.5, 0.5)
    mixed = {"a": [1.0, 0.0] * 10, "b": [0.0] * 20}
    low, high = stratified_ci(mixed, _mean)
    assert low < 0.25 < high and high - low < 0.4
    assert stratified_ci(mixed, _mean) == (low, high)  # seeded


@pytest.mark.parametrize(("groups", "level", "message"), [
    ({}, 0.95, "no group"),
    ({"a": [1.0], "ret_edit1": []}, 0.95, r"without outcomes: \['ret_edit1'\]"),
    ({"a": [1.0]}, 1.0, "confidence"),
    ({"a": [1.0]}, 0.0, "confidence"),
])
def test_bad_interval_inputs_are_refused(groups: dict[str, list[float]], level: float,
                                         message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stratified_ci(groups, _mean, level=level)


def test_mismatched_outcomes_are_refused() -> None:
    with pytest.raises(ValueError, match="3 numerators for 2 denominators"):
        bootstrap_ci((np.ones(3), np.ones(2)))


def test_overlap() -> None:
    assert overlaps((0.1, 0.3), (0.3, 0.5)) and overlaps((0.2, 0.4), (0.0, 1.0))
    assert not overlaps((0.1, 0.29), (0.3, 0.5))


def test_vnbench_overall_interval_narrows_with_samples(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Half the samples of every official task right: the overall is 0.5 at any size, and its
    interval shrinks about as 1/sqrt(samples)."""
    tasks = ("ret_edit1", "ret_insert1", "ret_insert2", "ord_edit1", "ord_insert1",
             "ord_insert2", "cnt_edit1", "cnt_edit2", "cnt_insert1")
    widths = []
    for n in (2, 8, 32):
        rows = [q for t in tasks for i in range(n) for q in choice_tries(f"{t}-{i}", task=t)]
        questions = load_questions(write_jsonl(tmp_path / f"q{n}.jsonl", rows))
        preds = [Prediction(question_id=q["question_id"], try_index=q["try"],
                            response=letter_for(q, right=int(q["question_id"][-1]) % 2 == 0))
                 for q in rows]
        vnbench = score(questions, preds).vnbench
        assert vnbench is not None and vnbench.overall == 0.5
        assert vnbench.samples == dict.fromkeys(tasks, n)
        low, high = vnbench.overall_ci
        assert low < 0.5 < high
        widths.append(high - low)
    assert widths[0] > 1.5 * widths[1] > 2.25 * widths[2]
    assert widths[2] < 0.25
