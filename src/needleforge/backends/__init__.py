"""Model backends: protocols per family, an explicit registry, and the embedded CPU models.

Typical use::

    registry = default_registry()
    detector = registry.create("detector", "embedded", score_threshold=0.5)
    detections = detector.detect(frame_rgb, t_s=12.0)
    describer = registry.create("describer", "openai_http", base_url=url, model="qwen2.5-vl")

Importing this package is cheap: it registers nothing and imports no model runtime (cv2,
ai_edge_litert, rapidocr); backends import theirs when they are built.
"""

from __future__ import annotations

from needleforge.backends.base import (
    Detector,
    Keyframe,
    RGBImage,
    Tagger,
    TextReader,
    ensure_rgb,
    tags_from_detections,
)
from needleforge.backends.registry import FAMILIES, BackendFamily, Registry, default_registry
from needleforge.backends.writing import (
    Describer,
    SceneView,
    Skip,
    TargetView,
    Verdict,
    Verifier,
    VerifyRequest,
    WrittenNeedle,
)

__all__ = [
    "FAMILIES",
    "BackendFamily",
    "Describer",
    "Detector",
    "Keyframe",
    "RGBImage",
    "Registry",
    "SceneView",
    "Skip",
    "Tagger",
    "TargetView",
    "TextReader",
    "Verdict",
    "Verifier",
    "VerifyRequest",
    "WrittenNeedle",
    "default_registry",
    "ensure_rgb",
    "tags_from_detections",
]
