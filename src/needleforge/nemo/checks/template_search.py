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
nearly as well halved, since halving blurs the frame and the template alike. A scale
between two searched ones gets the places of both, and places whose neighbourhoods overlap
are scored in one box. ``benchmarks/instance_search.py`` runs both on the same frames: 2.3x
cheaper, no frame missed.

**Many templates, one frame**: the scales depend only on the templates' width (all the
instance check's are ``template_px`` wide), so a :class:`FramePyramid` is built once a frame
and searched for each template (:func:`match`); with a ``region`` only the windows that
overlap it are searched (the part of the frame that changed).
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


class FramePyramid:
    """One frame's grey pyramid for templates ``cols`` pixels wide, searched for any number
    of them (:func:`match`): the scales are the same for every template of that width, so
    the levels are built once, and what each search needs of a level (its half, the part of
    it to search with the mask of its textured windows for a template size, the level in
    colour) is made on first use and kept. Built for one template (``min_rows`` its rows)
    and no ``region`` it is exactly what :func:`best_match` searches. Not thread-safe: one
    frame, one thread.

    Args:
        grey: the frame in grey, float32.
        image: gives the frame in RGB; asked only to confirm a window in colour.
        settings: the search.
        cols: the templates' width.
        min_rows: the fewest rows of a template that will be searched (levels no taller
            than this are not built).
        region: ``(x0, y0, x1, y1)`` in the frame's pixels: search only the windows that
            overlap it (the part of the frame that changed since frames already searched,
            :class:`~needleforge.nemo.checks.change_gate.ChangeGate`); None: every window.
    """

    __slots__ = ("_colours", "_halves", "_image", "_parts", "_size", "levels", "region",
                 "settings")

    def __init__(self, grey: np.ndarray, image: Callable[[], np.ndarray], settings: Search,
                 *, cols: int, min_rows: int,
                 region: tuple[int, int, int, int] | None = None) -> None:
        import cv2

        self.settings, self._image, self.region = settings, image, region
        self._size = (grey.shape[1], grey.shape[0])
        #: The frame at each searched scale, largest first (each resized from the one before).
        self.levels: list[np.ndarray] = []
        small = grey
        for size in _sizes(settings, grey.shape, (min_rows, cols)):
            small = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
            self.levels.append(small)
        self._halves: dict[int, np.ndarray] = {}
        self._parts: dict[tuple[int, int, int], tuple[int, int, np.ndarray, np.ndarray]] = {}
        self._colours: dict[int, np.ndarray] = {}

    def levels_for(self, rows: int, cols: int) -> list[np.ndarray]:
        """The levels a ``cols`` x ``rows`` template is searched at (those it fits inside)."""
        count = 0
        for level in self.levels:
            if level.shape[1] <= cols or level.shape[0] <= rows:
                break
            count += 1
        return self.levels[:count]

    def half(self, level: int) -> np.ndarray:
        """Level ``level`` halved (the coarse search's image)."""
        if level not in self._halves:
            self._halves[level] = _halved(self.levels[level])
        return self._halves[level]

    def half_part(self, level: int, cols: int, rows: int
                  ) -> tuple[int, int, np.ndarray, np.ndarray]:
        """Where to slide a ``cols`` x ``rows`` template over level ``level``'s half:
        ``(x, y, part, textured)``, the part's offset in the half, the part (:meth:`crop`)
        and which of its windows are not nearly flat (:func:`_textured`)."""
        key = (level, cols, rows)
        if key not in self._parts:
            x, y, part = self.crop(self.half(level), cols, rows)
            self._parts[key] = (x, y, part, _textured(part, cols, rows))
        return self._parts[key]

    def crop(self, image: np.ndarray, cols: int, rows: int) -> tuple[int, int, np.ndarray]:
        """The part of ``image`` (the frame at some scale) holding every ``cols`` x ``rows``
        window that overlaps ``region``, and its offset ``(x, y, part)``; the whole image
        when there is no region."""
        if self.region is None:
            return 0, 0, image
        height, width = image.shape[:2]
        fx, fy = width / self._size[0], height / self._size[1]
        x0, y0, x1, y1 = self.region
        left = max(0, math.floor(x0 * fx) - cols + 1)
        right = min(width, math.ceil(x1 * fx) + cols - 1)
        top = max(0, math.floor(y0 * fy) - rows + 1)
        bottom = min(height, math.ceil(y1 * fy) + rows - 1)
        return left, top, image[top:bottom, left:right]

    def colour(self, level: int) -> np.ndarray:
        """The frame in RGB at level ``level``'s size, float32."""
        if level not in self._colours:
            import cv2

            height, width = self.levels[level].shape
            self._colours[level] = cv2.resize(np.ascontiguousarray(self._image()),
                                              (width, height),
                                              interpolation=cv2.INTER_AREA).astype(np.float32)
        return self._colours[level]


