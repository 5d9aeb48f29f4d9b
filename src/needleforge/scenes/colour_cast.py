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

**Greys and white.** A picture can be mostly one *neutral* tone as well: the zebrafish tank
of the archival and animals programs is a pale grey backdrop with a few small dark fish, and
no detector or tagger word fits it ("refrigerator", "beaker"). A pixel is *neutral* when its
chroma stays under :data:`NEUTRAL_CHROMA` (0.06: a beige desk at 0.09 is not grey), and each
neutral word owns a luma band (Rec. 601, :data:`NEUTRALS`), with a gap between light grey
and white. A frame is mostly that tone when half its picture is neutral in the band. Greys
are less salient than a colour, so the negative rule differs: a negative looks that tone when
more than :data:`MAX_NEUTRAL_NEGATIVE_SHARE` of its picture is neutral in the band, or when
most of it is near-neutral (chroma under :data:`COLOURED_CHROMA`) with a median luma inside the
band widened by :data:`NEUTRAL_MARGIN` (so the beige desk, median 0.62, may not be a negative
for "mostly light-grey", while the mid-grey race film, median 0.41-0.49, may). Measured: the
tank 0.98-1.00 light grey on every frame; every other real clip at most 0.32 (a street frame), the
race film's dust cloud 0.25.

**Tints.** Murky water or a night sky is blue all over without half its pixels reaching the
chroma of a colour word: the diver's water holds 0.12-0.62 of its picture in the blue core,
and much of the rest in the blue-green gap near 180°. What a viewer sees is the picture's
overall colour, so a frame is **blue-tinted** when the *mean* colour of its picture has a hue
in the tint's core range (:data:`TINTS`) with a chroma of :data:`MIN_TINT_CHROMA` or more,
and at least :data:`MIN_TINT_SHARE` of its pixels lean that way (a chroma of
:data:`LEAN_CHROMA` or more, a hue in the core range widened by :data:`MARGIN_DEG`): a blue
wall filling half of a grey room gives a blue mean colour but is no tint. The score is that
share. Only blue is a tint word: it is the one tint the real clips hold, and a warm mean
colour is what most indoor light gives (the lectern room, a face, a desk: hues 6-33°, chroma
0.06-0.14), which no viewer calls tinted. A negative may not look tinted: a mean colour in
the widened range with a chroma of :data:`MAX_NEGATIVE_TINT_CHROMA` or more, or more than
:data:`MAX_NEGATIVE_TINT_SHARE` of its pixels leaning that way, refuses it. Measured on eight
frames a second apart of every real clip the project ships: the diver's mean colour 187-200°
at chroma 0.12-0.20 with 0.78-1.00 of the picture leaning blue, the night city (the bridge,
the towers) 189-208° at 0.15-0.21 with 0.93-0.98; every other clip a mean hue of 0-133° and
at most 0.41 leaning blue (the car seat and window behind the man in the car; the tree at a
window 0.11, the campus 0.03-0.04).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.backends.active_picture import active_picture
from needleforge.backends.base import channel_max, channel_min
from needleforge.scenes.frame_memo import kept_per_frame

#: Recorded as the tag's backend and version; bumped when the measure changes.
MEASURE_NAME = "measure-colour-cast"
MEASURE_VERSION = "3"
#: Colour word -> core hue range in degrees, ``[start, stop)``; red wraps around 0.
FAMILIES: Mapping[str, tuple[float, float]] = {
    "red": (345.0, 15.0), "orange": (15.0, 38.0), "yellow": (46.0, 68.0),
    "green": (80.0, 155.0), "blue": (195.0, 255.0), "purple": (265.0, 295.0),
    "pink": (305.0, 340.0),
}
#: Neutral word -> luma band ``[low, high)`` of its near-neutral pixels (Rec. 601, 0..1).
NEUTRALS: Mapping[str, tuple[float, float]] = {"light-grey": (0.58, 0.80), "white": (0.86, 1.01)}
#: Tint word -> core hue range (degrees) of the picture's mean colour; the word is the tag.
TINTS: Mapping[str, tuple[float, float]] = {"blue-tinted": (175.0, 250.0)}
#: The scene tags of this measure, one per colour or neutral word, and the tint words.
CAST_PREFIX = "mostly "
CAST_WORDS: frozenset[str] = frozenset(
    CAST_PREFIX + name for name in (*FAMILIES, *NEUTRALS)) | frozenset(TINTS)
