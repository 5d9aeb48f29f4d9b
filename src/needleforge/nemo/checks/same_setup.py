"""The returning-shot check: a negative may not show the target's own camera set-up.

Why: broadcast programs cut back to the same set-up again and again (the lectern, the
bookshelf, the fish tank). A later shot of the target's set-up shows what the target shows,
whatever the tables say about it, so as a negative it is a second place a viewer could point
at. Tags catch most returns, but not all: once a description names only the terms that tell
the target from the negatives at hand (:func:`~needleforge.nemo.negatives.crowded_terms`), a
return whose tags missed that term would pass as a negative.

How: local features agree between two views of one set-up and not between different scenes.
ORB keypoints (OpenCV) of each keyframe, a ratio test on their nearest matches, and a RANSAC
homography; the most inliers over all pairs of the two scenes' keyframes is their score, and
:data:`MIN_INLIERS` or more means the same set-up. Measured on the nine real programs of corpus
seed 0 (``benchmarks/realfootage.py``; 1,505 scene pairs, each pair's source clip known from
the program's cut list): pairs from different clips score at most 24 (a talk and its intro,
one speaker on one stage), 18 below that; returns of a fixed set-up score 100-470 (lectern
362-465, a tree through a window 189-447, a face close-up 28-344). A moving camera (a street
from a bike, a night drive) gives low scores to its own returns too, because the view itself
changed; the tags are the check there.

What it costs: ORB on the verifier's 4 frames per scene (512 pixels on the long side) once per
scene, about 25 matchings per pair; about 1 s per target on 2 cores. A pair's score is kept:
the scene targets of one shot meet the same negatives again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from needleforge.backends.base import Keyframe
from needleforge.records import Scene

#: RANSAC inliers of a keyframe pair from which two scenes are one camera set-up.
MIN_INLIERS = 40
#: Keypoints per frame; matches kept when the best is this much closer than the second.
FEATURES = 500
RATIO = 0.75
#: Reprojection tolerance of the homography, in pixels of the keyframe.
RANSAC_PX = 5.0
#: Fewer good matches than this cannot fit a homography worth a score.
_MIN_MATCHES = 8

Features = tuple[Any, Any]  # (keypoint coordinates Nx2 float32, descriptors Nx32 uint8)


class SetupMatcher:
    """Scores whether two scenes show one camera set-up (module docstring), caching each
    scene's features.

    Args:
        min_inliers: the score from which two scenes are one set-up (>= 1).
        max_cached: scenes whose features are kept (least recently used dropped first).

    Raises:
        ValueError: a number out of range.
    """

    def __init__(self, *, min_inliers: int = MIN_INLIERS, max_cached: int = 1024) -> None:
        if min_inliers < 1 or max_cached < 1:
            raise ValueError(f"min_inliers = {min_inliers} and max_cached = {max_cached} must "
                             f"be >= 1")
        import cv2  # heavy: only stage 2 with a keyframe source needs it

        self._cv2 = cv2
        self._orb = cv2.ORB.create(nfeatures=FEATURES)
        self._matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
        self._min = min_inliers
        self._cache: OrderedDict[str, list[Features]] = OrderedDict()
        self._max_cached = max_cached
        self._scores: dict[tuple[str, str], int] = {}
        self._same: dict[tuple[str, str], bool] = {}

    def same(self, a: Scene, a_frames: Sequence[Keyframe], b: Scene,
             b_frames: Sequence[Keyframe]) -> bool:
        """Whether scenes ``a`` and ``b`` (with their keyframes) show one camera set-up: some
        pair of their keyframes reaches ``min_inliers`` (what :meth:`score` says, at less
        cost: a pair with fewer good matches than that is not fitted, and the first pair
        that reaches it ends the search; kept per ordered pair of scene ids)."""
        key = (a.scene_id, b.scene_id)
        if key not in self._same:
            fa, fb = self._features(a, a_frames), self._features(b, b_frames)
            self._same[key] = any(self._inliers(x, y, least=self._min) >= self._min
                                  for x in fa for y in fb)
        return self._same[key]

    def score(self, a: Scene, a_frames: Sequence[Keyframe], b: Scene,
              b_frames: Sequence[Keyframe]) -> int:
        """The most homography inliers over all pairs of the two scenes' keyframes (kept per
        ordered pair of scene ids: a scene's keyframes are fixed by its id)."""
        key = (a.scene_id, b.scene_id)
        if key not in self._scores:
            fa, fb = self._features(a, a_frames), self._features(b, b_frames)
            self._scores[key] = max((self._inliers(x, y) for x in fa for y in fb), default=0)
        return self._scores[key]

    def _features(self, scene: Scene, frames: Sequence[Keyframe]) -> list[Features]:
        cached = self._cache.get(scene.scene_id)
        if cached is not None:
            self._cache.move_to_end(scene.scene_id)
            return cached
        cv2, out = self._cv2, []
        for frame in frames:
            grey = cv2.cvtColor(np.ascontiguousarray(frame.image), cv2.COLOR_RGB2GRAY)
            points, descriptors = self._orb.detectAndCompute(grey, None)
            if descriptors is not None and len(points) >= _MIN_MATCHES:
                out.append((np.array([p.pt for p in points], dtype=np.float32), descriptors))
        self._cache[scene.scene_id] = out
        if len(self._cache) > self._max_cached:
            self._cache.popitem(last=False)
        return out

    def _inliers(self, a: Features, b: Features, *, least: int = _MIN_MATCHES) -> int:
        """Homography inliers between two keyframes' features; 0 without fitting when fewer
        than ``least`` matches pass the ratio test (the inliers could not reach it)."""
        pairs = self._matcher.knnMatch(a[1], b[1], k=2)
        good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < RATIO * p[1].distance]
        if len(good) < max(least, _MIN_MATCHES):
            return 0
        src = a[0][[g.queryIdx for g in good]]
        dst = b[0][[g.trainIdx for g in good]]
        _, mask = self._cv2.findHomography(src, dst, self._cv2.RANSAC, RANSAC_PX)
        return int(mask.sum()) if mask is not None else 0
