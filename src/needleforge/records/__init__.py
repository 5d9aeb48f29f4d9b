"""Frozen value records shared by every stage.

Records point at each other by string id (``video_id``, ``scene_id``), check themselves in
``__post_init__`` (raising ``ValueError`` that names the field and the bad value) and change
only by returning copies (:func:`dataclasses.replace`). Field names carry their units
(``start_s``, ``duration_s``). This package is a leaf: it imports nothing from needleforge
but :mod:`needleforge.errors` (the release question row's error is the scorer's). The release
question row and its constants (letters, buckets and their bounds) are
:mod:`needleforge.records.questions`.
"""

from needleforge.records.base import object_id_for, scene_id_for, video_id_for
from needleforge.records.media import (
    Authorization,
    IngestRejection,
    MediaInfo,
    RejectionReason,
    Video,
)
from needleforge.records.nemo import (
    Montage,
    NeedleType,
    Question,
    Role,
    SceneScan,
    Segment,
    Sighting,
    Verification,
    verdicts_pass,
)
from needleforge.records.questions import Bucket, bucket_for
from needleforge.records.representation import (
    Box,
    Detection,
    ObjectAttributes,
    ObjectTrack,
    Representation,
    Scene,
    SceneTag,
    TagScore,
    TimedBox,
)
from needleforge.records.span import FrameSpan, frame_at

__all__ = [
    "Authorization",
    "Box",
    "Bucket",
    "Detection",
    "FrameSpan",
    "IngestRejection",
    "MediaInfo",
    "Montage",
    "NeedleType",
    "ObjectAttributes",
    "ObjectTrack",
    "Question",
    "RejectionReason",
    "Representation",
    "Role",
    "Scene",
    "SceneScan",
    "SceneTag",
    "Segment",
    "Sighting",
    "TagScore",
    "TimedBox",
    "Verification",
    "Video",
    "bucket_for",
    "frame_at",
    "object_id_for",
    "scene_id_for",
    "verdicts_pass",
    "video_id_for",
]
