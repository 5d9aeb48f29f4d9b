"""A picture mostly one colour, measured on pixels: the real clip that is (the Lego model on
its orange backdrop) against every other real clip the project ships, and frames made to sit
on either side of the thresholds and the hue gaps."""

from __future__ import annotations

import colorsys

import numpy as np
import numpy.typing as npt
import pytest

from needleforge.errors import StudioError
from needleforge.scenes import colour_cast as cc
from needleforge.scenes.colour_cast import (
    CAST_WORDS,
    MIN_CAST_SHARE,
    MIN_TINT_SHARE,
    cast_share,
    cast_tags,
    family_of,
    looks_like,
    mostly,
    negative_look,
    threshold,
)
from needleforge.studio.real_assets import REAL_SOURCES, sample_frames


def _frames(name: str, *, most: int = 8) -> list[npt.NDArray[np.uint8]]:
    """Frames of real clip ``name`` a second apart; skips when its package is not installed
    (the Debian and npm clips are fetched by `make test`)."""
    try:
        return sample_frames(name, most=most)
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")


def _flat(hue_deg: float, *, size: tuple[int, int] = (90, 160), sat: float = 0.8,
          val: float = 0.8) -> npt.NDArray[np.uint8]:
    """A frame of one colour given by its hue (degrees), saturation and value."""
    r, g, b = colorsys.hsv_to_rgb(hue_deg / 360.0, sat, val)
    return np.tile(np.array([r, g, b]) * 255, (*size, 1)).round().astype(np.uint8)


def test_the_lego_model_on_its_backdrop_is_mostly_orange() -> None:
    frames = _frames("lego")
    assert all(mostly(f, "orange") for f in frames)
    [(word, share)] = cast_tags(frames)
    assert word == "mostly orange" and 0.7 <= share <= 0.9


#: The real clips of the zebrafish tank: a pale grey backdrop with a few small dark fish.
TANKS = ("fish", "fish2")


#: The real clips tinted blue all over: murky water, and a city at night.
TINTED = ("city", "diver")


@pytest.mark.parametrize("name", sorted(set(REAL_SOURCES) - {"lego", *TANKS, *TINTED}))
def test_no_other_real_clip_is_mostly_one_colour(name: str) -> None:
    """The nearest are the lectern room (orange 0.38-0.40) and the car seat and window behind
    the man in the car (0.30-0.41 of the picture leaning blue, under the tint's 0.7)."""
    assert cast_tags(_frames(name)) == []


@pytest.mark.parametrize("name", TINTED)
def test_the_diver_and_the_night_city_are_blue_tinted(name: str) -> None:
    """Neither is half blue by the colour words' chroma (the diver's water 0.12-0.62, the
    towers 0.43 or less on seven frames of eight), but the whole picture leans blue."""
    frames = _frames(name)
    assert not all(mostly(f, "blue") for f in frames)
    assert all(mostly(f, "blue-tinted") for f in frames)
    [(word, share)] = cast_tags(frames)
    assert word == "blue-tinted" and share >= 0.75


def test_what_may_stand_beside_a_blue_tinted_scene() -> None:
    """The tree at a window and the campus lawn may be its negatives; the man in the car,
    with a blue seat and window behind him, may not; the diver may not serve a question
    about the mostly blue towers, nor the towers one about the diver."""
    for name in ("tree", "pedestrians", "lego", "race1906"):
        assert not any(looks_like(f, "blue-tinted") for f in _frames(name)), name
    car = _frames("carphone")
    assert all(looks_like(f, "blue-tinted") for f in car)
    assert "leans blue-tinted" in (negative_look(car[0], "blue-tinted") or "")
    assert all(looks_like(f, "blue") for f in _frames("diver"))
    assert all(looks_like(f, "blue-tinted") for f in _frames("city"))


@pytest.mark.parametrize("name", TANKS)
def test_the_zebrafish_tank_is_mostly_light_grey(name: str) -> None:
    frames = _frames(name)
    assert all(mostly(f, "light-grey") for f in frames)
    [(word, share)] = cast_tags(frames)
    assert word == "mostly light-grey" and share >= 0.95


