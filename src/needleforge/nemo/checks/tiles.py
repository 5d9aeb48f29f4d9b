"""Tiled detection: look at a frame piece by piece so small objects reach a detectable size.

A detector with a fixed input (SSD-MobileNet: 300x300) shrinks a 640x360 frame about 2x
horizontally before it looks, so a pasted 40-pixel cut-out arrives at under 20 pixels and is
never proposed, at any score. Cutting the frame into ``cols`` x ``rows`` overlapping tiles and
detecting each one enlarges everything by roughly the tile count per side; the overlap (a
fraction of the tile side) keeps an object that straddles a seam whole in at least one tile.
Boxes are mapped back to the full frame's normalized coordinates, so tiled detections read
like ordinary ones. Used by :mod:`needleforge.nemo.checks.negative_scan` to check negative
scenes for the target's label; any :class:`~needleforge.backends.base.Detector` works.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from needleforge.backends.base import Detector, RGBImage, ensure_rgb
from needleforge.records import Box, Detection


@dataclasses.dataclass(frozen=True, slots=True)
class Tile:
    """A pixel window ``[x, x + w) x [y, y + h)`` of a ``frame_w`` x ``frame_h`` frame."""

    x: int
    y: int
    w: int
    h: int
    frame_w: int
    frame_h: int

    def to_frame(self, box: Box) -> Box:
        """``box`` (normalized to this tile) in the whole frame's normalized coordinates."""
        return Box(x=(self.x + box.x * self.w) / self.frame_w,
                   y=(self.y + box.y * self.h) / self.frame_h,
                   w=box.w * self.w / self.frame_w, h=box.h * self.h / self.frame_h)


def tile_grid(width: int, height: int, *, cols: int, rows: int, overlap: float) -> list[Tile]:
    """``cols`` x ``rows`` equal tiles covering a ``width`` x ``height`` frame, row by row.

    Neighbouring tiles share ``overlap`` of a tile's side; the outer tiles touch the frame's
    edges. A 1 x 1 grid is the whole frame.

    Raises:
        ValueError: a non-positive size or count, or ``overlap`` outside [0, 0.9].
    """
    if width < 1 or height < 1:
        raise ValueError(f"frame size {width}x{height} must be at least 1x1")
    if cols < 1 or rows < 1:
        raise ValueError(f"cols = {cols} and rows = {rows} must be >= 1")
    if not 0.0 <= overlap <= 0.9:
        raise ValueError(f"overlap = {overlap} must be in [0, 0.9]")
    tile_w = min(width, max(1, round(width / (cols - (cols - 1) * overlap))))
    tile_h = min(height, max(1, round(height / (rows - (rows - 1) * overlap))))
    tiles = []
    for r in range(rows):
        for c in range(cols):
            x = round(c * (width - tile_w) / (cols - 1)) if cols > 1 else 0
            y = round(r * (height - tile_h) / (rows - 1)) if rows > 1 else 0
            tiles.append(Tile(x, y, tile_w, tile_h, width, height))
    return tiles


def detect_tiled(
    detector: Detector, image: RGBImage, *, t_s: float, cols: int, rows: int, overlap: float
) -> list[Detection]:
    """Every detection of every tile of ``image``, boxes in frame coordinates, best first.

    Overlapping tiles may report one object twice; callers that only ask "is a label here,
    and how sure" (the negative probe) need no merging, so none is done.

    Raises:
        ValueError: a bad grid (see :func:`tile_grid`).
        BackendError: ``image`` is not an RGB uint8 array, or the detector fails.
    """
    rgb = ensure_rgb(image)
    found: list[Detection] = []
    for tile in tile_grid(rgb.shape[1], rgb.shape[0], cols=cols, rows=rows, overlap=overlap):
        crop = np.ascontiguousarray(rgb[tile.y:tile.y + tile.h, tile.x:tile.x + tile.w])
        found.extend(dataclasses.replace(d, box=tile.to_frame(d.box))
                     for d in detector.detect(crop, t_s=t_s))
    found.sort(key=lambda d: -d.score)
    return found
