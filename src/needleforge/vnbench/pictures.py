"""The pictures needles are made of: a still fitted into the frame, an image canvas to overlay.

Shared by both renderers (the cached-clip montage, :mod:`~needleforge.vnbench.sample_render`, and
the source-GOP splice, :mod:`~needleforge.vnbench.splice`) so that a needle looks the same
whichever path drew it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from needleforge.backends.base import RGBImage
from needleforge.vnbench.assets import load_rgb
from needleforge.vnbench.records import NeedleRegion


def fit_region(size: tuple[int, int], *, width: int, height: int) -> NeedleRegion:
    """Where a picture of ``size`` (w, h) lands when fitted into the frame and centred."""
    img_w, img_h = size
    scale = min(width / img_w, height / img_h)
    w, h = max(1, round(img_w * scale)), max(1, round(img_h * scale))
    return NeedleRegion(x=(width - w) // 2, y=(height - h) // 2, width=w, height=h)


def still_frame(image: Path, *, width: int, height: int) -> RGBImage:
    """The frame of an inserted still: the image fitted into the frame on black.

    Raises:
        VNBenchError: when the image cannot be read.
    """
    rgb = Image.fromarray(load_rgb(image))
    box = fit_region(rgb.size, width=width, height=height)
    frame = Image.new("RGB", (width, height), (0, 0, 0))
    frame.paste(rgb.resize((box.width, box.height), Image.Resampling.LANCZOS), (box.x, box.y))
    return np.asarray(frame, dtype=np.uint8)


def overlay_canvas(image: Path, *, regions: Sequence[NeedleRegion], width: int, height: int
                   ) -> Image.Image:
    """A transparent frame-sized RGBA canvas with a copy of ``image`` in each region."""
    with Image.open(image) as opened:
        picture = opened.convert("RGBA")
    canvas = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    for region in regions:
        copy = picture.resize((region.width, region.height), Image.Resampling.LANCZOS)
        canvas.alpha_composite(copy, (region.x, region.y))
    return canvas
