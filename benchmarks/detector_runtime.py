"""The embedded SSD detector's runtime: OpenVINO (ours) against OpenCV's DNN module (baseline).

Same frozen graph, same text graph, same frames, one inference thread each, in one run: the
scikit-image photos at 640x360, fed at the 300x300 input of representation and at the 1.5x
and 2x inputs of the NeMo negative check. Prints ms per frame, the speed-up, and the largest
difference between the two runtimes' output rows (score and box columns, rows above 0.05).

First, "workers": two threads detecting at the check's 2x input, each with its own runtime
(what NeMo's look-ahead workers do), against the same two threads' infer requests on one
shared compiled model (how runtimes were built before: inferences then took turns). Prints
frames a second and busy cores of each, and the ratio (the runtimes also decode the rows in
numpy; the baseline only infers); needs no OpenCV 4.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/detector_runtime.py [--repeat N]``
(the first run converts the graph for OpenVINO, 20-50 s, outside the timings). The baseline
needs OpenCV 4: OpenCV 5 dropped ``cv2.dnn``'s TensorFlow importer (a venv that resolved
OpenCV 5 can take ``opencv-python-headless<5`` for this run; the product does not need it).
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from typing import Any

import cv2
import numpy as np
import skimage.data

from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)
from needleforge.backends.embedded.ssd_runtime import SsdRuntime, compiled, converted_model

PHOTOS = ("chelsea", "astronaut", "coffee", "rocket", "cat", "hubble_deep_field")
INPUTS = {"300x300 (represent)": (300, 300), "960x540 (check x1.5)": (960, 540),
          "1280x720 (check x2)": (1280, 720)}


def _frames() -> list[np.ndarray]:
    frames = []
    for name in PHOTOS:
        image = getattr(skimage.data, name)()
        image = np.dstack([image] * 3) if image.ndim == 2 else image[..., :3]
        frames.append(cv2.resize(image, (640, 360), interpolation=cv2.INTER_AREA))
    return frames


def _opencv_net() -> cv2.dnn.Net:
    models = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
    graph = models / "frozen_inference_graph.pb"
    text = models / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
    if not hasattr(cv2.dnn, "readNetFromTensorflow"):
        raise SystemExit(f"the OpenCV baseline needs OpenCV 4; this is {cv2.__version__}, whose "
                         "cv2.dnn has no TensorFlow importer (see this script's docstring)")
    return cv2.dnn.readNetFromTensorflow(str(graph), str(text))


def _kept(rows: np.ndarray) -> np.ndarray:
    rows = rows[rows[:, 2] > 0.05]
    return rows[np.lexsort((-rows[:, 2], rows[:, 1]))]


def _threaded(infers: list[Callable[[], Any]], passes: int) -> tuple[float, float]:
    """Frames a second and busy cores with each of ``infers`` called ``passes`` times on
    its own thread (each warmed first)."""
    for infer in infers:
        infer()

    def loop(infer: Callable[[], Any]) -> None:
        for _ in range(passes):
            infer()

    threads = [threading.Thread(target=loop, args=(infer,)) for infer in infers]
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(infers) * passes / wall, cpu / wall


def workers(models: Any, frame: np.ndarray, passes: int) -> None:
    """The "workers" comparison of the module docstring."""
    graph, text = models / "frozen_inference_graph.pb", \
        models / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
    resized = cv2.resize(frame, (1280, 720), interpolation=cv2.INTER_LINEAR)
    batch = {0: resized[None].astype(np.float32)}
    shared = compiled(converted_model(graph), threads=1)
    requests = [shared.create_infer_request() for _ in range(2)]
    base, base_cores = _threaded([lambda r=r: r.infer(batch) for r in requests], passes)
    runtimes = [SsdRuntime(graph, text, threads=1) for _ in range(2)]
    ours, cores = _threaded([lambda r=r: r.rows(resized) for r in runtimes], passes)
    print(f"workers: 2 threads at 1280x720: shared compiled model (before) {base:.2f} "
          f"frames/s on {base_cores:.2f} cores; a runtime each (now) {ours:.2f} frames/s on "
          f"{cores:.2f} cores: {ours / base:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the photos")
    args = parser.parse_args()
    models = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
    started = time.perf_counter()
    runtime = SsdRuntime(models / "frozen_inference_graph.pb",
                         models / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt", threads=1)
    print(f"OpenVINO model ready in {time.perf_counter() - started:.1f} s "
          f"(converted on first use, then read from the cache)")
    cv2.setNumThreads(1)
    frames = _frames()
    workers(models, frames[0], passes=4 * args.repeat)
    print(f"{'input':<22} {'OpenCV ms':>10} {'OpenVINO ms':>12} {'speed-up':>9} {'max diff':>10}")
    for label, size in INPUTS.items():
        net = _opencv_net()  # one net per input size (OpenCV keeps its first size's priors)
        resized = [cv2.resize(f, size, interpolation=cv2.INTER_LINEAR) for f in frames]
        blobs = [cv2.dnn.blobFromImage(f, 1.0, size, swapRB=False, crop=False) for f in frames]
        net.setInput(blobs[0])
        net.forward()
        runtime.rows(resized[0])  # warm both
        base = ours = 0.0
        worst = 0.0
        for _ in range(args.repeat):
            for blob, frame in zip(blobs, resized, strict=True):
                t0 = time.perf_counter()
                net.setInput(blob)
                expected = net.forward().reshape(-1, 7)
                t1 = time.perf_counter()
                got = runtime.rows(frame)
                t2 = time.perf_counter()
                base, ours = base + t1 - t0, ours + t2 - t1
                e, g = _kept(expected), _kept(got)
                worst = max(worst, float(np.abs(e[:, 2:] - g[:, 2:]).max())
                            if e.shape == g.shape and len(e) else 0.0 if e.shape == g.shape
                            else float("inf"))
        n = args.repeat * len(frames)
        print(f"{label:<22} {base / n * 1e3:>10.1f} {ours / n * 1e3:>12.1f} "
              f"{base / ours:>8.2f}x {worst:>10.2g}")


if __name__ == "__main__":
    main()
