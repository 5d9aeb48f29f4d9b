"""The returning-shot check on real camera footage: a later shot of one set-up is the same
set-up; shots of other clips, and the same clip's other set-up, are not."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from nemo_cases import make_scene

from needleforge.backends.base import Keyframe
from needleforge.errors import StudioError
from needleforge.nemo.checks.same_setup import MIN_INLIERS, SetupMatcher
from needleforge.studio.real_assets import sample_frames


def _frames(name: str, *, start: int, most: int = 3) -> list[Keyframe]:
    """``most`` frames of real clip ``name`` a second apart, from second ``start``."""
    try:
        images = sample_frames(name, every=25, most=start + most)[start:]
    except StudioError as err:
        pytest.skip(f"real clip {name!r} not installed: {err}")
    return [Keyframe(float(i), image) for i, image in enumerate(images)]


def _score(a: list[Keyframe], b: list[Keyframe]) -> int:
    matcher = SetupMatcher()
    return matcher.score(make_scene(0, 0, 3), a, make_scene(1, 3, 6), b)


@pytest.mark.parametrize("name", ["statement", "lego", "tree"])
def test_a_fixed_set_up_seen_again_later_is_the_same_set_up(name: str) -> None:
    assert _score(_frames(name, start=0, most=2), _frames(name, start=2, most=2)) >= MIN_INLIERS


@pytest.mark.parametrize(("a", "b"), [("statement", "lego"), ("statement", "face"),
                                      ("lego", "coin"), ("tree", "pedestrians")])
def test_other_clips_are_other_set_ups(a: str, b: str) -> None:
    assert _score(_frames(a, start=0), _frames(b, start=0)) < MIN_INLIERS // 2


def test_frames_without_texture_never_match() -> None:
    flat: npt.NDArray[np.uint8] = np.full((288, 512, 3), 128, np.uint8)
    assert _score([Keyframe(0.0, flat)], [Keyframe(1.0, flat.copy())]) == 0
    assert _score([], _frames("statement", start=0)) == 0


def test_features_are_cached_per_scene() -> None:
    matcher = SetupMatcher(max_cached=2)
    frames = _frames("statement", start=0, most=2)
    scene = make_scene(0, 0, 3)
    # A second call for the same scene id reuses its features, whatever frames it is given.
    first = matcher.score(scene, frames, make_scene(1, 3, 6), frames)
    assert matcher.score(scene, [], make_scene(1, 3, 6), frames) == first


def test_a_pair_is_matched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    matcher = SetupMatcher()
    frames = _frames("statement", start=0, most=2)
    a, b = make_scene(0, 0, 3), make_scene(1, 3, 6)
    calls: list[int] = []
    inliers = matcher._inliers
    monkeypatch.setattr(matcher, "_inliers", lambda x, y: calls.append(1) or inliers(x, y))
    first = matcher.score(a, frames, b, frames)
    matched = len(calls)
    assert first >= MIN_INLIERS and matched == len(frames) ** 2
    assert matcher.score(a, frames, b, frames) == first and len(calls) == matched
    # The other order is a pair of its own (the ratio test is not symmetric).
    assert matcher.score(b, frames, a, frames) >= MIN_INLIERS and len(calls) == 2 * matched


PAIRS = [("statement", "statement"), ("lego", "lego"), ("tree", "tree"),
         ("statement", "lego"), ("statement", "face"), ("lego", "coin"), ("tree", "pedestrians")]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_same_says_what_score_says(a: str, b: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first, later = _frames(a, start=0, most=2), _frames(b, start=2, most=2)
    expected = _score(first, later) >= MIN_INLIERS
    matcher = SetupMatcher()
    fits: list[int] = []
    fit = matcher._cv2.findHomography
    monkeypatch.setattr(matcher, "_cv2", type("cv2", (), {
        "findHomography": staticmethod(lambda *args: fits.append(1) or fit(*args)),
        "RANSAC": matcher._cv2.RANSAC, "cvtColor": matcher._cv2.cvtColor,
        "COLOR_RGB2GRAY": matcher._cv2.COLOR_RGB2GRAY}))
    assert matcher.same(make_scene(0, 0, 3), first, make_scene(1, 3, 6), later) is expected
    # The same set-up stops at its first matching pair; other set-ups fit nothing (too few
    # matches to reach the threshold), where score fits every pair with a handful of matches.
    assert len(fits) == (1 if expected else 0)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="min_inliers = 0"):
        SetupMatcher(min_inliers=0)
