"""The bad-input corpus: files made on the fly (ffmpeg lavfi or raw bytes), and the case tables.

Nothing is downloaded. :func:`build_corpus` writes every file once per session into one
folder; each entry below says why it exists and how it is made, so a failing case can be
reproduced by hand. The case tables name each input, the stage entry point it goes through,
and what the error must say (the input's name and the problem); the test modules run them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from tests.conftest import ffmpeg, rotate_display

GOOD = "good.mp4"
GOOD2 = "good2.mp4"

#: Subtitle text with every character class that breaks naive escaping (cue 1 and 2).
TRICKY_LINES = (
    "it's \"quoted\": 100% %{pts} C:\\dir\\n ; a,b [x] =y",
    "🎉 宇宙飛行士 さくら 지우",
)


def licence(**overrides: Any) -> dict[str, Any]:
    """A manifest row's authorization fields, valid for the tests' date and scope."""
    row: dict[str, Any] = {
        "program": "badinputs", "rights_holder": "Test Studio", "licence_id": "CC-BY-4.0",
        "scope": ["benchmark", "research"], "valid_until": "2030-01-01",
    }
    row.update(overrides)
    return row


def _lavfi(out: Path, source: str, *extra: str) -> None:
    ffmpeg("-f", "lavfi", "-i", source, *extra, str(out))


def build_corpus(root: Path, outside: Path) -> Path:
    """Write every corpus file under ``root`` (and one target under ``outside``)."""
    x264 = ("-c:v", "libx264", "-pix_fmt", "yuv420p")
    # good.mp4 / good2.mp4: 2 s bars / 2 s blue at 160x90, 10 fps, index at the front.
    _lavfi(root / GOOD, "testsrc2=size=160x90:rate=10:duration=2", *x264,
           "-movflags", "+faststart")
    _lavfi(root / GOOD2, "color=c=blue:size=160x90:rate=10:duration=2", *x264)
    # moov_end.mp4: 3 s bars, index (moov) at the end: truncating it loses the header.
    _lavfi(root / "moov_end.mp4", "testsrc2=size=160x90:rate=10:duration=3", *x264)
    data = (root / "moov_end.mp4").read_bytes()
    (root / "truncated_header.mp4").write_bytes(data[: len(data) // 2])
    # corrupt_header.mp4: the first 512 bytes (ftyp + start of mdat) replaced by 0xFF.
    (root / "corrupt_header.mp4").write_bytes(b"\xff" * 512 + data[512:])
    # truncated_midstream.mp4: a faststart 6 s clip cut at 55 %: probes, then decode fails.
    _lavfi(root / "long_fs.mp4", "testsrc2=size=160x90:rate=10:duration=6", *x264,
           "-movflags", "+faststart")
    fs = (root / "long_fs.mp4").read_bytes()
    (root / "truncated_midstream.mp4").write_bytes(fs[: int(len(fs) * 0.55)])
    (root / "zero.mp4").write_bytes(b"")
    (root / "notes.mp4").write_text("meeting notes, not a video\n")
    (root / "random.mp4").write_bytes(os.urandom(4096))
    # tone.m4a: 1 s of 220 Hz, audio only.
    _lavfi(root / "tone.m4a", "sine=frequency=220:duration=1", "-c:a", "aac")
    # vfr.mp4: 10 frames at 10 fps then 10 at 4 fps (setpts), stored as variable frame rate.
    _lavfi(root / "vfr.mp4", "testsrc2=size=160x90:rate=10:duration=2",
           "-vf", "setpts='if(lt(N,10),N/10,1+(N-10)/4)/TB'", "-fps_mode", "vfr", *x264)
    # one_px.mp4: 1x1 pixels, 1 s (4:4:4, since 4:2:0 needs even sizes). The format filter
    # comes first because ffmpeg 5.1's color source sizes 4:2:0 chroma planes at 0x0.
    _lavfi(root / "one_px.mp4", "color=c=red:size=1x1:rate=5:duration=1,format=yuv444p",
           "-c:v", "libx264", "-pix_fmt", "yuv444p")
    # huge_px.mp4: 7681x4321 (odd, above 8K UHD), a single frame so it stays cheap (4:4:4
    # first, or 5.1's color source rounds the odd size down to even).
    _lavfi(root / "huge_px.mp4", "color=c=green:size=7681x4321:rate=1,format=yuv444p",
           "-frames:v", "1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p")
    # rotated.mp4: good.mp4 with a 90° display matrix (header edit, any ffmpeg version).
    rotate_display(root / GOOD, root / "rotated.mp4", degrees=90)
    (root / "folder.mp4").mkdir()
    # escape.mp4 lives outside the manifest folder; link.mp4 points at it.
    (outside / "escape.mp4").write_bytes((root / GOOD2).read_bytes())
    (root / "link.mp4").symlink_to(outside / "escape.mp4")
    _subtitles(root)
    return root


def _subtitles(root: Path) -> None:
    srt = "\n".join([
        "1", "00:00:00,000 --> 00:00:00,900", TRICKY_LINES[0], "",
        "2", "00:00:01,000 --> 00:00:01,900", TRICKY_LINES[1], "second line",
    ]) + "\n"
    (root / "tricky.srt").write_text(srt, "utf-8")
    (root / "latin1.srt").write_bytes("1\n00:00:00,000 --> 00:00:01,000\ncafé\n".encode(
        "latin-1"))
    (root / "bad_time.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nfine\n\n"
                                       "2\n00:00:01,000 --> soon\nbroken\n")
    (root / "reversed.srt").write_text("1\n00:00:01,500 --> 00:00:00,500\nbackwards\n")
    (root / "no_header.vtt").write_text("00:00:00.000 --> 00:00:01.000\nno WEBVTT line\n")
    (root / "subs.ass").write_text("[Script Info]\nTitle: not srt\n")
    # huge.srt: 40 000 cues (~1.8 MB) over the 2 s clip, plus one 200 kB line.
    cues = [f"{i + 1}\n00:00:00,{i % 1000:03d} --> 00:00:01,{i % 1000:03d}\nw{i}\n"
            for i in range(40_000)]
    cues.append("40001\n00:00:01,000 --> 00:00:01,500\n" + "x" * 200_000 + "\n")
    (root / "huge.srt").write_text("\n".join(cues), "utf-8")


@dataclasses.dataclass(frozen=True)
class IngestCase:
    """One bad manifest row: ``row`` is merged into the row; the row must be refused with
    ``reason`` and a detail containing every string of ``says`` (None: it must go in)."""

    id: str
    row: dict[str, Any]
    reason: str | None
    says: tuple[str, ...] = ()


INGEST_CASES = (
    IngestCase("corrupt-header", {"path": "corrupt_header.mp4"}, "not_video",
               ("corrupt_header.mp4", "not a readable media file")),
    IngestCase("truncated-header", {"path": "truncated_header.mp4"}, "not_video",
               ("truncated_header.mp4", "not a readable media file")),
    IngestCase("zero-bytes", {"path": "zero.mp4"}, "empty_file", ("zero.mp4", "empty")),
    IngestCase("text-as-mp4", {"path": "notes.mp4"}, "not_video", ("notes.mp4",)),
    IngestCase("random-bytes", {"path": "random.mp4"}, "not_video", ("random.mp4",)),
    IngestCase("audio-only", {"path": "tone.m4a"}, "no_video_stream",
               ("tone.m4a", "no video stream")),
    IngestCase("directory", {"path": "folder.mp4"}, "not_video", ("folder.mp4", "directory")),
    IngestCase("missing-file", {"path": "gone.mp4"}, "missing_file", ("gone.mp4", "not found")),
    IngestCase("path-traversal", {"path": "../outside/escape.mp4"}, "path_escape",
               ("../outside/escape.mp4", "outside the manifest folder")),
    IngestCase("absolute-path-out", {"path": "/etc/hostname"}, "path_escape",
               ("/etc/hostname", "outside the manifest folder")),
    IngestCase("symlink-out", {"path": "link.mp4"}, "path_escape",
               ("link.mp4", "outside the manifest folder")),
    IngestCase("no-licence", {"path": "vfr.mp4", "licence_id": None}, "unauthorized",
               ("vfr.mp4", "missing required key(s) ['licence_id']")),
    IngestCase("expired-licence", {"path": "vfr.mp4", "valid_until": "2026-05-31"}, "expired",
               ("vfr.mp4", "expired on 2026-05-31")),
    IngestCase("out-of-scope", {"path": "vfr.mp4", "scope": ["research"]}, "out_of_scope",
               ("vfr.mp4", "requires ['benchmark']")),
    IngestCase("unknown-row-key", {"path": "vfr.mp4", "colour": "red"}, "invalid_row",
               ("vfr.mp4", "unknown key(s) ['colour']")),
    IngestCase("scope-wrong-type", {"path": "vfr.mp4", "scope": 5}, "invalid_row",
               ("vfr.mp4", "scope = 5 must be a list of strings")),
    IngestCase("date-wrong-type", {"path": "vfr.mp4", "valid_until": "soon"}, "invalid_row",
               ("vfr.mp4", "valid_until = 'soon' is not a date")),
    IngestCase("subtitles-missing", {"path": "vfr.mp4", "subtitles": "nope.srt"},
               "bad_subtitles", ("vfr.mp4", "nope.srt not found")),
    IngestCase("subtitles-latin1", {"path": "vfr.mp4", "subtitles": "latin1.srt"},
               "bad_subtitles", ("latin1.srt", "not UTF-8")),
    IngestCase("subtitles-format", {"path": "vfr.mp4", "subtitles": "subs.ass"},
               "bad_subtitles", ("subs.ass", "unsupported format")),
    IngestCase("subtitles-traversal", {"path": "vfr.mp4", "subtitles": "../outside/x.srt"},
               "path_escape", ("../outside/x.srt", "outside the manifest folder")),
    # Odd but valid inputs: they must go in (and be represented; see the represent table).
    IngestCase("variable-frame-rate", {"path": "vfr.mp4"}, None),
    IngestCase("one-pixel", {"path": "one_px.mp4"}, None),
    IngestCase("huge-frame", {"path": "huge_px.mp4"}, None),
    IngestCase("rotation-metadata", {"path": "rotated.mp4"}, None),
)


@dataclasses.dataclass(frozen=True)
class RepresentCase:
    """One ingested video the represent stage must either represent (``fails`` False; with
    ``decode_error`` when it must record one) or report as failed naming ``says``."""

    id: str
    path: str
    subtitles: str | None
    fails: bool
    says: tuple[str, ...] = ()
    decode_error: bool = False


REPRESENT_CASES = (
    # The stored sidecar copy is named by its hash: the error names the video's source file
    # (checked for every failing case), says it is the subtitle sidecar, the line and problem.
    RepresentCase("subtitles-bad-timestamp", GOOD, "bad_time.srt", True,
                  ("subtitle sidecar", ".srt:6:", "bad timestamp 'soon'")),
    RepresentCase("subtitles-end-before-start", GOOD, "reversed.srt", True,
                  ("subtitle sidecar", ".srt:2:")),
    RepresentCase("subtitles-vtt-without-header", GOOD, "no_header.vtt", True,
                  ("subtitle sidecar", ".vtt:", "WEBVTT")),
    RepresentCase("subtitles-huge", GOOD, "huge.srt", False),
    RepresentCase("subtitles-tricky-text", GOOD, "tricky.srt", False),
    RepresentCase("truncated-midstream", "truncated_midstream.mp4", None, False,
                  decode_error=True),
    RepresentCase("variable-frame-rate", "vfr.mp4", None, False),
    RepresentCase("one-pixel", "one_px.mp4", None, False),
    RepresentCase("huge-frame", "huge_px.mp4", None, False),
    RepresentCase("rotation-metadata", "rotated.mp4", None, False),
)
