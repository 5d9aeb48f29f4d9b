"""The detector's OpenVINO runtime gives the rows OpenCV's DNN module gives.

The reference is ``cv2.dnn`` itself running the same frozen graph with the same text graph:
real photos from scikit-image at the 300x300 input of representation and at the upscaled
inputs of the NeMo negative check; priors compared with OpenCV's own ``PriorBox/concat``
output. OpenCV 5 has no TensorFlow importer, so where the environment resolved OpenCV 5 the
reference is what OpenCV 4's ``cv2.dnn`` computed, recorded by
``golden/ssd_opencv/record.py``; where OpenCV 4 is installed the recording is also checked
against it. A second reference shares nothing with the text graph: the frozen graph's own
TensorFlow post-processing (anchors, box decoding, NMS), recorded at 300x300 by
``golden/ssd_tf_graph/record.py``. Runtimes on two threads at once give the same rows. Also:
the converted model is cached and reused, an unwritable cache is named, and text graphs the
runtime does not implement are refused.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data

from needleforge.backends.embedded.ssd_output import prior_boxes, read_text_graph
from needleforge.backends.embedded.ssd_runtime import SsdRuntime, converted_model
from needleforge.errors import BackendError
from tests.backends.ssd_files import GRAPH, TEXT

SIZES = ((300, 300), (960, 540), (1280, 720), (416, 234))
PHOTOS = ("chelsea", "astronaut", "coffee", "rocket")
RECORDED = Path(__file__).parent / "golden" / "ssd_opencv" / "outputs.npz"
TF_RECORDED = Path(__file__).parent / "golden" / "ssd_tf_graph" / "outputs.npz"
#: ``golden/ssd_tf_graph/record.py``'s ``PASTES``: (side, x, y) of the photo on grey.
TF_PASTES = ((300, 0, 0), (240, 0, 0), (200, 100, 40), (140, 20, 150), (90, 190, 10), (60, 40, 60))
#: OpenCV 4 runs the frozen graph; OpenCV 5 dropped ``readNetFromTensorflow``.
LIVE = hasattr(cv2.dnn, "readNetFromTensorflow")


@pytest.fixture(scope="module")
def runtime() -> SsdRuntime:
    return SsdRuntime(GRAPH, TEXT, threads=1)


def _photo(name: str) -> np.ndarray:
    image = getattr(skimage.data, name)()
    return cv2.resize(image[..., :3], (640, 360), interpolation=cv2.INTER_AREA)


def _opencv(size: tuple[int, int], frame: np.ndarray, *outputs: str) -> list[np.ndarray]:
    # a fresh net per size, as golden/ssd_opencv/record.py does
    net = cv2.dnn.readNetFromTensorflow(str(GRAPH), str(TEXT))
    net.setInput(cv2.dnn.blobFromImage(frame, 1.0, size, swapRB=False, crop=False))
    return list(net.forward(list(outputs) or ["detection_out"]))


def _recorded(kind: str, name: str, size: tuple[int, int]) -> np.ndarray:
    with np.load(RECORDED) as arrays:
        return np.asarray(arrays[f"{kind}_{name}_{size[0]}x{size[1]}"])


def _reference_rows(name: str, size: tuple[int, int]) -> np.ndarray:
    return (_opencv(size, _photo(name))[0] if LIVE else _recorded("rows", name, size))


def _reference_priors(size: tuple[int, int]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """OpenCV's ``PriorBox/concat`` for the coffee photo at ``size``, and the six heads'
    feature-map shapes the priors are laid on."""
    if not LIVE:
        return _recorded("priors", "coffee", size), [
            (int(h), int(w)) for h, w in _recorded("heads", "coffee", size)]
    frame = _photo("coffee")
    heads = _opencv(size, frame, *(f"BoxPredictor_{k}/ClassPredictor/Conv2D" for k in range(6)))
    return (_opencv(size, frame, "PriorBox/concat")[0],
            [(int(h.shape[2]), int(h.shape[3])) for h in heads])


@pytest.mark.parametrize("name", PHOTOS)
def test_rows_equal_opencv_dnn(runtime: SsdRuntime, name: str) -> None:
    frame = _photo(name)
    for size in SIZES:
        expected = _reference_rows(name, size).reshape(-1, 7)
        got = runtime.rows(cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR))
        keep_e, keep_g = expected[expected[:, 2] > 0.05], got[got[:, 2] > 0.05]
        keep_e = keep_e[np.lexsort((-keep_e[:, 2], keep_e[:, 1]))]
        keep_g = keep_g[np.lexsort((-keep_g[:, 2], keep_g[:, 1]))]
        assert keep_e.size, (name, size)  # the reference found something to compare
        assert keep_g[:, 1].tolist() == keep_e[:, 1].tolist(), (name, size)
        np.testing.assert_allclose(keep_g[:, 2:], keep_e[:, 2:], atol=1e-4, err_msg=f"{size}")
        assert len(got) == len(expected)  # keep_top_k applied alike


def _pasted(name: str, side: int, x: int, y: int) -> np.ndarray:
    """``golden/ssd_tf_graph/record.py``'s input: the photo at ``side`` on grey 300x300."""
    canvas = np.full((300, 300, 3), 128, dtype=np.uint8)
    canvas[y:y + side, x:x + side] = cv2.resize(_photo(name), (side, side),
                                                interpolation=cv2.INTER_LINEAR)
    return canvas


