"""Frozen value records shared by every stage.

Records point at each other by string id (``video_id``, ``scene_id``), check themselves in
``__post_init__`` (raising ``ValueError`` that names the field and the bad value) and change
only by returning copies (:func:`dataclasses.replace`). Field names carry their units
(``start_s``, ``duration_s``). This module is a leaf: it imports nothing from needleforge.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any, Literal, Self, TypeAlias

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

#: Reasons an ingest refuses a manifest row; stored in ``ingest_rejections.reason``.
RejectionReason: TypeAlias = Literal[
    "invalid_row",
    "unauthorized",
    "expired",
    "out_of_scope",
    "path_escape",
    "missing_file",
    "empty_file",
    "unreadable",
    "not_video",
    "no_video_stream",
    "duplicate_row",
    "duplicate_content",
    "bad_subtitles",
]


def _check(condition: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``condition`` holds (never stripped by ``-O``)."""
    if not condition:
        raise ValueError(message)


def _finite_nonneg(name: str, value: float) -> None:
    _check(math.isfinite(value) and value >= 0, f"{name} = {value!r} must be finite and >= 0")


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, tuple):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _to_jsonable(v) for k, v in value.items()}
    return value


class _Record:
    """Mixin giving frozen dataclasses ``to_dict``/``from_dict`` with ISO dates."""

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return {f.name: _to_jsonable(getattr(self, f.name)) for f in fields}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        _check(not unknown, f"{cls.__name__}: unknown fields {unknown}")
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in data:
                continue
            value = data[f.name]
            if isinstance(value, str) and f.type in ("dt.date", "dt.date | None"):
                value = dt.date.fromisoformat(value)
            elif isinstance(value, list):
                value = tuple(value)
            kwargs[f.name] = value
        return cls(**kwargs)


@dataclasses.dataclass(frozen=True, slots=True)
class Authorization(_Record):
    """The rights under which a source may be used.

    ``scope`` lists the uses the licence grants (e.g. ``benchmark``, ``research``); an ingest
    requires the scopes configured in ``params.yaml``. ``valid_until`` is inclusive.
    """

    rights_holder: str
    licence_id: str
    scope: tuple[str, ...]
    valid_until: dt.date
    published_at: dt.date | None = None

    def __post_init__(self) -> None:
        _check(bool(self.rights_holder.strip()), "rights_holder must not be empty")
        _check(bool(self.licence_id.strip()), "licence_id must not be empty")
        _check(len(self.scope) > 0, "scope must list at least one granted use")
        _check(all(s.strip() for s in self.scope), f"scope = {self.scope!r} has an empty entry")

    def is_valid_on(self, day: dt.date) -> bool:
        """True while ``day`` is on or before ``valid_until``."""
        return day <= self.valid_until

    def missing_scopes(self, required: tuple[str, ...]) -> tuple[str, ...]:
        """The required uses this licence does not grant, in the order asked."""
        granted = set(self.scope)
        return tuple(s for s in required if s not in granted)


@dataclasses.dataclass(frozen=True, slots=True)
class MediaInfo(_Record):
    """What probing a media file found (PyAV); ``rotation_deg`` is the display rotation."""

    duration_s: float
    fps: float
    width: int
    height: int
    video_codec: str
    n_frames: int
    audio_codec: str | None = None
    rotation_deg: int = 0
    container: str = ""

    def __post_init__(self) -> None:
        _check(math.isfinite(self.duration_s) and self.duration_s > 0,
               f"duration_s = {self.duration_s!r} must be > 0")
        _check(math.isfinite(self.fps) and self.fps > 0, f"fps = {self.fps!r} must be > 0")
        _check(self.width > 0 and self.height > 0,
               f"frame size {self.width}x{self.height} must be positive")
        _check(self.n_frames >= 0, f"n_frames = {self.n_frames} must be >= 0")
        _check(self.rotation_deg in (0, 90, 180, 270),
               f"rotation_deg = {self.rotation_deg} must be one of 0, 90, 180, 270")

    @property
    def has_audio(self) -> bool:
        return self.audio_codec is not None


@dataclasses.dataclass(frozen=True, slots=True)
class Video(_Record):
    """An ingested, authorized source video, identified by its content hash."""

    video_id: str
    sha256: str
    program: str
    source_path: str
    stored_path: str
    size_bytes: int
    media: MediaInfo
    authorization: Authorization
    title: str = ""
    subtitle_path: str | None = None

    def __post_init__(self) -> None:
        _check(SHA256_RE.fullmatch(self.sha256) is not None,
               f"sha256 = {self.sha256!r} is not a 64-digit lowercase hex digest")
        _check(self.video_id == video_id_for(self.sha256),
               f"video_id = {self.video_id!r} does not derive from sha256 {self.sha256[:12]}…")
        _check(bool(self.program.strip()), "program must not be empty")
        _check(self.size_bytes > 0, f"size_bytes = {self.size_bytes} must be > 0")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        fields = dict(data)
        fields["media"] = MediaInfo.from_dict(fields["media"])
        fields["authorization"] = Authorization.from_dict(fields["authorization"])
        return cls(**fields)


@dataclasses.dataclass(frozen=True, slots=True)
class IngestRejection(_Record):
    """A manifest row that was refused, and why. Stored so refusals are auditable."""

    rejection_id: str
    manifest_path: str
    row: int
    source_path: str
    reason: RejectionReason
    detail: str

    def __post_init__(self) -> None:
        _check(self.row >= 1, f"row = {self.row} must be >= 1 (rows count from 1)")
        _check(bool(self.detail.strip()), "detail must explain the refusal")


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


def video_id_for(sha256: str) -> str:
    """Stable video id from the content hash: ``v`` + the first 16 hex digits."""
    return f"v{sha256[:16]}"


def scene_id_for(video_id: str, index: int) -> str:
    """Stable scene id: ``{video_id}-s{index:04d}``."""
    return f"{video_id}-s{index:04d}"


def object_id_for(scene_id: str, index: int) -> str:
    """Stable object id: ``{scene_id}-o{index:03d}``."""
    return f"{scene_id}-o{index:03d}"
