"""Cuts between two black-and-white shots inside a colour video.

Why: PySceneDetect's content score averages hue, saturation and brightness differences. Two
grey frames have neither hue nor saturation to differ in, so a cut between two grey shots
scores a third of its brightness change, and most such cuts stay under the threshold. A
black-and-white video as a whole is scored on brightness alone (``luma_only="auto"``,
:func:`~needleforge.scenes.detect.colourless_video`); but real programs mix: an archival
clip or a grey lab camera cut into colour footage. On a held-out program of that kind (two
grey desk cameras and a colour webcam, 2026-12-06) two of the three grey-to-grey cuts were
missed, and the scene "where on-screen text reads 'Robot'" ran on into the next shot.

How: a second detector in the same pass (PySceneDetect merges the cuts of every detector)
that scores brightness alone, and only where the frame and the one before it are both
colourless: fewer than 1 % of their pixels with a chroma (max - min of the channels) of at
least :data:`~needleforge.scenes.palette.MAX_CHROMA` (the palette's 99th-percentile rule).
Anywhere else it scores 0, so it adds no cut to colour footage.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scenedetect import ContentDetector

from needleforge.backends.base import channel_max, channel_min
from needleforge.scenes.palette import MAX_CHROMA

#: Share of a frame's pixels that may be coloured for it to count as colourless.
COLOURED_SHARE = 0.01


def colourless_frame(image: npt.NDArray[np.uint8]) -> bool:
    """Whether fewer than :data:`COLOURED_SHARE` of ``image``'s pixels (``(H, W, 3)``
    ``uint8``, any channel order) have a chroma of at least :data:`MAX_CHROMA`."""
    chroma = channel_max(image) - channel_min(image)  # uint8: max >= min, no wrap-around
    coloured = int(np.count_nonzero(chroma >= MAX_CHROMA * 255.0))
    return bool(coloured < COLOURED_SHARE * image.shape[0] * image.shape[1])


class GreyCutDetector(ContentDetector):  # type: ignore[misc]
    """ContentDetector on brightness alone, scoring only pairs of colourless frames (module
    docstring); ``threshold`` and ``min_scene_len`` as ContentDetector's. It wraps
    ContentDetector's per-frame score (``_calculate_frame_score``, scenedetect 0.6.1 to 0.7),
    so its brightness difference and flash filter are PySceneDetect's own."""

    def __init__(self, *, threshold: float, min_scene_len: int) -> None:
        super().__init__(threshold=threshold, min_scene_len=min_scene_len, luma_only=True)

    def _calculate_frame_score(self, timecode: Any, frame_img: npt.NDArray[np.uint8]) -> float:
        if not colourless_frame(frame_img):
            self._last_frame = None  # no HSV work on colour frames; the next grey one starts anew
            return 0.0
        score: float = super()._calculate_frame_score(timecode, frame_img)
        return score
