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

**People are named by their clothes** (:func:`clothing_colour`, used for labels that
:func:`~needleforge.records.phrases.is_person` accepts). The centre of a person's box is
mostly face, neck and arms, which the table names orange, brown or red: "the person in
orange" then describes skin. Instead only the torso is read, skin-coloured pixels are left
out, and no colour is given ("") unless clothing clearly dominates what is left.

* **Torso window**: the central half of the box width (columns 25–75 %: the arms hanging
  beside the body and the background at the edges stay out) and, in height, from 25 % of
  the box to 60 %, but below the head and down to three heads where the box is squat. The
  head of a person facing the camera is about 0.4 box widths tall whatever the framing, so
  the window starts at least 0.5 widths below the box top (chin and neck) and reaches at
  least 1.2 widths down (three heads: the hips), within the box. On a standing figure
  (box about 3 widths tall; head to 13 %, crotch near 50 %) this is rows 25–60 %, chest to
  hips; on the waist-up boxes of talking-head footage, where the head alone is 30–40 % of
  the box (measured on the "statement" clip: fixed rows 25–60 % there were half face and
  gave no colour), it is shirt and jacket from the collar down. Faces and necks left in
  the window are removed by the skin mask. A box twice as wide as tall (someone lying down,
  a group in one box) has no window below the head, and a window under
  :data:`MIN_TORSO_PIXELS` pixels gives "": with 4:2:0 video an 8×8 window holds only 16
  chroma samples.
* **Skin mask**: Chai & Ngan's YCrCb rule (IEEE Trans. CSVT 9(4), 1999), ``133 <= Cr <= 173``
  and ``77 <= Cb <= 127`` (JPEG full-range YCbCr), with no luminance bound, so it follows
  skin from the lightest tones down through dark brown (Monk skin tones 1–9 fall inside);
  and, added here, ``S <= 0.68`` (the upper saturation of Sobottka & Pitas's HSV skin rule,
  1996): skin is never strongly saturated, while orange and most brown cloth is.
* **Verdict**: a colour is named only when non-skin pixels are at least
  :data:`MIN_CLOTHING_SHARE` (50 %) of the window — less, and the window is a bare torso, a
  face or an arm, and what is left is hair and background — and the winning name holds at
  least :data:`MIN_WINNER_SHARE` (40 %) of them; otherwise "" (expressions never use it).
  Shading and compression spread one garment over two or three names (the dark suits of
  "statement" and "carphone" are 50–73 % black, the rest grey, white shirt and tie), so a
  plain majority would be too strict; under 40 % the window is patterned cloth, background
  or another person, and no one colour describes it.

What colour alone cannot separate, and how it fails: tan, beige and muted brown cloth
(saturation under 0.68, e.g. RGB 150, 100, 60) is masked as skin, so a person in a camel
coat gets "" rather than "brown" (saturated orange and dark brown cloth are still named);
a warm-white shirt under tungsten light can fall in the mask the same way. The darkest skin
(Monk tone 10, RGB about 41, 36, 32) has the same pixels as a black suit (measured: the
suits of "statement" are RGB 34, 28, 26 to 49, 42, 41) and a bare torso of it reads
"black"; so does any skin in deep shadow, and long dark hair falling over the chest. Nothing
here separates these (a skin detector that looks at texture might). The window also assumes
the head is at the top of the box: a person cut by the top of the frame (legs only: "bikes"
at 7.6 s) is read at mid-leg, trousers and pavement, and was named "grey".
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import channel_max, channel_min
from needleforge.records import Box
from needleforge.records.phrases import COLOUR_NAMES, POSITION_NAMES, is_person

_BLACK_V, _GREY_S, _WHITE_V = 0.20, 0.20, 0.80
_PINK_S, _PINK_V, _BROWN_V, _DARK_PINK_V = 0.50, 0.70, 0.65, 0.50
#: Upper hue bounds (degrees) of the chromatic bands; red wraps around 0/360.
_HUE_BANDS: tuple[tuple[float, str], ...] = (
    (15.0, "red"), (45.0, "orange"), (70.0, "yellow"), (165.0, "green"), (255.0, "blue"),
    (290.0, "purple"), (345.0, "pink"), (360.0, "red"),
)
#: The torso window as fractions of a person's box: (top, bottom) rows, (left, right) columns.
TORSO_ROWS: tuple[float, float] = (0.25, 0.60)
TORSO_COLS: tuple[float, float] = (0.25, 0.75)
#: The window starts at least this many box widths below the box top (the head is about 0.4
#: box widths tall) and, when the box is squat, reaches this many widths down (or its bottom).
TORSO_TOP_WIDTHS, TORSO_BOTTOM_WIDTHS = 0.5, 1.2
#: Fewer torso pixels than this (8×8) give no colour.
MIN_TORSO_PIXELS = 64
#: Non-skin share of the torso window needed to name a colour.
MIN_CLOTHING_SHARE = 0.5
#: Share of the non-skin pixels the winning colour name needs.
MIN_WINNER_SHARE = 0.4
#: Chai & Ngan's skin chrominance box (Cr and Cb ranges, inclusive) and our saturation cap.
_SKIN_CR, _SKIN_CB, _SKIN_MAX_S = (133.0, 173.0), (77.0, 127.0), 0.68


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
    v = channel_max(rgb)
    chroma = v - channel_min(rgb)
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


