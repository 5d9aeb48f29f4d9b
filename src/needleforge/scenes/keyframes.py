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
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path

from needleforge.backends.base import Keyframe
from needleforge.media.decode import DecodedFrame, VideoReader
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

    def __init__(self, reader: VideoReader, scenes: Sequence[Scene], targets: list[_Target],
                 *, max_side_px: int | None) -> None:
        self._reader = reader
        self._short: str | None = None  # set when scenes got no keyframe
        self._frames = self._walk(scenes, targets, max_side_px)

    @property
    def decode_error(self) -> str | None:
        """The first decoding failure, else which scenes the decode stopped short of."""
        return self._reader.decode_error or self._short

    @property
    def frames_decoded(self) -> int:
        """Frames decoded so far."""
        return self._reader.frames_decoded

    def _walk(self, scenes: Sequence[Scene], targets: list[_Target], max_side_px: int | None
              ) -> Generator[Keyframe]:
        """Each target's frame, from one front-to-back decode; closes the reader when done.
        The frame before a target stands in (a cut or the end came first) only for a scene
        without a keyframe yet."""
        reader = self._reader
        with reader:
            size = reader.facts.fitted(max_side=max_side_px)
            served: dict[int, float] = {}  # scene index -> t_s of its last keyframe
            last: DecodedFrame | None = None
            for target in targets:
                scene, index = scenes[target.scene_index], target.scene_index
                frame = reader.frame_at(target.t_s, pick="at_or_after", seek="never",
                                        until_s=scene.end_s, hold_last=True)
                last = frame or last
                if frame is None or (frame.t_s < target.t_s - _EPS_S and index in served):
                    continue
                if (scene.start_s - _EPS_S <= frame.t_s < scene.end_s - _EPS_S
                        and frame.t_s != served.get(index)):
                    served[index] = frame.t_s
                    yield Keyframe(scene_id=scene.scene_id, t_s=frame.t_s,
                                   image=frame.rgb(size=size))
            missing = [s.scene_id for i, s in enumerate(scenes) if i not in served]
            if missing and reader.ended:
                end = "no frame" if last is None else f"the frame at {last.t_s:.3f} s"
                self._short = (f"{reader.path}: decoding stopped at {end} after "
                               f"{reader.frames_decoded} frames; {len(missing)} scene(s) got "
                               f"no keyframe, first {missing[0]}")

    def __iter__(self) -> KeyframeSampler:
        return self

    def __next__(self) -> Keyframe:
        return next(self._frames)

    def close(self) -> None:
        """Stop early and release the file (also happens when iteration ends)."""
        self._frames.close()
        self._reader.close()  # the generator releases it only if iteration had started


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
    reader = VideoReader(path, max_bad_packets=MAX_CONSECUTIVE_FAILURES)
    return KeyframeSampler(reader, scenes, targets, max_side_px=max_side_px)


def _check_sampling(*, fps: float, max_per_scene: int | None, offset_s: float) -> None:
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps = {fps!r} must be finite and > 0")
    if max_per_scene is not None and max_per_scene < 1:
        raise ValueError(f"max_per_scene = {max_per_scene} must be >= 1 or None")
    if not (math.isfinite(offset_s) and offset_s >= 0):
        raise ValueError(f"offset_s = {offset_s!r} must be finite and >= 0")
