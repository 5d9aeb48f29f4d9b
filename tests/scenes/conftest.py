"""Clips with hard cuts at known times, for shot detection and keyframe tests.

All clips are 320x180 at 25 fps, built once per session by :mod:`scene_clips` (see there why
these sources and not others). Each fixture's docstring says why the clip exists and the
command that made it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scene_clips import FPS, SIZE, Clip, concat_clip, run_ffmpeg


@pytest.fixture(scope="session")
def scene_media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder all clips of this package are written to (one per session)."""
    return tmp_path_factory.mktemp("scene_media")


@pytest.fixture(scope="session")
def cuts_clip(scene_media: Path) -> Clip:
    """Five shots, four hard cuts at 1.6, 2.8, 3.8 and 4.6 s (6.2 s total).

    Why: the reference clip for cut accuracy (±2 frames), n_frames, tiling and keyframe
    colours. Uneven shot lengths so an off-by-one scene would show. Made by
    :func:`concat_clip` from testsrc2 1.6 s | smptebars 1.2 s | green 1.0 s | black 0.8 s |
    white 1.6 s.
    """
    segments = [
        ("testsrc2", 1.6), ("smptebars", 1.2), ("green", 1.0), ("black", 0.8), ("white", 1.6),
    ]
    return concat_clip(scene_media / "cuts.mp4", segments, faststart=True)


@pytest.fixture(scope="session")
def still_clip(scene_media: Path) -> Clip:
    """3 s of ``testsrc2`` (moving, but one shot): detection must give exactly one scene.

    ``ffmpeg -f lavfi -i testsrc2=size=320x180:rate=25:duration=3 -c:v libx264 ...``
    """
    return concat_clip(scene_media / "still.mp4", [("testsrc2", 3.0)], faststart=True)


@pytest.fixture(scope="session")
def black_clip(scene_media: Path) -> Clip:
    """2 s of pure black: no content change at all, so no cut and one scene.

    ``ffmpeg -f lavfi -i color=c=black:size=320x180:rate=25:duration=2 -c:v libx264 ...``
    """
    return concat_clip(scene_media / "black.mp4", [("black", 2.0)], faststart=True)


@pytest.fixture(scope="session")
def one_frame_clip(scene_media: Path) -> Clip:
    """A single frame of smptebars: the smallest video; must still give one scene.

    ``ffmpeg -f lavfi -i smptebars=size=320x180:rate=25 -frames:v 1 -c:v libx264 ...``
    """
    path = scene_media / "one_frame.mp4"
    run_ffmpeg("-f", "lavfi", "-i", f"smptebars=size={SIZE}:rate={FPS}", "-frames:v", "1",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path))
    return Clip(path, (), 1 / FPS, ("smptebars",))


@pytest.fixture(scope="session")
def truncated_clip(scene_media: Path) -> tuple[Clip, Clip]:
    """(intact, truncated): the first half of the bytes of a 6 s clip with cuts at 1, 2, 3 s.

    Why: a download cut short. ``+faststart`` puts the index first, so the halved file still
    opens and decodes until the data runs out; the cheap solid-colour shots come first, so the
    first cuts lie inside the surviving half (the busy testsrc2 tail holds most bytes).
    Made by :func:`concat_clip` from green 1 s | black 1 s | smptebars 1 s | testsrc2 3 s,
    then ``head -c $((size / 2))``.
    """
    segments = [("green", 1.0), ("black", 1.0), ("smptebars", 1.0), ("testsrc2", 3.0)]
    intact = concat_clip(scene_media / "intact.mp4", segments, faststart=True)
    data = intact.path.read_bytes()
    half = scene_media / "half.mp4"
    half.write_bytes(data[: len(data) // 2])
    return intact, Clip(half, intact.cuts_s, intact.duration_s, intact.colours)


@pytest.fixture(scope="session")
def headless_clip(scene_media: Path, truncated_clip: tuple[Clip, Clip]) -> Path:
    """The first half of the same clip written *without* faststart: the index (moov) is at the
    end and is lost, so the file cannot be opened at all.

    ``ffmpeg -i intact.mp4 -c copy -movflags -faststart moov_end.mp4; head -c $((size / 2))``
    """
    moov_end = scene_media / "moov_end.mp4"
    run_ffmpeg("-i", str(truncated_clip[0].path), "-c", "copy", str(moov_end))
    data = moov_end.read_bytes()
    path = scene_media / "headless.mp4"
    path.write_bytes(data[: len(data) // 2])
    return path
