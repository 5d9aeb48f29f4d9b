"""The looking verifier's action checks: "someone walking" read again on the target's frames
the writer did not use, and negatives where someone may be walking
(:mod:`needleforge.scenes.walking`; split from
:mod:`needleforge.backends.embedded.verifier`, which calls them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import Keyframe
from needleforge.backends.embedded import confirm as c
from needleforge.backends.writing import SceneView
from needleforge.records import Detection
from needleforge.scenes import walking

Detections = Callable[[Keyframe], Sequence[Detection]]


def _looks(frames: Sequence[Keyframe], detections: Detections, *,
           min_speed: float) -> list[walking.PairLook]:
    def detect(t_s: float, image: npt.NDArray[np.uint8]) -> Sequence[Detection]:
        return detections(Keyframe(t_s, image))

    return walking.pair_looks([k.t_s for k in frames], [k.image for k in frames],
                              detect=detect, min_speed=min_speed)


def confirm_walking(frames: Sequence[Keyframe], detections: Detections, *,
                    companions: Sequence[Keyframe] = ()) -> c.Confirmation:
    """``measure-walking``: the SSD's person boxes, matched, move at
    :data:`~needleforge.scenes.walking.MIN_SPEED` box heights a second or more on at least
    half the pairs that show people (:func:`~needleforge.scenes.walking.walks`).

    The pairs are each frame with its companion half a second later when ``companions``
    holds them (:func:`~needleforge.scenes.walking.companion_pairs`; matches faster than
    :data:`~needleforge.scenes.walking.MAX_SPEED` dropped), else consecutive frames."""
    def detect(t_s: float, image: npt.NDArray[np.uint8]) -> Sequence[Detection]:
        return detections(Keyframe(t_s, image))

    pairs = walking.companion_pairs([(k.t_s, k.image) for k in frames],
                                    [(k.t_s, k.image) for k in companions])
    if pairs:
        looks = walking.looks_on_pairs(pairs, detect=detect, min_speed=walking.MIN_SPEED,
                                       max_speed=walking.MAX_SPEED)
        how = "each frame and its companion"
    else:
        looks = _looks(frames, detections, min_speed=walking.MIN_SPEED)
        how = "consecutive frames"
    held = walking.walks(looks)
    shown = "; ".join(look.describe() for look in looks) or "no pair of frames to compare"
    return c.Confirmation("confirmed" if held else "refused", "measure-walking",
                          walking.WALK_TAG, tuple(look.t_s for look in looks),
                          tuple(look.speed for look in looks),
                          f"pairs of frames ({how}): {shown} (walking at >= "
                          f"{walking.MIN_SPEED} box heights/s on half the pairs with people)")


def negative_walking(negative: SceneView, detections: Detections) -> str | None:
    """``negative-walking``: a negative where a person moves at
    :data:`~needleforge.scenes.walking.NEGATIVE_SPEED` box heights a second or more, or whose
    people cannot be followed (a moving camera, a person without a match), refuses a question
    about someone walking."""
    looks = _looks(negative.keyframes, detections, min_speed=walking.NEGATIVE_SPEED)
    if walking.nobody_walks(looks):
        return None
    shown = "; ".join(look.describe() for look in looks if look.kind in ("moving", "unreadable"))
    return (f"refused by negative-walking: negative {negative.scene.scene_id} may show someone "
            f"walking ({shown}; still under {walking.NEGATIVE_SPEED} box heights/s needed)")
