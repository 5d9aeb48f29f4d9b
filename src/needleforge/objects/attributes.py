"""Visual attributes of a tracked object: dominant colour, coarse position, size rank.

These are the words referring expressions are built from, so they favour what a person would
say over precision: eleven basic colour names, a 3×3 grid of places, and size ranks that
only separate objects whose areas differ visibly.

**Dominant colour.** The pixels of the central part of the box (``centre_frac`` of its width
and height, 50 % by default, to leave out background at the box edges) are converted to HSV
(hue in degrees, saturation and value in 0..1) and each pixel is named by the first rule
that applies; the most frequent name wins, ties going to the earlier name in
:data:`COLOUR_NAMES`.

============  =======================================================
name          rule (checked top to bottom)
============  =======================================================
black         V < 0.20
white         S < 0.20 and V >= 0.80
grey          S < 0.20
red           H < 15 or H >= 345 — but **pink** when S < 0.50 and V >= 0.70
orange        15 <= H < 45 — but **brown** when V < 0.65
yellow        45 <= H < 70
green         70 <= H < 165
blue          165 <= H < 255 (cyan counts as blue)
purple        255 <= H < 290
pink          290 <= H < 345 — but **purple** when V < 0.50
============  =======================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from needleforge.records import Box
from needleforge.records.phrases import COLOUR_NAMES, POSITION_NAMES

_BLACK_V, _GREY_S, _WHITE_V = 0.20, 0.20, 0.80
_PINK_S, _PINK_V, _BROWN_V, _DARK_PINK_V = 0.50, 0.70, 0.65, 0.50
#: Upper hue bounds (degrees) of the chromatic bands; red wraps around 0/360.
_HUE_BANDS: tuple[tuple[float, str], ...] = (
    (15.0, "red"), (45.0, "orange"), (70.0, "yellow"), (165.0, "green"), (255.0, "blue"),
    (290.0, "purple"), (345.0, "pink"), (360.0, "red"),
)


class HasArea(Protocol):
    """Anything with a mean box area (a raw track or a finished ``ObjectTrack``)."""

    @property
    def mean_area_frac(self) -> float: ...


def rgb_to_hsv(pixels: npt.NDArray[np.uint8]) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]
]:
    """Hue (degrees in [0, 360)), saturation and value (0..1) of ``(..., 3)`` RGB pixels.

    Grey pixels (no chroma) get hue 0 and saturation 0. Raises ``ValueError`` when the last
    axis is not of length 3.
    """
    if pixels.ndim < 1 or pixels.shape[-1] != 3:
        raise ValueError(f"pixels shape {pixels.shape} must end in 3 (RGB)")
    rgb = pixels.astype(np.float64) / 255.0
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    chroma = v - rgb.min(axis=-1)
    s = np.where(v > 0, chroma / np.where(v > 0, v, 1.0), 0.0)
    safe = np.where(chroma > 0, chroma, 1.0)
    h = np.where(v == r, ((g - b) / safe) % 6.0,
                 np.where(v == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))
    h = np.where(chroma > 0, h * 60.0, 0.0) % 360.0
    return h, s, v


def colour_indices(
    h: npt.NDArray[np.float64], s: npt.NDArray[np.float64], v: npt.NDArray[np.float64]
) -> npt.NDArray[np.intp]:
    """Index into :data:`COLOUR_NAMES` for each HSV pixel, by the rules in the module doc."""
    index = {name: i for i, name in enumerate(COLOUR_NAMES)}
    hue_names = np.full(h.shape, index["red"], dtype=np.intp)
    lower = 0.0
    for upper, name in _HUE_BANDS:
        hue_names = np.where((h >= lower) & (h < upper), index[name], hue_names)
        lower = upper
    red, orange, pink = (hue_names == index[n] for n in ("red", "orange", "pink"))
    hue_names = np.where(red & (s < _PINK_S) & (v >= _PINK_V), index["pink"], hue_names)
    hue_names = np.where(orange & (v < _BROWN_V), index["brown"], hue_names)
    hue_names = np.where(pink & (v < _DARK_PINK_V), index["purple"], hue_names)
    grey = np.where(v >= _WHITE_V, index["white"], index["grey"])
    named = np.where(s < _GREY_S, grey, hue_names)
    return np.where(v < _BLACK_V, index["black"], named).astype(np.intp)


def _pixel_window(shape: tuple[int, ...], box: Box, centre_frac: float) -> tuple[slice, slice]:
    """Rows and columns of the central ``centre_frac`` of ``box``; never empty."""
    height, width = shape[0], shape[1]
    inset_x = box.w * (1.0 - centre_frac) / 2.0
    inset_y = box.h * (1.0 - centre_frac) / 2.0
    x0 = min(max(math.floor((box.x + inset_x) * width), 0), width - 1)
    y0 = min(max(math.floor((box.y + inset_y) * height), 0), height - 1)
    x1 = min(max(math.ceil((box.x + box.w - inset_x) * width), x0 + 1), width)
    y1 = min(max(math.ceil((box.y + box.h - inset_y) * height), y0 + 1), height)
    return slice(y0, y1), slice(x0, x1)


def dominant_colour(image: npt.NDArray[np.uint8], box: Box, *, centre_frac: float = 0.5) -> str:
    """The basic colour name most pixels in the centre of ``box`` have (see module doc).

    ``image`` is an RGB ``uint8`` array of shape ``(H, W, 3)``; ``box`` is normalized. Raises
    ``ValueError`` for another shape or dtype, an empty image, or ``centre_frac`` outside
    ``(0, 1]``.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 (H, W, 3) RGB; got {image.dtype} {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image shape {image.shape} is empty")
    if not 0 < centre_frac <= 1:
        raise ValueError(f"centre_frac = {centre_frac!r} must be in (0, 1]")
    rows, cols = _pixel_window(image.shape, box, centre_frac)
    h, s, v = rgb_to_hsv(image[rows, cols].reshape(-1, 3))
    counts = np.bincount(colour_indices(h, s, v), minlength=len(COLOUR_NAMES))
    return COLOUR_NAMES[int(np.argmax(counts))]


def position_name(box: Box) -> str:
    """Where the box centre falls on a 3×3 grid of the frame: ``"top left"`` … ``"centre"``.

    The grid lines are at 1/3 and 2/3 of the width and height; a centre exactly on a line goes
    to the middle cell, so a box centred in the frame is ``"centre"``.
    """
    def cell(centre: float) -> int:
        if centre < 1 / 3:
            return 0
        return 2 if centre > 2 / 3 else 1

    return POSITION_NAMES[cell(box.y + box.h / 2)][cell(box.x + box.w / 2)]


def size_ranks(tracks: Sequence[HasArea], *, min_ratio: float = 1.2) -> list[int]:
    """Rank of each track by mean area, 1 for the largest, aligned with ``tracks``.

    Sizes only differ visibly when one area is more than ``min_ratio`` times the other, so
    tracks are grouped going down from the largest: a track joins the current group while the
    group's largest area is at most ``min_ratio`` times its own. A group shares one rank,
    the competition rank (1 + the number of tracks in larger groups), so "1, 1, 3" means two
    similar largest objects and a clearly smaller one. ``min_ratio = 1`` separates any two
    different areas.

    Raises ``ValueError`` when ``min_ratio < 1`` or an area is not finite and positive.
    """
    if not (math.isfinite(min_ratio) and min_ratio >= 1):
        raise ValueError(f"min_ratio = {min_ratio!r} must be >= 1")
    areas = [t.mean_area_frac for t in tracks]
    bad = [a for a in areas if not (math.isfinite(a) and a > 0)]
    if bad:
        raise ValueError(f"mean_area_frac = {bad[0]!r} must be finite and > 0")
    order = sorted(range(len(areas)), key=lambda i: (-areas[i], i))
    ranks = [0] * len(areas)
    group_top = math.inf
    rank = 0
    for position, i in enumerate(order):
        if group_top > min_ratio * areas[i]:
            group_top, rank = areas[i], position + 1
        ranks[i] = rank
    return ranks
