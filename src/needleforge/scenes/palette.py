"""Whole-shot evidence measured on pixels: black-and-white footage.

Why: a viewer tells at a glance whether a shot is in black and white, and a program that cuts
archival film or a monochrome lab camera between colour shots offers a question no object
detector can ask ("the black-and-white scene"). Unlike a model's guess, the claim can be
checked again by the same measure on any other frame, so it is evidence a verifier can
confirm (:func:`colourless`) and a negative can be refused for.

**The measure.** A pixel's chroma is ``max(R, G, B) - min(R, G, B)`` over 255. A frame is
*colourless* when its 99th-percentile chroma is under :data:`MAX_CHROMA` (0.05): a grey
image keeps a little chroma from compression and 4:2:0 subsampling, but almost none. On the
real clips the project ships (measured a frame a second): the 1906 race film and both
fish-tank cameras stay at or under 0.02; the greyest colour footage — a street under an
overcast sky (bikes.mp4) and a coin on a white table — never goes under 0.10, so the
threshold sits at half the nearest colour frame. Black bars (letterbox) have no chroma and
do not move the 99th percentile while the picture covers more than 1 % of the frame.

A flat frame (a black screen, a fade) has no chroma either, but nobody calls it
black-and-white footage: a frame also needs a picture, its brightness spread (1st to 99th
percentile of ``max(R, G, B)``) at least :data:`MIN_CONTRAST` (0.08; the grey fish tanks
have 0.13-0.15).

A **scene** is black-and-white (:data:`BLACK_AND_WHITE`, a scene tag) when every one of its
keyframes is colourless: one colour frame (a tinted title, a cut inside the shot) is enough
to leave the word out. Sepia or tinted film has chroma and counts as colour; that is a
refusal, never a wrong claim.

**In colour.** In a program that holds black-and-white footage, a colour shot is told apart
by the same glance: a scene whose every keyframe is clearly in colour
(:func:`clearly_in_colour`, the rule a negative of a black-and-white question meets) gets
:data:`IN_COLOUR`, but only in a video where some scene is black-and-white
(:func:`in_colour_scenes`); everywhere else the word would tell nothing apart. Measured on
held-out footage: a desk program of grey lab-camera shots with a webcam shot of a man in a
T-shirt returning three times, which no detector word told apart (he is "a person", as the
grabber's hand and a robot drawn on a postcard are too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import channel_max, channel_min
from needleforge.scenes.colour_cast import CAST_WORDS
from needleforge.scenes.frame_memo import kept_per_frame

#: The scene tag a black-and-white shot gets (a term of the tables, named in questions).
BLACK_AND_WHITE = "black-and-white"
#: The scene tag a colour shot gets in a video that also holds black-and-white ones.
IN_COLOUR = "in colour"
#: Whole-shot words measured on pixels that describers may name ("a black-and-white scene",
#: "a mostly orange scene") and verifiers confirm by measuring again: this module's and the
#: colour casts of :mod:`needleforge.scenes.colour_cast`.
SHOT_WORDS: frozenset[str] = frozenset({BLACK_AND_WHITE, IN_COLOUR}) | CAST_WORDS
#: Recorded as the tag's backend and version; bumped when the measure changes.
MEASURE_NAME = "measure-palette"
MEASURE_VERSION = "2"
#: 99th-percentile chroma under which a frame has no colour (see the module doc).
MAX_CHROMA = 0.05
#: 99th-percentile chroma every frame of a negative of a black-and-white question must reach:
#: twice :data:`MAX_CHROMA`, since a viewer takes a nearly grey shot (a white cockatoo's
#: close-up, an overcast street) for black and white long before the measure does.
NEGATIVE_MIN_CHROMA = 2 * MAX_CHROMA
#: ... and the share of its pixels whose chroma reaches :data:`COLOURFUL_CHROMA`: a few
#: coloured pixels lift the 99th percentile of a white cockatoo's close-up to 0.15-0.25, yet
#: it looks black and white (0.07-0.13 of its pixels are coloured); the close-ups of a face
#: against a dark wall, the least coloured frames a viewer still sees in colour, hold
#: 0.24-0.33 (eight frames half a second apart of each real clip).
COLOURFUL_CHROMA = 0.08
NEGATIVE_MIN_COLOURFUL = 0.2
#: Brightness spread a black-and-white frame must have (a black screen has none).
MIN_CONTRAST = 0.08


def _subsampled(image: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """A regular subsample of at most ~64k pixels of an RGB ``uint8`` image: a percentile
    of a frame at a fixed cost.

    Raises:
        ValueError: an image that is not ``(H, W, 3)`` ``uint8``, or is empty.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be uint8 (H, W, 3) RGB; got {image.dtype} {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image shape {image.shape} is empty")
    step = max(1, int(np.sqrt(image.shape[0] * image.shape[1] / 65536)))
    return image[::step, ::step]


def _chroma(pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.int16]:
    """``max(R, G, B) - min(R, G, B)`` per pixel, in 0..255."""
    chroma: npt.NDArray[np.int16] = channel_max(pixels).astype(np.int16) - channel_min(pixels)
    return chroma


def chroma_p99(image: npt.NDArray[np.uint8]) -> float:
    """The 99th percentile of the pixels' chroma (0..1) of an RGB ``uint8`` image.

    Raises:
        ValueError: an image that is not ``(H, W, 3)`` ``uint8``, or is empty.
    """
    return float(np.percentile(_chroma(_subsampled(image)), 99)) / 255.0


def colourful_share(image: npt.NDArray[np.uint8]) -> float:
    """The share of an RGB ``uint8`` image's pixels whose chroma is at least
    :data:`COLOURFUL_CHROMA` (checked and subsampled like :func:`chroma_p99`)."""
    return float((_chroma(_subsampled(image)) >= COLOURFUL_CHROMA * 255.0).mean())


@kept_per_frame
def clearly_in_colour(image: npt.NDArray[np.uint8]) -> bool:
    """Whether a viewer sees the frame in colour (a negative of a black-and-white question
    must): :data:`NEGATIVE_MIN_CHROMA` and :data:`NEGATIVE_MIN_COLOURFUL` both reached."""
    return (chroma_p99(image) >= NEGATIVE_MIN_CHROMA
            and colourful_share(image) >= NEGATIVE_MIN_COLOURFUL)


def colourless(image: npt.NDArray[np.uint8]) -> bool:
    """Whether the frame shows no colour (:data:`MAX_CHROMA`)."""
    return chroma_p99(image) < MAX_CHROMA


def contrast(image: npt.NDArray[np.uint8]) -> float:
    """The brightness spread of an RGB ``uint8`` image: 1st to 99th percentile of the
    pixels' ``max(R, G, B)``, in 0..1 (checked and subsampled like :func:`chroma_p99`)."""
    low, high = np.percentile(channel_max(_subsampled(image)), [1, 99])
    return float(high - low) / 255.0


def black_and_white(image: npt.NDArray[np.uint8]) -> bool:
    """Whether the frame is a black-and-white picture: colourless, with contrast."""
    return colourless(image) and contrast(image) >= MIN_CONTRAST


def shot_words(images: Sequence[npt.NDArray[np.uint8]]) -> list[str]:
    """The whole-shot words the scene's keyframes ``images`` earn: ``["black-and-white"]``
    when every one is a black-and-white picture (:func:`black_and_white`), else none (also for
    a scene with no keyframes)."""
    if images and all(black_and_white(image) for image in images):
        return [BLACK_AND_WHITE]
    return []


def in_colour_scenes(shots: Mapping[str, tuple[Sequence[str], bool]]) -> list[str]:
    """The scenes of one video that get :data:`IN_COLOUR`, from each scene's
    ``(tags, shows colour)`` by scene id (:func:`shot_words` among the tags,
    :func:`shows_colour`): those that show colour, when some scene is black-and-white; none
    otherwise."""
    if not any(BLACK_AND_WHITE in words for words, _ in shots.values()):
        return []
    return [scene_id for scene_id, (_, colour) in shots.items() if colour]


def shows_colour(images: Sequence[npt.NDArray[np.uint8]]) -> bool:
    """Whether every one of a scene's keyframes is clearly in colour (none: False)."""
    return bool(images) and all(clearly_in_colour(image) for image in images)