def test_the_mid_grey_race_film_may_be_a_negative_for_light_grey_but_the_beige_desk_not() -> None:
    """The 1906 race film is grey too, but darker and textured (median luma under 0.5): a
    viewer does not take it for the pale tank. The desk under the coin is near-neutral beige
    (chroma 0.09, too coloured to be called grey) at a light-grey luma: it may not serve."""
    race = _frames("race1906")
    assert not any(mostly(f, "light-grey") for f in race)
    assert sum(looks_like(f, "light-grey") for f in race) == 0
    desk = _frames("coin")
    assert not any(mostly(f, "light-grey") for f in desk)
    assert all(looks_like(f, "light-grey") for f in desk)
    assert "median luma" in (negative_look(desk[0], "light-grey") or "")


@pytest.mark.parametrize(("value", "word"), [(0.7, "light-grey"), (0.92, "white")])
def test_flat_neutral_frames_and_the_gap_between_grey_and_white(value: float, word: str) -> None:
    assert cast_tags([_flat(0.0, sat=0.0, val=value)]) == [(f"mostly {word}", 1.0)]
    between = _flat(0.0, sat=0.0, val=0.83)  # neither light grey nor white ...
    assert cast_tags([between]) == []
    # ... yet no negative for either
    assert looks_like(between, "light-grey") and looks_like(between, "white")
    beige = _flat(40.0, sat=0.12, val=0.75)  # chroma 0.09: not neutral
    assert cast_tags([beige]) == [] and looks_like(beige, "light-grey")


def test_the_cat_on_its_yellow_lit_bed_is_no_negative_for_mostly_orange() -> None:
    """Its hue sits in the gap between the orange and yellow cores (neither word is said of
    it), but a viewer could call it orange: the widened range refuses it as a negative."""
    cat = _frames("clockcat")[-1]  # 3.2 s on the clip is the cut from the clock to the cat
    assert not mostly(cat, "orange") and not mostly(cat, "yellow")
    assert looks_like(cat, "orange")
    clock = _frames("clockcat")[0]
    assert not looks_like(clock, "orange")


def test_black_bars_are_not_picture() -> None:
    frame = np.zeros((360, 640, 3), dtype=np.uint8)
    frame[45:315, :] = _flat(25.0, size=(270, 640))  # an orange picture between bars
    assert cast_share(frame, "orange") == pytest.approx(1.0)
    assert cast_tags([frame, frame]) == [("mostly orange", 1.0)]


@pytest.mark.parametrize("hue", [160.0, 170.0, 190.0])
def test_hues_between_two_words_name_neither(hue: float) -> None:
    teal = _flat(hue)
    assert not mostly(teal, "green") and not mostly(teal, "blue")
    # ... yet a negative showing it serves neither a green nor a blue question
    assert looks_like(teal, "blue") or looks_like(teal, "green")
    # the blue side of the gap is a blue tint: a picture all of that hue
    assert cast_tags([teal]) == ([] if hue < 175.0 else [("blue-tinted", 1.0)])
    assert looks_like(teal, "blue-tinted")


