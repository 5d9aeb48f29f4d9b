"""Subtitle sidecars (SRT and WebVTT) parsed into cues, and cues attached to scenes.

Our own small parser rather than a dependency: sidecars come from many tools, and we want
tolerance for the harmless quirks (BOM, CRLF, a missing final blank line, VTT header metadata,
NOTE/STYLE/REGION blocks, cue settings, markup) but a clear :class:`SubtitleError` naming the
file and line for anything that would give wrong times (bad timestamp, end before start,
undecodable bytes, text outside a cue).
"""

from __future__ import annotations

import codecs
import dataclasses
import html
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from needleforge.errors import SubtitleError
from needleforge.records import Scene

SubtitleFormat: TypeAlias = Literal["srt", "vtt"]
FORMATS: tuple[SubtitleFormat, ...] = ("srt", "vtt")

# hh:mm:ss,mmm (SRT), hh:mm:ss.mmm or mm:ss.mmm (VTT); hours may have any number of digits.
_TIMESTAMP_RE = re.compile(r"^(?:(\d+):)?([0-5]\d):([0-5]\d)[,.](\d{1,3})$")
_TIMING_RE = re.compile(r"^\s*(\S+)\s*-->\s*(\S+)(?:\s+(.*))?$")
# Markup: HTML-ish tags (<i>, </b>, <font color=...>, <c.yellow>, <v Bob>, <00:01.000>) and
# ASS override blocks ({\an8}). A '<' followed by a space is text ("a < b"), not a tag.
_TAG_RE = re.compile(r"</?(?:[A-Za-z][^<>\n]*|\d[\d:.]*)>|\{\\[^{}\n]*\}")
_VTT_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")


