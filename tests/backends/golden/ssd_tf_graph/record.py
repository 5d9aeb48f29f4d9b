"""Record what the frozen TensorFlow graph's own post-processing computes at 300x300, as a
second reference of ``tests/backends/test_ssd_runtime.py``.

Why a second reference: the OpenCV one (``../ssd_opencv``) shares the runtime's reading of the
text graph (prior sizes, their order per feature map, the variances, the score column), so a
mistake in the ``.pbtxt`` would pass it. The frozen graph carries TensorFlow's own anchor
generator, box decoder and batched NMS: OpenVINO converts the whole graph (its ``Preprocessor``
resize, which is the identity on a 300x300 frame, included) and runs it here. The graph keeps
detections scored >= 0.3 (its ``score_threshold``), boxes ``[ymin, xmin, ymax, xmax]`` clipped
to the frame, COCO ids as floats. Run from the repository root with needleforge's venv::

    .venv/bin/python tests/backends/golden/ssd_tf_graph/record.py

The frames are the test's own (``PHOTOS`` at 640x360, resized and pasted on grey as
``PASTES`` says).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import openvino as ov
import skimage.data

from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)

PHOTOS = ("chelsea", "astronaut", "coffee", "rocket")
#: Side of the photo pasted on a grey 300x300 frame, and its top-left corner: objects of
#: every size, so that every feature map's priors make some of the recorded detections.
PASTES = ((300, 0, 0), (240, 0, 0), (200, 100, 40), (140, 20, 150), (90, 190, 10), (60, 40, 60))
OUT = Path(__file__).with_name("outputs.npz")


def frame(name: str, paste: tuple[int, int, int]) -> np.ndarray:
    """The test's 300x300 input: photo ``name`` at 640x360, resized to ``paste``'s side."""
    image = cv2.resize(getattr(skimage.data, name)()[..., :3], (640, 360),
                       interpolation=cv2.INTER_AREA)
    side, x, y = paste
    canvas = np.full((300, 300, 3), 128, dtype=np.uint8)
    canvas[y:y + side, x:x + side] = cv2.resize(image, (side, side),
                                                interpolation=cv2.INTER_LINEAR)
    return canvas


def main() -> None:
    graph = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION) / \
        "frozen_inference_graph.pb"
    model = ov.Core().compile_model(ov.convert_model(str(graph)), "CPU",
                                    {"INFERENCE_PRECISION_HINT": "f32"})
    arrays: dict[str, np.ndarray] = {"openvino_version": np.array(ov.__version__)}
    for name in PHOTOS:
        for paste in PASTES:
            out = {tensor: np.asarray(value)[0]
                   for port, value in model(frame(name, paste)[None]).items()
                   for tensor in port.get_names()}
            count = int(out["num_detections:0"])
            for key in ("boxes", "classes", "scores"):
                arrays[f"{key}_{name}_{paste[0]}"] = out[f"detection_{key}:0"][:count]
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with OpenVINO {ov.__version__}")


if __name__ == "__main__":
    main()
