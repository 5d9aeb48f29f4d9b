"""The detector's OpenVINO runtime gives the rows OpenCV's DNN module gives.

The reference is ``cv2.dnn`` itself running the same frozen graph with the same text graph
(OpenCV is installed for decoding anyway): real photos from scikit-image at the 300x300 input
of representation and at the upscaled inputs of the NeMo negative check; priors compared with
OpenCV's own ``PriorBox/concat`` output. Also: the converted model is cached and reused, an
unwritable cache is named, and text graphs the runtime does not implement are refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data

from needleforge.backends.embedded.model_files import (
    OPENPIBO_DISTRIBUTION,
    OPENPIBO_PACKAGE,
    package_models_dir,
)
from needleforge.backends.embedded.ssd_runtime import (
    SsdRuntime,
    converted_model,
    prior_boxes,
    read_text_graph,
)
from needleforge.errors import BackendError

MODELS = package_models_dir(OPENPIBO_PACKAGE, distribution=OPENPIBO_DISTRIBUTION)
GRAPH = MODELS / "frozen_inference_graph.pb"
TEXT = MODELS / "ssd_mobilenet_v2_coco_2018_03_29.pbtxt"
SIZES = ((300, 300), (960, 540), (1280, 720), (416, 234))


@pytest.fixture(scope="module")
def runtime() -> SsdRuntime:
    return SsdRuntime(GRAPH, TEXT, threads=1)


def _photo(name: str) -> np.ndarray:
    image = getattr(skimage.data, name)()
    return cv2.resize(image[..., :3], (640, 360), interpolation=cv2.INTER_AREA)


def _opencv(size: tuple[int, int], frame: np.ndarray, *outputs: str) -> list[np.ndarray]:
    # a fresh net per size; the classic engine names its layers as the text graph does
    engine = getattr(cv2.dnn, "ENGINE_CLASSIC", None)  # OpenCV 4 has only that one
    net = (cv2.dnn.readNetFromTensorflow(str(GRAPH), str(TEXT)) if engine is None
           else cv2.dnn.readNetFromTensorflow(str(GRAPH), str(TEXT), engine))
    net.setInput(cv2.dnn.blobFromImage(frame, 1.0, size, swapRB=False, crop=False))
    return list(net.forward(list(outputs) or ["detection_out"]))


@pytest.mark.parametrize("name", ["chelsea", "astronaut", "coffee", "rocket"])
def test_rows_equal_opencv_dnn(runtime: SsdRuntime, name: str) -> None:
    frame = _photo(name)
    for size in SIZES:
        expected = _opencv(size, frame)[0].reshape(-1, 7)
        got = runtime.rows(cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR))
        keep_e, keep_g = expected[expected[:, 2] > 0.05], got[got[:, 2] > 0.05]
        keep_e = keep_e[np.lexsort((-keep_e[:, 2], keep_e[:, 1]))]
        keep_g = keep_g[np.lexsort((-keep_g[:, 2], keep_g[:, 1]))]
        assert keep_g[:, 1].tolist() == keep_e[:, 1].tolist(), (name, size)
        np.testing.assert_allclose(keep_g[:, 2:], keep_e[:, 2:], atol=1e-4, err_msg=f"{size}")
        assert len(got) == len(expected)  # keep_top_k applied alike


def test_priors_equal_opencv_prior_boxes(runtime: SsdRuntime) -> None:
    frame = _photo("coffee")
    for width, height in SIZES:
        expected = _opencv((width, height), frame, "PriorBox/concat")[0].reshape(2, -1, 4)
        heads = _opencv((width, height), frame, *(f"BoxPredictor_{k}/ClassPredictor/Conv2D"
                                                  for k in range(6)))
        priors, variances = prior_boxes([h.shape[2:] for h in heads], width=width,
                                        height=height, specs=runtime.text.priors)
        np.testing.assert_allclose(priors, expected[0], atol=1e-6)
        np.testing.assert_allclose(variances, expected[1], atol=1e-7)


def test_the_converted_model_is_kept_and_reused(tmp_path: Path) -> None:
    xml = converted_model(GRAPH, cache=tmp_path)
    assert xml.is_file() and xml.with_suffix(".bin").is_file()
    stamp = xml.stat().st_mtime_ns
    assert converted_model(GRAPH, cache=tmp_path) == xml
    assert xml.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "openvino").iterdir()] == [xml.parent.name]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_cache_is_named(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(BackendError, match=f"under {tmp_path}.*NEEDLEFORGE_MODEL_CACHE"):
            converted_model(GRAPH, cache=tmp_path / "models")
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_path_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "openvino").write_text("not a folder")
    with pytest.raises(BackendError, match="cannot write the converted SSD model under"):
        converted_model(GRAPH, cache=tmp_path)


def test_text_graphs_it_does_not_implement_are_refused(tmp_path: Path) -> None:
    text = TEXT.read_text(encoding="utf-8")
    assert len(read_text_graph(TEXT).priors) == 6
    cases = {
        "step": text.replace('key: "clip"', 'key: "step"\n    value { f: 16.0 }\n  }\n'
                             '  attr {\n    key: "clip"', 1),
        "flip": text.replace('key: "flip"\n    value {\n      b: false',
                             'key: "flip"\n    value {\n      b: true', 1),
        "CENTER_SIZE": text.replace('s: "CENTER_SIZE"', 's: "CORNER"'),
        "no PriorBox_0": text.replace('name: "detection_out"', 'name: "renamed"'),
    }
    for expected, changed in cases.items():
        assert changed != text, expected
        path = tmp_path / f"{expected.replace(' ', '_')}.pbtxt"
        path.write_text(changed, encoding="utf-8")
        with pytest.raises(BackendError, match=expected):
            read_text_graph(path)