def test_a_tint_is_the_whole_picture_leaning_one_way() -> None:
    """A grey frame a third painted blue has a blue mean colour, but no tint; a grey frame
    with a faint blue cast (chroma 0.08) is tinted; a fainter one (0.05) is not, and may not
    be a negative either."""
    third = _flat(220.0)
    third[:, : third.shape[1] * 2 // 3] = 128
    assert cast_share(third, "blue-tinted") == pytest.approx(1 / 3, abs=0.02)
    assert cast_tags([third]) == [] and looks_like(third, "blue-tinted")
    faint = np.full((90, 160, 3), (110, 125, 130), np.uint8)  # chroma 0.08 at 197 degrees
    assert cast_tags([faint]) == [("blue-tinted", 1.0)]
    fainter = np.full((90, 160, 3), (118, 125, 131), np.uint8)  # chroma 0.05
    assert cast_tags([fainter]) == []
    assert looks_like(fainter, "blue-tinted")
    assert threshold("blue-tinted") == MIN_TINT_SHARE and threshold("red") == MIN_CAST_SHARE


def test_half_a_picture_is_the_line_and_every_keyframe_must_hold() -> None:
    half = _flat(220.0)
    half[:, : half.shape[1] // 2] = 128  # grey left half: 0.5 blue
    less = _flat(220.0)
    less[:, : less.shape[1] // 2 + 2] = 128
    assert cast_share(half, "blue") == pytest.approx(MIN_CAST_SHARE) and mostly(half, "blue")
    assert not mostly(less, "blue")
    assert cast_tags([half, less]) == []


def test_grey_dark_and_black_frames_have_no_colour() -> None:
    assert cast_tags([np.full((90, 160, 3), 128, np.uint8)]) == []
    assert cast_tags([_flat(25.0, val=0.1)]) == []  # too dark to show its hue
    assert cast_tags([np.zeros((90, 160, 3), np.uint8)]) == []
    assert cast_tags([]) == []


def test_words_and_bad_input() -> None:
    assert family_of("mostly orange") == "orange"
    assert {family_of(w) for w in CAST_WORDS} >= {"red", "orange", "green", "blue"}
    with pytest.raises(ValueError, match="colour-cast word"):
        family_of("orange")
    assert family_of("mostly light-grey") == "light-grey"
    assert family_of("blue-tinted") == "blue-tinted" and "blue-tinted" in CAST_WORDS
    with pytest.raises(ValueError, match="unknown colour"):
        threshold("tinted")
    with pytest.raises(ValueError, match="unknown colour"):
        cast_share(_flat(25.0), "teal")
    with pytest.raises(ValueError, match="unknown colour"):
        negative_look(_flat(25.0), "grey")
    for image in (np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32),
                  np.zeros((0, 4, 3), np.uint8)):
        with pytest.raises(ValueError, match="image"):
            cast_share(image, "red")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="image"):  # a bad keyframe after one of no colour
        cast_tags([np.full((90, 160, 3), 128, np.uint8), np.zeros((4, 4), np.uint8)])


def _every_keyframe(images: list[npt.NDArray[np.uint8]]) -> list[tuple[str, float]]:
    """cast_tags as it was: every keyframe sampled, then each colour's smallest share."""
    measured = [cc._sample(image) for image in images]
    for colour in (*cc.FAMILIES, *cc.NEUTRALS, *cc.TINTS):
        shares = [cc._core_share(sample, colour) for sample in measured]
        if measured and min(shares) >= threshold(colour):
            return [(colour if colour in cc.TINTS else cc.CAST_PREFIX + colour,
                     round(min(shares), 4))]
    return []


def test_keyframes_are_sampled_only_while_a_colour_holds(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The same answers as sampling every keyframe, on scenes mixing casts, tints, neutrals
    and plain frames in every order; a scene whose first keyframe has no cast is sampled
    once."""
    rng = np.random.default_rng(7)
    half = _flat(220.0)
    half[:, : half.shape[1] // 2] = 128
    kinds = [_flat(25.0), _flat(220.0), half, np.full((90, 160, 3), 200, np.uint8),
             np.full((90, 160, 3), (118, 125, 140), np.uint8),
             rng.integers(0, 256, (90, 160, 3), dtype=np.uint8), _flat(25.0, sat=0.5)]
    for _ in range(200):
        scene = [kinds[int(k)] for k in rng.integers(0, len(kinds), int(rng.integers(1, 6)))]
        assert cast_tags(scene) == _every_keyframe(scene)
    calls = []
    real = cc._sample
    monkeypatch.setattr(cc, "_sample", lambda image: calls.append(1) or real(image))
    assert cast_tags([np.full((90, 160, 3), 128, np.uint8), *[_flat(25.0)] * 4]) == []
    assert len(calls) == 1
