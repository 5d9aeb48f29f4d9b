"""Records of the video representation: scenes, boxes, tags, detections, object tracks."""

from __future__ import annotations

import dataclasses
import math

from needleforge.records.base import _check, _finite_nonneg, _Record, object_id_for, scene_id_for


@dataclasses.dataclass(frozen=True, slots=True)
class Scene(_Record):
    """A shot of a video: ``[start_s, end_s)``; the scenes of one video tile it."""

    scene_id: str
    video_id: str
    index: int
    start_s: float
    end_s: float
    n_frames: int
    subtitle_text: str = ""

    def __post_init__(self) -> None:
        _check(self.index >= 0, f"index = {self.index} must be >= 0")
        _finite_nonneg("start_s", self.start_s)
        _check(self.end_s > self.start_s,
               f"scene {self.scene_id}: end_s = {self.end_s} must be > start_s = {self.start_s}")
        _check(self.scene_id == scene_id_for(self.video_id, self.index),
               f"scene_id = {self.scene_id!r} does not derive from {self.video_id}/{self.index}")

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclasses.dataclass(frozen=True, slots=True)
class Box(_Record):
    """An axis-aligned box in normalized frame coordinates (0..1), top-left origin."""

    x: float
    y: float
    w: float
    h: float

    def __post_init__(self) -> None:
        for name in ("x", "y", "w", "h"):
            value = getattr(self, name)
            _check(math.isfinite(value), f"box {name} = {value!r} must be finite")
        _check(self.w > 0 and self.h > 0, f"box size {self.w}x{self.h} must be positive")
        _check(self.x >= -1e-6 and self.x + self.w <= 1 + 1e-6
               and self.y >= -1e-6 and self.y + self.h <= 1 + 1e-6,
               f"box {self.x, self.y, self.w, self.h} must lie inside the unit frame")

    @property
    def area(self) -> float:
        return self.w * self.h

    def iou(self, other: Box) -> float:
        """Intersection over union of two boxes."""
        ix = max(0.0, min(self.x + self.w, other.x + other.w) - max(self.x, other.x))
        iy = max(0.0, min(self.y + self.h, other.y + other.h) - max(self.y, other.y))
        inter = ix * iy
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class TagScore(_Record):
    """A tag a tagger gave an image or scene, with its confidence in [0, 1]."""

    tag: str
    score: float

    def __post_init__(self) -> None:
        _check(bool(self.tag.strip()), "tag must not be empty")
        _check(0.0 <= self.score <= 1.0, f"tag {self.tag!r}: score = {self.score} not in [0, 1]")


@dataclasses.dataclass(frozen=True, slots=True)
class Detection(_Record):
    """One detector hit on the keyframe at ``t_s`` (seconds from the video start)."""

    t_s: float
    label: str
    score: float
    box: Box

    def __post_init__(self) -> None:
        _finite_nonneg("t_s", self.t_s)
        _check(bool(self.label.strip()), "label must not be empty")
        _check(0.0 <= self.score <= 1.0,
               f"detection {self.label!r}: score = {self.score} not in [0, 1]")


@dataclasses.dataclass(frozen=True, slots=True)
class TimedBox(_Record):
    """Where a tracked object is on the keyframe at ``t_s``."""

    t_s: float
    box: Box


@dataclasses.dataclass(frozen=True, slots=True)
class ObjectAttributes(_Record):
    """Visual attributes that tell an object apart from the others in its scene.

    ``colour`` is a basic colour name of the object's dominant colour, ``position`` a coarse
    place in the frame (``left``, ``centre``, ``top right`` …), ``size_rank`` 1 for the
    largest object of the scene, 2 for the next…
    """

    colour: str
    position: str
    size_rank: int

    def __post_init__(self) -> None:
        _check(self.size_rank >= 1, f"size_rank = {self.size_rank} must be >= 1")


@dataclasses.dataclass(frozen=True, slots=True)
class ObjectTrack(_Record):
    """An object followed across the keyframes of one scene.

    ``visible_s`` counts keyframe intervals where it was seen (gaps excluded), so it can be
    less than ``end_s - start_s``; ``mean_area_frac`` is its mean box area as a fraction of
    the frame. ``backend``/``model_version`` name what produced it.
    """

    object_id: str
    scene_id: str
    index: int
    tag: str
    start_s: float
    end_s: float
    visible_s: float
    mean_area_frac: float
    mean_score: float
    boxes: tuple[TimedBox, ...]
    attributes: ObjectAttributes
    referring_expression: str
    backend: str
    model_version: str

    def __post_init__(self) -> None:
        _check(self.object_id == object_id_for(self.scene_id, self.index),
               f"object_id = {self.object_id!r} does not derive from "
               f"{self.scene_id}/{self.index}")
        _finite_nonneg("start_s", self.start_s)
        _check(self.end_s >= self.start_s,
               f"object {self.object_id}: end_s = {self.end_s} < start_s = {self.start_s}")
        _check(0 <= self.visible_s <= self.end_s - self.start_s + 1e-6,
               f"object {self.object_id}: visible_s = {self.visible_s} outside "
               f"[0, {self.end_s - self.start_s}]")
        _check(0 < self.mean_area_frac <= 1,
               f"object {self.object_id}: mean_area_frac = {self.mean_area_frac} not in (0, 1]")
        _check(len(self.boxes) > 0, f"object {self.object_id}: has no boxes")
        _check(all(self.start_s - 1e-6 <= b.t_s <= self.end_s + 1e-6 for b in self.boxes),
               f"object {self.object_id}: a box lies outside [{self.start_s}, {self.end_s}]")


@dataclasses.dataclass(frozen=True, slots=True)
class SceneTag(_Record):
    """A tag of a scene and the model that gave it."""

    scene_id: str
    tag: str
    score: float
    backend: str
    model_version: str

    def __post_init__(self) -> None:
        _check(bool(self.tag.strip()), f"scene {self.scene_id}: tag must not be empty")
        _check(0.0 <= self.score <= 1.0,
               f"scene {self.scene_id}: tag {self.tag!r} score = {self.score} not in [0, 1]")


@dataclasses.dataclass(frozen=True, slots=True)
class Representation(_Record):
    """Everything the represent stage produced for one video, stored as one unit.

    ``decode_error`` is set when decoding stopped early (a truncated file): the scenes up to the
    failure are kept. ``config_hash`` fingerprints the parameters and models that made it, so a
    rerun with the same configuration can skip the video.
    """

    video_id: str
    scenes: tuple[Scene, ...]
    tags: tuple[SceneTag, ...]
    objects: tuple[ObjectTrack, ...]
    scene_detector: str
    config_hash: str
    decode_error: str | None = None

    def __post_init__(self) -> None:
        _check(len(self.scenes) > 0 or self.decode_error is not None,
               f"video {self.video_id}: a representation without scenes needs a decode_error")
        ids = {s.scene_id for s in self.scenes}
        _check(all(s.video_id == self.video_id for s in self.scenes),
               f"video {self.video_id}: holds a scene of another video")
        stray = sorted({t.scene_id for t in self.tags} - ids
                       | {o.scene_id for o in self.objects} - ids)
        _check(not stray, f"video {self.video_id}: tags/objects point at unknown scenes {stray}")
