"""The one time type (:class:`FrameSpan`) and the one seconds → frame rule (:func:`frame_at`)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.records import FrameSpan, frame_at

NTSC = Fraction(30000, 1001)


def test_frame_at_rounds_half_up_as_the_decimal_means() -> None:
    assert frame_at(0.5, rate=25) == 13  # half up, not Python's half-to-even 12
    assert frame_at(0.46, rate=25) == 12  # 11.5 → 12
    # 0.06 is stored as 0.0599999…, 1.4999… frames: the float product rounds it as 1.5 means
    assert frame_at(0.06, rate=25) == 2
    assert frame_at(2.02, rate=25) == 51  # 50.5
    assert frame_at(1001 / 30000 * 7, rate=NTSC) == 7


@given(st.integers(0, 10**6), st.sampled_from([24, 25, 30, 60, NTSC, Fraction(24000, 1001)]))
def test_a_frame_time_maps_back_to_its_frame(k: int, rate: Fraction | int) -> None:
    span = FrameSpan(k, k + 1, rate)
    assert frame_at(span.start_s, rate=rate) == k and frame_at(span.end_s, rate=rate) == k + 1
    assert FrameSpan.from_seconds(span.start_s, span.end_s, rate=rate) == span


def test_seconds_are_views_of_exact_frames() -> None:
    span = FrameSpan(3, 48, 25)
    assert (span.n_frames, span.start_s, span.end_s, span.duration_s) == (45, 0.12, 1.92, 1.8)
    ntsc = FrameSpan(0, 30000, NTSC)
    assert ntsc.duration_s == 1001.0  # exact, where 30000 / 29.97 is 1001.001…
    assert FrameSpan(0, 25, Fraction(25)) == FrameSpan(0, 25, 25)
    with pytest.raises(AttributeError):
        span.start = 4  # type: ignore[misc]


@pytest.mark.parametrize(("start", "end", "rate", "message"), [
    (5, 5, 25, r"frames \[5, 5\) must have end > start >= 0"),
    (7, 3, 25, r"frames \[7, 3\) must have end > start >= 0"),
    (-1, 3, 25, r"frames \[-1, 3\) must have end > start >= 0"),
    (0, 3, 0, r"rate = 0 must be an int or Fraction > 0"),
    (0, 3, Fraction(-25), r"rate = Fraction\(-25, 1\) must be an int or Fraction > 0"),
    (0, 3, 29.97, r"rate = 29\.97 must be an int or Fraction > 0"),
    (0, 3, True, r"rate = True must be an int or Fraction > 0"),
])
def test_bad_spans_name_the_bad_values(start: int, end: int, rate: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FrameSpan(start, end, rate)  # type: ignore[arg-type]


def test_bad_seconds_name_the_bad_values() -> None:
    with pytest.raises(ValueError, match=r"seconds = nan must be finite"):
        frame_at(math.nan, rate=25)
    with pytest.raises(ValueError, match=r"seconds = inf must be finite"):
        FrameSpan.from_seconds(0.0, math.inf, rate=25)
    with pytest.raises(ValueError, match=r"rate = 0 must be > 0"):
        frame_at(1.0, rate=0)
    with pytest.raises(ValueError, match=r"frames \[25, 25\) must have end > start"):
        FrameSpan.from_seconds(1.0, 1.01, rate=25)  # 10 ms rounds to no frame
    with pytest.raises(ValueError, match=r"frames \[-25, 0\)"):
        FrameSpan.from_seconds(-1.0, 0.0, rate=25)
