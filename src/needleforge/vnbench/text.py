"""Subtitle drawing with ffmpeg ``drawtext``: font choice, glyph coverage, safe text passing.

**No text ever goes through filtergraph escaping.** The text is written to a UTF-8 file and
drawn with ``textfile=`` and ``expansion=none``: drawtext reads the file's bytes as they are
(quotes, colons, backslashes, commas and brackets have no meaning there), and ``expansion=none``
turns off ``%{…}`` expansion, so a percent sign is a percent sign. Newlines in the file become
line breaks. What does go through the filtergraph — the text file's and the font's paths,
colours and expressions — is escaped by ffmpeg-python at both levels ffmpeg parses (option
values: ``\\ ' = :``; graph: ``\\ ' [ ] , ;``); the tests render through folders named with
quotes, colons and commas to hold it to that.

**Fonts.** The default is DejaVu Sans as shipped by matplotlib (``mpl-data/fonts/ttf``), found
without importing matplotlib; system fonts are never looked up. A font lacking a glyph would
draw an empty box, so :func:`missing_glyphs` (fontTools' cmap) lets the stage leave such
names out and say why. The size starts at ``size_frac`` of the frame height and shrinks until
the widest line fits in 94 % of the frame width (Pillow measures with the same font file).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import math
from pathlib import Path
from typing import Any

from needleforge.vnbench.records import VNBenchError

DEFAULT_FONT_FILE = "DejaVuSans.ttf"
_WIDTH_FILL = 0.94
_BOTTOM_MARGIN_FRAC = 0.06


@dataclasses.dataclass(frozen=True, slots=True)
class TextStyle:
    """How subtitles look: font file, height as a fraction of the frame, colours."""

    font_path: Path
    size_frac: float = 0.07
    colour: str = "white"
    border_colour: str = "black"


def default_font_path() -> Path:
    """matplotlib's DejaVu Sans (found with :func:`importlib.util.find_spec`).

    Raises:
        VNBenchError: when matplotlib is not installed or lacks the font file.
    """
    spec = importlib.util.find_spec("matplotlib")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise VNBenchError("matplotlib is not installed, so its DejaVu Sans font cannot be "
                           "used: install matplotlib or set vnbench.font_path")
    path = Path(locations[0]) / "mpl-data" / "fonts" / "ttf" / DEFAULT_FONT_FILE
    if not path.is_file():
        raise VNBenchError(f"matplotlib ships no {DEFAULT_FONT_FILE} (looked for {path}); "
                           "set vnbench.font_path")
    return path


def resolve_font(font_path: str | Path | None) -> Path:
    """``font_path`` checked to be a readable font, or the default when None.

    Raises:
        VNBenchError: when the file is missing or is not a TrueType/OpenType font.
    """
    path = default_font_path() if font_path is None else Path(font_path).expanduser()
    if not path.is_file():
        raise VNBenchError(f"font_path {path} is not a file")
    _cmap(path)  # fails early on a file that is not a font
    return path


@functools.cache
def _cmap(path: Path) -> frozenset[int]:
    from fontTools.ttLib import TTFont, TTLibError  # type: ignore[import-untyped]

    try:
        with TTFont(str(path), lazy=True, fontNumber=0) as font:
            table = font.getBestCmap() or {}
    except (OSError, TTLibError, AssertionError) as err:
        raise VNBenchError(f"{path} is not a readable TrueType/OpenType font ({err})") from None
    return frozenset(table)


def missing_glyphs(text: str, *, font_path: Path) -> list[str]:
    """Characters of ``text`` (other than whitespace) that the font cannot draw, in order.

    Raises:
        VNBenchError: when the font cannot be read.
    """
    covered = _cmap(font_path)
    missing: list[str] = []
    for char in text:
        if not char.isspace() and ord(char) not in covered and char not in missing:
            missing.append(char)
    return missing


def font_size(text: str, *, style: TextStyle, width: int, height: int) -> int:
    """The font size in pixels for ``text`` on a ``width`` x ``height`` frame (≥ 6 px)."""
    from PIL import ImageFont

    size = max(6, round(style.size_frac * height))
    font = ImageFont.truetype(str(style.font_path), size)
    widest = max((font.getlength(line) for line in text.split("\n")), default=0.0)
    if widest > _WIDTH_FILL * width:
        size = max(6, math.floor(size * _WIDTH_FILL * width / widest))
    return size


def write_textfile(text: str, *, path: Path) -> Path:
    """Write ``text`` for ``drawtext textfile=`` (UTF-8, ``\\r\\n`` → ``\\n``, no final newline).

    A trailing newline would draw an empty last line and lift the subtitle.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(normalized.encode("utf-8"))
    return path


def drawtext_options(
    textfile: Path, *, text: str, style: TextStyle, width: int, height: int
) -> dict[str, Any]:
    """``drawtext`` options drawing ``textfile`` centred near the bottom of the frame.

    ``text`` (the file's content) only sizes the font. Values are raw: ffmpeg-python escapes
    them when it builds the graph (see the module docstring).
    """
    size = font_size(text, style=style, width=width, height=height)
    margin = max(2, round(_BOTTOM_MARGIN_FRAC * height))
    return {
        "textfile": str(textfile), "fontfile": str(style.font_path), "expansion": "none",
        "fontsize": size, "fontcolor": style.colour, "bordercolor": style.border_colour,
        "borderw": max(1, size // 12), "line_spacing": max(1, size // 5),
        "x": "(w-text_w)/2", "y": f"h-text_h-{margin}", "fix_bounds": 1,
    }