@pytest.mark.parametrize("name", PHOTOS)
def test_rows_equal_the_tensorflow_graphs_own_post_processing(runtime: SsdRuntime,
                                                              name: str) -> None:
    # The OpenCV reference reads the same text graph; TensorFlow's anchor generator and box
    # coder do not: a wrong prior size or order, variance or score column differs here (the
    # pastes make objects of every size, so every feature map's priors are used).
    for side, x, y in TF_PASTES:
        with np.load(TF_RECORDED) as arrays:
            boxes, classes, scores = (np.asarray(arrays[f"{k}_{name}_{side}"])
                                      for k in ("boxes", "classes", "scores"))
        rows = runtime.rows(_pasted(name, side, x, y))
        got = [(int(r[1]), float(r[2]), np.clip(r[3:], 0, 1)) for r in rows if r[2] >= 0.25]
        for label, score, box in zip(classes, scores, boxes[:, [1, 0, 3, 2]], strict=True):
            near = [g for g in got if g[0] == label and np.abs(g[2] - box).max() < 2e-3]
            assert near, (name, side, label, score, box)
            assert abs(near[0][1] - score) < 0.02, (name, side, label, score, near[0][1])
        # the graph keeps scores >= 0.3: ours above that (with a margin) are all in it
        assert len([g for g in got if g[1] >= 0.32]) <= len(scores), (name, side, got)


def test_runtimes_on_two_threads_at_once_give_the_rows_of_one(runtime: SsdRuntime) -> None:
    # Each runtime compiles its own model so that workers detect in parallel; whatever the
    # threads interleave, every frame's rows are those one runtime gives alone.
    frames = [cv2.resize(_photo(name), size, interpolation=cv2.INTER_LINEAR)
              for name in PHOTOS for size in SIZES[:2]]
    expected = [runtime.rows(frame) for frame in frames]
    workers = [SsdRuntime(GRAPH, TEXT, threads=1) for _ in range(2)]
    got: dict[tuple[int, int], np.ndarray] = {}

    def work(k: int) -> None:
        for _ in range(2):
            for i, frame in enumerate(frames):
                got[(k, i)] = workers[k].rows(frame)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 2 * len(frames)
    for (_, i), rows in got.items():
        np.testing.assert_array_equal(rows, expected[i])


def test_rows_from_the_finest_levels_only(runtime: SsdRuntime) -> None:
    frame = cv2.resize(_photo("chelsea"), (300, 300), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_array_equal(runtime.rows(frame, levels=6), runtime.rows(frame))
    # Chelsea fills the frame: the finer the maps read, the smaller their priors, the less cat
    best = [runtime.rows(frame, levels=k) for k in (6, 4, 2)]
    cat = [rows[rows[:, 1] == 17, 2].max(initial=0.0) for rows in best]
    assert cat[0] > 0.9 and 0.8 < cat[1] < cat[0] and cat[2] < 0.1, cat
    for bad in (0, 7):
        with pytest.raises(ValueError, match="levels"):
            runtime.rows(frame, levels=bad)


def test_priors_equal_opencv_prior_boxes(runtime: SsdRuntime) -> None:
    for width, height in SIZES:
        concat, shapes = _reference_priors((width, height))
        expected = concat.reshape(2, -1, 4)
        priors, variances = prior_boxes(shapes, width=width, height=height,
                                        specs=runtime.text.priors)
        np.testing.assert_allclose(priors, expected[0], atol=1e-6)
        np.testing.assert_allclose(variances, expected[1], atol=1e-7)


@pytest.mark.skipif(not LIVE, reason=f"OpenCV {cv2.__version__} has no TensorFlow importer "
                    "to check the recording against (OpenCV 4 has)")
def test_the_recording_is_what_opencv_4_computes() -> None:
    with np.load(RECORDED) as arrays:
        assert str(arrays["opencv_version"]).startswith("4.")
    for name in PHOTOS:
        for size in SIZES:
            np.testing.assert_allclose(_recorded("rows", name, size),
                                       _opencv(size, _photo(name))[0], atol=1e-6)
    for size in SIZES:
        np.testing.assert_allclose(_recorded("priors", "coffee", size),
                                   _reference_priors(size)[0], atol=1e-7)


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


def test_rows_above_a_score_are_those_rows_of_the_full_output(runtime: SsdRuntime) -> None:
    # min_score skips suppressing boxes under it; what is above must not change, row for row
    checked = 0
    for name in PHOTOS:
        frame = _photo(name)
        for size in SIZES[:3]:
            resized = cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR)
            full = runtime.rows(resized)
            for floor in (0.05, 0.3, 0.5):
                np.testing.assert_array_equal(runtime.rows(resized, min_score=floor),
                                              full[full[:, 2] >= floor])
                checked += int((full[:, 2] >= floor).sum())
            assert (full[:, 2] < 0.3).any()  # there was something under the floors to skip
    assert checked > 50
