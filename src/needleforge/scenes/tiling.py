"""Turn cut times into scenes that tile a video: contiguous, non-overlapping, covering it.

Detectors report *cuts* (the time a new shot starts). Everything downstream (montage plans,
subtitles, keyframes) relies on scenes tiling ``[0, end_s]`` exactly, so the conversion lives
in one small pure function that property tests can hammer with arbitrary cut lists.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypeAlias

from needleforge.records import Scene, scene_id_for

#: Half-open scene bounds ``(start_s, end_s)`` in seconds from the video start.
Bounds: TypeAlias = tuple[float, float]

#: Times are stored rounded to the microsecond, like :func:`needleforge.media.probe`.
TIME_DECIMALS = 6


def tile_cuts(cut_times_s: Iterable[float], *, end_s: float) -> list[Bounds]:
    """Scenes ``[(0, c1), (c1, c2), ..., (cn, end_s)]`` from unordered cut times.

    Why: detectors may emit duplicate, unsorted or out-of-range cuts (a cut at frame 0, one
    past a truncated end); the result must still tile ``[0, end_s]``. Cuts at or below 0, at
    or beyond ``end_s`` and closer than a microsecond to a neighbour are dropped. No cuts give
    one scene. Raises ``ValueError`` when ``end_s`` is not finite and > 0 or a cut is NaN.
    """
    if not (math.isfinite(end_s) and end_s > 0):
        raise ValueError(f"end_s = {end_s!r} must be finite and > 0")
    end = round(end_s, TIME_DECIMALS)
    cuts: list[float] = []
    for raw in cut_times_s:
        if math.isnan(raw):
            raise ValueError(f"cut time {raw!r} is not a number")
        cuts.append(round(raw, TIME_DECIMALS))
    starts = [0.0]
    for cut in sorted(set(cuts)):
        if starts[-1] < cut < end:
            starts.append(cut)
    ends = [*starts[1:], end]
    return list(zip(starts, ends, strict=True))


def frames_between(start_s: float, end_s: float, *, fps: float) -> int:
    """Frames whose start time falls in ``[start_s, end_s)`` at a constant ``fps`` (>= 1).

    Frame ``k`` starts at ``k / fps``; rounding makes boundaries that sit on frame times (as
    detector cuts do) count exactly, and a sliver scene still counts one frame.
    """
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps = {fps!r} must be finite and > 0")
    return max(1, round(end_s * fps) - round(start_s * fps))


def scenes_from_bounds(
    bounds: Iterable[Bounds], *, video_id: str, fps: float
) -> tuple[Scene, ...]:
    """Scene records (ids ``{video_id}-s0000``...) for tiled bounds, with ``n_frames`` filled.

    Raises ``ValueError`` (from :class:`Scene`) when a bound is empty or reversed, and when
    consecutive bounds leave a gap or overlap: callers must pass the output of
    :func:`tile_cuts` (or equivalent), not arbitrary intervals.
    """
    scenes: list[Scene] = []
    previous_end = 0.0
    for index, (start_s, end_s) in enumerate(bounds):
        if start_s != previous_end:
            raise ValueError(
                f"scene {index} starts at {start_s} but the previous one ends at {previous_end}:"
                " scenes must tile the video"
            )
        scenes.append(
            Scene(
                scene_id=scene_id_for(video_id, index),
                video_id=video_id,
                index=index,
                start_s=start_s,
                end_s=end_s,
                n_frames=frames_between(start_s, end_s, fps=fps),
            )
        )
        previous_end = end_s
    return tuple(scenes)


def check_tiling(scenes: Iterable[Scene], *, end_s: float) -> None:
    """Raise ``ValueError`` naming the first scene that breaks the tiling of ``[0, end_s]``.

    Why: a cheap guard for code that builds scenes by other means (store reads, edits).
    """
    previous_end = 0.0
    last: Scene | None = None
    for scene in scenes:
        if scene.start_s != previous_end:
            raise ValueError(
                f"{scene.scene_id}: start_s = {scene.start_s} != previous end {previous_end}"
            )
        previous_end = scene.end_s
        last = scene
    if last is None:
        raise ValueError("no scenes: a video is tiled by at least one scene")
    if not math.isclose(previous_end, end_s, abs_tol=10 ** -TIME_DECIMALS):
        raise ValueError(f"{last.scene_id}: ends at {previous_end}, the video at {end_s}")