#: Chroma (0..1) a pixel needs to count as coloured.
COLOURED_CHROMA = 0.15
#: Share of the picture a frame needs in one core range to be "mostly" that colour.
MIN_CAST_SHARE = 0.5
#: Degrees each side added to the core range when a negative is checked.
MARGIN_DEG = 20.0
#: Share of a negative's picture (widened range) above which it looks that colour.
MAX_NEGATIVE_SHARE = 0.15
#: Chroma (0..1) under which a pixel is neutral (grey, white or black).
NEUTRAL_CHROMA = 0.06
#: Luma added each side of a neutral band when a mostly near-neutral negative is checked.
NEUTRAL_MARGIN = 0.05
#: Share of a negative's picture neutral in the band above which it looks that tone.
MAX_NEUTRAL_NEGATIVE_SHARE = 0.3
#: Chroma (0..1) of the picture's mean colour a tinted frame needs.
MIN_TINT_CHROMA = 0.06
#: Chroma (0..1) from which a pixel leans towards a hue, and the share of the picture that
#: must lean towards a tint's (widened) range for a tinted frame.
LEAN_CHROMA = 0.03
MIN_TINT_SHARE = 0.7
#: A negative looks tinted from this chroma of its mean colour (in the widened range), or
#: with more than this share of its picture leaning that way.
MAX_NEGATIVE_TINT_CHROMA = 0.03
MAX_NEGATIVE_TINT_SHARE = 0.3
#: Pixels sampled per frame, at most (a regular grid).
_SAMPLE = 65536


def family_of(word: str) -> str:
    """The colour of a cast tag (``"mostly orange"`` -> ``"orange"``; a tint word is its own
    colour: ``"blue-tinted"``).

    Raises:
        ValueError: ``word`` is not one of :data:`CAST_WORDS`.
    """
    if word not in CAST_WORDS:
        raise ValueError(f"{word!r} is not a colour-cast word ({sorted(CAST_WORDS)})")
    return word.removeprefix(CAST_PREFIX)


def threshold(colour: str) -> float:
    """The share of the picture :func:`cast_share` must reach for a frame to be mostly
    ``colour`` (:data:`MIN_CAST_SHARE`, or :data:`MIN_TINT_SHARE` for a tint).

    Raises:
        ValueError: an unknown colour.
    """
    _known(colour)
    return MIN_TINT_SHARE if colour in TINTS else MIN_CAST_SHARE


@dataclasses.dataclass(frozen=True, slots=True)
class _Sample:
    """A frame's active picture on a regular grid: each pixel's hue (degrees, NaN when not
    coloured), the hue it leans to (NaN under :data:`LEAN_CHROMA`), chroma and luma, both in
    0..1; and the hue and chroma of its mean colour."""

    hue: npt.NDArray[np.float64]
    chroma: npt.NDArray[np.float64]
    luma: npt.NDArray[np.float64]
    lean: npt.NDArray[np.float64] = dataclasses.field(default_factory=lambda: np.zeros(0))
    mean_hue: float = 0.0
    mean_chroma: float = 0.0

    @property
    def n(self) -> int:
        return max(len(self.chroma), 1)


def _sample(image: npt.NDArray[np.uint8]) -> _Sample:
    """``image``'s active picture, sampled (:class:`_Sample`); empty when it has none.

    Raises:
        ValueError: an image that is not ``(H, W, 3)`` ``uint8``, or is empty.
    """
    _check(image)
    picture = active_picture(image)
    if picture is None:
        return _Sample(np.zeros(0), np.zeros(0), np.zeros(0))
    pixels = picture.crop(image)
    step = max(1, int(np.sqrt(pixels.shape[0] * pixels.shape[1] / _SAMPLE)))
    rgb = pixels[::step, ::step].reshape(-1, 3).astype(np.float64) / 255.0
    hue, chroma = _hue_chroma(rgb)
    mean_hue, mean_chroma = _hue_chroma(rgb.mean(axis=0, keepdims=True))
    return _Sample(np.where(chroma >= COLOURED_CHROMA, hue, np.nan), chroma,
                   rgb @ np.array([0.299, 0.587, 0.114]),
                   np.where(chroma >= LEAN_CHROMA, hue, np.nan), float(mean_hue[0]),
                   float(mean_chroma[0]))