@dataclasses.dataclass(frozen=True, slots=True)
class Cue:
    """One subtitle cue: plain text (markup removed) shown during ``[start_s, end_s]``."""

    start_s: float
    end_s: float
    text: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and self.start_s >= 0):
            raise ValueError(f"start_s = {self.start_s!r} must be finite and >= 0")
        if not (math.isfinite(self.end_s) and self.end_s >= self.start_s):
            raise ValueError(f"end_s = {self.end_s!r} must be >= start_s = {self.start_s!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class _Block:
    """Consecutive non-blank lines; ``first_line`` is 1-based in the file."""

    first_line: int
    lines: tuple[str, ...]


def read_subtitles(path: Path, *, fmt: SubtitleFormat | None = None) -> list[Cue]:
    """Parse the SRT or WebVTT file at ``path`` into cues, in file order.

    ``fmt`` defaults to the suffix (``.srt``/``.vtt``), then to sniffing a ``WEBVTT`` header.
    Raises :class:`SubtitleError` naming the file (and line) when it is missing, not UTF-8
    (UTF-16 with a BOM is accepted), of an unknown format, or malformed.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"fmt = {fmt!r} must be one of {FORMATS}")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise SubtitleError(f"{path}: cannot read subtitle file ({err.strerror})") from None
    text = decode_subtitle_bytes(data, source=str(path))
    if fmt is None:
        suffix = path.suffix.lower().lstrip(".")
        if suffix in FORMATS:
            fmt = "srt" if suffix == "srt" else "vtt"
        else:
            fmt = "vtt" if text.lstrip().startswith("WEBVTT") else "srt"
    return parse_subtitles(text, fmt=fmt, source=str(path))


def decode_subtitle_bytes(data: bytes, *, source: str) -> str:
    """Decode sidecar bytes: UTF-16 when it has a BOM, else UTF-8 (BOM optional).

    Raises :class:`SubtitleError` naming ``source`` and the line of the first bad byte.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as err:
            raise SubtitleError(f"{source}: not valid UTF-16 ({err.reason})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise SubtitleError(
            f"{source}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
            f"{err.start}: {err.reason}); re-save the file as UTF-8"
        ) from None


def parse_subtitles(text: str, *, fmt: SubtitleFormat, source: str = "<text>") -> list[Cue]:
    """Parse subtitle ``text`` of format ``fmt`` into cues, in file order.

    Raises :class:`SubtitleError` (``{source}:{line}: ...``) on a missing VTT header, a bad
    timestamp, an end before its start, or a block that is not a cue.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt = {fmt!r} must be one of {FORMATS}")
    blocks = list(_blocks(text.removeprefix("\ufeff")))
    if fmt == "vtt":
        blocks = _vtt_cue_blocks(blocks, source=source)
    return [_parse_block(block, fmt=fmt, source=source) for block in blocks]


def _blocks(text: str) -> Iterator[_Block]:
    """Split text (any newline convention) into blank-line separated blocks."""
    current: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if line.strip():
            if not current:
                first = number
            current.append(line)
        elif current:
            yield _Block(first, tuple(current))
            current = []
    if current:  # a file need not end with a blank line
        yield _Block(first, tuple(current))


def _vtt_cue_blocks(blocks: list[_Block], *, source: str) -> list[_Block]:
    """Drop the WEBVTT header block and NOTE/STYLE/REGION blocks; check the header."""
    if not blocks or not _is_vtt_header(blocks[0].lines[0]):
        where = blocks[0].first_line if blocks else 1
        raise SubtitleError(f"{source}:{where}: WebVTT file must start with a 'WEBVTT' line")
    cues = []
    for block in blocks[1:]:
        keyword = block.lines[0].split(maxsplit=1)[0]
        if keyword in _VTT_SKIPPED_BLOCKS and "-->" not in block.lines[0]:
            continue
        cues.append(block)
    return cues


def _is_vtt_header(line: str) -> bool:
    return line == "WEBVTT" or line.startswith(("WEBVTT ", "WEBVTT\t"))


def _parse_block(block: _Block, *, fmt: SubtitleFormat, source: str) -> Cue:
    """One cue from a block: optional id/index line, a timing line, then text lines."""
    timing_at = next((i for i, line in enumerate(block.lines) if "-->" in line), None)
    if timing_at is None or timing_at > 1:
        number = block.first_line + (0 if timing_at is None else timing_at)
        what = "no 'start --> end' timing line" if timing_at is None else "timing line expected"
        example = "00:00:01,000 --> 00:00:02,500" if fmt == "srt" else "00:01.000 --> 00:02.500"
        raise SubtitleError(
            f"{source}:{number}: {what} in this block (got {block.lines[0]!r}); "
            f"a cue needs an optional id line, then e.g. '{example}', then its text"
        )
    if fmt == "srt" and timing_at == 1 and not block.lines[0].strip().isdigit():
        raise SubtitleError(
            f"{source}:{block.first_line}: SRT cue index must be a number, "
            f"got {block.lines[0]!r}"
        )
    line_number = block.first_line + timing_at
    start_s, end_s = _parse_timing(block.lines[timing_at], line=line_number, source=source)
    body = "\n".join(block.lines[timing_at + 1 :])
    return Cue(start_s=start_s, end_s=end_s, text=clean_cue_text(body))


def _parse_timing(text: str, *, line: int, source: str) -> tuple[float, float]:
    match = _TIMING_RE.match(text)
    if match is None:
        raise SubtitleError(f"{source}:{line}: bad timing line {text!r}")
    start_s = _parse_timestamp(match.group(1), line=line, source=source)
    end_s = _parse_timestamp(match.group(2), line=line, source=source)
    if end_s < start_s:
        raise SubtitleError(
            f"{source}:{line}: cue ends ({match.group(2)}) before it starts ({match.group(1)})"
        )
    return start_s, end_s


def _parse_timestamp(token: str, *, line: int, source: str) -> float:
    match = _TIMESTAMP_RE.match(token)
    if match is None:
        raise SubtitleError(
            f"{source}:{line}: bad timestamp {token!r} "
            "(expected hh:mm:ss,mmm, hh:mm:ss.mmm or mm:ss.mmm)"
        )
    hours, minutes, seconds, fraction = match.groups()
    whole = int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    # ",5" is half a second, as every player reads it; pad to milliseconds.
    return whole + int(fraction.ljust(3, "0")) / 1000.0


def clean_cue_text(text: str) -> str:
    """Cue text without markup: tags and ASS overrides removed, HTML entities decoded.

    Line breaks inside the cue are kept; each line is stripped and empty lines dropped.
    """
    plain = html.unescape(_TAG_RE.sub("", text))
    lines = (line.strip() for line in plain.splitlines())
    return "\n".join(line for line in lines if line)


def subtitle_text_for(scene_start_s: float, scene_end_s: float, cues: Iterable[Cue]) -> str:
    """Text of the cues overlapping ``[scene_start_s, scene_end_s)``, by start time, one per line.

    A cue overlaps when it starts before the scene ends and ends after the scene starts (a
    zero-length cue counts when its instant lies inside the scene). Cues with no text are
    skipped. Raises ``ValueError`` when the scene bounds are reversed or not finite.
    """
    if not (math.isfinite(scene_start_s) and math.isfinite(scene_end_s)):
        raise ValueError(f"scene bounds ({scene_start_s!r}, {scene_end_s!r}) must be finite")
    if scene_end_s < scene_start_s:
        raise ValueError(f"{scene_end_s = } must be >= {scene_start_s = }")
    hits = [
        cue
        for cue in cues
        if cue.text
        and cue.start_s < scene_end_s
        and (cue.end_s > scene_start_s or scene_start_s <= cue.start_s == cue.end_s)
    ]
    hits.sort(key=lambda cue: (cue.start_s, cue.end_s))  # stable: file order breaks ties
    return "\n".join(cue.text for cue in hits)


def attach_subtitles(scenes: Iterable[Scene], cues: Sequence[Cue]) -> list[Scene]:
    """Copies of ``scenes`` with ``subtitle_text`` set from the overlapping ``cues``."""
    ordered = sorted(cues, key=lambda cue: (cue.start_s, cue.end_s))
    return [
        dataclasses.replace(
            scene, subtitle_text=subtitle_text_for(scene.start_s, scene.end_s, ordered)
        )
        for scene in scenes
    ]