def best_match(grey: np.ndarray, image: Callable[[], np.ndarray], template: Template,
               settings: Search) -> tuple[float, Box] | None:
    """Best confirmed score of ``template`` over scales and mirrors in one frame (``grey``,
    float32; ``image`` gives it in RGB, asked only to confirm in colour), with its box: a
    :class:`FramePyramid` built for this template alone, searched by :func:`match`."""
    rows, cols = template.grey[0].shape
    return match(FramePyramid(grey, image, settings, cols=cols, min_rows=rows), template)


def match(pyramid: FramePyramid, template: Template) -> tuple[float, Box] | None:
    """Best confirmed score of ``template`` in the frame of ``pyramid``, with its box.

    At each scale the grey template (and its mirror) is slid over the grey frame; the
    best window, when it reaches ``min_score``, is confirmed in colour (the normalised
    cross-correlation of the colour template with that window), and the colour score is
    the match's. Grey structure alone lets a bright patch over a dark band pass for a
    small cat; colour tells them apart at little cost, since only candidates are
    compared in colour. Below ``min_score`` the grey score is kept (for the record).
    """
    if pyramid.settings.search == "coarse-to-fine":
        return _match_coarse(pyramid, template)
    import cv2

    rows, cols = template.grey[0].shape
    best: tuple[float, Box] | None = None
    for level, small in enumerate(pyramid.levels_for(rows, cols)):
        height, width = small.shape
        left, upper, part = pyramid.crop(small, cols, rows)
        for pattern, colour in zip(template.grey, template.colour, strict=True):
            scores = cv2.matchTemplate(part, pattern, cv2.TM_CCOEFF_NORMED)
            top, (x, y) = _best_textured(scores, part, cols, rows)
            x, y = x + left, y + upper
            if top >= pyramid.settings.min_score:
                top = _colour_score(pyramid.colour(level)[y:y + rows, x:x + cols], colour)
            if best is None or top > best[0]:
                best = (float(top), Box(x=x / width, y=y / height, w=cols / width,
                                        h=rows / height))
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


def _match_coarse(frame: FramePyramid, template: Template) -> tuple[float, Box] | None:
    """:func:`match` coarse to fine. Every other scale of the pyramid, halved, is searched
    first; the places found there are mapped onto that scale and the two beside it (an
    object between two searched scales is within one step of one), and full-resolution
    scores are computed only around them, each scale and mirror at once (:func:`_refine`:
    a scale between two searched ones gets the places of both). These are a subset of the
    windows the exhaustive search scores, on the same pixels, so a window found has the
    score the exhaustive search gives it."""
    import cv2

    h_rows, h_cols = template.half[0].shape
    pyramid = frame.levels_for(*template.grey[0].shape)
    wanted: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (mirror, level) -> places
    for level in range(0, len(pyramid), 2):
        half = frame.half(level)
        if half.shape[0] <= h_rows or half.shape[1] <= h_cols:
            break  # too small to slide over; every later scale is smaller still
        left, upper, part, textured = frame.half_part(level, h_cols, h_rows)
        for mirror, coarse_pattern in enumerate(template.half):
            coarse = cv2.matchTemplate(part, coarse_pattern, cv2.TM_CCOEFF_NORMED)
            coarse[~(textured & np.isfinite(coarse))] = -1.0
            places = [(cx + left, cy + upper) for cx, cy in _places(frame.settings, coarse)]
            if not places:
                continue
            for near in range(max(0, level - 1), min(len(pyramid), level + 2)):
                ratio = pyramid[near].shape[1] / pyramid[level].shape[1]
                wanted.setdefault((mirror, near), []).extend(
                    (round(2 * cx * ratio), round(2 * cy * ratio)) for cx, cy in places)
    best: tuple[float, Box] | None = None
    for (mirror, near), places in wanted.items():
        found = _confirm(frame, pyramid[near], near, places, template, mirror)
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


