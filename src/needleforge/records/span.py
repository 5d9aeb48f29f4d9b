"""The one time type for cut and copied video, and the one seconds → frame rounding rule.

Seconds are floats and drift; frame indices do not. Code that cuts, copies or checks frames
holds a :class:`FrameSpan`, and every seconds value that becomes a frame index goes through
:func:`frame_at` (lhotse's lesson: one time type, one rounding helper), so no two modules
disagree about the frame a time falls on and none needs a tolerance of its own.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from needleforge.records.base import _check


def frame_at(seconds: float, *, rate: Fraction | int) -> int:
    """The frame at ``seconds`` (also the frame count of a clip lasting ``seconds``):
    ``seconds * rate`` rounded half up, so 0.5 s at 25 fps is frame 13, not 12.

    The product is a float one, as the renderer has always taken it: a time a float's noise
    off a half frame rounds as its decimal means (``0.06 * 25`` is 1.4999…, frame 2).

    Raises:
        ValueError: when ``seconds`` is not finite or ``rate`` not > 0.
    """
    _check(math.isfinite(seconds), f"seconds = {seconds!r} must be finite")
    _check(rate > 0, f"rate = {rate!r} must be > 0")
    return math.floor(seconds * rate.numerator / rate.denominator + 0.5)


@dataclasses.dataclass(frozen=True, slots=True)
class FrameSpan:
    """Frames ``[start, end)`` at ``rate`` (exact: an int, or a Fraction such as 30000/1001)
    frames a second; frame ``k`` starts at ``k / rate`` s. Seconds are views, never stored."""

    start: int
    end: int
    rate: Fraction | int

    def __post_init__(self) -> None:
        _check(isinstance(self.rate, Fraction | int) and not isinstance(self.rate, bool)
               and self.rate > 0, f"rate = {self.rate!r} must be an int or Fraction > 0")
        _check(0 <= self.start < self.end,
               f"frames [{self.start}, {self.end}) must have end > start >= 0")

    @classmethod
    def from_seconds(cls, start_s: float, end_s: float, *, rate: Fraction | int) -> FrameSpan:
        """The frames from :func:`frame_at` ``start_s`` to :func:`frame_at` ``end_s``.

        Raises:
            ValueError: a time not finite, or the two rounding to no frame or a negative one.
        """
        return cls(frame_at(start_s, rate=rate), frame_at(end_s, rate=rate), rate)

    @property
    def n_frames(self) -> int:
        """How many frames the span holds."""
        return self.end - self.start

    @property
    def start_s(self) -> float:
        """Where the span starts, in seconds."""
        return float(self.start / Fraction(self.rate))

    @property
    def end_s(self) -> float:
        """Where the span ends, in seconds."""
        return float(self.end / Fraction(self.rate))

    @property
    def duration_s(self) -> float:
        """How long the span lasts, in seconds."""
        return float(self.n_frames / Fraction(self.rate))