def _check_image(image: npt.NDArray[np.uint8]) -> None:
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 (H, W, 3) RGB; got {image.dtype} {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image shape {image.shape} is empty")


def dominant_colour(
    image: npt.NDArray[np.uint8], box: Box, *, centre_frac: float = 0.5, label: str = ""
) -> str:
    """The basic colour name most pixels in the centre of ``box`` have (see module doc).

    ``image`` is an RGB ``uint8`` array of shape ``(H, W, 3)``; ``box`` is normalized. When
    ``label`` names people the colour is their clothing's, possibly ``""``
    (:func:`clothing_colour`; ``centre_frac`` is then unused). Raises ``ValueError`` for
    another shape or dtype, an empty image, or ``centre_frac`` outside ``(0, 1]``.
    """
    _check_image(image)
    if not 0 < centre_frac <= 1:
        raise ValueError(f"centre_frac = {centre_frac!r} must be in (0, 1]")
    if is_person(label):
        return clothing_colour(image, box)
    rows, cols = _pixel_window(image.shape, box, centre_frac)
    h, s, v = rgb_to_hsv(image[rows, cols].reshape(-1, 3))
    counts = np.bincount(colour_indices(h, s, v), minlength=len(COLOUR_NAMES))
    return COLOUR_NAMES[int(np.argmax(counts))]


def track_colour(looks: Sequence[tuple[npt.NDArray[np.uint8], Box]], *, label: str = "") -> str:
    """The colour a track shows on more than half of its frames (:func:`dominant_colour` on
    each ``(image, box)``), else ``""``: a word a viewer can check over the span, not one
    frame's. A jacket in shadow read "black" on one of four frames and "blue" on three (a
    held-out Segway rider, 2026-12-06) is "blue"; one frame is a majority of one.

    Raises ``ValueError`` as :func:`dominant_colour` does.
    """
    names = collections.Counter(dominant_colour(image, box, label=label) for image, box in looks)
    named = [(n, k) for n, k in names.most_common() if n]
    return named[0][0] if named and named[0][1] * 2 > len(looks) else ""


def skin_mask(pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.bool_]:
    """True where an RGB pixel (``(..., 3)`` ``uint8``) may be skin, by the module doc's rule.

    Raises ``ValueError`` when the last axis is not of length 3.
    """
    _, s, _ = rgb_to_hsv(pixels)  # also checks the shape
    rgb = pixels.astype(np.float64)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    cr = 128.0 + 0.5 * r - 0.418688 * g - 0.081312 * b
    cb = 128.0 - 0.168736 * r - 0.331264 * g + 0.5 * b
    mask: npt.NDArray[np.bool_] = ((cr >= _SKIN_CR[0]) & (cr <= _SKIN_CR[1])
                                   & (cb >= _SKIN_CB[0]) & (cb <= _SKIN_CB[1])
                                   & (s <= _SKIN_MAX_S))
    return mask


def _torso_window(shape: tuple[int, ...], box: Box) -> tuple[slice, slice]:
    """Rows and columns of the torso window of a person's ``box`` (may be empty)."""
    height, width = shape[0], shape[1]
    box_w, box_h = box.w * width, box.h * height  # pixels: the head rule needs true lengths
    top = max(TORSO_ROWS[0] * box_h, TORSO_TOP_WIDTHS * box_w)
    bottom = min(box_h, max(TORSO_ROWS[1] * box_h, TORSO_BOTTOM_WIDTHS * box_w))
    y0, y1 = math.floor(box.y * height + top), math.ceil(box.y * height + bottom)
    x0 = math.floor((box.x + TORSO_COLS[0] * box.w) * width)
    x1 = math.ceil((box.x + TORSO_COLS[1] * box.w) * width)
    return slice(max(y0, 0), min(y1, height)), slice(max(x0, 0), min(x1, width))


def clothing_colour(image: npt.NDArray[np.uint8], box: Box) -> str:
    """The colour a person in ``box`` wears, read on the torso with skin left out; ``""``
    when the window is tiny, mostly skin, or has no clear winner (see the module doc).

    ``image`` is an RGB ``uint8`` array of shape ``(H, W, 3)``; ``box`` is normalized. Raises
    ``ValueError`` for another shape or dtype, or an empty image.
    """
    _check_image(image)
    rows, cols = _torso_window(image.shape, box)
    pixels = image[rows, cols].reshape(-1, 3)
    if len(pixels) < MIN_TORSO_PIXELS:
        return ""
    cloth = pixels[~skin_mask(pixels)]
    if len(cloth) < MIN_CLOTHING_SHARE * len(pixels):
        return ""
    counts = np.bincount(colour_indices(*rgb_to_hsv(cloth)), minlength=len(COLOUR_NAMES))
    winner = int(np.argmax(counts))
    return COLOUR_NAMES[winner] if counts[winner] >= MIN_WINNER_SHARE * len(cloth) else ""


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


#: Areas this many times apart look different sizes to a viewer: twice the area is about 1.4
#: times the height and the width. At 1.2 (a tenth taller and wider) the real-footage
#: programs called one of two men side by side "the smaller person", which nobody could check.
SIZE_MIN_RATIO = 2.0


def size_ranks(tracks: Sequence[HasArea], *, min_ratio: float = SIZE_MIN_RATIO) -> list[int]:
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
