"""Attributes: colour names on synthetic images, HSV conversion, 3x3 positions, size ranks."""

from __future__ import annotations

import colorsys
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from needleforge.objects import (
    COLOUR_NAMES,
    dominant_colour,
    position_name,
    rgb_to_hsv,
    size_ranks,
)
from needleforge.objects.attributes import track_colour
from needleforge.records import Box

SWATCHES = {
    "red": (220, 20, 30), "orange": (255, 140, 0), "yellow": (250, 220, 30),
    "green": (30, 160, 60), "blue": (30, 60, 200), "purple": (120, 40, 160),
    "pink": (255, 105, 180), "brown": (120, 70, 30), "black": (10, 10, 10),
    "white": (245, 245, 245), "grey": (128, 128, 128),
}
MORE = [((255, 182, 193), "pink"), ((0, 200, 200), "blue"), ((139, 0, 0), "red"),
        ((100, 0, 100), "purple"), ((255, 215, 0), "yellow"), ((192, 192, 192), "grey"),
        ((60, 60, 60), "grey"), ((30, 30, 35), "black"), ((0, 100, 0), "green")]


def _square_on(background: tuple[int, int, int], square: tuple[int, int, int]) -> np.ndarray:
    """A 90x160 frame of ``background`` with ``square`` filling pixels 30..60 x 40..100."""
    image = np.empty((90, 160, 3), dtype=np.uint8)
    image[:] = background
    image[30:60, 40:100] = square
    return image


def test_swatches_cover_every_colour_name() -> None:
    assert sorted(SWATCHES) == sorted(COLOUR_NAMES)


@pytest.mark.parametrize(("name", "rgb"), [*SWATCHES.items(), *((n, c) for c, n in MORE)])
def test_a_coloured_square_is_named_by_its_colour(name: str, rgb: tuple[int, int, int]) -> None:
    background = (0, 0, 0) if name != "black" else (255, 255, 255)
    # The box is larger than the square (background at its edges): the centre region decides.
    box = Box(x=30 / 160, y=22 / 90, w=80 / 160, h=46 / 90)
    assert dominant_colour(_square_on(background, rgb), box) == name


def test_the_majority_of_the_centre_wins_and_ties_follow_the_name_order() -> None:
    image = np.zeros((10, 10, 3), dtype=np.uint8)
    image[:, :5] = SWATCHES["blue"]
    image[:, 5:] = SWATCHES["red"]
    assert dominant_colour(image, Box(x=0, y=0, w=1, h=1)) == "red"  # 50/50: red comes first
    assert dominant_colour(image, Box(x=0, y=0, w=0.6, h=1), centre_frac=1.0) == "blue"


def test_tiny_boxes_still_read_a_pixel() -> None:
    image = _square_on((0, 0, 0), SWATCHES["green"])
    assert dominant_colour(image, Box(x=0.5, y=0.5, w=1e-4, h=1e-4)) == "green"
    assert dominant_colour(image, Box(x=0.9999, y=0.9999, w=1e-4, h=1e-4)) == "black"


@pytest.mark.parametrize(
    ("image", "kwargs", "message"),
    [
        (np.zeros((4, 4), dtype=np.uint8), {}, "must be uint8"),
        (np.zeros((4, 4, 3), dtype=np.float32), {}, "must be uint8"),
        (np.zeros((0, 4, 3), dtype=np.uint8), {}, "is empty"),
        (np.zeros((4, 4, 3), dtype=np.uint8), {"centre_frac": 0.0}, "centre_frac = 0.0"),
    ],
)
def test_dominant_colour_rejects_bad_input(image: np.ndarray, kwargs: dict[str, float],
                                           message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        dominant_colour(image, Box(x=0, y=0, w=1, h=1), **kwargs)


@given(st.lists(st.tuples(*[st.integers(0, 255)] * 3), min_size=1, max_size=50))
def test_rgb_to_hsv_matches_colorsys(pixels: list[tuple[int, int, int]]) -> None:
    h, s, v = rgb_to_hsv(np.array(pixels, dtype=np.uint8))
    for k, (r, g, b) in enumerate(pixels):
        eh, es, ev = colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)
        assert s[k] == pytest.approx(es) and v[k] == pytest.approx(ev)
        diff = abs(h[k] - eh * 360.0) % 360.0
        assert min(diff, 360.0 - diff) == pytest.approx(0.0, abs=1e-6)
        assert 0.0 <= h[k] < 360.0


