"""People the detector does not box: a body pose on most of a scene's keyframes.

Why: the SSD boxes people it sees whole; a head-and-shoulders close-up (a man talking in
front of a bookshelf, filling the frame) gets no "person" box, so the tables said "books" and
nothing else, and the scene served as a negative of every people question until the probe
looked again and refused it (the real program "intercut-people" lost every people and street
question that way). MoveNet scores 17 body keypoints of the most prominent person; a
close-up lights its face and shoulder points.

Rule: a scene with no person track shows a person when at least :data:`MIN_KEYPOINTS`
keypoints score :data:`MIN_KEYPOINT_SCORE` or more on at least :data:`MIN_SHARE` of its
keyframes (and on two at least). Measured on eight frames a second apart of each real clip the
project ships (keypoints at >= 0.3 per frame): the talking head 5-7 on 8 of 8, its intro 8 on
7 of 7, a face close-up 4-7 (>= 5 on 7 of 8), a man in a car 7-8 on 5 of 5; a Lego model, a
coin, towers at night, a tree and a diver 0-3 on every frame; a cockatoo 9 and 6 on 2 of 8,
a fish tank 6 on 1 of 8 (so one or two frames prove nothing: the share does).

The scene gets the tag :data:`BODY_TAG`, which *holds* "person"
(:func:`~needleforge.records.phrases.holds`): it keeps the scene out of the negatives of a
question that names people, and it is never itself a word a question names (no describer
names a pose-only person; it has no box to point at).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

#: The scene tag a pose-only person gives (it holds "person").
BODY_TAG = "person pose"
#: Keypoints of a frame scored at least :data:`MIN_KEYPOINT_SCORE` for it to show a body.
MIN_KEYPOINTS = 5
MIN_KEYPOINT_SCORE = 0.3
#: The share of a scene's keyframes that must show a body (and at least two of them).
MIN_SHARE = 2 / 3


def shows_body(scores: npt.NDArray[np.floating]) -> bool:
    """Whether one frame's keypoint scores (MoveNet's 17) show a body."""
    return int((np.asarray(scores) >= MIN_KEYPOINT_SCORE).sum()) >= MIN_KEYPOINTS


def body_share(per_frame: Sequence[npt.NDArray[np.floating]]) -> float | None:
    """The share of keyframes showing a body when it passes the rule (module docstring),
    else None."""
    if not per_frame:
        return None
    seen = sum(shows_body(s) for s in per_frame)
    share = seen / len(per_frame)
    return share if seen >= 2 and share + 1e-9 >= MIN_SHARE else None
