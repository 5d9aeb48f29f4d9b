"""Helpers shared by the studio tests (imported by name, like ``scene_clips`` in tests/scenes)."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import numpy.typing as npt

from needleforge.params import ProgramParams, StudioParams

Frames = npt.NDArray[np.uint8]


def tiny_params(seed: int = 7) -> StudioParams:
    """The corpus the studio tests build: every real clip, one program of two 8 s episodes."""
    return StudioParams(
        seed=seed,
        width=160,
        height=90,
        fps=10.0,
        programs=[
            ProgramParams(
                name="tiny", n_videos=2, video_duration_s=8.0, min_scene_s=1.5, max_scene_s=3.0
            )
        ],
    )


def file_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, keyed by its relative POSIX path."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def decode_rgb(path: Path) -> Frames:
    """Every frame of ``path`` as one ``(n, height, width, 3)`` uint8 array."""
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack(frames)


def packet_s(ticks: int | None, time_base: Fraction | None) -> float:
    """A packet time (pts or pts + duration) in seconds; fails when the container has none."""
    assert ticks is not None and time_base is not None
    return float(ticks * time_base)
