"""Model backends: protocols per family, an explicit registry, and the embedded CPU models.

Typical use::

    registry = default_registry()
    detector = registry.create("detector", "embedded", score_threshold=0.5)
    detections = detector.detect(frame_rgb, t_s=12.0)

Importing this package is cheap: it registers nothing and imports no model runtime (cv2,
ai_edge_litert, rapidocr); backends import theirs when they are built.
"""

from __future__ import annotations

from needleforge.backends.base import (
    Detector,
    RGBImage,
    Tagger,
    TextReader,
    ensure_rgb,
    tags_from_detections,
)
from needleforge.backends.registry import FAMILIES, Family, Registry, default_registry

__all__ = [
    "FAMILIES",
    "Detector",
    "Family",
    "RGBImage",
    "Registry",
    "Tagger",
    "TextReader",
    "default_registry",
    "ensure_rgb",
    "tags_from_detections",
]
