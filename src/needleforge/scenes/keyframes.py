"""Keyframes per scene from one sequential PyAV decode (no seeking).

Why sequential: seeking lands on the previous keyframe and decodes forward anyway, so for the
1–2 fps we need on every scene of a video one straight pass is both faster and exact. Targets
are ``scene.start_s + offset + k / fps``; each takes the first decoded frame at or after it
that still lies inside its scene, so a keyframe never shows the shot on the other side of a
cut (the offset absorbs a cut detected a frame or two early). Every scene with a decodable
frame gets at least one keyframe.

Images are RGB ``uint8`` arrays in *stored* orientation: a display rotation
(``MediaInfo.rotation_deg``) is not applied; taggers and detectors work either way, and boxes
stay in the coordinates the renderer cuts from.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Generator, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from needleforge.backends.base import Keyframe
from needleforge.errors import MediaError
from needleforge.records import Scene

#: Stop after this many packets in a row fail to decode (isolated bad packets are skipped).
MAX_CONSECUTIVE_FAILURES = 5
_EPS_S = 1e-6


@dataclasses.dataclass(frozen=True, slots=True)
class _Target:
    t_s: float
    scene_index: int


class KeyframeSampler(Iterator[Keyframe]):
    """Iterator over keyframes that also reports how the decode went.

    After (or during) iteration, ``decode_error`` is None or says where decoding failed or
    stopped short of the last scene, and ``frames_decoded`` counts decoded frames.
    """

    def __init__(
        self,
        make_frames: Callable[[KeyframeSampler], Generator[Keyframe]],
        *,
        release: Callable[[], None],
    ) -> None:
        self.decode_error: str | None = None
        self.frames_decoded = 0
        self._frames = make_frames(self)
        self._release = release

    def __iter__(self) -> KeyframeSampler:
        return self

    def __next__(self) -> Keyframe:
        return next(self._frames)

    def close(self) -> None:
        """Stop early and release the file (also happens when iteration ends)."""
        self._frames.close()
        self._release()  # the generator releases it only if iteration had started


def keyframe_times(
    scene: Scene, *, fps: float, max_per_scene: int | None = None, offset_s: float = 0.1
) -> list[float]:
    """Target times for ``scene``: ``start + offset + k / fps`` inside the scene.

    The offset shrinks to half the scene for very short scenes, so there is always one
    target. With ``max_per_scene`` the targets are thinned evenly (first one kept). Raises
    ``ValueError`` for ``fps <= 0``, ``max_per_scene < 1`` or a negative ``offset_s``.
    """
    _check_sampling(fps=fps, max_per_scene=max_per_scene, offset_s=offset_s)
    first = scene.start_s + min(offset_s, scene.duration_s / 2)
    count = max(1, math.ceil((scene.end_s - first) * fps - _EPS_S))
    times = [first + k / fps for k in range(count)]
    if max_per_scene is not None and len(times) > max_per_scene:
        step = len(times) / max_per_scene
        times = [times[math.floor(i * step)] for i in range(max_per_scene)]
    return times


def sample_keyframes(
    path: Path,
    scenes: Sequence[Scene],
    *,
    fps: float,
    max_per_scene: int | None = None,
    offset_s: float = 0.1,
    max_side_px: int | None = None,
) -> KeyframeSampler:
    """Keyframes at about ``fps`` per scene of ``path``, decoding the video once.

    ``scenes`` must be one video's scenes in time order (as :func:`detect_scenes` returns).
    ``max_side_px`` shrinks images (aspect kept) during colour conversion, which is cheaper
    than resizing afterwards. Raises ``ValueError`` for bad arguments and :class:`MediaError`
    when the file cannot be opened or has no video stream, both before the first frame. A
    decode failure midway ends the iteration early and is recorded in ``decode_error``.
    """
    _check_sampling(fps=fps, max_per_scene=max_per_scene, offset_s=offset_s)
    if max_side_px is not None and max_side_px < 2:
        raise ValueError(f"max_side_px = {max_side_px} must be >= 2 or None")
    video_ids = sorted({scene.video_id for scene in scenes})
    if len(video_ids) > 1:
        raise ValueError(f"scenes of one video expected, got video ids {video_ids}")
    for previous, scene in itertools.pairwise(scenes):
        if scene.start_s < previous.end_s - _EPS_S:
            raise ValueError(f"{scene.scene_id} starts before {previous.scene_id} ends")
    targets = [
        _Target(t, index)
        for index, scene in enumerate(scenes)
        for t in keyframe_times(scene, fps=fps, max_per_scene=max_per_scene, offset_s=offset_s)
    ]
    container = _open(path)
    return KeyframeSampler(
        lambda sampler: _sample(container, scenes, targets, sampler, max_side_px, path),
        release=container.close,
    )


def _check_sampling(*, fps: float, max_per_scene: int | None, offset_s: float) -> None:
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps = {fps!r} must be finite and > 0")
    if max_per_scene is not None and max_per_scene < 1:
        raise ValueError(f"max_per_scene = {max_per_scene} must be >= 1 or None")
    if not (math.isfinite(offset_s) and offset_s >= 0):
        raise ValueError(f"offset_s = {offset_s!r} must be finite and >= 0")


def _open(path: Path) -> Any:
    try:
        container = av.open(str(path), metadata_errors="ignore")
    except (av.FFmpegError, OSError, UnicodeDecodeError) as err:
        raise MediaError(f"{path}: cannot open video for keyframes ({err})") from None
    if not container.streams.video:
        container.close()
        raise MediaError(f"{path}: no video stream to sample keyframes from")
    return container


def _sample(
    container: Any,
    scenes: Sequence[Scene],
    targets: list[_Target],
    sampler: KeyframeSampler,
    max_side_px: int | None,
    path: Path,
) -> Generator[Keyframe]:
    """Walk decoded frames and targets together; closes the container when done."""
    with container:
        stream = container.streams.video[0]
        size = _output_size(stream.codec_context.width, stream.codec_context.height, max_side_px)
        served: dict[int, float] = {}  # scene index -> t_s of its last keyframe
        previous: tuple[float, Any] | None = None
        pending = 0
        for t_s, frame in _decoded_frames(container, stream, sampler, path):
            while pending < len(targets) and t_s >= targets[pending].t_s - _EPS_S:
                index = targets[pending].scene_index
                pending += 1
                chosen = _choose(scenes[index], (t_s, frame), previous, served.get(index))
                if chosen is not None:
                    served[index] = chosen[0]
                    yield _keyframe(scenes[index], chosen, size)
            if pending == len(targets):
                return  # every target served: the rest of the file is not needed
            previous = (t_s, frame)
        # Decoding ended first: a target past the last frame still gets it when it is inside.
        for target in targets[pending:]:
            index = target.scene_index
            chosen = _choose(scenes[index], None, previous, served.get(index))
            if chosen is not None:
                served[index] = chosen[0]
                yield _keyframe(scenes[index], chosen, size)
        missing = [s.scene_id for i, s in enumerate(scenes) if i not in served]
        if missing and sampler.decode_error is None:
            end = "no frame" if previous is None else f"the frame at {previous[0]:.3f} s"
            sampler.decode_error = (
                f"{path}: decoding stopped at {end} after {sampler.frames_decoded} frames; "
                f"{len(missing)} scene(s) got no keyframe, first {missing[0]}"
            )


def _choose(
    scene: Scene,
    current: tuple[float, Any] | None,
    previous: tuple[float, Any] | None,
    last_served_s: float | None,
) -> tuple[float, Any] | None:
    """The frame for one target of ``scene``, or None (duplicate, or nothing inside).

    ``current`` is the first frame at or after the target; when it is past the scene end,
    the frame before it stands in if the scene has no keyframe yet and it lies inside.
    """
    if current is not None and current[0] < scene.end_s - _EPS_S:
        chosen = current
    elif last_served_s is None and previous is not None:
        chosen = previous
    else:
        return None
    inside = scene.start_s - _EPS_S <= chosen[0] < scene.end_s - _EPS_S
    if not inside or chosen[0] == last_served_s:
        return None
    return chosen


def _keyframe(scene: Scene, chosen: tuple[float, Any], size: tuple[int, int] | None) -> Keyframe:
    t_s, frame = chosen
    if size is None:
        image = frame.to_ndarray(format="rgb24")
    else:
        image = frame.to_ndarray(format="rgb24", width=size[0], height=size[1])
    return Keyframe(scene_id=scene.scene_id, t_s=t_s, image=np.ascontiguousarray(image))


def _output_size(width: int, height: int, max_side_px: int | None) -> tuple[int, int] | None:
    """Even-sized (width, height) with the longer side at most ``max_side_px``; None = keep."""
    if max_side_px is None or max(width, height) <= max_side_px:
        return None
    scale = max_side_px / max(width, height)
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def _decoded_frames(
    container: Any, stream: Any, sampler: KeyframeSampler, path: Path
) -> Iterator[tuple[float, Any]]:
    """``(t_s, frame)`` in decode order with t_s from the stream start, skipping bad packets.

    The first failure is recorded in ``sampler.decode_error``; reading stops on a demuxer
    error or after :data:`MAX_CONSECUTIVE_FAILURES` undecodable packets in a row.
    """
    time_base = Fraction(stream.time_base) if stream.time_base else None
    start_pts = stream.start_time or 0
    rate = float(stream.average_rate or stream.guessed_rate or 25)
    packets = container.demux(stream)
    failures = 0
    while True:
        try:
            packet = next(packets)
            frames = packet.decode()
        except StopIteration:
            return
        except (av.FFmpegError, OSError) as err:
            failures += 1
            if sampler.decode_error is None:
                sampler.decode_error = (
                    f"{path}: decoding failed after {sampler.frames_decoded} frames: {err}"
                )
            if failures >= MAX_CONSECUTIVE_FAILURES or isinstance(err, av.error.EOFError):
                return
            continue
        failures = 0
        for frame in frames:
            if frame.pts is not None and time_base is not None:
                t_s = float((frame.pts - start_pts) * time_base)
            else:
                t_s = sampler.frames_decoded / rate
            sampler.frames_decoded += 1
            yield round(max(t_s, 0.0), 6), frame