def _check(image: npt.NDArray[np.uint8]) -> None:
    """Raise ValueError for an image that is not ``(H, W, 3)`` ``uint8``, or is empty."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 (H, W, 3) RGB; got {image.dtype} {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image shape {image.shape} is empty")


def _hue_chroma(rgb: npt.NDArray[np.float64]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The hexcone hue (degrees; 0 where grey) and the chroma of ``(N, 3)`` RGB in 0..1."""
    high, low = channel_max(rgb), channel_min(rgb)
    chroma = high - low
    r, g, b = rgb.T
    with np.errstate(divide="ignore", invalid="ignore"):
        hue = np.where(high == r, ((g - b) / chroma) % 6.0,
                       np.where(high == g, (b - r) / chroma + 2.0, (r - g) / chroma + 4.0))
    return np.where(chroma > 0, hue * 60.0, 0.0), chroma


def _in_range(hue: float, start: float, stop: float) -> bool:
    start, stop = start % 360.0, stop % 360.0
    return start <= hue < stop if start < stop else (hue >= start or hue < stop)


def _hue_share(sample: _Sample, start: float, stop: float, *, lean: bool = False) -> float:
    """The share of the sampled pixels coloured (or with ``lean``, leaning) with a hue in
    ``[start, stop)`` (degrees, may wrap)."""
    start, stop = start % 360.0, stop % 360.0
    hues = sample.lean if lean else sample.hue
    inside = ((hues >= start) & (hues < stop) if start < stop
              else (hues >= start) | (hues < stop))
    return float(inside.sum()) / sample.n


def _neutral_share(sample: _Sample, low: float, high: float) -> float:
    """The share of the sampled pixels that are neutral with a luma in ``[low, high)``."""
    inside = (sample.chroma < NEUTRAL_CHROMA) & (sample.luma >= low) & (sample.luma < high)
    return float(inside.sum()) / sample.n


def _core_share(sample: _Sample, colour: str) -> float:
    if colour in TINTS:
        start, stop = TINTS[colour]
        if sample.mean_chroma < MIN_TINT_CHROMA or not _in_range(sample.mean_hue, start, stop):
            return 0.0
        return _hue_share(sample, start - MARGIN_DEG, stop + MARGIN_DEG, lean=True)
    if colour in NEUTRALS:
        return _neutral_share(sample, *NEUTRALS[colour])
    return _hue_share(sample, *FAMILIES[colour])


def _known(colour: str) -> None:
    if colour not in FAMILIES and colour not in NEUTRALS and colour not in TINTS:
        raise ValueError(f"unknown colour {colour!r}; known: "
                         f"{sorted([*FAMILIES, *NEUTRALS, *TINTS])}")


def cast_share(image: npt.NDArray[np.uint8], colour: str) -> float:
    """The share of ``image``'s picture in ``colour``'s core hue range (a colour word) or
    neutral in its luma band (a neutral word); for a tint word, the share leaning towards its
    hues when the picture's mean colour is tinted so, else 0 (module docstring).

    Raises:
        ValueError: an unknown colour, or a bad image (see :func:`_sample`).
    """
    _known(colour)
    return _core_share(_sample(image), colour)


def mostly(image: npt.NDArray[np.uint8], colour: str) -> bool:
    """Whether the frame is mostly ``colour`` (:func:`cast_share` reaches
    :func:`threshold`)."""
    return cast_share(image, colour) >= threshold(colour)


