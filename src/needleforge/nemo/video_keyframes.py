"""Keyframes of a scene for the model-backed question writers and verifiers (PyAV, seeking).

:class:`VideoKeyframes` is the :data:`~needleforge.nemo.generate.KeyframeSource` that
:func:`~needleforge.nemo.generate.generate` calls for the target and every negative of each
montage. Unlike the representation stage, which decodes whole videos once in a straight pass,
it needs a few frames of scattered scenes, so it seeks
(:class:`~needleforge.media.decode.VideoReader`): for each wanted time it seeks to the nearest
keyframe at or before it and decodes forward to the first frame at or after it (a time just
ahead of the previous one is reached by decoding on, without a seek). Each video is
opened once and kept open (a few at a time), and each scene's frames are cached, since one
scene serves as a negative of several montages.

Times are spread evenly inside the scene, at the middles of ``per_scene`` equal parts, so no
frame shows the shot across a cut; with ``every_s``, of as many parts as keep them at most
``every_s`` long, so a long scene gets more frames (the negative probe samples densely).
``also_per_scene`` adds the middles of that many parts as well, decoded in the same pass
(:meth:`VideoKeyframes.extra_times` says which frames came only from them): the negative
probe runs its cheap pose check on every frame the verifier will be shown
(:data:`VERIFY_PER_SCENE` per scene), so a person walking through a negative between the
probe's own frames is seen at planning time, and that negative is swapped instead of the
verifier refusing the whole question.
Images are RGB ``uint8``, at most ``max_side`` pixels on their longer side, in stored
orientation, on the same clock as the object boxes (seconds from the stream start). Not
thread-safe: use one per worker.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, runtime_checkable

from needleforge.backends.base import Keyframe
from needleforge.errors import MediaError, NemoError
from needleforge.media.decode import DecodedFrame, VideoReader
from needleforge.records import Scene, Video

_EPS_S = 1e-6
#: Frames per scene that question writers and verifiers are shown (the pipeline's keyframe
#: source); the negative probe looks at these times too.
VERIFY_PER_SCENE = 4


def scene_times(scene: Scene, *, count: int) -> list[float]:
    """``count`` times evenly inside ``scene``: the middles of ``count`` equal parts.

    Raises:
        ValueError: when ``count < 1``.
    """
    if count < 1:
        raise ValueError(f"count = {count} must be >= 1")
    step = scene.duration_s / count
    return [scene.start_s + (k + 0.5) * step for k in range(count)]


class VideoKeyframes:
    """``scene -> keyframes``: a few decoded frames per scene, cached by scene id.

    Args:
        videos_by_id: the videos whose scenes will be asked for (their ``stored_path``).
        per_scene: frames per scene (>= 1); with ``every_s``, the least per scene.
        every_s: when set (> 0), frames at most this far apart: a scene of ``d`` seconds gets
            ``max(per_scene, ceil(d / every_s))`` frames.
        also_per_scene: when > 0, also the times of a ``per_scene = also_per_scene`` source
            (the middles of that many parts), merged in time order; see
            :meth:`extra_times`.
        max_side: longest side of the returned images in pixels (>= 16).
        max_open: videos kept open at once (least recently used closed first).
        max_cached: scenes whose frames are kept (least recently used dropped first).

    Raises:
        ValueError: a number out of range.
    """

    def __init__(
        self, videos_by_id: Mapping[str, Video], *, per_scene: int = VERIFY_PER_SCENE,
        max_side: int = 512, max_open: int = 4, max_cached: int = 512,
        every_s: float | None = None, also_per_scene: int = 0,
    ) -> None:
        for name, value, least in (("per_scene", per_scene, 1), ("max_side", max_side, 16),
                                   ("max_open", max_open, 1), ("max_cached", max_cached, 1),
                                   ("also_per_scene", also_per_scene, 0)):
            if value < least:
                raise ValueError(f"{name} = {value} must be >= {least}")
        if every_s is not None and not (math.isfinite(every_s) and every_s > 0):
            raise ValueError(f"every_s = {every_s!r} must be a finite number > 0 (or None)")
        self._videos = dict(videos_by_id)
        self.per_scene, self.max_side, self.every_s = per_scene, max_side, every_s
        self.also_per_scene = also_per_scene
        self._max_open, self._max_cached = max_open, max_cached
        self._open: OrderedDict[str, VideoReader] = OrderedDict()
        self._cache: OrderedDict[str, tuple[Keyframe, ...]] = OrderedDict()
        self._extra: dict[str, frozenset[float]] = {}  # scene id -> its extra frames' times
        self.decoded_scenes = 0  # scenes decoded (not served from the cache), for tests/logs

    def __call__(self, scene: Scene) -> tuple[Keyframe, ...]:
        """Up to :meth:`count_for` keyframes of ``scene`` in time order (fewer when the file
        ends early or the scene is shorter than that many frames).

        Raises:
            NemoError: the scene's video is not among ``videos_by_id``.
            MediaError: the video file vanished, cannot be opened, has no video stream or
                fails to decode; the message names the video id and the path.
        """
        cached = self._cache.get(scene.scene_id)
        if cached is not None:
            self._cache.move_to_end(scene.scene_id)
            return cached
        for _ in self.stream_without_extra(scene):
            pass  # reading the stream to its end caches the scene
        return self._cache[scene.scene_id]

    def _keep(self, scene_id: str, frames: tuple[Keyframe, ...], extra: frozenset[float]
              ) -> None:
        self._cache[scene_id] = frames
        self._extra[scene_id] = extra
        if len(self._cache) > self._max_cached:
            dropped, _ = self._cache.popitem(last=False)
            self._extra.pop(dropped, None)

    def extra_times(self, scene: Scene) -> frozenset[float]:
        """Times of the frames of ``scene`` (as returned by calling this source) that only
        ``also_per_scene`` asked for; empty without it. Decodes the scene when not cached.

        Raises:
            NemoError, MediaError: as :meth:`__call__`.
        """
        if scene.scene_id not in self._cache:
            self(scene)
        return self._extra.get(scene.scene_id, frozenset())

    def frame_at(self, scene: Scene, t_s: float) -> Keyframe | None:
        """The frame of ``scene`` shown at ``t_s`` (the first at or after it inside the
        scene, else the last before it), or None when nothing inside the scene decodes. Not
        cached: for the few exact times a caller needs (a tracked box's frame).

        Raises:
            NemoError, MediaError: as :meth:`__call__`.
        """
        found = self._frame_at(scene, t_s)
        return None if found is None else self._keyframe(scene, found)

    def _keyframe(self, scene: Scene, frame: DecodedFrame) -> Keyframe:
        size = self._video(scene.video_id).facts.fitted(max_side=self.max_side)
        return Keyframe(frame.t_s, frame.rgb(size=size))

    def _frame_at(self, scene: Scene, t_s: float) -> DecodedFrame | None:
        """The first frame at or after ``t_s`` inside ``scene``, else the last one before it."""
        reader = self._video(scene.video_id)
        try:
            found = reader.frame_at(t_s, pick="at_or_after", until_s=scene.end_s,
                                    hold_last=True)
        except MediaError as err:
            raise MediaError(f"video {scene.video_id}: {err}") from None
        if found is None or not scene.start_s - _EPS_S <= found.t_s < scene.end_s - _EPS_S:
            return None
        return found

    def without_extra(self, scene: Scene) -> tuple[Keyframe, ...]:
        """The frames of ``scene`` that ``per_scene`` / ``every_s`` asked for (those of
        :meth:`__call__` less :meth:`extra_times`): a frame source for checks that keep to
        the dense frames.

        Raises:
            NemoError, MediaError: as :meth:`__call__`.
        """
        extra = self.extra_times(scene)
        return tuple(f for f in self(scene) if f.t_s not in extra)

    @property
    def spec(self) -> str:
        """How scenes are sampled, in words (part of the negative probe's key)."""
        return self._spec(extra=True)

    @property
    def spec_without_extra(self) -> str:
        """How :meth:`without_extra` samples, in words."""
        return self._spec(extra=False)

    def _spec(self, *, extra: bool) -> str:
        spacing = f"every {self.every_s:g} s, " if self.every_s is not None else ""
        also = f" + middles of {self.also_per_scene}" if extra and self.also_per_scene else ""
        return f"{spacing}at least {self.per_scene} per scene{also}, side {self.max_side}"

    def rewind(self) -> None:
        """Forget where each open video's decoder stands, so the next frame asked for is
        reached by a seek: what a scene then decodes to depends on that scene alone, not on
        which scene this source decoded before (a worker of
        :meth:`~needleforge.nemo.checks.negative_scan.TiledProbe.look_ahead` gets scenes in no fixed
        order)."""
        for reader in self._open.values():
            reader.forget_position()

    def close(self) -> None:
        """Close every open video (the cache stays usable)."""
        while self._open:
            _, reader = self._open.popitem(last=False)
            reader.close()

    def __enter__(self) -> VideoKeyframes:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _video(self, video_id: str) -> VideoReader:
        if video_id in self._open:
            self._open.move_to_end(video_id)
            return self._open[video_id]
        if video_id not in self._videos:
            raise NemoError(f"scene of video {video_id} asked for keyframes, but that video is "
                            f"not among the {len(self._videos)} given to VideoKeyframes")
        path = Path(self._videos[video_id].stored_path)
        if not path.is_file():
            raise MediaError(f"video {video_id}: file {path} has vanished (moved or deleted "
                             f"since ingest)")
        try:
            opened = VideoReader(path)
        except MediaError as err:
            raise MediaError(f"video {video_id}: {err}") from None
        self._open[video_id] = opened
        if len(self._open) > self._max_open:
            _, oldest = self._open.popitem(last=False)
            oldest.close()
        return opened

    def count_for(self, scene: Scene) -> int:
        """How many frames ``scene`` is sampled at (before clipping to what decodes)."""
        return len(self._wanted(scene))

    def _wanted(self, scene: Scene) -> list[tuple[float, bool]]:
        """The times ``scene`` is sampled at, in order, each with whether only
        ``also_per_scene`` asked for it (before snapping to decoded frames)."""
        count = self.per_scene
        if self.every_s is not None:
            count = max(count, math.ceil(scene.duration_s / self.every_s - _EPS_S))
        wanted = {round(t, 6): False for t in scene_times(scene, count=count)}
        if self.also_per_scene:
            for t in scene_times(scene, count=self.also_per_scene):
                wanted.setdefault(round(t, 6), True)
        return sorted(wanted.items())

    def _decoding(self, scene: Scene) -> Iterator[tuple[Keyframe, bool]]:
        """``scene``'s frames as they are decoded, each with whether only ``also_per_scene``
        asked for it. A frame is given once the next wanted time is decoded: a wanted time
        that snaps onto the frame before makes that frame a wanted one."""
        held: Keyframe | None = None
        held_extra = False
        for t, only_extra in self._wanted(scene):
            found = self._frame_at(scene, t)
            if found is None:
                continue
            if held is not None and found.t_s <= held.t_s:  # snapped onto the frame before
                held_extra = held_extra and only_extra
                continue
            if held is not None:
                yield held, held_extra
            held, held_extra = self._keyframe(scene, found), only_extra
        if held is not None:
            yield held, held_extra

    def stream_without_extra(self, scene: Scene) -> Iterator[Keyframe]:
        """:meth:`without_extra`'s frames one at a time as they are decoded (from the cache
        when the scene is there), so a caller can work on a frame while the next decodes;
        the scene is cached once the stream is read to its end. Nothing else may use this
        source until then (one decoder position per video).

        Raises:
            NemoError, MediaError: as :meth:`__call__`.
        """
        cached = self._cache.get(scene.scene_id)
        if cached is not None:
            yield from self.without_extra(scene)
            return
        frames: list[Keyframe] = []
        extra: set[float] = set()
        for frame, only_extra in self._decoding(scene):
            frames.append(frame)
            if only_extra:
                extra.add(frame.t_s)
            else:
                yield frame
        self.decoded_scenes += 1
        self._keep(scene.scene_id, tuple(frames), frozenset(extra))


@runtime_checkable
class SeeksFrames(Protocol):
    """A keyframe source that also decodes the frame shown at a given time."""

    def frame_at(self, scene: Scene, t_s: float) -> Keyframe | None:
        """The frame of ``scene`` shown at ``t_s``, or None when none decodes there."""
        ...


def companion_frames(source: object, scene: Scene, keyframes: Sequence[Keyframe], *,
                     gap_s: float) -> tuple[Keyframe, ...]:
    """The frame ``gap_s`` after each of ``keyframes`` inside ``scene`` (fewer near its end)
    when ``source`` decodes frames at given times (:class:`VideoKeyframes` does); none
    otherwise. A check that matches people across two frames needs them close together
    (:data:`~needleforge.scenes.walking.MOTION_GAP_S`)."""
    if not isinstance(source, SeeksFrames):
        return ()
    found = (source.frame_at(scene, k.t_s + gap_s) for k in keyframes)
    return tuple(f for f in found if f is not None)
