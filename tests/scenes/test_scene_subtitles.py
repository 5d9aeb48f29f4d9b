"""SRT/WebVTT sidecar parsing, cue-to-scene attachment, and errors that name the line."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from needleforge.errors import SubtitleError
from needleforge.scenes import (
    Cue,
    attach_subtitles,
    clean_cue_text,
    parse_subtitles,
    read_subtitles,
    scenes_from_bounds,
    subtitle_text_for,
)

SRT = """1
00:00:01,000 --> 00:00:02,500
He said "don't" — it's 'fine'.

2
00:00:03,000 --> 00:00:04,000 X1:10 X2:100 Y1:10 Y2:50
<i>こんにちは</i>, <b>мир</b>!
{\\an8}مرحبا بالعالم

3
01:02:03,004 --> 01:02:05,000
Tom &amp; Jerry: 100% <font color="#ff0000">red</font> a < b > c"""

VTT = """WEBVTT - a title
Kind: captions
Language: en

NOTE a comment
spanning two lines --> with an arrow-like thing

STYLE
::cue { color: yellow }

intro
00:01.000 --> 00:02.500 align:start position:10%
<v Roger>Hello <c.yellow>there</c></v>

00:00:03.000 --> 00:00:04.000
<00:00:03.500>Karaoke 中文字幕

