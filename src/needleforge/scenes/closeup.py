"""Close-ups of a face, measured on body keypoints: the shot scale a viewer sees at a glance.

Why: on the real program of vehicles and streets every shot but one holds a car or people (a
1906 race, cyclists, a campus road), so "a scene with a person" or "with a car" has no
negative; what sets the man talking in a car apart is how near the camera is. The same holds
for a talking head among street shots. "A close-up of a face" is checkable by any viewer and
needs no word a detector might get wrong.

**The measure.** MoveNet (:mod:`needleforge.backends.embedded.pose`) places the nose, eyes
and ears of the most prominent person. The distance between the eyes, as a share of the
frame's width (:func:`face_scale`), grows with how much of the frame the face fills. Measured
on frames a second apart of each real clip the project ships (eyes and nose at score >= 0.3):
the man in a car 0.13-0.14, the face close-up 0.15, the talking head 0.14-0.16, its intro
0.10; the two men at a lectern (a medium shot) 0.05-0.07; pedestrians, cyclists and the 1906
race 0.00-0.02; no eyes at all on the Lego model, the coin, the tree, the towers, the fish
tank, the clock and the cat.

- A **frame** is a close-up of a face at :data:`MIN_SCALE` (0.09): between the medium shot
  and the loosest close-up.
- A **scene** is one (tag :data:`CLOSE_UP`) when :data:`MIN_SHARE` of its looked-at keyframes
  are, and two at least.
- A **negative** of such a question may show no face at :data:`NEGATIVE_SCALE` (0.045) or
  more, nor face points (nose, eyes, ears) spread over :data:`NEGATIVE_SPREAD` of the width
  (a head turned away, its eyes unseen): a viewer takes a medium shot of a speaker for a
  close-up long before the measure does, so the lectern shot is no negative.

Every scene whose keyframes were looked at also gets :data:`FACE_TAG` with the largest face
scale seen as its score, so planning can refuse a negative without looking again; it is never
a word a question names.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MEASURE_NAME = "measure-closeup"
MEASURE_VERSION = "1"
#: The scene tag, and the words a description uses ("a scene with a close-up of a face").
CLOSE_UP = "close-up of a face"
#: The internal tag holding the largest face scale a scene showed (never named).
FACE_TAG = "face scale"
MIN_SCALE = 0.09
MIN_SHARE = 2 / 3
NEGATIVE_SCALE = 0.045
NEGATIVE_SPREAD = 0.1
#: Keypoint confidence at which a face point counts as seen.
MIN_POINT_SCORE = 0.3
#: MoveNet's keypoint order: nose, left eye, right eye, left ear, right ear.
_NOSE, _EYES, _FACE = 0, (1, 2), (0, 1, 2, 3, 4)

Keypoints = npt.NDArray[np.floating]


def face_scale(points: Keypoints, *, aspect: float) -> float | None:
    """The distance between the eyes as a share of the frame's width, or None when the nose
    and both eyes are not seen. ``points`` are MoveNet's 17 ``(y, x, score)`` in the frame's
    own normalised coordinates; ``aspect`` is the frame's height over its width."""
    pts = np.asarray(points, dtype=np.float64)
    if min(pts[_NOSE, 2], *(pts[i, 2] for i in _EYES)) < MIN_POINT_SCORE:
        return None
    (y1, x1), (y2, x2) = pts[_EYES[0], :2], pts[_EYES[1], :2]
    return float(np.hypot(x1 - x2, (y1 - y2) * aspect))


def face_spread(points: Keypoints) -> float:
    """How far apart, across the frame's width, the seen face points lie (0 when fewer than
    two are seen)."""
    pts = np.asarray(points, dtype=np.float64)[list(_FACE)]
    xs = pts[pts[:, 2] >= MIN_POINT_SCORE, 1]
    return float(xs.max() - xs.min()) if len(xs) >= 2 else 0.0


def is_close_up(points: Keypoints, *, aspect: float) -> bool:
    """Whether one frame is a close-up of a face (module docstring)."""
    scale = face_scale(points, aspect=aspect)
    return scale is not None and scale >= MIN_SCALE


def looks_close(points: Keypoints, *, aspect: float) -> bool:
    """Whether a viewer could take one frame of a negative for a close-up of a face."""
    scale = face_scale(points, aspect=aspect)
    return (scale is not None and scale >= NEGATIVE_SCALE) or \
        face_spread(points) >= NEGATIVE_SPREAD


def close_up_share(per_frame: Sequence[Keypoints], *, aspect: float) -> float | None:
    """The share of frames that are close-ups when it passes the scene rule, else None."""
    if not per_frame:
        return None
    seen = sum(is_close_up(p, aspect=aspect) for p in per_frame)
    share = seen / len(per_frame)
    return share if seen >= 2 and share + 1e-9 >= MIN_SHARE else None


def largest_scale(per_frame: Sequence[Keypoints], *, aspect: float) -> float:
    """The largest face scale (or, for a face without both eyes, half its points' spread, the
    eyes' usual share of a head's width) among the frames; 0 when no face is seen."""
    scales = [max(face_scale(p, aspect=aspect) or 0.0, face_spread(p) / 2) for p in per_frame]
    return max(scales, default=0.0)


def scene_tags(per_frame: Sequence[Keypoints], *, aspect: float) -> list[tuple[str, float]]:
    """``(tag, score)``: :data:`CLOSE_UP` when the scene rule holds, and :data:`FACE_TAG`
    with the largest face scale when any face was seen."""
    tags: list[tuple[str, float]] = []
    share = close_up_share(per_frame, aspect=aspect)
    if share is not None:
        tags.append((CLOSE_UP, share))
    largest = largest_scale(per_frame, aspect=aspect)
    if largest > 0:
        tags.append((FACE_TAG, round(largest, 4)))
    return tags


def negative_refused(face_tag_score: float | None) -> bool:
    """Whether a stored :data:`FACE_TAG` score rules a scene out as a negative of a close-up
    question (the same thresholds as :func:`looks_close`: half the spread is kept as the
    score, hence the halved spread threshold)."""
    return face_tag_score is not None and face_tag_score >= min(NEGATIVE_SCALE,
                                                                NEGATIVE_SPREAD / 2)
