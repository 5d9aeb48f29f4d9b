"""Cutting a target into multi-needle pieces and spreading them among negatives.

The pieces must start on the render grid (whole seconds from the span start, itself on the
scene grid), last at least ``min_piece_s``, and together be the span exactly; placement must
never put two pieces side by side (they would play as one clip).
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from needleforge.nemo.multi import (
    draw_piece_count,
    interleave,
    piece_limit,
    split_span,
    time_gaps,
)

_TOL = 1e-9


@pytest.mark.parametrize(("duration", "min_piece", "limit"), [
    (6.5, 2.0, 3),    # 2 + 2 + 2.5
    (6.1, 2.0, 3),    # 2 + 2 + 2.1
    (4.0, 2.0, 2),    # exactly two pieces of 2 s
    (3.9, 2.0, 1),    # cannot split
    (10.0, 2.5, 3),   # whole pieces last ceil(2.5) = 3 s: 3 + 3 + 4
    (9.4, 2.5, 3),    # 3 + 3 + 3.4: the last piece needs only 2.5 s
    (8.4, 2.5, 2),    # 3 + 5.4; 3 + 3 + 2.4 leaves the last piece too short
])
def test_piece_limit_examples(duration: float, min_piece: float, limit: int) -> None:
    assert piece_limit(duration, min_piece_s=min_piece) == limit


def test_piece_limit_rejects_non_positive_min_piece() -> None:
    with pytest.raises(ValueError, match="min_piece_s"):
        piece_limit(10.0, min_piece_s=0.0)


@settings(max_examples=200, deadline=None)
@given(scene_start=st.floats(0.0, 5000.0), offset=st.integers(0, 30),
       duration=st.floats(6.01, 90.0), min_piece=st.sampled_from([1.0, 1.5, 2.0, 2.5, 3.0]),
       seed=st.integers(0, 2**32), data=st.data())
def test_split_span_pieces_are_on_grid_long_enough_and_exact(
    scene_start: float, offset: int, duration: float, min_piece: float, seed: int,
    data: st.DataObject,
) -> None:
    start = scene_start + offset
    span = (start, start + duration)
    limit = piece_limit(duration, min_piece_s=min_piece)
    n = data.draw(st.integers(2, limit))
    pieces = split_span(span, n_pieces=n, min_piece_s=min_piece, rng=random.Random(seed))
    assert len(pieces) == n
    assert pieces[0][0] == span[0] and pieces[-1][1] == span[1]
    for (_, a_end), (b_start, _) in itertools.pairwise(pieces):
        assert a_end == b_start
    for piece_start, piece_end in pieces:
        assert piece_end - piece_start >= min_piece - 1e-6
        grid = piece_start - scene_start
        assert abs(grid - round(grid)) < 1e-6
    assert sum(e - s for s, e in pieces) == pytest.approx(duration)


def test_split_span_refuses_more_pieces_than_fit() -> None:
    with pytest.raises(ValueError, match="n_pieces"):
        split_span((0.0, 6.5), n_pieces=4, min_piece_s=2.0, rng=random.Random(0))
    with pytest.raises(ValueError, match="n_pieces"):
        split_span((0.0, 6.5), n_pieces=1, min_piece_s=2.0, rng=random.Random(0))


def test_draw_piece_count_respects_every_bound() -> None:
    rng = random.Random(3)
    counts = {draw_piece_count((0.0, 30.0), min_piece_s=2.0, max_pieces=4, room=None, rng=rng)
              for _ in range(200)}
    assert counts == {2, 3, 4}
    assert draw_piece_count((0.0, 30.0), min_piece_s=2.0, max_pieces=None, room=2,
                            rng=rng) == 2
    assert draw_piece_count((0.0, 30.0), min_piece_s=2.0, max_pieces=None, room=1,
                            rng=rng) == 0
    assert draw_piece_count((0.0, 3.0), min_piece_s=2.0, max_pieces=None, room=None,
                            rng=rng) == 0


@settings(max_examples=200, deadline=None)
@given(n_neg=st.integers(0, 30), data=st.data(), seed=st.integers(0, 2**32))
def test_interleave_keeps_needles_apart_and_negatives_in_order(
    n_neg: int, data: st.DataObject, seed: int
) -> None:
    n_needles = data.draw(st.integers(0, n_neg + 1))
    negatives = [f"n{i}" for i in range(n_neg)]
    needles = [f"t{i}" for i in range(n_needles)]
    out = interleave(negatives, needles, rng=random.Random(seed))
    assert sorted(out) == sorted(negatives + needles)
    assert [x for x in out if x.startswith("n")] == negatives
    flags = [x.startswith("t") for x in out]
    assert not any(a and b for a, b in itertools.pairwise(flags))


def test_interleave_uses_every_gap_and_refuses_too_many_needles() -> None:
    seen = set()
    for seed in range(200):
        out = interleave(["a", "b"], ["t"], rng=random.Random(seed))
        seen.add(out.index("t"))
    assert seen == {0, 1, 2}
    with pytest.raises(ValueError, match="cannot be kept apart"):
        interleave(["a"], ["t1", "t2", "t3"], rng=random.Random(0))


def test_time_gaps_spread_the_start_evenly_over_the_montage() -> None:
    """Behind one 50 s negative and nine of 5 s, a target drawn by index would start at 0 s
    in 1 montage of 11; drawn by time, each gap gets the running time nearest to it (gap 0:
    half the long one, 25 of 95 s), so the start is flat over the montage."""
    durations = [50.0] + [5.0] * 9  # 95 s of negatives
    offsets = [sum(durations[:g]) for g in range(len(durations) + 1)]
    rng = random.Random(7)
    starts = [offsets[time_gaps(durations, 1, rng=rng)[0]] for _ in range(20000)]
    assert abs(starts.count(0.0) / len(starts) - 25 / 95) < 0.02
    assert abs(starts.count(50.0) / len(starts) - 27.5 / 95) < 0.02
    assert abs(starts.count(95.0) / len(starts) - 2.5 / 95) < 0.01
    assert abs(sum(starts) / len(starts) - 95 / 2) < 1.5  # flat in time: mean at the middle


@given(durations=st.lists(st.floats(0, 100), max_size=12), data=st.data(),
       seed=st.integers(0, 2**32))
def test_time_gaps_are_distinct_sorted_and_in_range(
    durations: list[float], data: st.DataObject, seed: int
) -> None:
    count = data.draw(st.integers(0, len(durations) + 1))
    gaps = time_gaps(durations, count, rng=random.Random(seed))
    assert gaps == sorted(set(gaps)) and len(gaps) == count
    assert all(0 <= g <= len(durations) for g in gaps)


def test_time_gaps_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match="cannot be kept apart"):
        time_gaps([1.0], 3, rng=random.Random(0))
    with pytest.raises(ValueError, match="finite and >= 0"):
        time_gaps([1.0, -2.0], 1, rng=random.Random(0))
    with pytest.raises(ValueError, match="finite and >= 0"):
        time_gaps([float("nan")], 1, rng=random.Random(0))
