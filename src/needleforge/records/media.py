"""Records of sources: authorization, probed media facts, ingested videos, refusals."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from typing import Any, Literal, Self, TypeAlias

from needleforge.records.base import SHA256_RE, _check, _Record, video_id_for

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
