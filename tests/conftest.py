"""Shared fixtures: tiny media made by ffmpeg lavfi, and one Prefect harness per session.

Every clip is generated, never downloaded, and each fixture says why it exists and how it is
made, so a failing test can be reproduced by hand with the same ffmpeg command.
"""

from __future__ import annotations

import math
import os
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from needleforge.media.ffmpeg import ffmpeg_binary

for _key, _value in {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "DVC_NO_ANALYTICS": "1",
    "HF_HUB_OFFLINE": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    # Wide enough that rich never wraps a CLI message a test looks for.
    "COLUMNS": "400",
}.items():
    os.environ.setdefault(_key, _value)


def ffmpeg(*args: str) -> None:
    """Run the project's ffmpeg binary quietly; fail the test with its stderr."""
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)} failed: {proc.stderr.decode()}")


def rotate_display(src: Path, out: Path, *, degrees: int) -> None:
    """Copy ``src`` (an mp4) to ``out`` with its video track's display matrix rotated.

    Writes the 3x3 matrix of the video track's ``tkhd`` box (moov > trak > tkhd) as FFmpeg's
    ``av_display_rotation_set`` would, instead of running ``ffmpeg -display_rotation``: that
    option is new in ffmpeg 6.0 and the ``rotate`` tag older ones read is ignored since, so
    this byte edit is the one way that works with every ffmpeg the project accepts.
    """
    data = bytearray(src.read_bytes())
    cos, sin = round(math.cos(math.radians(degrees))), round(math.sin(math.radians(degrees)))
    tkhd = _video_tkhd(data)
    # After size, type, version and flags: the times, ids and duration (20 bytes in version 0,
    # 32 in version 1), then reserved, layer, group, volume and reserved (16 bytes).
    matrix_at = tkhd + 12 + (20 if data[tkhd + 8] == 0 else 32) + 16
    struct.pack_into(">9i", data, matrix_at,
                     cos << 16, -sin << 16, 0, sin << 16, cos << 16, 0, 0, 0, 1 << 30)
    out.write_bytes(bytes(data))


def _boxes(data: bytearray, start: int, end: int) -> Iterator[tuple[bytes, int, int]]:
    """(type, offset, size) of the mp4 boxes between ``start`` and ``end``."""
    while start + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, start)
        yield kind, start, size
        start += size


def _video_tkhd(data: bytearray) -> int:
    """Offset of the ``tkhd`` box of the first track whose handler (``hdlr``) is ``vide``."""
    moov, moov_size = next((o, n) for kind, o, n in _boxes(data, 0, len(data)) if kind == b"moov")
    for kind, trak, size in _boxes(data, moov + 8, moov + moov_size):
        body = bytes(data[trak:trak + size])
        hdlr = body.find(b"hdlr")
        if kind == b"trak" and hdlr > 0 and body[hdlr + 12:hdlr + 16] == b"vide":
            return next(o for k, o, _ in _boxes(data, trak + 8, trak + size) if k == b"tkhd")
    raise ValueError("no video track in the mp4")


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of tiny clips shared by the whole session (built once, read-only by habit)."""
    root = tmp_path_factory.mktemp("media")
    # 2 s 160x90 colour bars with a 440 Hz tone: the ordinary good video with audio.
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=2",
           "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest",
           str(root / "bars.mp4"))
    # 1 s of solid blue, no audio: a second, different good video.
    ffmpeg("-f", "lavfi", "-i", "color=c=blue:size=160x90:rate=10:duration=1",
           "-c:v", "libx264", "-pix_fmt", "yuv420p", str(root / "blue.mp4"))
    # The same bars with a 90° display matrix (rotate_display): probing must report it.
    rotate_display(root / "bars.mp4", root / "rotated.mp4", degrees=90)
    # Audio only (a tone in an m4a): a media file that is not a video.
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=220:duration=1", "-c:a", "aac",
           str(root / "tone.m4a"))
    (root / "empty.mp4").write_bytes(b"")
    (root / "notes.mp4").write_text("these are meeting notes, not a video\n")
    # The first 40 % of bars.mp4: the moov atom is at the end, so the header is gone.
    data = (root / "bars.mp4").read_bytes()
    (root / "truncated.mp4").write_bytes(data[: int(len(data) * 0.4)])
    return root


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (it costs ~11 s to start)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture(autouse=True)
def _debug_log_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors the CLI logs whole (``needleforge.runtime.debug_log``) go to a scratch file, not
    to the developer's cache folder."""
    monkeypatch.setenv("NEEDLEFORGE_DEBUG_LOG",
                       str(tmp_path_factory.getbasetemp() / "debug.log"))
