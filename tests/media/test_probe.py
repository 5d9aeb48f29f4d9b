"""Probing real files with PyAV, and ffmpeg discovery."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from needleforge.errors import MediaError, ProbeError
from needleforge.media import ffmpeg_binary, probe
from needleforge.media.ffmpeg import _discover


def test_probe_good_video_with_audio(media_dir: Path) -> None:
    info = probe(media_dir / "bars.mp4")
    assert (info.width, info.height, info.fps) == (160, 90, 10.0)
    assert info.duration_s == pytest.approx(2.0, abs=0.05)
    assert info.video_codec == "h264" and info.audio_codec == "aac" and info.has_audio
    assert info.n_frames == 20 and info.rotation_deg == 0


def test_probe_rotation(media_dir: Path) -> None:
    assert probe(media_dir / "rotated.mp4").rotation_deg == 90


@pytest.mark.parametrize(
    ("name", "kind", "words"),
    [
        ("absent.mp4", "missing", "file not found"),
        ("empty.mp4", "empty", "file is empty (0 bytes)"),
        ("notes.mp4", "not_media", "not a readable media file"),
        ("truncated.mp4", "not_media", "not a readable media file"),
        ("tone.m4a", "no_video", "no video stream (streams: audio)"),
    ],
)
def test_probe_bad_files(media_dir: Path, name: str, kind: str, words: str) -> None:
    with pytest.raises(ProbeError) as err:
        probe(media_dir / name)
    assert err.value.kind == kind
    assert str(err.value).startswith(str(media_dir / name)) and words in str(err.value)


def test_ffmpeg_discovery_order(tmp_path: Path) -> None:
    bundled = ffmpeg_binary()
    assert os.access(bundled, os.X_OK)
    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert _discover(None, str(tmp_path)) == str(fake)          # PATH beats the bundle
    assert _discover(str(fake), "/nonexistent") == str(fake)    # env var beats PATH
    with pytest.raises(MediaError, match="NEEDLEFORGE_FFMPEG = '/no/such/ffmpeg' is not"):
        _discover("/no/such/ffmpeg", None)
    assert _discover(None, "/nonexistent").endswith(("ffmpeg", ".exe")) or "ffmpeg" in bundled


def test_probe_error_survives_pickling_across_worker_processes() -> None:
    import pickle

    from needleforge.errors import ProbeError

    again = pickle.loads(pickle.dumps(ProbeError("clip.mp4: no video stream", kind="no_video")))
    assert isinstance(again, ProbeError)
    assert (str(again), again.kind) == ("clip.mp4: no video stream", "no_video")
