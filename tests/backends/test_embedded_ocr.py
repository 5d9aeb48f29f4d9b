"""RapidOCR reading text we drew ourselves (the VNBench "secret word" needle is burnt-in text)."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.ocr import (
    CLS_MODEL_FILE,
    DET_MODEL_FILE,
    REC_MODEL_FILE,
    EmbeddedTextReader,
)
from needleforge.errors import BackendError


def squash(text: str) -> str:
    """The recognizer may drop spaces between Latin words; compare without whitespace."""
    return re.sub(r"\s+", "", text).upper()


@pytest.fixture(scope="module")
def caption_frame() -> RGBImage:
    """A white 640x360 frame with two lines of large text, drawn by OpenCV (no font files)."""
    frame = np.full((360, 640, 3), 255, dtype=np.uint8)
    cv2.putText(frame, "THE SECRET WORD", (40, 120), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (0, 0, 0), 3)
    cv2.putText(frame, "is Needle 42", (40, 240), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (200, 20, 20), 3)
    return frame


def test_reads_the_caption_lines_in_order(
    text_reader: EmbeddedTextReader, caption_frame: RGBImage
) -> None:
    lines = [squash(line) for line in text_reader.read(caption_frame)]
    assert lines == ["THESECRETWORD", "ISNEEDLE42"]


def test_scored_lines_pass_the_threshold(
    text_reader: EmbeddedTextReader, caption_frame: RGBImage
) -> None:
    scored = text_reader.read_scored(caption_frame)
    assert scored and all(score >= text_reader.min_confidence for _, score in scored)


def test_black_frame_has_no_text(text_reader: EmbeddedTextReader, black_frame: RGBImage) -> None:
    assert text_reader.read(black_frame) == []


def test_name_and_version(text_reader: EmbeddedTextReader) -> None:
    assert text_reader.name == "embedded-rapidocr-ppocrv4"
    assert re.fullmatch(r"[0-9.]+\+sha256\.[0-9a-f]{12}", text_reader.version)


def test_missing_model_folder_names_package_and_path(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="rapidocr-onnxruntime") as info:
        EmbeddedTextReader(models_dir=tmp_path)
    assert str(tmp_path / "ch_PP-OCRv4_det_infer.onnx") in str(info.value)


def test_corrupt_models_are_a_backend_error(tmp_path: Path) -> None:
    for filename in (DET_MODEL_FILE, CLS_MODEL_FILE, REC_MODEL_FILE):
        (tmp_path / filename).write_bytes(b"not an onnx model")
    with pytest.raises(BackendError, match="onnxruntime cannot load the OCR models"):
        EmbeddedTextReader(models_dir=tmp_path)


def test_out_of_range_options_are_refused() -> None:
    with pytest.raises(BackendError, match="min_confidence = 2"):
        EmbeddedTextReader(min_confidence=2)
