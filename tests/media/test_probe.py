"""Probing real files with PyAV (ffmpeg discovery: ``test_ffmpeg.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from needleforge.errors import ProbeError
from needleforge.media import probe


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


def test_probe_error_survives_pickling_across_worker_processes() -> None:
    import pickle

    from needleforge.errors import ProbeError

    again = pickle.loads(pickle.dumps(ProbeError("clip.mp4: no video stream", kind="no_video")))
    assert isinstance(again, ProbeError)
    assert (str(again), again.kind) == ("clip.mp4: no video stream", "no_video")
