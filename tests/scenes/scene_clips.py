"""Clip builders for the scenes tests: lavfi sources concatenated into hard cuts.

Every clip is made by ffmpeg lavfi with the project's ffmpeg binary, at 320x180 / 25 fps so the
whole module stays fast. Sources are solid colours, ``testsrc2`` and ``smptebars``, chained so
that every cut changes the picture strongly (ContentDetector score >= 57 of a threshold of 27,
measured; e.g. blue -> testsrc2 scores only ~24 and is *not* used). Never ``life``: its chaos
makes false cuts. Each fixture's docstring gives the command that made it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from needleforge.media.ffmpeg import ffmpeg_binary

FPS = 25
SIZE = "320x180"


@dataclass(frozen=True)
class Clip:
    """A generated clip and its ground truth: cut times and total duration in seconds."""

    path: Path
    cuts_s: tuple[float, ...]
    duration_s: float
    colours: tuple[str, ...]


def run_ffmpeg(*args: str) -> None:
    """Run ffmpeg quietly; fail with its stderr."""
    cmd = [ffmpeg_binary(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)} failed: {proc.stderr.decode()}")


def _source(name: str, duration_s: float) -> str:
    """A lavfi source spec: ``testsrc2``, ``smptebars`` or a colour name."""
    opts = f"size={SIZE}:rate={FPS}:duration={duration_s}"
    if name in ("testsrc2", "smptebars"):
        return f"{name}={opts}"
    return f"color=c={name}:{opts}"


def concat_clip(path: Path, segments: list[tuple[str, float]], *, faststart: bool) -> Clip:
    """Concatenate lavfi sources into one H.264 mp4 with hard cuts between segments.

    Command: ``ffmpeg -f lavfi -i SRC1 ... -filter_complex "[0][1]...concat=n=N:v=1:a=0"
    -c:v libx264 -preset veryfast -pix_fmt yuv420p [-movflags +faststart] OUT``.
    """
    args: list[str] = []
    for name, duration_s in segments:
        args += ["-f", "lavfi", "-i", _source(name, duration_s)]
    labels = "".join(f"[{i}]" for i in range(len(segments)))
    args += ["-filter_complex", f"{labels}concat=n={len(segments)}:v=1:a=0"]
    args += ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
    if faststart:
        args += ["-movflags", "+faststart"]
    run_ffmpeg(*args, str(path))
    cuts: list[float] = []
    t = 0.0
    for _name, duration_s in segments[:-1]:
        t = round(t + duration_s, 6)
        cuts.append(t)
    total = round(sum(d for _n, d in segments), 6)
    return Clip(path, tuple(cuts), total, tuple(n for n, _d in segments))
