"""Objects stage logic: per-keyframe detections → tracks, attributes, referring expressions.

Pure functions only: no model loading (see :mod:`needleforge.backends`) and no database
writes (the flow process stores what these return).
"""

from __future__ import annotations

from needleforge.objects.attributes import (
    clothing_colour,
    dominant_colour,
    position_name,
    rgb_to_hsv,
    size_ranks,
)
from needleforge.objects.build import build_objects, scene_tags
from needleforge.objects.expressions import referring_expressions
from needleforge.objects.tracker import RawTrack, track_objects
from needleforge.records.phrases import COLOUR_NAMES, POSITION_NAMES, plural

__all__ = [
    "COLOUR_NAMES",
    "POSITION_NAMES",
    "RawTrack",
    "build_objects",
    "clothing_colour",
    "dominant_colour",
    "plural",
    "position_name",
    "referring_expressions",
    "rgb_to_hsv",
    "scene_tags",
    "size_ranks",
    "track_objects",
]
