"""The SSD's ``PriorBox`` and ``DetectionOutput`` layers in numpy, as OpenCV computes them.

What :mod:`.ssd_runtime` computes after OpenVINO's convolutions: the attributes of those layers
read from OpenCV's text graph (``ssd_mobilenet_v2_coco_2018_03_29.pbtxt``), the prior boxes
(sized in input pixels, so any input size works), centre-size decoding, per-class greedy NMS
(OpenCV's ``NMSBoxes``) and the overall keep-top-k, to the rows ``cv2.dnn`` gives
(``tests/backends/test_ssd_runtime.py``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from needleforge.errors import BackendError

Float32Array = npt.NDArray[np.float32]
#: Box-encoding and class channels per anchor (4 coordinates; 90 COCO ids + background).
BOX_CHANNELS, CLASS_CHANNELS = 4, 91


@dataclasses.dataclass(frozen=True, slots=True)
class PriorSpec:
    """One ``PriorBox`` layer: its boxes' widths and heights in input pixels, the variances
    and the centre offset within a cell."""

    widths: tuple[float, ...]
    heights: tuple[float, ...]
    variance: tuple[float, float, float, float]
    offset: float = 0.5


@dataclasses.dataclass(frozen=True, slots=True)
class OutputSpec:
    """The ``DetectionOutput`` layer's attributes."""

    confidence_threshold: float
    nms_threshold: float
    top_k: int
    keep_top_k: int
    num_classes: int
    background_label_id: int


@dataclasses.dataclass(frozen=True, slots=True)
class TextGraph:
    """What the text graph says about the layers computed here."""

    priors: tuple[PriorSpec, ...]
    output: OutputSpec


def _nodes(text: str) -> dict[str, str]:
    """Top-level ``node { ... }`` blocks of a text graph by name."""
    blocks: dict[str, str] = {}
    for block in re.split(r"(?m)^node \{", text)[1:]:
        name = re.search(r'name: "([^"]+)"', block)
        if name is not None:
            blocks[name.group(1)] = block
    return blocks


def _attr(block: str, key: str) -> str | None:
    """The text of attribute ``key`` in a node block (up to the next attribute)."""
    match = re.search(rf'key: "{re.escape(key)}"(.*?)(?=key: "|\Z)', block, re.S)
    return match.group(1) if match is not None else None


def _floats(block: str, key: str) -> tuple[float, ...]:
    text = _attr(block, key)
    return tuple(float(v) for v in re.findall(r"float_val: ([-0-9.eE+]+)", text or ""))


def _scalar(block: str, key: str, kind: str) -> str:
    text = _attr(block, key)
    match = re.search(rf"\b{kind}: \"?([^\s\"]+)", text or "")
    if match is None:
        raise BackendError(f"SSD text graph: detection_out has no {key!r} attribute")
    return match.group(1)


def read_text_graph(path: Path) -> TextGraph:
    """The ``PriorBox_<k>`` and ``detection_out`` attributes of the text graph at ``path``.

    Raises:
        BackendError: the file cannot be read, or it lacks a layer or attribute this runtime
            needs, or sets one it does not implement (steps, clipping, flipping).
    """
    try:
        nodes = _nodes(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BackendError(f"cannot read the SSD text graph {path}: {exc}") from exc
    priors = []
    for k in range(len(nodes)):
        block = nodes.get(f"PriorBox_{k}")
        if block is None:
            break
        for unsupported in ("step", "step_h", "step_w"):
            if _attr(block, unsupported) is not None:
                raise BackendError(f"SSD text graph {path}: PriorBox_{k} sets {unsupported!r}")
        for flag in ("clip", "flip"):
            if re.search(r"b: true", _attr(block, flag) or ""):
                raise BackendError(f"SSD text graph {path}: PriorBox_{k} sets {flag!r}")
        widths, heights = _floats(block, "width"), _floats(block, "height")
        variance = _floats(block, "variance")
        offset = _floats(block, "offset") or (0.5,)
        if not widths or len(widths) != len(heights) or len(variance) != 4:
            raise BackendError(f"SSD text graph {path}: PriorBox_{k} needs as many widths as "
                               f"heights and 4 variances")
        priors.append(PriorSpec(widths, heights, (variance[0], variance[1], variance[2],
                                                   variance[3]), offset[0]))
    out = nodes.get("detection_out")
    if not priors or out is None:
        raise BackendError(f"SSD text graph {path} has no PriorBox_0 or detection_out layer")
    if _scalar(out, "code_type", "s") != "CENTER_SIZE" or \
            _scalar(out, "share_location", "b") != "true":
        raise BackendError(f"SSD text graph {path}: detection_out must be CENTER_SIZE with "
                           f"shared locations")
    spec = OutputSpec(
        confidence_threshold=float(_scalar(out, "confidence_threshold", "f")),
        nms_threshold=float(_scalar(out, "nms_threshold", "f")),
        top_k=int(_scalar(out, "top_k", "i")), keep_top_k=int(_scalar(out, "keep_top_k", "i")),
        num_classes=int(_scalar(out, "num_classes", "i")),
        background_label_id=int(_scalar(out, "background_label_id", "i")))
    if spec.num_classes != CLASS_CHANNELS:
        raise BackendError(f"SSD text graph {path}: {spec.num_classes} classes, "
                           f"not {CLASS_CHANNELS}")
    return TextGraph(tuple(priors), spec)




def prior_boxes(sizes: Sequence[tuple[int, int]], *, width: int, height: int,
                specs: Sequence[PriorSpec]) -> tuple[Float32Array, Float32Array]:
    """Priors ``[xmin, ymin, xmax, ymax]`` (normalized) and their variances, in the order
    OpenCV's ``PriorBox`` layers give them: level, row, column, box."""
    boxes, variances = [], []
    for (rows, cols), spec in zip(sizes, specs, strict=True):
        step_x, step_y = width / cols, height / rows
        cy, cx = np.meshgrid((np.arange(rows) + spec.offset) * step_y,
                             (np.arange(cols) + spec.offset) * step_x, indexing="ij")
        half_w = np.asarray(spec.widths) / 2.0
        half_h = np.asarray(spec.heights) / 2.0
        level = np.stack([(cx[..., None] - half_w) / width, (cy[..., None] - half_h) / height,
                          (cx[..., None] + half_w) / width, (cy[..., None] + half_h) / height],
                         axis=-1).reshape(-1, 4)
        boxes.append(level)
        variances.append(np.tile(np.asarray(spec.variance), (len(level), 1)))
    return (np.concatenate(boxes).astype(np.float32),
            np.concatenate(variances).astype(np.float32))


def decode(loc: Float32Array, priors: Float32Array, variances: Float32Array) -> Float32Array:
    """Centre-size decoding of TensorFlow-ordered encodings ``[ty, tx, th, tw]``."""
    prior_w = priors[:, 2] - priors[:, 0]
    prior_h = priors[:, 3] - priors[:, 1]
    prior_cx = (priors[:, 0] + priors[:, 2]) / 2
    prior_cy = (priors[:, 1] + priors[:, 3]) / 2
    cx = variances[:, 0] * loc[:, 1] * prior_w + prior_cx
    cy = variances[:, 1] * loc[:, 0] * prior_h + prior_cy
    w = np.exp(variances[:, 2] * loc[:, 3]) * prior_w
    h = np.exp(variances[:, 3] * loc[:, 2]) * prior_h
    return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)


