"""Where a small template shows in a frame: normalised cross-correlation over scales.

The instance check (:mod:`~needleforge.nemo.checks.instance`) cuts the target object out of
its own scene as a :class:`Template` and asks :func:`best_match` for the best window of a
negative frame. Each frame is searched in grey, at every scale where an object from
``min_width`` to ``max_width`` of the frame's width becomes the template's width (steps of
``scale_step``, a pyramid: each scale resized from the one before), with the template and its
mirror image; windows of nearly flat grey (a fade, a black bar) are never a match. The best
window of a scale that reaches ``min_score`` is then compared in colour, and that score is
the match's: in grey, a bright patch over a dark band can pass for a 26-pixel cat whose crop
ends in a dark strip, in colour it does not.

**Coarse to fine** (``search="coarse-to-fine"``, the default): the same pyramid is built, but
only every other scale of it is searched first, halved (the frame and the template at half
size: a quarter of the windows, each a quarter of the pixels), with windows of nearly flat
grey masked out. Full-resolution scores are then computed only within a few pixels of the best
``coarse_peaks`` places that score at least ``min_score - coarse_margin`` (apart from each
other), at that scale and the two beside it: an object between two searched scales is within
one step of one. These are scores of the same windows on the same pixels as the exhaustive
search's (``search="exhaustive"``, every window of every scale at full resolution), so a
match can be missed but never made up; a window that matches at full resolution matches
nearly as well halved, since halving blurs the frame and the template alike.
``benchmarks/instance_search.py`` runs both on the same frames: 2.3x cheaper, no frame missed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import numpy as np

from needleforge.records import Box

#: The searches: every window at full resolution, or half resolution first.
SEARCHES = ("coarse-to-fine", "exhaustive")
#: Windows whose grey levels vary less than this (standard deviation, 0-255) never match.
_FLAT_STD = 3.0
#: Best places of a scale looked at before its windows are deemed all flat.
_FLAT_TRIES = 8
#: Full-resolution pixels searched around each coarse place (its rounding, and the blur's).
REFINE_PX = 3


@dataclasses.dataclass(frozen=True, slots=True)
class Template:
    """The object's crop at the matching width: grey for the search, colour to confirm,
    grey halved for the coarse search; each as seen and mirrored."""

    grey: tuple[np.ndarray, np.ndarray]  # float32 (rows, cols)
    colour: tuple[np.ndarray, np.ndarray]  # float32 (rows, cols, 3)
    half: tuple[np.ndarray, np.ndarray]  # float32 (rows // 2, cols // 2)

    @classmethod
    def from_colour(cls, colour: np.ndarray) -> Template | None:
        """The template of a float32 RGB crop already at the matching width; None when it
        is nearly flat grey (nothing to match)."""
        grey = grey_of(colour)
        if float(grey.std()) < _FLAT_STD:
            return None
        half = _halved(grey)
        return cls((grey, np.ascontiguousarray(grey[:, ::-1])),
                   (colour, np.ascontiguousarray(colour[:, ::-1])),
                   (half, np.ascontiguousarray(half[:, ::-1])))


@dataclasses.dataclass(frozen=True, slots=True)
class Search:
    """How :func:`best_match` searches (see the module docstring and
    :class:`~needleforge.nemo.checks.instance.InstanceMatcher`)."""

    min_score: float
    min_width: float
    max_width: float
    scale_step: float
    search: str
    coarse_margin: float
    coarse_peaks: int


def best_match(grey: np.ndarray, image: Callable[[], np.ndarray], template: Template,
           settings: Search) -> tuple[float, Box] | None:
    """Best confirmed score over scales and mirrors in one frame (``grey``, float32;
    ``image`` gives it in RGB, asked only to confirm in colour), with its box.

    At each scale the grey template (and its mirror) is slid over the grey frame; the
    best window, when it reaches ``min_score``, is confirmed in colour (the normalised
    cross-correlation of the colour template with that window), and the colour score is
    the match's. Grey structure alone lets a bright patch over a dark band pass for a
    small cat; colour tells them apart at little cost, since only candidates are
    compared in colour. Below ``min_score`` the grey score is kept (for the record).
    """
    if settings.search == "coarse-to-fine":
        return _match_coarse(grey, image, template, settings)
    import cv2

    rows, cols = template.grey[0].shape
    best: tuple[float, Box] | None = None
    small = grey
    for size in _sizes(settings, grey.shape, template.grey[0].shape):
        # Each scale from the one before (a pyramid): far less to read than the frame.
        small = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
        small_colour: np.ndarray | None = None
        for pattern, colour in zip(template.grey, template.colour, strict=True):
            scores = cv2.matchTemplate(small, pattern, cv2.TM_CCOEFF_NORMED)
            top, (x, y) = _best_textured(scores, small, cols, rows)
            if top >= settings.min_score:
                if small_colour is None:
                    small_colour = cv2.resize(np.ascontiguousarray(image()), size,
                                              interpolation=cv2.INTER_AREA
                                              ).astype(np.float32)
                top = _colour_score(small_colour[y:y + rows, x:x + cols], colour)
            if best is None or top > best[0]:
                best = (float(top), Box(x=x / size[0], y=y / size[1], w=cols / size[0],
                                        h=rows / size[1]))
    return best

def _sizes(settings: Search, shape: tuple[int, ...], template: tuple[int, ...]
       ) -> Iterator[tuple[int, int]]:
    """The frame's size (width, height) at each searched scale, largest first: the
    object widths from ``min_width`` to ``max_width`` of the frame, brought to the
    template's width."""
    height, width = shape[:2]
    rows, cols = template
    steps = math.floor(math.log(settings.max_width / settings.min_width, settings.scale_step)) + 1
    for step in range(steps):
        factor = cols / (settings.min_width * settings.scale_step ** step * width)
        size = (round(width * factor), round(height * factor))
        if size[0] <= cols or size[1] <= rows:
            return  # every later scale is smaller still
        yield size