@pytest.mark.parametrize(
    ("box", "name"),
    [
        (Box(x=0.0, y=0.0, w=0.1, h=0.1), "top left"),
        (Box(x=0.45, y=0.0, w=0.1, h=0.1), "top"),
        (Box(x=0.9, y=0.0, w=0.1, h=0.1), "top right"),
        (Box(x=0.0, y=0.45, w=0.1, h=0.1), "left"),
        (Box(x=0.25, y=0.25, w=0.5, h=0.5), "centre"),
        (Box(x=0.0, y=0.0, w=1.0, h=1.0), "centre"),
        (Box(x=0.9, y=0.45, w=0.1, h=0.1), "right"),
        (Box(x=0.0, y=0.9, w=0.1, h=0.1), "bottom left"),
        (Box(x=0.45, y=0.9, w=0.1, h=0.1), "bottom"),
        (Box(x=0.8, y=0.8, w=0.2, h=0.2), "bottom right"),
        (Box(x=0.0, y=0.0, w=2 / 3, h=2 / 3), "centre"),  # centre exactly on the 1/3 lines
    ],
)
def test_position_names(box: Box, name: str) -> None:
    assert position_name(box) == name


@dataclass(frozen=True)
class _Area:
    mean_area_frac: float


def test_size_ranks_group_similar_areas() -> None:
    tracks = [_Area(a) for a in (0.1, 0.3, 0.29, 0.05)]
    assert size_ranks(tracks) == [3, 1, 1, 3]
    # Two people side by side, one box a tenth taller and wider: no size word between them.
    assert size_ranks([_Area(0.121), _Area(0.1)]) == [1, 1]
    assert size_ranks([_Area(0.21), _Area(0.1)]) == [1, 2]
    assert size_ranks(tracks, min_ratio=1.2) == [3, 1, 1, 4]
    assert size_ranks(tracks, min_ratio=1.0) == [3, 1, 2, 4]
    assert size_ranks([_Area(0.2), _Area(0.2)], min_ratio=1.0) == [1, 1]
    assert size_ranks([]) == []


def test_size_ranks_reject_bad_input() -> None:
    with pytest.raises(ValueError, match=re.escape("min_ratio = 0.5")):
        size_ranks([_Area(0.1)], min_ratio=0.5)
    with pytest.raises(ValueError, match=re.escape("mean_area_frac = 0.0")):
        size_ranks([_Area(0.0)])


def test_a_track_is_named_by_the_colour_most_of_its_frames_show() -> None:
    """Three frames of a blue jacket and one in shadow (black): blue; a split: no word."""
    box = Box(x=0.0, y=0.0, w=1.0, h=1.0)
    blue = np.full((40, 40, 3), (30, 40, 150), np.uint8)
    shadow = np.full((40, 40, 3), (20, 22, 35), np.uint8)
    red = np.full((40, 40, 3), (200, 20, 20), np.uint8)
    assert dominant_colour(shadow, box) == "black" and dominant_colour(blue, box) == "blue"
    assert track_colour([(shadow, box), (blue, box), (blue, box), (blue, box)]) == "blue"
    assert track_colour([(blue, box), (shadow, box)]) == ""
    assert track_colour([(blue, box), (red, box), (shadow, box)]) == ""
    assert track_colour([(red, box)]) == "red"
    assert track_colour([]) == ""
    with pytest.raises(ValueError, match="uint8"):
        track_colour([(blue.astype(np.float32), box)])  # type: ignore[list-item]
