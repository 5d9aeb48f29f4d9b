"""The looking verifier's whole-shot checks: a black-and-white, mostly-one-colour or
close-up claim measured again on the target's frames, and negatives a viewer could take for
such a scene (split from :mod:`needleforge.backends.embedded.verifier`, which calls them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from needleforge.backends.base import FloatArray, Keyframe, RGBImage
from needleforge.backends.embedded import confirm as c
from needleforge.backends.writing import SceneView
from needleforge.scenes import closeup, colour_cast
from needleforge.scenes.palette import (
    BLACK_AND_WHITE,
    IN_COLOUR,
    MAX_CHROMA,
    NEGATIVE_MIN_CHROMA,
    NEGATIVE_MIN_COLOURFUL,
    SHOT_WORDS,
    black_and_white,
    chroma_p99,
    clearly_in_colour,
    colourful_share,
    colourless,
)

#: A frame's 17 body keypoints, ``(y, x, score)`` (:meth:`.pose.EmbeddedPose.keypoints`).
Points = Callable[[RGBImage], FloatArray]
#: The whole-shot words these checks measure.
WORDS = SHOT_WORDS | {closeup.CLOSE_UP}


def shot(term: str, frames: Sequence[Keyframe], *, points: Points) -> c.Confirmation:
    """A whole-shot claim (a word of :data:`WORDS`) measured again on ``frames``."""
    return close_up(frames, points=points) if term == closeup.CLOSE_UP else palette(term, frames)


def close_up(frames: Sequence[Keyframe], *, points: Points) -> c.Confirmation:
    """``measure-closeup``: "a close-up of a face" holds when the frames the writer did not
    use pass the scene rule (:func:`needleforge.scenes.closeup.close_up_share`) again."""
    if not frames:
        return c.Confirmation("cannot-tell", "measure-closeup", closeup.CLOSE_UP, (), (),
                              "no frame to look at")
    aspect = frames[0].image.shape[0] / frames[0].image.shape[1]
    looked = [points(k.image) for k in frames]
    scales = tuple(closeup.face_scale(p, aspect=aspect) or 0.0 for p in looked)
    held = closeup.close_up_share(looked, aspect=aspect) is not None
    shown = ", ".join(f"{v:.3f}" for v in scales)
    return c.Confirmation("confirmed" if held else "refused", "measure-closeup",
                          closeup.CLOSE_UP, tuple(k.t_s for k in frames), scales,
                          f"eye distance {shown} of the width on {len(scales)} frames (a "
                          f"close-up at >= {closeup.MIN_SCALE} on {closeup.MIN_SHARE:.0%})")


def negative_shot(negative: SceneView, claims: Sequence[tuple[str, int]], *,
                  points: Points) -> str | None:
    """Why ``negative`` could be taken for the whole shot the claims name, or None."""
    refusal = negative_palette(negative, claims)
    if refusal is not None or not any(t == closeup.CLOSE_UP for t, _ in claims):
        return refusal
    for frame in negative.keyframes:
        height, width = frame.image.shape[:2]
        found = points(frame.image)
        if closeup.looks_close(found, aspect=height / width):
            scale = closeup.face_scale(found, aspect=height / width)
            return (f"refused by negative-closeup: negative {negative.scene.scene_id} shows a "
                    f"face near the camera at t={frame.t_s:.2f} s (eye distance "
                    f"{scale or 0.0:.3f}, face points over {closeup.face_spread(found):.2f} of "
                    f"the width; a negative stays under {closeup.NEGATIVE_SCALE} and "
                    f"{closeup.NEGATIVE_SPREAD})")
    return None


def palette(term: str, frames: Sequence[Keyframe]) -> c.Confirmation:
    """``measure-palette``: a black-and-white claim holds when every frame the writer did not
    use is colourless (:mod:`needleforge.scenes.palette`), measured again on those frames; a
    colour cast when every one of them is mostly that colour (:func:`_cast`)."""
    if term in colour_cast.CAST_WORDS:
        return _cast(term, frames)
    if term == IN_COLOUR:
        return _in_colour(frames)
    scores = tuple(chroma_p99(k.image) for k in frames)
    times = tuple(k.t_s for k in frames)
    held = bool(scores) and all(black_and_white(k.image) for k in frames)
    shown = ", ".join(f"{v:.3f}" for v in scores)
    return c.Confirmation("confirmed" if held else "refused", "measure-palette", term, times,
                          scores, f"99th-percentile chroma {shown} on {len(scores)} frames "
                          f"(colourless under {MAX_CHROMA}, with contrast)")


def _in_colour(frames: Sequence[Keyframe]) -> c.Confirmation:
    """``measure-palette``: "a scene in colour" holds when every frame the writer did not use
    is clearly in colour (:func:`needleforge.scenes.palette.clearly_in_colour`)."""
    scores = tuple(colourful_share(k.image) for k in frames)
    held = bool(scores) and all(clearly_in_colour(k.image) for k in frames)
    shown = ", ".join(f"{v:.2f}" for v in scores)
    return c.Confirmation("confirmed" if held else "refused", "measure-palette", IN_COLOUR,
                          tuple(k.t_s for k in frames), scores,
                          f"coloured pixels {shown} on {len(scores)} frames (clearly in colour "
                          f"at >= {NEGATIVE_MIN_COLOURFUL} and 99th-percentile chroma >= "
                          f"{NEGATIVE_MIN_CHROMA})")


def _cast(term: str, frames: Sequence[Keyframe]) -> c.Confirmation:
    """``measure-colour-cast``: "a mostly <colour> scene" (or "a blue-tinted scene") holds
    when every frame is mostly that colour (:func:`needleforge.scenes.colour_cast.mostly`),
    measured again."""
    colour = colour_cast.family_of(term)
    scores = tuple(colour_cast.cast_share(k.image, colour) for k in frames)
    least = colour_cast.threshold(colour)
    held = bool(scores) and min(scores) >= least
    shown = ", ".join(f"{v:.2f}" for v in scores)
    measure = (f"share of the picture leaning {colour}" if colour in colour_cast.TINTS
               else f"{colour} share of the picture")
    return c.Confirmation("confirmed" if held else "refused", "measure-colour-cast", term,
                          tuple(k.t_s for k in frames), scores,
                          f"{measure} {shown} on {len(scores)} frames (held at >= {least})")


def _negative_cast(negative: SceneView, colour: str) -> str | None:
    """``negative-colour-cast``: a negative with a frame a viewer could take for a mostly
    ``colour`` one (:func:`needleforge.scenes.colour_cast.looks_like`)."""
    for frame in negative.keyframes:
        why = colour_cast.negative_look(frame.image, colour)
        if why is not None:
            return (f"refused by negative-colour-cast: negative {negative.scene.scene_id} "
                    f"looks {colour} at t={frame.t_s:.2f} s ({why})")
    return None


def negative_palette(negative: SceneView, claims: Sequence[tuple[str, int]]) -> str | None:
    """A negative with a frame not clearly in colour (:func:`clearly_in_colour`),
    when the question claims a black-and-white scene: the tables' word needs every keyframe
    grey, a viewer needs only one nearly grey moment; one with a frame that looks the colour
    a claimed cast names (:func:`_negative_cast`); when it claims a scene in colour, one with
    a frame that shows any colour (:func:`colourless` fails on it)."""
    if not any(term in SHOT_WORDS for term, _ in claims):
        return None
    if not negative.keyframes:
        return f"unconfirmed: negative {negative.scene.scene_id} has no frames to look at"
    for term, _ in claims:
        if term in colour_cast.CAST_WORDS:
            refusal = _negative_cast(negative, colour_cast.family_of(term))
            if refusal is not None:
                return refusal
    if any(term == IN_COLOUR for term, _ in claims):
        for frame in negative.keyframes:
            if not colourless(frame.image):
                return (f"refused by negative-palette: negative {negative.scene.scene_id} "
                        f"shows colour at t={frame.t_s:.2f} s (99th-percentile chroma "
                        f"{chroma_p99(frame.image):.3f}; a negative of a scene in colour "
                        f"stays under {MAX_CHROMA})")
    if not any(term == BLACK_AND_WHITE for term, _ in claims):
        return None
    for frame in negative.keyframes:
        if not clearly_in_colour(frame.image):
            return (f"refused by negative-palette: negative {negative.scene.scene_id} is not "
                    f"clearly in colour at t={frame.t_s:.2f} s (99th-percentile chroma "
                    f"{chroma_p99(frame.image):.3f}, need {NEGATIVE_MIN_CHROMA:.2f}; "
                    f"coloured pixels {colourful_share(frame.image):.2f}, need "
                    f"{NEGATIVE_MIN_COLOURFUL:.2f})")
    return None
