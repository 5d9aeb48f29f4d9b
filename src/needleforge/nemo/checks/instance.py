"""The instance check: look in a negative scene for the target object itself, by its pixels.

Why: the label check (:mod:`~needleforge.nemo.checks.negative_scan`) asks a detector whether a
scene shows a ``motorcycle``; a detector's recall falls off for objects under about 1 % of the
frame, and these are exactly the ones the representation pass missed. The commonest way for a
negative to show "the motorcycle" is that the *same* motorcycle appears in another shot of the same
video (a recurring prop, a cut back to a wider shot). That case needs no detector: the target's own
pixels are known, so its crop is searched for in the negative's frames.

How: the template is the target track's largest box, cut from the target scene's frame at
that box's time, its margin (``inner``) trimmed so less background comes along, resized to
``template_px`` pixels wide. Each negative frame (the probe's dense frames) is resized so
that an object ``w`` pixels wide becomes the template's width, for ``w`` from ``min_width``
to ``max_width`` of the frame width in steps of ``scale_step``, and searched in grey levels
by normalised cross-correlation (``cv2.TM_CCOEFF_NORMED``), with the template and its mirror
image; windows of nearly flat grey (a fade, a black bar) are never a match. The best window
of each scale that reaches ``min_score`` is then compared in colour, and that score is the
match's: in grey, a bright patch over a dark band can pass for a 26-pixel cat whose crop
ends in a dark strip, in colour it does not. The best score at or above ``min_score`` is a
:class:`~needleforge.records.Sighting` of the target's label at that time and place.

**Coarse to fine** (``search="coarse-to-fine"``, the default): at each scale the grey search
first runs at half resolution (the frame and the template halved: a quarter of the windows,
each a quarter of the pixels), with windows of nearly flat grey masked out. Only where the
coarse score reaches ``min_score - coarse_margin`` (the best ``coarse_peaks`` places, apart
from each other) is the full-resolution score computed, in a few pixels around the place.
A window that scores ``min_score`` at full resolution scores at least as well halved, less a
little (halving blurs both alike), so the matches found are those of the exhaustive search
(``search="exhaustive"``, every window at full resolution), at about a fifth of the cost;
``benchmarks/instance_search.py`` measures both on the same pairs.

What it cannot do: find the object from another side, under other light or deformed; a
different object of the same label is the label check's job. Neither can it see an object
narrower than ``min_width`` (26 pixels of a 640-pixel frame, after the margin trim). On the
studio corpus, where a label always comes from one cut-out, it finds the small same-label
objects the detector misses: over studio seeds 0-2 (8 episodes each, a frame a second, every
object target against every candidate negative) it found 55 of 56 hidden same-object
appearances at the 0.8 threshold, with 1 false alarm in 259 clean negatives (5 at 0.75,
21 at 0.7); a false alarm only costs a negative, a miss costs a wrong answer.

**Scans are kept** like the label check's: one :class:`~needleforge.records.SceneScan` per
(target, scene) under :meth:`InstanceMatcher.key_for`, a key naming the object, its
template box and the matcher's settings, so it is a fact about two pieces of video that
stays true however often stage 2 or expand runs.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from needleforge.backends.base import Keyframe
from needleforge.records import Box, ObjectTrack, Scene, SceneScan, Sighting, TimedBox
from needleforge.records.phrases import normalize

#: Decodes a scene's frames (the probe's dense frames).
FrameSource = Callable[[Scene], Sequence[Keyframe]]
#: Decodes the frame of ``scene`` shown at ``t_s`` (or the nearest inside it), None if none.
FrameAt = Callable[[Scene, float], Keyframe | None]

#: Windows whose grey levels vary less than this (standard deviation, 0-255) never match.
_FLAT_STD = 3.0
#: A template narrower or lower than this many pixels of the target frame is not usable.
_MIN_CROP_PX = 8
#: Best places of a scale looked at before its windows are deemed all flat.
_FLAT_TRIES = 8
#: The instance searches: every window at full resolution, or half resolution first.
SEARCHES = ("coarse-to-fine", "exhaustive")
#: Full-resolution pixels searched around each coarse place (its rounding, and the blur's).
_REFINE_PX = 3
#: Every instance scan's key starts with this; label scans' keys never do.
INSTANCE_KEY_PREFIX = "instance "


def is_instance_key(probe_key: str) -> bool:
    """Whether a stored scan's ``probe_key`` is an instance check's (else a label check's)."""
    return probe_key.startswith(INSTANCE_KEY_PREFIX)


@dataclasses.dataclass(slots=True)
class InstanceCost:
    """What the instance check spent: (target, scene) pairs matched, frames, seconds."""

    pairs: int = 0
    frames: int = 0
    seconds: float = 0.0
    reused: int = 0  #: pairs answered from stored scans
    unusable: int = 0  #: targets whose template was too small or flat to search for


@dataclasses.dataclass(frozen=True, slots=True)
class _Template:
    """The target's crop at ``template_px`` wide: grey for the search, colour to confirm;
    each as seen and mirrored."""

    grey: tuple[np.ndarray, np.ndarray]  # float32 (rows, cols)
    colour: tuple[np.ndarray, np.ndarray]  # float32 (rows, cols, 3)
    half: tuple[np.ndarray, np.ndarray]  # grey at half the size, for the coarse search


class InstanceMatcher:
    """Finds a tracked object's own appearance in other scenes (see the module docstring).

    Args:
        frames: the negative scenes' frames (share the label probe's to decode once).
        frame_at: the target frame at a box's time, for the template.
        min_score: normalised cross-correlation at or above which the object is seen.
        template_px: template width in pixels (the matching resolution).
        min_width, max_width: object widths searched, as fractions of the frame width.
        scale_step: ratio between successive searched widths (> 1).
        inner: fraction of the box trimmed off each side for the template.
        search: ``"coarse-to-fine"`` or ``"exhaustive"`` (see the module docstring).
        coarse_margin: how far under ``min_score`` a coarse place may score and still be
            searched at full resolution.
        coarse_peaks: most coarse places searched at full resolution per scale and mirror.
        frames_spec: how ``frames`` samples, for :meth:`key_for`.
        on_close: called by :meth:`close` (e.g. to close the files ``frame_at`` holds open).

    Raises:
        ValueError: a setting out of range.
    """

    def __init__(self, frames: FrameSource, frame_at: FrameAt, *, min_score: float = 0.8,
                 template_px: int = 24, min_width: float = 0.04, max_width: float = 0.5,
                 scale_step: float = 1.1, inner: float = 0.1,
                 search: str = "coarse-to-fine", coarse_margin: float = 0.2,
                 coarse_peaks: int = 8, frames_spec: str = "custom",
                 on_close: Callable[[], None] | None = None) -> None:
        checks = (("min_score", 0.0 < min_score <= 1.0),
                  ("search", search in SEARCHES),
                  ("coarse_margin", 0.0 <= coarse_margin < 1.0),
                  ("coarse_peaks", 1 <= coarse_peaks <= 64),
                  ("template_px", 8 <= template_px <= 256),
                  ("min_width", 0.0 < min_width <= max_width),
                  ("max_width", min_width <= max_width <= 1.0),
                  ("scale_step", 1.0 < scale_step <= 2.0),
                  ("inner", 0.0 <= inner < 0.5))
        bad = [name for name, ok in checks if not ok]
        if bad:
            raise ValueError(f"InstanceMatcher: {', '.join(bad)} out of range (min_score "
                             f"{min_score!r}, template_px {template_px!r}, widths "
                             f"{min_width!r}-{max_width!r}, scale_step {scale_step!r}, "
                             f"inner {inner!r}, search {search!r} (one of "
                             f"{', '.join(SEARCHES)}), coarse_margin {coarse_margin!r}, "
                             f"coarse_peaks {coarse_peaks!r})")
        self._frames, self._frame_at, self._on_close = frames, frame_at, on_close
        self.min_score, self.template_px = min_score, template_px
        self.min_width, self.max_width = min_width, max_width
        self.scale_step, self.inner = scale_step, inner
        self.search, self.coarse_margin, self.coarse_peaks = search, coarse_margin, coarse_peaks
        # Scans of the exhaustive search keep the keys they had before there was another.
        coarse = ("" if search == "exhaustive" else
                  f" coarse/2 -{coarse_margin:g} peaks {coarse_peaks} +-{_REFINE_PX}px")
        #: The matcher's settings; every scan key ends with it.
        self.spec = (f"ncc grey tpl {template_px}px widths {min_width:g}-{max_width:g} "
                     f"x{scale_step:g} inner {inner:g} min {min_score:g}{coarse} "
                     f"frames[{frames_spec}]")
        self._templates: dict[str, _Template | None] = {}
        self._scans: dict[tuple[str, str], SceneScan] = {}
        self._new: list[tuple[str, str]] = []
        self.cost = InstanceCost()

    def close(self) -> None:
        """Release what the frame sources hold open (see ``on_close``)."""
        if self._on_close is not None:
            self._on_close()

    def key_for(self, track: ObjectTrack) -> str:
        """The scan key of ``track``: its id, the template box (time and place), the
        settings."""
        box = _template_box(track)
        place = f"{box.box.x:.4f},{box.box.y:.4f},{box.box.w:.4f},{box.box.h:.4f}"
        return f"{INSTANCE_KEY_PREFIX}{track.object_id}@{box.t_s:.3f} [{place}] {self.spec}"

    def owns(self, scan: SceneScan) -> bool:
        """Whether ``scan`` was made by a matcher with these settings."""
        return is_instance_key(scan.probe_key) and scan.probe_key.endswith(self.spec)

    def preload(self, scans: Iterable[SceneScan]) -> int:
        """Take earlier scans made with these settings (others are ignored); returns how
        many were taken."""
        taken = 0
        for scan in scans:
            pair = (scan.probe_key, scan.scene_id)
            if self.owns(scan) and pair not in self._scans:
                self._scans[pair] = scan
                taken += 1
        return taken

    def new_scans(self) -> list[SceneScan]:
        """Scans made since the last call, in the order made; the caller stores them."""
        out = [self._scans[pair] for pair in self._new]
        self._new.clear()
        return out

    def seen(self, scene: Scene, track: ObjectTrack, *, target_scene: Scene) -> Sighting | None:
        """The best match of ``track`` (an object of ``target_scene``) in ``scene`` at or
        above ``min_score``, as a sighting of its label; None when there is none or the
        template is unusable.

        Raises:
            ValueError: ``scene`` is the target's own scene.
            MediaError: a video cannot be decoded (raised by the frame sources).
        """
        if scene.scene_id == track.scene_id:
            raise ValueError(f"instance check of {track.object_id} asked about its own scene "
                             f"{scene.scene_id}")
        key = self.key_for(track)
        scan = self._scans.get((key, scene.scene_id))
        if scan is not None:
            self.cost.reused += 1
        else:
            template = self._template(track, target_scene)
            if template is None:
                return None
            scan = self._scan(scene, track, key, template)
        return scan.sightings[0] if scan.sightings else None

    def best_in(self, image: np.ndarray, track: ObjectTrack, *, target_scene: Scene
                ) -> tuple[float, Box] | None:
        """The best score of ``track``'s template in one RGB frame and its box, at or above
        ``min_score`` or not (nothing is kept); None when the template is unusable, or when
        the coarse-to-fine search finds no place within ``coarse_margin`` of ``min_score``.
        For measuring the search (``benchmarks/instance_search.py``); :meth:`seen` is the
        check.

        Raises:
            MediaError: the target frame cannot be decoded (raised by ``frame_at``).
        """
        template = self._template(track, target_scene)
        return None if template is None else self._match(image, template)

    def _template(self, track: ObjectTrack, target_scene: Scene) -> _Template | None:
        if track.object_id in self._templates:
            return self._templates[track.object_id]
        import cv2

        timed = _template_box(track)
        frame = self._frame_at(target_scene, timed.t_s)
        template = None
        if frame is not None:
            height, width = frame.image.shape[:2]
            box, trim = timed.box, self.inner
            x0, x1 = round((box.x + trim * box.w) * width), round((box.x + (1 - trim) * box.w)
                                                                  * width)
            y0, y1 = round((box.y + trim * box.h) * height), round((box.y + (1 - trim) * box.h)
                                                                   * height)
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
            if x1 - x0 >= _MIN_CROP_PX and y1 - y0 >= _MIN_CROP_PX:
                rows = max(4, round(self.template_px * (y1 - y0) / (x1 - x0)))
                colour = cv2.resize(np.ascontiguousarray(frame.image[y0:y1, x0:x1]),
                                    (self.template_px, rows),
                                    interpolation=cv2.INTER_AREA).astype(np.float32)
                grey = _grey(colour)
                if float(grey.std()) >= _FLAT_STD:
                    half = _halved(grey)
                    template = _Template(
                        (grey, np.ascontiguousarray(grey[:, ::-1])),
                        (colour, np.ascontiguousarray(colour[:, ::-1])),
                        (half, np.ascontiguousarray(half[:, ::-1])))
        if template is None:
            self.cost.unusable += 1
        self._templates[track.object_id] = template
        return template

    def _scan(self, scene: Scene, track: ObjectTrack, key: str, template: _Template
              ) -> SceneScan:
        started = time.perf_counter()
        frames = self._frames(scene)
        best: tuple[float, float, Box] | None = None
        for frame in frames:
            found = self._match(frame.image, template)
            if found is not None and (best is None or found[0] > best[0]):
                best = (found[0], frame.t_s, found[1])
        sightings: tuple[Sighting, ...] = ()
        if best is not None and best[0] >= self.min_score:
            sightings = (Sighting(scene.scene_id, normalize(track.tag), min(best[0], 1.0),
                                  best[1], best[2]),)
        scan = SceneScan(scene.scene_id, key, len(frames), sightings)
        self._scans[(key, scene.scene_id)] = scan
        self._new.append((key, scene.scene_id))
        self.cost.pairs += 1
        self.cost.frames += len(frames)
        self.cost.seconds += time.perf_counter() - started
        return scan

    def _match(self, image: np.ndarray, template: _Template) -> tuple[float, Box] | None:
        """Best confirmed score over scales and mirrors in one RGB frame, with its box.

        At each scale the grey template (and its mirror) is slid over the grey frame; the
        best window, when it reaches ``min_score``, is confirmed in colour (the normalised
        cross-correlation of the colour template with that window), and the colour score is
        the match's. Grey structure alone lets a bright patch over a dark band pass for a
        small cat; colour tells them apart at little cost, since only candidates are
        compared in colour. Below ``min_score`` the grey score is kept (for the record).
        """
        if self.search == "coarse-to-fine":
            return self._match_coarse(image, template)
        import cv2

        grey = _grey(image)
        rows, cols = template.grey[0].shape
        best: tuple[float, Box] | None = None
        small = grey
        for size in self._sizes(grey.shape, template.grey[0].shape):
            # Each scale from the one before (a pyramid): far less to read than the frame.
            small = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
            small_colour: np.ndarray | None = None
            for pattern, colour in zip(template.grey, template.colour, strict=True):
                scores = cv2.matchTemplate(small, pattern, cv2.TM_CCOEFF_NORMED)
                top, (x, y) = _best_textured(scores, small, cols, rows)
                if top >= self.min_score:
                    if small_colour is None:
                        small_colour = cv2.resize(np.ascontiguousarray(image), size,
                                                  interpolation=cv2.INTER_AREA
                                                  ).astype(np.float32)
                    top = _colour_score(small_colour[y:y + rows, x:x + cols], colour)
                if best is None or top > best[0]:
                    best = (float(top), Box(x=x / size[0], y=y / size[1], w=cols / size[0],
                                            h=rows / size[1]))
        return best

    def _sizes(self, shape: tuple[int, ...], template: tuple[int, ...]
               ) -> Iterator[tuple[int, int]]:
        """The frame's size (width, height) at each searched scale, largest first: the
        object widths from ``min_width`` to ``max_width`` of the frame, brought to the
        template's width."""
        height, width = shape[:2]
        rows, cols = template
        steps = math.floor(math.log(self.max_width / self.min_width, self.scale_step)) + 1
        for step in range(steps):
            factor = cols / (self.min_width * self.scale_step ** step * width)
            size = (round(width * factor), round(height * factor))
            if size[0] <= cols or size[1] <= rows:
                return  # every later scale is smaller still
            yield size

    def _match_coarse(self, image: np.ndarray, template: _Template
                      ) -> tuple[float, Box] | None:
        """:meth:`_match` coarse to fine. The same pyramid is built; every other scale of it,
        halved, is searched first, and full-resolution scores are computed only around the
        coarse places (:meth:`_refine`), at that scale and the two beside it (an object
        between two searched scales is within one step of one): a subset of the windows
        :meth:`_match` scores, on the same pixels, so a window found has the score the
        exhaustive search gives it."""
        import cv2

        grey = _grey(image)
        h_rows, h_cols = template.half[0].shape
        pyramid, small = [], grey
        for size in self._sizes(grey.shape, template.grey[0].shape):
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
                places = self._places(coarse)
                for near in range(max(0, level - 1), min(len(pyramid), level + 2)):
                    found = self._confirm(image, pyramid, near, places, level, template,
                                          mirror, colours)
                    if found is not None and (best is None or found[0] > best[0]):
                        best = found
        return best

    def _places(self, coarse: np.ndarray) -> list[tuple[int, int]]:
        """The coarse places (top-left corners) worth a full-resolution look: the best
        ``coarse_peaks`` at ``min_score - coarse_margin`` or more, apart from each other."""
        import cv2

        floor = self.min_score - self.coarse_margin
        places: list[tuple[int, int]] = []
        for _ in range(self.coarse_peaks):
            _, top, _, (cx, cy) = cv2.minMaxLoc(coarse)
            if top < floor:
                break
            places.append((cx, cy))
            coarse[max(0, cy - 3):cy + 4, max(0, cx - 3):cx + 4] = -1.0
        return places

    def _confirm(self, image: np.ndarray, pyramid: list[np.ndarray], level: int,
                 places: list[tuple[int, int]], searched: int, template: _Template,
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
        top, (x, y) = self._refine(small, [(round(2 * cx * ratio), round(2 * cy * ratio))
                                           for cx, cy in places], pattern)
        size = (small.shape[1], small.shape[0])
        if top >= self.min_score:
            if level not in colours:
                colours[level] = cv2.resize(np.ascontiguousarray(image), size,
                                            interpolation=cv2.INTER_AREA).astype(np.float32)
            top = _colour_score(colours[level][y:y + rows, x:x + cols], colour)
        return (float(top), Box(x=x / size[0], y=y / size[1], w=cols / size[0],
                                h=rows / size[1]))

    def _refine(self, small: np.ndarray, places: list[tuple[int, int]], pattern: np.ndarray
                ) -> tuple[float, tuple[int, int]]:
        """The best full-resolution score of ``pattern`` in ``small`` within
        :data:`_REFINE_PX` (plus a pixel per 10 % of scale) of ``places`` (top-left corners
        in ``small``), and its place; -1 when there is none."""
        import cv2

        rows, cols = pattern.shape
        height, width = small.shape
        reach = _REFINE_PX + 2
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


def _template_box(track: ObjectTrack) -> TimedBox:
    """The track's largest box (the earliest of equals): the most pixels to match with."""
    return max(track.boxes, key=lambda b: (b.box.w * b.box.h, -b.t_s))


def _grey(image: np.ndarray) -> np.ndarray:
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
