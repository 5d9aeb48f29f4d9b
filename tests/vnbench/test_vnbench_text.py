"""Subtitles survive ffmpeg: quotes, colons, backslashes, percent, newlines, emoji, CJK.

Text reaches drawtext through a UTF-8 ``textfile`` with ``expansion=none`` and every path
goes through ffmpeg-python's two-level escaping, so the tests render from a work folder named
with a quote, a colon, a comma and brackets. On a black haystack the drawn pixels are the
text alone: its width must match Pillow's measurement of the exact string in the same font
(a dropped backslash, an expanded ``%{pts}`` or a newline read as ``n`` would change it), and
the embedded OCR must read plain names back.

The text is drawn by the binary :func:`~needleforge.media.ffmpeg.find_ffmpeg` picks, and the
expected width follows that binary's glyph layout: since 6.1 drawtext shapes lines with
HarfBuzz, as Pillow (with raqm) measures them; before, it adds each glyph's whole-pixel
advance, which makes a 25-character line a few pixels narrower. The glyphs are the same.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import numpy as np
import pytest
from PIL import ImageFont

from needleforge.backends.embedded.ocr import EmbeddedTextReader
from needleforge.media.cache import ClipSpec, SceneClipCache
from needleforge.media.ffmpeg import find_ffmpeg
from needleforge.media.ffmpeg_probe import version_tuple
from needleforge.vnbench.clip_seconds import decode_file
from needleforge.vnbench.records import Needle, VNBenchError
from needleforge.vnbench.sample_render import edit_piece
from needleforge.vnbench.text import (
    TextStyle,
    default_font_path,
    drawtext_options,
    font_size,
    missing_glyphs,
    resolve_font,
    write_textfile,
)
from tests.vnbench.vnbench_cases import PROFILE, lavfi_source

TRICKY = (
    "it's \"quoted\" 'twice'",
    "key: value; a,b [x] =y",
    "back\\slash \\n \\\\ end\\",
    "100% %{pts} %% %{eif:1:d}",
    "first line\nsecond line",
    "party 🎉 time 😀",
    "李娜 さくら 지우",
)
STYLE = TextStyle(font_path=default_font_path(), size_frac=0.1)
FPS = PROFILE.fps


@pytest.fixture(scope="module")
def black_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cached clip of 8 s of black: every non-black pixel of an edit is text."""
    root = tmp_path_factory.mktemp("vnb-black")
    source = lavfi_source(root / "black.mp4", seconds=8, source="color=c=black")
    return SceneClipCache(root / "cache", profile=PROFILE).ensure(ClipSpec(source, 0, 8)).path


def subtitles(texts: tuple[str, ...]) -> list[Needle]:
    return [Needle(kind="subtitle", method="edit", label=f"t{j}", haystack_s=j,
                   start_s=float(j), end_s=float(j + 1), text=text)
            for j, text in enumerate(texts)]


@pytest.fixture(scope="module")
def drawn(black_clip: Path, tmp_path_factory: pytest.TempPathFactory) -> list[np.ndarray]:
    """The tricky texts drawn through a work folder whose name needs escaping."""
    work = tmp_path_factory.mktemp("vnb-text") / "we'ird: dir, [x]"
    work.mkdir()
    piece = edit_piece(black_clip, edits=subtitles(TRICKY), out=work / "edits.h264",
                       profile=PROFILE, style=STYLE, work=work)
    assert piece.n_frames == len(TRICKY) * FPS
    return decode_file(piece.path)


