"""The part of a frame that is new since the label check last looked: only that is detected.

Why: the label check (:mod:`~needleforge.nemo.checks.negative_scan`) runs the detector on a
frame a second at twice the frame's size, about 0.4 CPU-s a frame, and that is most of NeMo
stage 2 at the defaults. Within a scene most of a frame is what the previous frame showed: a
static background, a prop that has not moved. What the detector would find there it found a
second ago; a detection is needed only where the picture changed. This is frame filtering by
low-level differences, as video-analytics systems do before an expensive model (Reducto,
SIGCOMM 2020, drops whole frames this way); here a frame is not dropped but cropped to its
changed part.

How: the first frame of a scene is looked at whole. For each later frame, the grey frame is
compared with what was last looked at, block by block (blocks a twentieth of the frame
wide); a block whose mean absolute difference exceeds :data:`MIN_DIFF` grey levels changed.
No changed block: nothing new, no detection. Otherwise the bounding box of the changed blocks,
widened by :data:`MARGIN` of the frame width on each side (an object that moved in from the
edge of the change is whole in it), is detected alone; when that box covers more than
:data:`MAX_SHARE` of the frame (a pan, a cut inside the scene, moving light), the whole frame
is. The looked-at picture is then updated inside the box only, so a slow drift that stays
under the threshold from frame to frame adds up until it is looked at.

What it keeps: everything new is looked at at the same scale, by the same detector; an object
that did not change was looked at when it last did. The detector sees a crop rather than the
whole frame, which gives small objects a larger share of its input (as tiles do), and large
objects that did not move were found on an earlier frame. ``benchmarks/scan_gate.py`` measures
the labels seen with and without the gate on the same scenes.
"""

from __future__ import annotations

import math

import numpy as np

from needleforge.nemo.checks.template_search import grey_of

#: A block is this fraction of the frame's width (and as high): 32 pixels of a 640-pixel frame.
BLOCK = 1 / 20
#: Mean absolute grey difference (0-255) above which a block changed: over compression noise
#: (about 1 on the studio's and camera clips' static backgrounds), under any object moving in.
MIN_DIFF = 3.0
#: Added around the changed blocks on each side, as a fraction of the frame's width.
MARGIN = 0.075
#: A changed box larger than this share of the frame is looked at as the whole frame.
MAX_SHARE = 0.6
#: Names the gate's settings in the scan keys of the label check.
SPEC = f"changed>{MIN_DIFF:g}/{BLOCK:g}+{MARGIN:g}<{MAX_SHARE:g}"

#: A pixel box ``(x0, y0, x1, y1)`` of a frame, ``x1`` and ``y1`` excluded.
Region = tuple[int, int, int, int]


class ChangeGate:
    """The part of each frame of one scene that is new (see the module docstring).

    Call :meth:`reset` at each scene; then :meth:`region` for the scene's frames in time order.
    """

    def __init__(self) -> None:
        self._seen: np.ndarray | None = None

    def reset(self) -> None:
        """Forget what was looked at: the next frame is looked at whole."""
        self._seen = None

    def region(self, image: np.ndarray) -> Region | None:
        """The pixel box of ``image`` (RGB) to look at, the whole frame for a scene's first
        frame, or None when nothing changed since what was looked at; the box counts as looked
        at from now on."""
        return self.region_of(grey_of(image))

    def region_of(self, grey: np.ndarray) -> Region | None:
        """:meth:`region` of a frame already in grey (float32, as
        :func:`~needleforge.nemo.checks.template_search.grey_of` gives it)."""
        import cv2

        height, width = grey.shape
        whole = (0, 0, width, height)
        if self._seen is None or self._seen.shape != grey.shape:
            self._seen = grey.copy()  # updated in place below: never the caller's array
            return whole
        side = max(1, round(width * BLOCK))
        cols, rows = math.ceil(width / side), math.ceil(height / side)
        # Block means of the absolute difference (area averaging onto the block grid).
        blocks = cv2.resize(cv2.absdiff(grey, self._seen), (cols, rows),
                            interpolation=cv2.INTER_AREA)
        changed = np.nonzero(blocks > MIN_DIFF)
        if changed[0].size == 0:
            return None
        margin = round(width * MARGIN)
        block_w, block_h = width / cols, height / rows
        x0 = max(0, math.floor(int(changed[1].min()) * block_w) - margin)
        x1 = min(width, math.ceil((int(changed[1].max()) + 1) * block_w) + margin)
        y0 = max(0, math.floor(int(changed[0].min()) * block_h) - margin)
        y1 = min(height, math.ceil((int(changed[0].max()) + 1) * block_h) + margin)
        if (x1 - x0) * (y1 - y0) > MAX_SHARE * width * height:
            x0, y0, x1, y1 = whole
        self._seen[y0:y1, x0:x1] = grey[y0:y1, x0:x1]
        return x0, y0, x1, y1
