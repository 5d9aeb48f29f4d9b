"""Drawing helpers for contact sheets: fonts, wrapped text, thumbnails, object boxes.

Fonts: DejaVu Sans from matplotlib's package data (a dependency, found without importing
matplotlib) reads well at small sizes and has a bold face; Pillow's built-in scalable font
(``ImageFont.load_default(size=…)``, Pillow >= 10.1) is the fallback.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
from pathlib import Path
from typing import Literal, TypeAlias

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from needleforge.records import Box, ObjectTrack

Font: TypeAlias = ImageFont.FreeTypeFont | ImageFont.ImageFont
RGB: TypeAlias = tuple[int, int, int]

INK: RGB = (20, 20, 20)
MUTED: RGB = (95, 95, 95)
PAPER: RGB = (255, 255, 255)
TARGET: RGB = (20, 120, 50)
NEGATIVE: RGB = (170, 40, 40)
BOX: RGB = (255, 230, 0)
#: Past the ends of a track, its first/last box is still drawn this close in time.
BOX_REACH_S = 0.5


@functools.cache
def font(size: int, *, bold: bool = False) -> Font:
    """A readable font of ``size`` pixels (DejaVu Sans, else Pillow's default)."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.origin is not None:
        name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
        path = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size=size)


def wrap(text: str, face: Font, width_px: int) -> list[str]:
    """``text`` broken at spaces into lines at most ``width_px`` wide (a word longer than
    that is cut by characters); blank input gives no lines."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if face.getlength(candidate) <= width_px:
                line = candidate
                continue
            if line:
                lines.append(line)
            while face.getlength(word) > width_px and len(word) > 1:
                cut = max(1, _fit(word, face, width_px))
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        if line:
            lines.append(line)
    return lines


def _fit(word: str, face: Font, width_px: int) -> int:
    n = len(word)
    while n > 1 and face.getlength(word[:n]) > width_px:
        n -= 1
    return n


def line_height(face: Font) -> int:
    """Pixels from one line's top to the next (ascent + descent + a little air)."""
    _, top, _, bottom = face.getbbox("Ag")
    return int(bottom - min(top, 0)) + max(3, int(bottom) // 4)


def text_block(draw: ImageDraw.ImageDraw, xy: tuple[int, int], lines: list[str], face: Font,
               fill: RGB = INK) -> int:
    """Draw ``lines`` top-down from ``xy``; returns the y below the last line."""
    x, y = xy
    step = line_height(face)
    for line in lines:
        draw.text((x, y), line, font=face, fill=fill)
        y += step
    return y


def thumbnail(image: np.ndarray | None, size: tuple[int, int], *, note: str = "") -> Image.Image:
    """``image`` (RGB uint8) fitted inside ``size`` on a dark backdrop, aspect kept; None
    gives a grey placeholder carrying ``note`` (why there is no frame)."""
    cell = Image.new("RGB", size, (40, 40, 40))
    if image is None:
        face = font(13)
        lines = wrap(note or "no frame", face, size[0] - 16)
        fit = max(1, (size[1] - 16) // line_height(face))
        if len(lines) > fit:  # the cell holds what fits, ending in an ellipsis
            lines = [*lines[:fit - 1], lines[fit - 1][:-1] + "…"]
        text_block(ImageDraw.Draw(cell), (8, 8), lines, face, fill=(230, 230, 230))
        return cell
    frame = Image.fromarray(image)
    scale = min(size[0] / frame.width, size[1] / frame.height)
    fitted = frame.resize((max(1, round(frame.width * scale)), max(1, round(frame.height * scale))),
                          Image.Resampling.LANCZOS)
    cell.paste(fitted, ((size[0] - fitted.width) // 2, (size[1] - fitted.height) // 2))
    return cell


def box_at(track: ObjectTrack, t_s: float) -> Box | None:
    """The track's box at ``t_s``: interpolated between the stored boxes around it, the
    first/last one within :data:`BOX_REACH_S` of the track's ends, else None."""
    boxes = sorted(track.boxes, key=lambda b: b.t_s)
    if t_s <= boxes[0].t_s:
        return boxes[0].box if boxes[0].t_s - t_s <= BOX_REACH_S else None
    if t_s >= boxes[-1].t_s:
        return boxes[-1].box if t_s - boxes[-1].t_s <= BOX_REACH_S else None
    for before, after in itertools.pairwise(boxes):
        if before.t_s <= t_s <= after.t_s:
            span = after.t_s - before.t_s
            k = (t_s - before.t_s) / span if span > 0 else 0.0
            a, b = before.box, after.box
            return Box(x=a.x + k * (b.x - a.x), y=a.y + k * (b.y - a.y),
                       w=a.w + k * (b.w - a.w), h=a.h + k * (b.h - a.h))
    return None  # pragma: no cover — the loop covers every t between the ends


def draw_box(cell: Image.Image, image_size: tuple[int, int], box: Box) -> None:
    """Outline ``box`` (normalized to the frame) on a thumbnail made by :func:`thumbnail`
    from a frame of ``image_size``: yellow over a black rim, visible on any picture."""
    scale = min(cell.width / image_size[0], cell.height / image_size[1])
    w, h = image_size[0] * scale, image_size[1] * scale
    ox, oy = (cell.width - round(w)) // 2, (cell.height - round(h)) // 2
    x0, y0 = ox + box.x * w, oy + box.y * h
    x1, y1 = ox + (box.x + box.w) * w, oy + (box.y + box.h) * h
    draw = ImageDraw.Draw(cell)
    draw.rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=(0, 0, 0), width=5)
    draw.rectangle((x0, y0, x1, y1), outline=BOX, width=3)


def band(width: int, text: str, colour: RGB, *, size: int = 17) -> Image.Image:
    """A full-width coloured strip with white bold ``text``: a section header."""
    face = font(size, bold=True)
    lines = wrap(text, face, width - 20)
    strip = Image.new("RGB", (width, line_height(face) * len(lines) + 12), colour)
    text_block(ImageDraw.Draw(strip), (10, 6), lines, face, fill=PAPER)
    return strip


Align: TypeAlias = Literal["left", "centre"]


def caption(width: int, lines: list[str], *, size: int = 13, fill: RGB = INK,
            align: Align = "left") -> Image.Image:
    """A white strip holding ``lines`` (each wrapped to ``width``)."""
    face = font(size)
    wrapped = [part for line in lines for part in wrap(line, face, width - 4)]
    strip = Image.new("RGB", (width, line_height(face) * len(wrapped) + 4), PAPER)
    draw = ImageDraw.Draw(strip)
    y = 2
    for line in wrapped:
        x = 2 if align == "left" else max(2, (width - int(face.getlength(line))) // 2)
        draw.text((x, y), line, font=face, fill=fill)
        y += line_height(face)
    return strip


def crop_box(image: np.ndarray, box: Box, *, margin: float = 0.25) -> np.ndarray:
    """The part of ``image`` (H×W×3) inside ``box`` grown by ``margin`` of its size on each
    side (clipped to the frame): the object enlarged, with a little of its surroundings."""
    height, width = image.shape[:2]
    # outward to whole pixels: the crop holds every pixel the grown box touches
    x0 = max(0, math.floor((box.x - margin * box.w) * width))
    y0 = max(0, math.floor((box.y - margin * box.h) * height))
    x1 = min(width, max(x0 + 1, math.ceil((box.x + (1 + margin) * box.w) * width)))
    y1 = min(height, max(y0 + 1, math.ceil((box.y + (1 + margin) * box.h) * height)))
    return np.ascontiguousarray(image[y0:y1, x0:x1])