REGION
id:fred width:40%
"""


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_srt_cues_with_quotes_scripts_and_markup() -> None:
    cues = parse_subtitles(SRT, fmt="srt")
    assert cues == [
        Cue(1.0, 2.5, 'He said "don\'t" — it\'s \'fine\'.'),
        Cue(3.0, 4.0, "こんにちは, мир!\nمرحبا بالعالم"),
        Cue(3723.004, 3725.0, "Tom & Jerry: 100% red a < b > c"),
    ]


def test_vtt_skips_header_note_style_region_and_settings() -> None:
    cues = parse_subtitles(VTT, fmt="vtt")
    assert cues == [
        Cue(1.0, 2.5, "Hello there"),
        Cue(3.0, 4.0, "Karaoke 中文字幕"),
    ]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8])
def test_files_with_bom_and_any_newlines(tmp_path: Path, newline: str, bom: bytes) -> None:
    expected = parse_subtitles(SRT, fmt="srt")
    data = bom + SRT.replace("\n", newline).encode("utf-8")  # no trailing blank line either
    assert read_subtitles(write(tmp_path, "a.srt", data)) == expected
    vtt = bom + VTT.replace("\n", newline).encode("utf-8")
    assert read_subtitles(write(tmp_path, "a.vtt", vtt)) == parse_subtitles(VTT, fmt="vtt")


def test_utf16_with_bom_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, "w.srt", SRT.encode("utf-16"))
    assert read_subtitles(path) == parse_subtitles(SRT, fmt="srt")


def test_format_sniffed_without_a_known_suffix(tmp_path: Path) -> None:
    assert read_subtitles(write(tmp_path, "subs.txt", VTT.encode()))[0].text == "Hello there"
    assert read_subtitles(write(tmp_path, "subs.sub", SRT.encode()))[0].start_s == 1.0


def test_srt_without_index_lines_and_dot_millis() -> None:
    text = "00:00:01.5 --> 00:00:02.250\nfirst\n\n\n\n0:00:03,000 --> 0:00:04,000\nsecond\n"
    assert parse_subtitles(text, fmt="srt") == [Cue(1.5, 2.25, "first"), Cue(3.0, 4.0, "second")]


def test_empty_file_has_no_cues() -> None:
    assert parse_subtitles("\ufeff\n\n", fmt="srt") == []
    assert parse_subtitles("WEBVTT\n", fmt="vtt") == []


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:03,000 --> 00:0x:04,000\nbad\n",
         6, "bad timestamp '00:0x:04,000'"),
        ("1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:01:61,000 --> 00:01:62,000\nbad\n",
         6, "bad timestamp '00:01:61,000'"),
        ("\n\n1\n00:00:05,000 --> 00:00:04,000\nbackwards\n", 4, "ends (00:00:04,000) before"),
        ("1\n00:00:01,000 --> 00:00:02,000\nok\n\njust text\nmore text\n", 5, "no 'start --> end'"),
        ("one\n00:00:01,000 --> 00:00:02,000\nok\n", 1, "cue index must be a number"),
        ("1\n2\n00:00:01,000 --> 00:00:02,000\nok\n", 3, "timing line expected"),
        ("1\n00:00:01,000 -> 00:00:02,000\nok\n", 1, "no 'start --> end'"),
        ("1\n00:00:01,000 --> \nok\n", 2, "bad timing line"),
    ],
)
def test_malformed_srt_names_the_line(text: str, line: int, what: str) -> None:
    with pytest.raises(SubtitleError) as info:
        parse_subtitles(text, fmt="srt", source="ep1.srt")
    message = str(info.value)
    assert message.startswith(f"ep1.srt:{line}: "), message
    assert what in message


def test_vtt_needs_its_header() -> None:
    message = r"^x\.vtt:1: WebVTT file must start with a 'WEBVTT' line"
    with pytest.raises(SubtitleError, match=message):
        parse_subtitles("00:01.000 --> 00:02.000\nhi\n", fmt="vtt", source="x.vtt")


def test_vtt_bad_timestamp_names_the_line() -> None:
    text = "WEBVTT\n\nNOTE fine\n\n00:01.000 --> 00:02.000\nok\n\n1:2.000 --> 00:03.000\nx\n"
    with pytest.raises(SubtitleError, match=r"^v.vtt:8: bad timestamp '1:2.000'"):
        parse_subtitles(text, fmt="vtt", source="v.vtt")


def test_non_utf8_file_names_file_and_line(tmp_path: Path) -> None:
    data = b"1\n00:00:01,000 --> 00:00:02,000\nok\n\n2\n00:00:03,000 --> 00:00:04,000\n"
    path = write(tmp_path, "latin.srt", data + "café\n".encode("latin-1"))
    with pytest.raises(SubtitleError) as info:
        read_subtitles(path)
    assert str(info.value).startswith(f"{path}:7: not UTF-8 text (byte 0xe9")


def test_missing_file_is_a_subtitle_error(tmp_path: Path) -> None:
    with pytest.raises(SubtitleError, match=r"nope\.srt: cannot read"):
        read_subtitles(tmp_path / "nope.srt")


def test_bad_format_argument_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"fmt = 'ass' must be one of \('srt', 'vtt'\)"):
        parse_subtitles("", fmt="ass")  # type: ignore[arg-type]


def test_clean_cue_text_keeps_lines_and_plain_angle_brackets() -> None:
    assert clean_cue_text("<i>a</i>\n\n  <u>b</u>  \n") == "a\nb"
    assert clean_cue_text("x <3 and 2 > 1") == "x <3 and 2 > 1"


def test_subtitle_text_for_overlapping_cues_in_start_order() -> None:
    cues = [
        Cue(5.0, 6.0, "third"),
        Cue(0.5, 1.5, "first"),
        Cue(1.0, 9.0, "second"),
        Cue(2.0, 2.0, "instant"),
        Cue(4.0, 4.5, ""),
        Cue(6.0, 7.0, "after"),
    ]
    assert subtitle_text_for(1.5, 6.0, cues) == "second\ninstant\nthird"
    assert subtitle_text_for(0.0, 1.0, cues) == "first"  # touching at 1.0 is no overlap
    assert subtitle_text_for(9.0, 10.0, cues) == ""
    with pytest.raises(ValueError, match=r"scene_end_s = 1\.0 must be >= scene_start_s = 2\.0"):
        subtitle_text_for(2.0, 1.0, cues)


def test_attach_subtitles_returns_copies() -> None:
    scenes = scenes_from_bounds([(0.0, 2.0), (2.0, 4.0), (4.0, 6.0)], video_id="vabc", fps=25)
    cues = parse_subtitles(SRT, fmt="srt")
    attached = attach_subtitles(scenes, cues)
    assert [s.subtitle_text for s in attached] == [
        'He said "don\'t" — it\'s \'fine\'.',
        'He said "don\'t" — it\'s \'fine\'.\nこんにちは, мир!\nمرحبا بالعالم',
        "",
    ]
    assert all(s.subtitle_text == "" for s in scenes)
    assert [s.scene_id for s in attached] == [s.scene_id for s in scenes]


def test_cue_checks_itself() -> None:
    with pytest.raises(ValueError, match=r"end_s = 1\.0 must be >= start_s = 2\.0"):
        Cue(2.0, 1.0, "x")
