"""Whole-shot evidence measured on pixels: a picture that is mostly one colour.

Why: a viewer tells at a glance that a shot is bathed in one colour (a toy on an orange
backdrop under warm light, a night sky of blue glass), whatever objects it holds, and no
detector word covers it: on the real-footage desk program the Lego model had only the
tagger's "power drill" (wrong) and no question at all. Like the black-and-white measure
(:mod:`needleforge.scenes.palette`), the claim can be measured again on any other frame, so a
verifier can confirm it and refuse a negative for it.

**The measure.** On the frame's active picture (inside letterbox or pillarbox bars,
:func:`~needleforge.backends.active_picture.active_picture`), a pixel is *coloured* when its
chroma ``max(R, G, B) - min(R, G, B)`` reaches :data:`COLOURED_CHROMA` (0.15 of 255); its hue
is the usual hexcone angle. Each colour word owns a *core* hue range (:data:`FAMILIES`); the
ranges leave gaps where viewers disagree (orange-yellow near 42°, teal near 175°), and a pixel
in a gap counts for no word. A frame is **mostly** that colour when at least
:data:`MIN_CAST_SHARE` (half) of its picture's pixels are coloured with a hue in the core
range, and a scene earns the tag ``"mostly <colour>"`` when every keyframe is. The tag's
score is the smallest share over the keyframes.

A negative of such a question must not look that colour to a viewer: on every frame, the
pixels coloured with a hue in the core range *widened by* :data:`MARGIN_DEG` (20°) on each side
(so a yellow-lit bed counts against "mostly orange") stay under :data:`MAX_NEGATIVE_SHARE`.

**Measured** (three keyframes of each scene of the nine real programs, corpus seed 0): the
Lego model on its backdrop holds 0.79-0.80 orange on every frame; the next-most single-
coloured shots stay under the threshold — the night towers 0.45-0.64 blue (one frame in
three over half), the campus lawn 0.34-0.37 green, the lectern room 0.40-0.42 orange, the
tree at a window 0.23-0.25 green; the cat on its yellow-lit bed holds only 0.06-0.15 in the
orange or yellow cores but 0.8 coloured, which the widened range catches in a negative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.backends.active_picture import active_picture

#: Recorded as the tag's backend and version; bumped when the measure changes.
MEASURE_NAME = "measure-colour-cast"
MEASURE_VERSION = "1"
#: Colour word -> core hue range in degrees, ``[start, stop)``; red wraps around 0.
FAMILIES: Mapping[str, tuple[float, float]] = {
    "red": (345.0, 15.0), "orange": (15.0, 38.0), "yellow": (46.0, 68.0),
    "green": (80.0, 155.0), "blue": (195.0, 255.0), "purple": (265.0, 295.0),
    "pink": (305.0, 340.0),
}
#: The scene tags of this measure, one per colour word.
CAST_PREFIX = "mostly "
CAST_WORDS: frozenset[str] = frozenset(CAST_PREFIX + name for name in FAMILIES)
#: Chroma (0..1) a pixel needs to count as coloured.
COLOURED_CHROMA = 0.15
#: Share of the picture a frame needs in one core range to be "mostly" that colour.
MIN_CAST_SHARE = 0.5
#: Degrees each side added to the core range when a negative is checked.
MARGIN_DEG = 20.0
#: Share of a negative's picture (widened range) above which it looks that colour.
MAX_NEGATIVE_SHARE = 0.15
#: Pixels sampled per frame, at most (a regular grid).
_SAMPLE = 65536


def family_of(word: str) -> str:
    """The colour of a cast tag (``"mostly orange"`` -> ``"orange"``).

    Raises:
        ValueError: ``word`` is not one of :data:`CAST_WORDS`.
    """
    if word not in CAST_WORDS:
        raise ValueError(f"{word!r} is not a colour-cast word ({sorted(CAST_WORDS)})")
    return word.removeprefix(CAST_PREFIX)


def _hues(image: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.float64], int]:
    """The hue (degrees) of each coloured pixel of ``image``'s active picture, on a regular
    sample, and the number of pixels sampled.

    Raises:
        ValueError: an image that is not ``(H, W, 3)`` ``uint8``, or is empty.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 (H, W, 3) RGB; got {image.dtype} {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image shape {image.shape} is empty")
    picture = active_picture(image)
    if picture is None:
        return np.zeros(0), 1
    pixels = picture.crop(image)
    step = max(1, int(np.sqrt(pixels.shape[0] * pixels.shape[1] / _SAMPLE)))
    rgb = pixels[::step, ::step].reshape(-1, 3).astype(np.float64)
    high, low = rgb.max(axis=1), rgb.min(axis=1)
    chroma = high - low
    coloured = chroma >= COLOURED_CHROMA * 255.0
    r, g, b = rgb[coloured].T
    c, top = chroma[coloured], high[coloured]
    hue = np.where(top == r, ((g - b) / c) % 6.0,
                   np.where(top == g, (b - r) / c + 2.0, (r - g) / c + 4.0)) * 60.0
    return hue, len(rgb)


def _share(hues: npt.NDArray[np.float64], n: int, start: float, stop: float) -> float:
    """The share of ``n`` pixels whose hue lies in ``[start, stop)`` (degrees, may wrap)."""
    start, stop = start % 360.0, stop % 360.0
    inside = ((hues >= start) & (hues < stop) if start < stop
              else (hues >= start) | (hues < stop))
    return float(inside.sum()) / max(n, 1)


def cast_share(image: npt.NDArray[np.uint8], colour: str, *, widened: bool = False) -> float:
    """The share of ``image``'s picture coloured in ``colour``'s core hue range (or that range
    widened by :data:`MARGIN_DEG` each side).

    Raises:
        ValueError: an unknown colour, or a bad image (see :func:`_hues`).
    """
    if colour not in FAMILIES:
        raise ValueError(f"unknown colour {colour!r}; known: {sorted(FAMILIES)}")
    start, stop = FAMILIES[colour]
    if widened:
        start, stop = start - MARGIN_DEG, stop + MARGIN_DEG
    hues, n = _hues(image)
    return _share(hues, n, start, stop)


def mostly(image: npt.NDArray[np.uint8], colour: str) -> bool:
    """Whether the frame is mostly ``colour`` (:data:`MIN_CAST_SHARE` in the core range)."""
    return cast_share(image, colour) >= MIN_CAST_SHARE


def looks_like(image: npt.NDArray[np.uint8], colour: str) -> bool:
    """Whether a viewer could take the frame for a "mostly ``colour``" one: more than
    :data:`MAX_NEGATIVE_SHARE` of it in the widened range (a negative must not)."""
    return cast_share(image, colour, widened=True) > MAX_NEGATIVE_SHARE


def cast_tags(images: Sequence[npt.NDArray[np.uint8]]) -> list[tuple[str, float]]:
    """``[("mostly <colour>", smallest share)]`` when every one of a scene's keyframes
    ``images`` is mostly the same colour, else none (also for no keyframes)."""
    if not images:
        return []
    measured = [_hues(image) for image in images]
    for colour, (start, stop) in FAMILIES.items():
        shares = [_share(hues, n, start, stop) for hues, n in measured]
        if min(shares) >= MIN_CAST_SHARE:
            return [(CAST_PREFIX + colour, round(min(shares), 4))]
    return []
