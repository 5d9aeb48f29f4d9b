"""Black-and-white shots, measured on pixels: real archival and lab footage against the
greyest colour footage the project ships, and frames made to sit on either side."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.errors import StudioError
from needleforge.scenes.palette import (
    BLACK_AND_WHITE,
    MAX_CHROMA,
    black_and_white,
    chroma_p99,
    colourless,
    shot_words,
)
from needleforge.studio.real_assets import sample_frames


def _frames(name: str, *, most: int = 8) -> list[npt.NDArray[np.uint8]]:
    """Frames of real clip ``name`` a second apart; skips when its package is not installed
    (the Debian and npm clips are fetched by `make test`)."""
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


@pytest.mark.parametrize("name", ["fish", "fish2", "race1906"])
def test_monochrome_cameras_and_archival_film_are_black_and_white(name: str) -> None:
    frames = _frames(name)
    assert frames and all(colourless(f) for f in frames)
    assert shot_words(frames) == [BLACK_AND_WHITE]


@pytest.mark.parametrize("name", ["bikes", "coin", "city", "statement"])
def test_the_greyest_colour_footage_is_not(name: str) -> None:
    """bikes.mp4 (an overcast street) and the coin on a white table are the clips with the
    least colour: their frames stay at least twice the threshold."""
    frames = _frames(name)
    assert min(chroma_p99(f) for f in frames) >= 2 * MAX_CHROMA
    assert shot_words(frames) == []


def test_one_colour_frame_leaves_the_word_out() -> None:
    grey = np.tile(np.linspace(20, 230, 160).astype(np.uint8)[None, :, None], (90, 1, 3))
    sepia = np.stack([grey[..., 0], (grey[..., 1] * 0.85).astype(np.uint8),
                      (grey[..., 2] * 0.65).astype(np.uint8)], axis=-1)
    assert shot_words([grey, grey]) == [BLACK_AND_WHITE]
    assert not colourless(sepia)  # tinted film counts as colour: a refusal, not a wrong claim
    assert shot_words([grey, sepia]) == []
    assert shot_words([]) == []


def test_a_black_screen_is_not_black_and_white_footage() -> None:
    black = np.zeros((90, 160, 3), dtype=np.uint8)
    assert colourless(black) and not black_and_white(black)
    assert shot_words([black]) == []


def test_black_bars_do_not_make_a_colour_picture_grey() -> None:
    frame = np.zeros((360, 640, 3), dtype=np.uint8)
    frame[45:315, :, 0] = 200  # a red picture between letterbox bars
    assert not colourless(frame)


@pytest.mark.parametrize("image", [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32),
                                   np.zeros((0, 4, 3), np.uint8)])
def test_what_is_not_an_rgb_frame_is_refused(image: npt.NDArray[np.uint8]) -> None:
    with pytest.raises(ValueError, match="image"):
        chroma_p99(image)
