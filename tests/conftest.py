"""Shared fixtures: tiny media made by ffmpeg lavfi, and one Prefect harness per session.

Every clip is generated, never downloaded, and each fixture says why it exists and how it is
made, so a failing test can be reproduced by hand with the same ffmpeg command.
"""

from __future__ import annotations

import os
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
    # The same bars re-encoded rotated by display matrix (90°): probing must report it.
    ffmpeg("-display_rotation", "90", "-i", str(root / "bars.mp4"), "-c", "copy",
           str(root / "rotated.mp4"))
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
