"""Pixels for the synthetic programs: fitted backdrops, object sprites, and cut distances.

Backdrops are scaled to cover the frame and centre-cropped (no letterbox bars, which a shot
detector would see as identical between scenes). Sprites are crops of package photos resized
with Lanczos. Everything is plain PIL + numpy, so the same inputs give the same bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps, UnidentifiedImageError

from needleforge.errors import StudioError
from needleforge.studio.assets import Backdrop, Cutout, locate

#: An RGB image, ``(height, width, 3)`` uint8.
Rgb = npt.NDArray[np.uint8]

#: Below this mean HSV difference (0..255 per channel, averaged over H, S and V) two backdrops
#: count as too alike to cut between: PySceneDetect's ContentDetector fires at about 27 on
#: OpenCV's HSV scale, and the grey textures (brick, grass, gravel, moon) are only 7-15 apart.
MIN_CUT_DISTANCE = 40.0

_THUMB_SIZE = (64, 36)


def _open_rgb(path: Path) -> Image.Image:
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except (OSError, UnidentifiedImageError) as err:
        raise StudioError(f"{path}: cannot read image ({err})") from None


def fit_backdrop(path: Path, *, width: int, height: int) -> Rgb:
    """The photo at ``path`` scaled to cover ``width`` x ``height`` and centre-cropped.

    Raises :class:`StudioError` when the file is not a readable image.
    """
    fitted = ImageOps.fit(_open_rgb(path), (width, height), Image.Resampling.LANCZOS)
    return np.ascontiguousarray(np.asarray(fitted, dtype=np.uint8))


def cut_distance(before: Rgb, *, after: Rgb) -> float:
    """How different two frames look to a content-based shot detector (mean HSV difference).

    Both are reduced to a small thumbnail first, so the value hardly depends on frame size.
    """
    return float(np.abs(_hsv_thumb(before) - _hsv_thumb(after)).mean())


def _hsv_thumb(rgb: Rgb) -> npt.NDArray[np.float64]:
    thumb = Image.fromarray(rgb).resize(_THUMB_SIZE, Image.Resampling.BILINEAR).convert("HSV")
    return np.asarray(thumb, dtype=np.float64)


def distinct_pairs(images: Sequence[Rgb]) -> frozenset[tuple[int, int]]:
    """Index pairs ``(i, j)`` (both orders) of images a shot detector can cut between."""
    pairs: set[tuple[int, int]] = set()
    for i in range(len(images)):
        for j in range(i + 1, len(images)):
            if cut_distance(images[i], after=images[j]) >= MIN_CUT_DISTANCE:
                pairs.update({(i, j), (j, i)})
    return frozenset(pairs)


class ImageBank:
    """Loads and caches the backdrops and cut-out sources of one build (thread-safe).

    Why a cache: a 20-minute program reuses each backdrop many times, and decoding a large
    JPEG per scene would cost more than compositing the frames.
    """

    def __init__(self, *, width: int, height: int) -> None:
        self.width = width
        self.height = height
        self._backdrops: dict[str, Rgb] = {}
        self._sources: dict[str, Image.Image] = {}
        self._lock = threading.Lock()

    def backdrop(self, backdrop: Backdrop) -> Rgb:
        """The backdrop fitted to the frame; raises :class:`StudioError` if unreadable."""
        key = backdrop.source.asset_id
        with self._lock:
            if key not in self._backdrops:
                path = locate(backdrop.source)
                self._backdrops[key] = fit_backdrop(path, width=self.width, height=self.height)
            return self._backdrops[key]

    def sprite(self, cutout: Cutout, *, size_px: tuple[int, int], mirrored: bool) -> Rgb:
        """The cut-out's crop resized to ``size_px`` (w, h), mirrored left-right if asked."""
        key = cutout.source.asset_id
        with self._lock:
            if key not in self._sources:
                self._sources[key] = _open_rgb(locate(cutout.source)).crop(cutout.crop_px)
            crop = self._sources[key]
        resized = crop.resize(size_px, Image.Resampling.LANCZOS)
        if mirrored:
            resized = ImageOps.mirror(resized)
        return np.ascontiguousarray(np.asarray(resized, dtype=np.uint8))