@pytest.mark.parametrize("j", range(len(TRICKY)))
def test_drawn_text_has_the_width_of_the_exact_string(drawn: list[np.ndarray], j: int) -> None:
    text = TRICKY[j]
    frame = drawn[j * FPS + FPS // 2].max(axis=2)
    ys, xs = np.nonzero(frame > 60)
    size = font_size(text, style=STYLE, width=PROFILE.width, height=PROFILE.height)
    expected = max(drawn_width(line, size=size) for line in text.split("\n"))
    assert abs((xs.max() - xs.min() + 1) - expected) <= 5, (text, xs.max() - xs.min() + 1)
    lines = text.count("\n") + 1
    height = ys.max() - ys.min() + 1
    assert lines * size * 0.6 < height < lines * size * 1.6, (text, height, size)


def drawn_width(line: str, *, size: int) -> float:
    """Width of ``line`` as the chosen ffmpeg's drawtext lays it out (module docstring)."""
    version = version_tuple(find_ffmpeg().version)
    if version is None or version[:2] >= (6, 1):
        return ImageFont.truetype(str(STYLE.font_path), size).getlength(line)
    font = ImageFont.truetype(str(STYLE.font_path), size, layout_engine=ImageFont.Layout.BASIC)
    x, left, right = 0, None, 0
    for char in line:  # from the first glyph's ink to the last one's, whole-pixel advances
        ink = font.getbbox(char)
        if ink[2] > ink[0]:
            left = x + ink[0] if left is None else left
            right = x + ink[2]
        x += int(font.getlength(char))
    return float(right - (left or 0))


def test_every_frame_of_a_second_carries_its_own_text(drawn: list[np.ndarray]) -> None:
    lit = [int((f.max(axis=2) > 60).sum()) for f in drawn]
    for j in range(len(TRICKY)):
        second = lit[j * FPS: (j + 1) * FPS]
        assert min(second) > 50 and max(second) - min(second) <= 0.05 * max(second)
    assert len({lit[j * FPS] for j in range(len(TRICKY))}) == len(TRICKY)


def test_textfile_holds_the_exact_utf8(tmp_path: Path) -> None:
    for text in TRICKY:
        path = write_textfile(text + "\n", path=tmp_path / "t.txt")
        assert path.read_bytes() == text.encode("utf-8")  # no trailing newline: no empty line
    assert write_textfile("a\r\nb\rc", path=tmp_path / "u.txt").read_bytes() == b"a\nb\nc"


def test_options_leave_the_text_out_of_the_filtergraph(tmp_path: Path) -> None:
    options = drawtext_options(tmp_path / "t.txt", text="50% 'x': y", style=STYLE, width=320,
                               height=180)
    assert options["expansion"] == "none" and "text" not in options
    assert options["textfile"] == str(tmp_path / "t.txt")


def test_long_text_shrinks_to_fit_the_frame() -> None:
    short = font_size("Bo", style=STYLE, width=320, height=180)
    long = font_size("The secret word is Wilhelmina-Konstantinopolis.", style=STYLE, width=320,
                     height=180)
    assert short == 18 and long < short
    font = ImageFont.truetype(str(STYLE.font_path), long)
    assert font.getlength("The secret word is Wilhelmina-Konstantinopolis.") <= 0.94 * 320


def test_glyph_coverage_names_what_the_font_lacks() -> None:
    font = default_font_path()
    assert missing_glyphs("The secret word is Ξανθίππη, Мирослава, ნინო.", font_path=font) == []
    assert missing_glyphs("李娜 さくら", font_path=font) == ["李", "娜", "さ", "く", "ら"]


def test_fonts_are_checked_up_front(tmp_path: Path) -> None:
    assert resolve_font(None) == default_font_path()
    bogus = tmp_path / "font.ttf"
    bogus.write_text("not a font")
    with pytest.raises(VNBenchError, match="not a readable TrueType"):
        resolve_font(bogus)
    with pytest.raises(VNBenchError, match="is not a file"):
        resolve_font(tmp_path / "missing.ttf")


@pytest.mark.slow
def test_ocr_reads_the_names_back(black_clip: Path, tmp_path: Path) -> None:
    names = ("O'Malley", "D'Arcy", "Zoë")
    texts = tuple(f"The secret word is {n}." for n in names)
    piece = edit_piece(black_clip, edits=subtitles(texts), out=tmp_path / "e.h264", profile=PROFILE,
                       style=STYLE, work=tmp_path)
    frames = decode_file(piece.path)
    reader = EmbeddedTextReader()
    for j, name in enumerate(names):
        read = "".join(reader.read(frames[j * FPS + FPS // 2]))
        assert fold(name) in fold(read), (name, read)


def fold(text: str) -> str:
    """Whitespace removed, accents stripped, curly apostrophes straightened, casefolded."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "".join(plain.replace("’", "'").split()).casefold()