def _confirm(frame: FramePyramid, small: np.ndarray, level: int,
             places: list[tuple[int, int]], template: Template, mirror: int
             ) -> tuple[float, Box] | None:
    """The best window of ``small`` (pyramid level ``level``) near ``places``: each group
    of nearby places gives its best window, confirmed in colour when it reaches
    ``min_score``, and the best of those is the match."""
    pattern, colour = template.grey[mirror], template.colour[mirror]
    rows, cols = pattern.shape
    height, width = small.shape
    best: tuple[float, Box] | None = None
    for top, (x, y) in _refine(small, places, pattern):
        if top >= frame.settings.min_score:
            top = _colour_score(frame.colour(level)[y:y + rows, x:x + cols], colour)
        if best is None or top > best[0]:
            best = (float(top), Box(x=x / width, y=y / height, w=cols / width,
                                    h=rows / height))
    return best


def _refine(small: np.ndarray, places: list[tuple[int, int]], pattern: np.ndarray
            ) -> list[tuple[float, tuple[int, int]]]:
    """The best full-resolution score of ``pattern`` in ``small`` within :data:`REFINE_PX`
    (plus two pixels for the rounding of scales) of ``places`` (top-left corners in
    ``small``), one (score, place) for each group of places whose neighbourhoods overlap
    (scored together: one box holding them all); a group that scores no textured window
    gives nothing."""
    import cv2

    rows, cols = pattern.shape
    height, width = small.shape
    reach = REFINE_PX + 2
    boxes = []
    for px, py in sorted(set(places)):
        x0, y0 = max(0, px - reach), max(0, py - reach)
        x1, y1 = min(width - cols, px + reach), min(height - rows, py + reach)
        if x1 >= x0 and y1 >= y0:
            boxes.append([x0, y0, x1, y1])
    out = []
    for x0, y0, x1, y1 in _merged(boxes):
        region = small[y0:y1 + rows, x0:x1 + cols]
        fine = cv2.matchTemplate(region, pattern, cv2.TM_CCOEFF_NORMED)
        score, (fx, fy) = _best_textured(fine, region, cols, rows)
        if score > -1.0:
            out.append((score, (x0 + fx, y0 + fy)))
    return out


def _merged(boxes: list[list[int]]) -> list[list[int]]:
    """``boxes`` (inclusive ``[x0, y0, x1, y1]``) with every overlapping pair replaced by the
    box holding both, until none overlap."""
    merged: list[list[int]] = []
    for box in boxes:
        while True:
            hit = next((m for m in merged if box[0] <= m[2] and m[0] <= box[2]
                        and box[1] <= m[3] and m[1] <= box[3]), None)
            if hit is None:
                break
            merged.remove(hit)
            box = [min(box[0], hit[0]), min(box[1], hit[1]), max(box[2], hit[2]),
                   max(box[3], hit[3])]
        merged.append(box)
    return merged


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

    cv2.patchNaNs(scores, -1.0)  # (normalised scores are never infinite)
    for _ in range(_FLAT_TRIES):
        _, top, _, (x, y) = cv2.minMaxLoc(scores)
        if float(cv2.meanStdDev(image[y:y + rows, x:x + cols])[1][0, 0]) >= _FLAT_STD:
            return float(top), (x, y)
        scores[max(0, y - rows):y + rows, max(0, x - cols):x + cols] = -1.0
    return -1.0, (0, 0)