def _nms(boxes: Float32Array, scores: npt.NDArray[np.floating[Any]], spec: OutputSpec,
         min_score: float = 0.0) -> list[int]:
    """Greedy NMS of one class by OpenCV's ``NMSBoxes``: candidates above the threshold (and at
    least ``min_score``), best ``top_k`` first (ties in index order), each kept unless it
    overlaps a kept one by more than ``nms_threshold``."""
    import cv2  # heavy: importing the backends loads no model runtime

    candidates = np.flatnonzero((scores > spec.confidence_threshold) & (scores >= min_score))
    if candidates.size == 0:
        return []
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    if spec.top_k > -1:
        order = order[: spec.top_k]
    corners = boxes[order].astype(np.float64)  # NMSBoxes takes (x, y, width, height)
    kept = cv2.dnn.NMSBoxes(np.hstack([corners[:, :2], corners[:, 2:] - corners[:, :2]]).tolist(),
                            scores[order].tolist(), 0.0, spec.nms_threshold)
    return [int(order[i]) for i in np.asarray(kept, dtype=np.int64).reshape(-1)]


def detection_rows(loc: Float32Array, conf: Float32Array, priors: Float32Array,
                   variances: Float32Array, spec: OutputSpec, *, min_score: float = 0.0
                   ) -> npt.NDArray[np.float64]:
    """OpenCV's ``DetectionOutput`` rows ``[0, class, score, xmin, ymin, xmax, ymax]``:
    per-class NMS, then the best ``keep_top_k`` overall, listed by class.

    With ``min_score``, only the rows scoring at least that are computed, and they are
    exactly those rows of the full output: in greedy NMS a box is suppressed only by a
    better one, and ``top_k``/``keep_top_k`` keep the best, so boxes under ``min_score``
    change nothing above it. Why: a detector that keeps scores >= 0.3 spent 9 ms a 1280x720
    frame suppressing the 0.01-0.3 boxes of every class, 2 ms with them skipped (the whole
    detection: ~220 ms in f32, ~110 ms in INT8, on AVX-512)."""
    boxes = decode(loc, priors, variances)
    scores = 1.0 / (1.0 + np.exp(-conf))
    floor = scores > spec.confidence_threshold
    if min_score > 0.0:
        floor &= scores >= min_score
    present = np.flatnonzero(floor.any(axis=0))
    kept = {int(c): _nms(boxes, scores[:, c], spec, min_score) for c in present
            if c != spec.background_label_id}
    pairs = [(float(scores[i, c]), c, i) for c, indices in kept.items() for i in indices]
    if spec.keep_top_k > -1 and len(pairs) > spec.keep_top_k:
        pairs.sort(key=lambda p: -p[0])
        pairs = pairs[: spec.keep_top_k]
    pairs.sort(key=lambda p: p[1])  # by class, each class best first (a stable sort)
    rows = np.zeros((len(pairs), 7), dtype=np.float64)
    for row, (score, c, i) in zip(rows, pairs, strict=True):
        row[1], row[2], row[3:] = c, score, boxes[i]
    return rows
