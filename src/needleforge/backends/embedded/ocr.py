"""PP-OCRv4 text reader via ``rapidocr-onnxruntime`` (models ship inside its wheel).

RapidOCR runs three ONNX models: a text detector (DB), an orientation classifier and a CTC
recognizer. We pass the model paths explicitly (so a missing file fails with our message, not
deep inside onnxruntime) and feed BGR, because RapidOCR treats ndarray input as OpenCV BGR.

Known limit: the recognizer (trained mostly on Chinese) often drops the spaces between Latin
words ("THE SECRET WORD" → "THESECRETWORD"); compare text with whitespace removed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.embedded.model_files import (
    RAPIDOCR_DISTRIBUTION,
    RAPIDOCR_PACKAGE,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.errors import BackendError

DET_MODEL_FILE = "ch_PP-OCRv4_det_infer.onnx"
CLS_MODEL_FILE = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
REC_MODEL_FILE = "ch_PP-OCRv4_rec_infer.onnx"


class EmbeddedTextReader:
    """Reads text lines from RGB frames (hundreds of ms per frame: run it on keyframes only).

    Args:
        min_confidence: lines whose recognition confidence is below this are dropped, in [0, 1].
        det_limit_side_len: RapidOCR resizes the frame so its *shorter* side is at least this
            many pixels before detecting text; lower is faster but misses small text.
        num_threads: onnxruntime intra-op threads per model.
        models_dir: folder holding the three ONNX files; default: the installed
            ``rapidocr_onnxruntime/models`` folder.

    Raises:
        BackendError: for out-of-range options, a missing package or model file, or a model
            file onnxruntime cannot load.
    """

    name: str = "embedded-rapidocr-ppocrv4"

    def __init__(
        self,
        *,
        min_confidence: float = 0.5,
        det_limit_side_len: int = 736,
        num_threads: int = 2,
        models_dir: Path | str | None = None,
    ) -> None:
        if not 0.0 <= min_confidence <= 1.0:
            raise BackendError(f"min_confidence = {min_confidence!r} must be in [0, 1]")
        if det_limit_side_len < 32:
            raise BackendError(f"det_limit_side_len = {det_limit_side_len!r} must be >= 32")
        if num_threads < 1:
            raise BackendError(f"num_threads = {num_threads!r} must be >= 1")
        self.min_confidence = min_confidence
        folder = resolve_models_dir(
            models_dir, package=RAPIDOCR_PACKAGE, distribution=RAPIDOCR_DISTRIBUTION
        )
        det, cls, rec = (
            require_file(folder / filename, distribution=RAPIDOCR_DISTRIBUTION)
            for filename in (DET_MODEL_FILE, CLS_MODEL_FILE, REC_MODEL_FILE)
        )

        # heavy: imports onnxruntime and cv2
        from onnxruntime.capi.onnxruntime_pybind11_state import (
            Fail,
            InvalidGraph,
            InvalidProtobuf,
            NoSuchFile,
        )
        from rapidocr_onnxruntime import RapidOCR

        try:
            self._engine: Any = RapidOCR(
                det_model_path=str(det),
                cls_model_path=str(cls),
                rec_model_path=str(rec),
                det_limit_side_len=det_limit_side_len,
                text_score=min_confidence,
                intra_op_num_threads=num_threads,
                inter_op_num_threads=1,
            )
        except (Fail, InvalidGraph, InvalidProtobuf, NoSuchFile) as exc:
            # onnxruntime's load errors derive from Exception directly, so name them.
            raise BackendError(
                f"onnxruntime cannot load the OCR models in {folder}: {exc}"
            ) from exc
        # The recognizer decides what text comes out, so its weights identify the version.
        self.version: str = model_version(rec, distribution=RAPIDOCR_DISTRIBUTION)

    def read_scored(self, image: RGBImage) -> list[tuple[str, float]]:
        """``(text, confidence)`` per line in reading order, confidence >= ``min_confidence``.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        bgr = np.ascontiguousarray(ensure_rgb(image)[:, :, ::-1])
        result, _timings = self._engine(bgr)
        lines: list[tuple[str, float]] = []
        for item in result or []:
            text, confidence = str(item[1]).strip(), float(item[2])
            if text and confidence >= self.min_confidence:
                lines.append((text, confidence))
        return lines

    def read(self, image: RGBImage) -> list[str]:
        """Text lines in reading order (RapidOCR sorts them top to bottom, left to right).

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        return [text for text, _ in self.read_scored(image)]