def _match_coarse(grey: np.ndarray, image: Callable[[], np.ndarray], template: Template,
              settings: Search) -> tuple[float, Box] | None:
    """:func:`best_match` coarse to fine. The same pyramid is built; every other scale of it,
    halved, is searched first, and full-resolution scores are computed only around the
    coarse places (:func:`_refine`), at that scale and the two beside it (an object
    between two searched scales is within one step of one): a subset of the windows
    :func:`best_match` scores, on the same pixels, so a window found has the score the
    exhaustive search gives it."""
    import cv2

    h_rows, h_cols = template.half[0].shape
    pyramid, small = [], grey
    for size in _sizes(settings, grey.shape, template.grey[0].shape):
        small = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
        pyramid.append(small)
    best: tuple[float, Box] | None = None
    colours: dict[int, np.ndarray] = {}
    for level in range(0, len(pyramid), 2):
        half = _halved(pyramid[level])
        if half.shape[0] <= h_rows or half.shape[1] <= h_cols:
            break  # too small to slide over; every later scale is smaller still
        textured = _textured(half, h_cols, h_rows)
        for mirror, coarse_pattern in enumerate(template.half):
            coarse = cv2.matchTemplate(half, coarse_pattern, cv2.TM_CCOEFF_NORMED)
            coarse[~(textured & np.isfinite(coarse))] = -1.0
            places = _places(settings, coarse)
            for near in range(max(0, level - 1), min(len(pyramid), level + 2)):
                found = _confirm(settings, image, pyramid, near, places, level, template,
                                      mirror, colours)
                if found is not None and (best is None or found[0] > best[0]):
                    best = found
    return best

def _places(settings: Search, coarse: np.ndarray) -> list[tuple[int, int]]:
    """The coarse places (top-left corners) worth a full-resolution look: the best
    ``coarse_peaks`` at ``min_score - coarse_margin`` or more, apart from each other."""
    import cv2

    floor = settings.min_score - settings.coarse_margin
    places: list[tuple[int, int]] = []
    for _ in range(settings.coarse_peaks):
        _, top, _, (cx, cy) = cv2.minMaxLoc(coarse)
        if top < floor:
            break
        places.append((cx, cy))
        coarse[max(0, cy - 3):cy + 4, max(0, cx - 3):cx + 4] = -1.0
    return places