@kept_per_frame
def negative_look(image: npt.NDArray[np.uint8], colour: str) -> str | None:
    """Why a viewer could take the frame for a "mostly ``colour``" one, or None (a negative
    must give None). A colour: more than :data:`MAX_NEGATIVE_SHARE` of it in the core range
    widened by :data:`MARGIN_DEG`. A neutral tone: more than
    :data:`MAX_NEUTRAL_NEGATIVE_SHARE` of it neutral in the band, or mostly near-neutral with
    a median luma in the band widened by :data:`NEUTRAL_MARGIN`.

    Raises:
        ValueError: an unknown colour, or a bad image (see :func:`_sample`).
    """
    _known(colour)
    sample = _sample(image)
    if colour in TINTS:
        return _tint_look(sample, colour)
    if colour in FAMILIES:
        start, stop = FAMILIES[colour]
        share = _hue_share(sample, start - MARGIN_DEG, stop + MARGIN_DEG)
        return (f"{share:.2f} of its picture near {colour}, at most {MAX_NEGATIVE_SHARE}"
                if share > MAX_NEGATIVE_SHARE else None)
    share = _core_share(sample, colour)
    if share > MAX_NEUTRAL_NEGATIVE_SHARE:
        return f"{share:.2f} of its picture {colour}, at most {MAX_NEUTRAL_NEGATIVE_SHARE}"
    greyish = sample.chroma < COLOURED_CHROMA
    low, high = NEUTRALS[colour]
    if greyish.sum() * 2 >= sample.n and greyish.any():
        median = float(np.median(sample.luma[greyish]))
        if low - NEUTRAL_MARGIN <= median < high + NEUTRAL_MARGIN:
            return (f"mostly near-neutral with a median luma {median:.2f} near the {colour} "
                    f"band [{low:.2f}, {high:.2f})")
    return None


def _tint_look(sample: _Sample, tint: str) -> str | None:
    start, stop = TINTS[tint]
    start, stop = start - MARGIN_DEG, stop + MARGIN_DEG
    if _in_range(sample.mean_hue, start, stop) and sample.mean_chroma >= MAX_NEGATIVE_TINT_CHROMA:
        return (f"its mean colour is {sample.mean_hue:.0f} degrees at chroma "
                f"{sample.mean_chroma:.3f}, near {tint} (chroma under "
                f"{MAX_NEGATIVE_TINT_CHROMA} there)")
    share = _hue_share(sample, start, stop, lean=True)
    return (f"{share:.2f} of its picture leans {tint}, at most {MAX_NEGATIVE_TINT_SHARE}"
            if share > MAX_NEGATIVE_TINT_SHARE else None)


def looks_like(image: npt.NDArray[np.uint8], colour: str) -> bool:
    """Whether a viewer could take the frame for a "mostly ``colour``" one
    (:func:`negative_look`)."""
    return negative_look(image, colour) is not None


def cast_tags(images: Sequence[npt.NDArray[np.uint8]]) -> list[tuple[str, float]]:
    """``[("mostly <colour>", smallest share)]`` when every one of a scene's keyframes
    ``images`` is mostly the same colour or neutral tone, else ``[(tint word, smallest mean
    leaning share)]`` when every one is tinted alike, else none (also for no keyframes).

    A keyframe is sampled only when every colour still possible needs it: a colour is out at
    the first keyframe that falls short, so a scene whose first keyframe is mostly no colour
    (most scenes) costs one sample, not one a keyframe. The answer is the one that measuring
    every keyframe gives.

    Raises:
        ValueError: a bad image among ``images`` (see :func:`_sample`), sampled or not.
    """
    if not images:
        return []
    for image in images:
        _check(image)
    measured: dict[int, _Sample] = {}

    def sample(index: int) -> _Sample:
        if index not in measured:
            measured[index] = _sample(images[index])
        return measured[index]

    for colour in (*FAMILIES, *NEUTRALS, *TINTS):
        smallest = math.inf
        for index in range(len(images)):
            share = _core_share(sample(index), colour)
            if share < threshold(colour):
                break
            smallest = min(smallest, share)
        else:
            return [(colour if colour in TINTS else CAST_PREFIX + colour, round(smallest, 4))]
    return []