def _confirm(settings: Search, image: Callable[[], np.ndarray], pyramid: list[np.ndarray],
         level: int, places: list[tuple[int, int]], searched: int, template: Template,
         mirror: int, colours: dict[int, np.ndarray]) -> tuple[float, Box] | None:
    """The best window of ``pyramid[level]`` around ``places`` (found halved at level
    ``searched``), confirmed in colour when it reaches ``min_score``."""
    import cv2

    if not places:
        return None
    small = pyramid[level]
    pattern, colour = template.grey[mirror], template.colour[mirror]
    rows, cols = pattern.shape
    ratio = small.shape[1] / pyramid[searched].shape[1]
    top, (x, y) = _refine(small, [(round(2 * cx * ratio), round(2 * cy * ratio))
                                       for cx, cy in places], pattern)
    size = (small.shape[1], small.shape[0])
    if top >= settings.min_score:
        if level not in colours:
            colours[level] = cv2.resize(np.ascontiguousarray(image()), size,
                                        interpolation=cv2.INTER_AREA).astype(np.float32)
        top = _colour_score(colours[level][y:y + rows, x:x + cols], colour)
    return (float(top), Box(x=x / size[0], y=y / size[1], w=cols / size[0],
                            h=rows / size[1]))

def _refine(small: np.ndarray, places: list[tuple[int, int]], pattern: np.ndarray
        ) -> tuple[float, tuple[int, int]]:
    """The best full-resolution score of ``pattern`` in ``small`` within
    :data:`REFINE_PX` (plus a pixel per 10 % of scale) of ``places`` (top-left corners
    in ``small``), and its place; -1 when there is none."""
    import cv2

    rows, cols = pattern.shape
    height, width = small.shape
    reach = REFINE_PX + 2
    best: tuple[float, tuple[int, int]] = (-1.0, (0, 0))
    for px, py in places:
        x0, y0 = max(0, px - reach), max(0, py - reach)
        x1, y1 = min(width - cols, px + reach), min(height - rows, py + reach)
        if x1 >= x0 and y1 >= y0:
            region = small[y0:y1 + rows, x0:x1 + cols]
            fine = cv2.matchTemplate(region, pattern, cv2.TM_CCOEFF_NORMED)
            score, (fx, fy) = _best_textured(fine, region, cols, rows)
            if score > best[0]:
                best = (score, (x0 + fx, y0 + fy))
    return best




def _textured(half: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """Which ``cols`` x ``rows`` windows of ``half`` (by top-left corner, as
    ``matchTemplate`` places them) are not nearly flat grey. The windows that
    :func:`_best_textured` would call flat at full resolution are flat halved too; the bound
    is halved, so none that it would keep is masked here."""
    import cv2

    mean = cv2.boxFilter(half, -1, (cols, rows), borderType=cv2.BORDER_CONSTANT)
    square = cv2.boxFilter(half * half, -1, (cols, rows), borderType=cv2.BORDER_CONSTANT)
    # boxFilter centres its window; matchTemplate's (x, y) is the window's top-left corner.
    y0, x0 = rows // 2, cols // 2
    var = (square - mean * mean)[y0:y0 + half.shape[0] - rows + 1,
                                 x0:x0 + half.shape[1] - cols + 1]
    return np.asarray(var >= (_FLAT_STD / 2) ** 2)


def _colour_score(window: np.ndarray, colour: np.ndarray) -> float:
    """Normalised cross-correlation of the colour template with one same-size window."""
    import cv2

    confirmed = cv2.matchTemplate(window, colour, cv2.TM_CCOEFF_NORMED)
    return float(np.nan_to_num(confirmed[0, 0], nan=-1.0))


def _halved(image: np.ndarray) -> np.ndarray:
    """``image`` at half its size (area average), at least 1 pixel each way."""
    import cv2

    height, width = image.shape[:2]
    return cv2.resize(image, (max(1, width // 2), max(1, height // 2)),
                      interpolation=cv2.INTER_AREA)


def grey_of(image: np.ndarray) -> np.ndarray:
    """``image`` (RGB) in grey levels, float32."""
    import cv2

    return np.ascontiguousarray(cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY),
                                dtype=np.float32)


def _best_textured(scores: np.ndarray, image: np.ndarray, cols: int, rows: int
                   ) -> tuple[float, tuple[int, int]]:
    """The best score of ``matchTemplate``'s output whose window of ``image`` is not nearly
    flat grey (a flat window's score is noise), and its place; -1 when every window tried
    is flat. Flatness is checked only at the best places, not over the whole frame."""
    import cv2

    np.nan_to_num(scores, copy=False, nan=-1.0, posinf=-1.0, neginf=-1.0)
    for _ in range(_FLAT_TRIES):
        _, top, _, (x, y) = cv2.minMaxLoc(scores)
        if float(image[y:y + rows, x:x + cols].std()) >= _FLAT_STD:
            return float(top), (x, y)
        scores[max(0, y - rows):y + rows, max(0, x - cols):x + cols] = -1.0
    return -1.0, (0, 0)
